/**
 * Permit2 against a real local EVM node (the chains module's @ethereumjs/vm devnode) with a real
 * ERC-20: signatures from viem accounts; the allowance to Permit2 read with `eth_call` (error code 25
 * while it is missing or too small); deposit and fulfilment reports checked against real receipts
 * and their Transfer logs. On SQLite and PostgreSQL.
 */
import {
  approveErc20,
  deployTestToken,
  type EvmDevnode,
  startEvmDevnode,
  TEST_TOKEN,
} from '@rgbx/chains/evm-devnode';
import { type IntentCreated, signCosignApproval, signPermit2Approval } from '@rgbx/sdk';
import { generateKeyPairSigner, signBytes } from '@solana/kit';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIALECTS,
  ESCROW,
  NET,
  PERMIT2,
  RESOLVER_KEY,
  SOL_MINT,
  startTestService,
  type TestService,
  testDatabases,
} from './test-support.ts';

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

  it('answers code 25 until the owner approved Permit2 for enough, then accepts; the deposit is checked on the receipt', async () => {
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
    const body = await signPermit2Approval(intent.permit2!, {
      signTypedData: (td) => owner.signTypedData(td as never),
    });

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
      await signPermit2Approval(intent.permit2!, {
        signTypedData: (td) => stranger.signTypedData(td as never),
      }),
    );
    expect(wrong.body.code).toBe(21);

    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2, 5_000_000n);
    expect((await call('POST', `/intents/${intent.intentId}/approvals`, body)).body).toEqual({
      intentId: intent.intentId,
      status: 'ApprovalAdded',
    });

    const resolver = (url: string, payload: unknown = {}) => call('POST', url, payload, RESOLVER_KEY);
    await resolver(`/resolver/v1/intents/${intent.intentId}/accept`);
    // Stand-in for the escrow pulling the tokens: a transfer from the owner (same Transfer log).
    const short = await wallet(ownerKey).transfer(ESCROW, 4_999_999n);
    const rShort = await resolver(`/resolver/v1/intents/${intent.intentId}/deposit`, { tx_hash: short });
    expect([rShort.status, rShort.body.type]).toEqual([422, 'TX_NOT_VERIFIED']);
    const unknown = await resolver(`/resolver/v1/intents/${intent.intentId}/deposit`, {
      tx_hash: `0x${'ab'.repeat(32)}`,
    });
    expect(unknown.body.type).toBe('TX_NOT_VERIFIED');
    const full = await wallet(ownerKey).transfer(ESCROW, 5_000_000n);
    expect(
      (await resolver(`/resolver/v1/intents/${intent.intentId}/deposit`, { tx_hash: full })).body.status,
    ).toBe('UserDeposited');
    const ev = await s.ctx.db
      .selectFrom('intent_events')
      .select('details')
      .where('intent_id', '=', intent.intentId)
      .where('to_status', '=', 'UserDeposited')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(ev.details!)).toMatchObject({ tx: full, verified: true });
  });

  it('a fulfilment on the EVM destination must transfer at least min_dest_amount to the user', async () => {
    const user = await generateKeyPairSigner();
    const dest = privateKeyToAccount(generatePrivateKey()).address;
    const quote = await call('POST', '/quote', {
      sourceChain: NET.sol,
      sourceToken: SOL_MINT,
      destChain: NET.evm,
      destToken: token,
      amount: '1',
    });
    const created = await call('POST', '/intents', {
      quoteId: quote.body.quoteId,
      sourceAddress: user.address,
      sourcePublicKey: user.address,
      refundAddress: user.address,
      destinationAddress: dest,
    });
    const intent = created.body as IntentCreated;
    await call(
      'POST',
      `/intents/${intent.intentId}/approvals`,
      await signCosignApproval(intent.cosign!, {
        address: user.address,
        sign: (m) => signBytes(user.keyPair.privateKey, m),
      }),
    );
    const resolver = (url: string, payload: unknown = {}) => call('POST', url, payload, RESOLVER_KEY);
    await resolver(`/resolver/v1/intents/${intent.intentId}/accept`);
    const sig = '5'.repeat(88);
    expect(
      (await resolver(`/resolver/v1/intents/${intent.intentId}/deposit`, { tx_hash: sig })).body.status,
    ).toBe('UserDeposited');
    const min = BigInt(quote.body.minDestAmountLots);
    const payer = wallet(node.accounts[0]!.privateKey);
    const toOther = await payer.transfer(ESCROW, min);
    expect(
      (await resolver(`/resolver/v1/intents/${intent.intentId}/fulfil`, { tx_hash: toOther })).body.type,
    ).toBe('TX_NOT_VERIFIED');
    const tooLittle = await payer.transfer(dest, min - 1n);
    expect(
      (await resolver(`/resolver/v1/intents/${intent.intentId}/fulfil`, { tx_hash: tooLittle })).body.type,
    ).toBe('TX_NOT_VERIFIED');
    const paid = await payer.transfer(dest, min);
    expect(
      (await resolver(`/resolver/v1/intents/${intent.intentId}/fulfil`, { tx_hash: paid })).body.status,
    ).toBe('Fulfilled');
    const secret = await call(
      'GET',
      `/resolver/v1/intents/${intent.intentId}/secret`,
      undefined,
      RESOLVER_KEY,
    );
    expect(secret.body.preimage).toMatch(/^0x[0-9a-f]{64}$/);
  });
});
