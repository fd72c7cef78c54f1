/**
 * The EVM refund path on real chains: an EVM → Solana swap whose escrow deposit is real (the escrow
 * pulled the tokens with the Permit2 signature) expires unfulfilled; after the deadline plus the
 * safety margin the escrow's `refund` returns the tokens to the owner, and the user's report of that
 * transaction is proven by the escrow's `Refunded` event for this intent. The devnode's clock is moved
 * forward (`evm_increaseTime`) instead of waiting an hour, so this file has chains of its own.
 * Also a pull the resolver made before accepting and never reported: the user records that refund all the same.
 * On SQLite and PostgreSQL.
 */
import { uuidToBytes32 } from '@rgbx/chains/evm';
import { escrowRefund } from '@rgbx/devnet/evm-devnode';
import { permit2TypedData, signPermit2Approval, type TypedDataJson } from '@rgbx/sdk';
import { generateKeyPairSigner } from '@solana/kit';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeTxHash, startTestChains, type TestChains } from '../test-chains.ts';
import {
  DIALECTS,
  NET,
  RESOLVER_KEY,
  SOL_MINT,
  startTestService,
  type TestService,
  testClock,
  testDatabases,
} from '../test-support.ts';

const dbs = testDatabases();
let chains: TestChains;

beforeAll(async () => {
  chains = await startTestChains();
}, 120_000);
afterAll(async () => {
  await chains?.stop();
});

async function evmRpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(chains.evm.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: T }).result;
}
/** The devnode's time (its latest block), milliseconds: the service clock follows it in this file. */
const chainNowMs = async () =>
  Number(BigInt((await evmRpc<{ timestamp: string }>('eth_getBlockByNumber', ['latest', false])).timestamp)) *
  1000;

describe.each(DIALECTS)('EVM escrow refund on the devnode (%s)', (dialect) => {
  let s: TestService;
  const clock = testClock();

  beforeAll(async () => {
    s = await startTestService({
      databaseUrl: dbs.url(dialect),
      now: clock.now,
      ...chains.config,
      extra: `
[[resolvers.rates]]
source_network = ${NET.evm}
source_token = "${chains.usdc}"
dest_network = ${NET.sol}
dest_token = "${SOL_MINT}"
rate = "0.005"
`,
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

  /** An EVM → Solana intent, approved by a fresh owner (Permit2 signature; allowance given). */
  async function approvedIntent() {
    clock.set(await chainNowMs());
    const ownerKey = generatePrivateKey();
    const owner = privateKeyToAccount(ownerKey);
    const deployer = chains.evm.accounts[0]!.privateKey;
    await chains.ethTransfer(deployer, owner.address, 10n ** 19n);
    await chains.erc20Transfer(deployer, chains.usdc, owner.address, 10n ** 24n);
    const q = (
      await call('POST', '/quote', {
        sourceChain: NET.evm,
        sourceToken: chains.usdc,
        destChain: NET.sol,
        destToken: SOL_MINT,
        amountLots: '400000000',
      })
    ).body;
    const amount = BigInt(q.sourceAmountLots);
    await chains.erc20Approve(ownerKey, chains.usdc, chains.permit2, amount);
    const created = await call('POST', '/intents', {
      quoteId: q.quoteId,
      sourceAddress: owner.address,
      refundAddress: owner.address,
      destinationAddress: (await generateKeyPairSigner()).address,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.intentId as string;
    const deadline = created.body.deadlineSecs as number;
    const approval = await signPermit2Approval(
      created.body.permit2,
      { signTypedData: (td) => owner.signTypedData(td as never) },
      {
        chainId: chains.evm.chainId,
        permit2Address: chains.permit2,
        escrowAddress: chains.escrow,
        token: chains.usdc,
        amount,
      },
    );
    expect((await call('POST', `/intents/${id}/approvals`, approval)).status).toBe(200);
    return { id, deadline, owner, amount, deployer };
  }

  /** {@link approvedIntent}, accepted, its escrow deposit made and reported (UserDeposited). */
  async function depositedIntent() {
    const a = await approvedIntent();
    const resolver = (action: string, payload: unknown = {}) =>
      call('POST', `/resolver/v1/intents/${a.id}/${action}`, payload, RESOLVER_KEY);
    expect((await resolver('accept')).body.status).toBe('Accepted');
    const execution = (await call('GET', `/resolver/v1/intents/${a.id}`, undefined, RESOLVER_KEY)).body
      .execution;
    const deposit = await chains.escrowDepositFromExecution(execution);
    expect((await resolver('deposit', { tx_hash: deposit })).body.status).toBe('UserDeposited');
    return { ...a, deposit, execution };
  }

  /** Moves the chain past refundAfter = deadline + margin, then calls the escrow's refund for `id`. */
  async function refundOnChain(
    id: string,
    deadline: number,
    owner: `0x${string}`,
    deployer: `0x${string}`,
  ): Promise<string> {
    // Block time = wall clock + offset, never behind the parent block: repeat until the latest block is there.
    const refundAfter = deadline + s.ctx.config.swap.refund_safety_margin_secs;
    for (let t = (await chainNowMs()) / 1000; t <= refundAfter; t = (await chainNowMs()) / 1000) {
      await evmRpc('evm_increaseTime', [Math.ceil(refundAfter - t) + 1]);
      await evmRpc('evm_mine');
    }
    return escrowRefund(
      chains.evm.rpcUrl,
      chains.evm.chainId,
      deployer,
      chains.escrow,
      uuidToBytes32(id),
      owner,
    );
  }

  it('expired after a real escrow deposit: the escrow refund to the owner is proven; early and forged refunds refused', async () => {
    const { id, deadline, owner, amount, deployer, deposit } = await depositedIntent();

    // Nobody fulfils; the deadline passes; the user asks for the refund.
    clock.set(deadline * 1000 + 1000);
    expect((await call('POST', `/intents/${id}/refund-request`)).body.status).toBe('RefundRequested');
    // The escrow refuses a refund before deadline + margin (the chain's clock has not moved yet).
    await expect(
      escrowRefund(
        chains.evm.rpcUrl,
        chains.evm.chainId,
        deployer,
        chains.escrow,
        uuidToBytes32(id),
        owner.address,
      ),
    ).rejects.toThrow(/RefundNotYetAvailable/);

    const refund = await refundOnChain(id, deadline, owner.address, deployer);
    const report = (tx: string) => call('POST', `/intents/${id}/refund-tx`, { txHash: tx });
    const forged = await report(fakeTxHash('evm', `refund-${dialect}`));
    expect([forged.status, forged.body.details?.reason]).toEqual([422, 'not_found']);
    // Not the escrow's Refunded event for this intent: the owner's tokens arriving by a plain transfer.
    const plain = await report(await chains.erc20Transfer(deployer, chains.usdc, owner.address, amount));
    expect([plain.status, plain.body.details?.reason]).toEqual([422, 'escrow_event']);
    const reused = await report(deposit);
    expect([reused.status, reused.body.type]).toEqual([409, 'TX_ALREADY_USED']);
    const done = await report(refund);
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'Refunded' });
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement.map((l: { leg: string }) => l.leg)).toEqual(['deposit', 'refund']);
    expect(rec.settlement[1]).toMatchObject({
      networkId: NET.evm,
      txHash: refund,
      recipient: owner.address,
      token: chains.usdc,
      amount: amount.toString(),
      sender: chains.config.escrow,
    });
    expect(rec.swapMetadata.refundTx).toBe(refund);
  });
  it('a stranger’s own lock under this intent’s id, refunded to the stranger: its Refunded event is refused as the intent’s refund (recipient); the owner’s refund is recorded', async () => {
    const { id, deadline, owner, amount, deployer, execution } = await depositedIntent();

    // Another account locks its own tokens under this intent's id (the escrow keys locks by
    // (intent id, owner)) with its own Permit2 signature over a witness whose deadline is long past:
    // the escrow lets it refund at once, emitting Refunded(this intent id, the stranger).
    const strangerKey = generatePrivateKey();
    const stranger = privateKeyToAccount(strangerKey);
    await chains.ethTransfer(deployer, stranger.address, 10n ** 19n);
    await chains.erc20Transfer(deployer, chains.usdc, stranger.address, amount);
    await chains.erc20Approve(strangerKey, chains.usdc, chains.permit2, amount);
    const typedData = structuredClone(execution.typed_data) as TypedDataJson & {
      message: { witness: Record<string, unknown> };
    };
    typedData.message.witness = { ...typedData.message.witness, deadline: '1' };
    await chains.escrowDepositFromExecution({
      ...execution,
      typed_data: typedData,
      owner: stranger.address,
      permit2_signature: await stranger.signTypedData(permit2TypedData({ typedData }) as never),
    });
    const strangerRefund = await escrowRefund(
      chains.evm.rpcUrl,
      chains.evm.chainId,
      strangerKey,
      chains.escrow,
      uuidToBytes32(id),
      stranger.address,
    );

    clock.set(deadline * 1000 + 1000);
    expect((await call('POST', `/intents/${id}/refund-request`)).body.status).toBe('RefundRequested');
    const report = (tx: string) => call('POST', `/intents/${id}/refund-tx`, { txHash: tx });
    const forged = await report(strangerRefund);
    expect(
      [forged.status, forged.body.type, forged.body.details?.reason],
      JSON.stringify(forged.body),
    ).toEqual([422, 'TX_NOT_VERIFIED', 'recipient']);
    expect((await call('GET', `/intents/${id}/status`)).body.status).toBe('RefundRequested');

    const refund = await refundOnChain(id, deadline, owner.address, deployer);
    const done = await report(refund);
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'Refunded' });
  });

  it('pulled into the escrow before the resolver accepted and never reported: the user still records the escrow refund → Refunded', async () => {
    const { id, deadline, owner, amount, deployer } = await approvedIntent();
    // The Permit2 signature is the resolver's to see from ApprovalAdded: it pulls at once and never
    // accepts (a deposit it reported now would prove nothing: older than any acceptance).
    const execution = (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).body
      .execution;
    const pulled = await chains.escrowDepositFromExecution(execution);
    clock.set(deadline * 1000 + 1000);
    expect((await call('GET', `/intents/${id}/status`)).body.status).toBe('Expired');
    // Nothing is recorded as deposited: no refund request; the refund itself proves itself.
    const asked = await call('POST', `/intents/${id}/refund-request`);
    expect([asked.status, asked.body.details?.reason]).toEqual([409, 'nothing was deposited']);
    const refund = await refundOnChain(id, deadline, owner.address, deployer);
    const done = await call('POST', `/intents/${id}/refund-tx`, { txHash: refund });
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'Refunded' });
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement).toHaveLength(1);
    expect(rec.settlement[0]).toMatchObject({
      leg: 'refund',
      txHash: refund,
      recipient: owner.address,
      amount: amount.toString(),
    });
    // The pull itself stays what it was: no leg of this intent.
    expect((await call('POST', `/intents/${id}/refund-tx`, { txHash: pulled })).body.type).toBe(
      'INVALID_TRANSITION',
    );
  });
});
