/**
 * Permit2 approvals against a real local EVM node (the chains module's @ethereumjs/vm devnode) with a
 * real ERC-20: signatures from viem accounts; the allowance to Permit2 read with `eth_call` (error
 * code 25 while it is missing or too small). On SQLite and PostgreSQL. The escrow's pull and every
 * settlement leg are in settlement.devnet.test.ts.
 */
import {
  approveErc20,
  deployTestToken,
  type EvmDevnode,
  startEvmDevnode,
  TEST_TOKEN,
} from '@rgbx/devnet/evm-devnode';
import { type IntentCreated, signPermit2Approval } from '@rgbx/sdk';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIALECTS,
  ESCROW,
  NET,
  PERMIT2,
  startTestService,
  type TestService,
  testDatabases,
} from '../../test-support.ts';

const dbs = testDatabases();
let node: EvmDevnode;
let token: `0x${string}`;

beforeAll(async () => {
  node = await startEvmDevnode();
  token = await deployTestToken(node.rpcUrl, node.chainId, node.accounts[0]!.privateKey, {
    symbol: 'USDC',
    supply: 10n ** 30n,
  });
});
afterAll(async () => {
  await node?.stop();
});

function wallet(privateKey: `0x${string}`) {
  const chain = defineChain({
    id: Number(node.chainId),
    name: 'devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [node.rpcUrl] } },
  });
  const account = privateKeyToAccount(privateKey);
  const pub = createPublicClient({ chain, transport: http(node.rpcUrl) });
  const w = createWalletClient({ account, chain, transport: http(node.rpcUrl) });
  return {
    account,
    async transfer(to: `0x${string}`, value: bigint): Promise<`0x${string}`> {
      const hash = await w.writeContract({
        address: token,
        abi: TEST_TOKEN.abi,
        functionName: 'transfer',
        args: [to, value],
      });
      await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      return hash;
    },
  };
}

describe.each(DIALECTS)('Permit2 and receipts on a local EVM node (%s)', (dialect) => {
  let s: TestService;

  beforeAll(async () => {
    s = await startTestService({
      databaseUrl: dbs.url(dialect),
      evmRpcUrl: node.rpcUrl,
      usdc: token,
      evmChainId: Number(node.chainId),
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function call(method: 'GET' | 'POST', url: string, payload?: unknown, key = s.apiKey) {
    const res = await s.app.inject({
      method,
      url,
      headers: { 'x-api-key': key },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
  }

  it('answers code 25 until the owner approved Permit2 for enough, then accepts', async () => {
    // The owner holds tokens (account 0 sends them) and has ETH for gas (devnode account 1).
    const ownerKey = node.accounts[1]!.privateKey;
    const owner = privateKeyToAccount(ownerKey);
    await wallet(node.accounts[0]!.privateKey).transfer(owner.address, 10n ** 24n);
    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2, 0n); // the other database's run approved
    const amountLots = '5000000';
    const quote = await call('POST', '/quote', {
      sourceChain: NET.evm,
      sourceToken: token,
      destChain: NET.btc,
      destToken: 'BTC',
      amountLots,
    });
    expect(quote.status, JSON.stringify(quote.body)).toBe(200);
    const created = await call('POST', '/intents', {
      quoteId: quote.body.quoteId,
      sourceAddress: owner.address,
      refundAddress: owner.address,
      destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    });
    const intent = created.body as IntentCreated;
    const expectation = {
      chainId: node.chainId,
      permit2Address: PERMIT2,
      escrowAddress: ESCROW,
      token,
      amount: 5_000_000n,
    };
    const body = await signPermit2Approval(
      intent.permit2!,
      { signTypedData: (td) => owner.signTypedData(td as never) },
      expectation,
    );

    const none = await call('POST', `/affiliate/v1/intents/${intent.intentId}/approvals`, {
      type: 'permit2',
      signed_data: body.permit2,
    });
    expect([none.status, none.body.code, none.body.details.allowance, none.body.details.required]).toEqual([
      422,
      25,
      '0',
      amountLots,
    ]);

    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2, 4_999_999n);
    expect((await call('POST', `/intents/${intent.intentId}/approvals`, body)).body.code).toBe(25);
    // A wrong signer is refused before the allowance is even read.
    const stranger = privateKeyToAccount(generatePrivateKey());
    const wrong = await call(
      'POST',
      `/intents/${intent.intentId}/approvals`,
      await signPermit2Approval(
        intent.permit2!,
        { signTypedData: (td) => stranger.signTypedData(td as never) },
        expectation,
      ),
    );
    expect(wrong.body.code).toBe(21);

    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2, 5_000_000n);
    expect((await call('POST', `/intents/${intent.intentId}/approvals`, body)).body).toEqual({
      intentId: intent.intentId,
      status: 'ApprovalAdded',
    });
  });
});
