/**
 * Settlement on real chains, every leg executed, nothing stood in: Bitcoin regtest (bitcoind + our
 * Electrum server), the EVM devnode (EthereumJS; also serving as the Tron node's Ethereum-compatible
 * JSON-RPC) with our Permit2-compatible SignatureTransfer + SwapEscrow, and the Solana devnode
 * (litesvm). On SQLite and PostgreSQL.
 *
 * Each flow runs the real legs (the escrow really pulls the user's tokens through
 * `permitWitnessTransferFrom`, the co-signed Solana transaction executes, the resolver's destination
 * payments are real transfers) and tries, before the real one, every forgery a resolver could
 * report: a made-up id on every network, a payment older than the acceptance, to another address,
 * too little, the wrong token, from someone else, a deposit that bypasses the escrow, an escrow lock
 * under the intent's id by someone else (or by the owner, deviating from the intent) and its claim,
 * and one payment reported for two intents (also its id re-cased or without 0x).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildHtlc, buildHtlcClaimTx, fulfilCommitment } from '@rgbx/chains/btc';
import { uuidToBytes32 } from '@rgbx/chains/evm';
import { tronAddressToEvm } from '@rgbx/chains/tron';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { escrowClaim } from '@rgbx/devnet/evm-devnode';
import {
  affiliatePermit2TypedData,
  type IntentCreated,
  permit2TypedData,
  signCosignApproval,
  signHtlcApproval,
  signPermit2Approval,
  type TypedDataJson,
} from '@rgbx/sdk';
import { generateKeyPairSigner, signBytes } from '@solana/kit';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeTxHash, startTestChains, type TestChains } from '../test-chains.ts';
import {
  btcKey,
  DIALECTS,
  NET,
  RESOLVER_BTC,
  RESOLVER_EVM,
  RESOLVER_EVM_KEY,
  RESOLVER_KEY,
  RESOLVER_SOL,
  RESOLVER_SOL_SIGNER,
  randomEvmAddress,
  randomSolanaAddress,
  SOL_MINT,
  startTestService,
  type TestService,
  testDatabases,
  tronKey,
} from '../test-support.ts';

type Hex = `0x${string}`;
const dbs = testDatabases();
let devnet: Devnet;
let dir: string;
let chains: TestChains;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'swap-settlement-'));
  [devnet, chains] = await Promise.all([startDevnet({ dir }), startTestChains()]);
}, 120_000);

afterAll(async () => {
  await chains?.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sats = (n: bigint) => `${n / 100_000_000n}.${(n % 100_000_000n).toString().padStart(8, '0')}`;

describe.each(DIALECTS)('settlement on real chains (%s)', (dialect) => {
  let s: TestService;

  beforeAll(async () => {
    const usdc = chains.usdc;
    s = await startTestService({
      databaseUrl: dbs.url(dialect),
      electrumUrl: devnet.info.electrum,
      minConfirmations: 1,
      ...chains.config,
      // Solana as a source towards Bitcoin, and as a destination from the EVM token.
      extra: `
[[resolvers.rates]]
source_network = ${NET.sol}
source_token = "${SOL_MINT}"
dest_network = ${NET.btc}
dest_token = "BTC"
rate = "0.002"

[[resolvers.rates]]
source_network = ${NET.evm}
source_token = "${usdc}"
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
  const resolver = (id: string, action: string, payload: unknown = {}) =>
    call('POST', `/resolver/v1/intents/${id}/${action}`, payload, RESOLVER_KEY);
  const status = async (id: string) => (await call('GET', `/intents/${id}/status`)).body.status as string;
  /** A report that must be refused with `reason`, leaving the status as it was. */
  async function refused(id: string, action: string, tx: string, reason: string, type = 'TX_NOT_VERIFIED') {
    const before = await status(id);
    const r = await resolver(id, action, { tx_hash: tx });
    expect([r.status, r.body.type, r.body.details?.reason], JSON.stringify(r.body)).toEqual([
      type === 'TX_NOT_VERIFIED' ? 422 : 409,
      type,
      type === 'TX_NOT_VERIFIED' ? reason : undefined,
    ]);
    expect(await status(id)).toBe(before);
  }
  async function ok(id: string, action: string, tx: string, next: string) {
    const r = await resolver(id, action, { tx_hash: tx });
    expect(r.body, JSON.stringify(r.body)).toEqual({ intent_id: id, status: next });
  }
  async function quote(body: Record<string, unknown>) {
    const r = await call('POST', '/quote', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as { quoteId: string; sourceAmountLots: string; minDestAmountLots: string };
  }
  async function intent(body: Record<string, unknown>) {
    const r = await call('POST', '/intents', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as IntentCreated;
  }
  async function approve(id: string, body: unknown) {
    const r = await call('POST', `/intents/${id}/approvals`, body);
    expect(r.body, JSON.stringify(r.body)).toEqual({ intentId: id, status: 'ApprovalAdded' });
  }
  async function secret(id: string): Promise<Hex> {
    const r = await call('GET', `/resolver/v1/intents/${id}/secret`, undefined, RESOLVER_KEY);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.preimage as Hex;
  }
  const execution = async (id: string) =>
    (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).body.execution as Record<
      string,
      unknown
    >;

  /**
   * Locks tokens in the escrow under intent `id`'s id with `key`'s own Permit2 signature over the
   * intent's typed data with `change` applied (the permitted token or amount, witness fields). The
   * escrow keys a lock by (intent id, signer): anyone can lock under any intent id. Without `key`, a
   * new account that is not the intent's owner, given gas, the tokens and the Permit2 allowance.
   */
  async function lockUnderIntent(
    id: string,
    change: { key?: Hex; token?: Hex; amount?: bigint; witness?: Record<string, string> } = {},
  ): Promise<{ owner: Hex; tx: Hex }> {
    const ex = await execution(id);
    const typedData = structuredClone(ex.typed_data) as TypedDataJson & {
      message: { permitted: { token: Hex; amount: string }; witness: Record<string, unknown> };
    };
    const m = typedData.message;
    const token = change.token ?? m.permitted.token;
    const amount = change.amount ?? BigInt(m.permitted.amount);
    const key = change.key ?? generatePrivateKey();
    const signer = privateKeyToAccount(key);
    const deployer = chains.evm.accounts[0]!.privateKey;
    if (!change.key) await chains.ethTransfer(deployer, signer.address, 10n ** 19n);
    await chains.erc20Transfer(deployer, token, signer.address, amount);
    await chains.erc20Approve(key, token, chains.permit2, amount);
    m.permitted = { token, amount: amount.toString() };
    m.witness = { ...m.witness, ...change.witness };
    const signature = await signer.signTypedData(permit2TypedData({ typedData }) as never);
    const tx = await chains.escrowDepositFromExecution({
      ...ex,
      typed_data: typedData,
      owner: signer.address,
      permit2_signature: signature,
    });
    return { owner: signer.address, tx };
  }

  /** An EVM owner with gas and USDC, its Permit2 allowance, and a signed Permit2 intent towards `dest`. */
  async function permit2Intent(destChain: number, destToken: string, amountLots: string, dest: string) {
    const ownerKey = generatePrivateKey();
    const owner = privateKeyToAccount(ownerKey);
    const deployer = chains.evm.accounts[0]!.privateKey;
    await chains.ethTransfer(deployer, owner.address, 10n ** 19n);
    await chains.erc20Transfer(deployer, chains.usdc, owner.address, 10n ** 24n);
    const q = await quote({
      sourceChain: NET.evm,
      sourceToken: chains.usdc,
      destChain,
      destToken,
      amountLots,
    });
    const amount = BigInt(q.sourceAmountLots);
    await chains.erc20Approve(ownerKey, chains.usdc, chains.permit2, amount); // Permit2 may pull what the user signs for
    const i = await intent({
      quoteId: q.quoteId,
      sourceAddress: owner.address,
      refundAddress: owner.address,
      destinationAddress: dest,
    });
    const expectation = {
      chainId: chains.evm.chainId,
      permit2Address: chains.permit2,
      escrowAddress: chains.escrow,
      token: chains.usdc,
      amount,
    };
    const signer = { signTypedData: (td: unknown) => owner.signTypedData(td as never) };
    await approve(i.intentId, await signPermit2Approval(i.permit2!, signer, expectation));
    return { owner, ownerKey, q, amount, dest, i };
  }

  async function btcIntent(dest: string) {
    const user = btcKey();
    await devnet.fund(user.address, '0.5', { confirm: true });
    const q = await quote({
      sourceChain: NET.btc,
      sourceToken: 'BTC',
      destChain: NET.evm,
      destToken: chains.usdc,
      amount: '0.1',
    });
    const i = await intent({
      quoteId: q.quoteId,
      sourceAddress: user.address,
      sourcePublicKey: Buffer.from(user.xonly).toString('hex'),
      refundAddress: user.address,
      destinationAddress: dest,
    });
    await approve(
      i.intentId,
      signHtlcApproval(i.htlc!, user.privateKey, { amountSats: BigInt(q.sourceAmountLots) }),
    );
    return { user, q, i, min: BigInt(q.minDestAmountLots) };
  }

  it('Bitcoin → EVM: HTLC deposit, the ERC-20 payment verified, preimage, claim; forgeries and a reused payment or txid (also upper-case, without 0x) refused', async () => {
    // Every configured network's node answers: the service is healthy.
    const health = await call('GET', '/healthcheck');
    expect([health.status, health.body]).toEqual([200, undefined]);
    const dest = randomEvmAddress();
    const a = await btcIntent(dest);
    const b = await btcIntent(dest);
    // A margin between the last accepted fulfilment (the deadline) and the user's refund (the CLTV).
    expect(a.i.htlc!.locktime).toBe(a.i.deadlineSecs + 3600);

    // Paid before the resolver accepted: a transfer that predates the intent's acceptance proves nothing.
    const early = await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, dest, a.min);
    for (const x of [a, b]) expect((await resolver(x.i.intentId, 'accept')).body.status).toBe('Accepted');
    await refused(a.i.intentId, 'deposit', fakeTxHash('btc', 'a-deposit'), 'not_the_approved_transaction');
    await refused(a.i.intentId, 'deposit', a.i.htlc!.fundingTxid, 'confirmations'); // broadcast, not mined
    await devnet.mine(1);
    await ok(a.i.intentId, 'deposit', a.i.htlc!.fundingTxid, 'UserDeposited');
    // A's funding transaction cannot be B's deposit (another intent's tx), nor settle anything twice.
    await refused(b.i.intentId, 'deposit', a.i.htlc!.fundingTxid, '', 'TX_ALREADY_USED');
    // The same txid in upper case is the same transaction (ids are compared in canonical form).
    await refused(b.i.intentId, 'deposit', a.i.htlc!.fundingTxid.toUpperCase(), '', 'TX_ALREADY_USED');
    await ok(b.i.intentId, 'deposit', b.i.htlc!.fundingTxid, 'UserDeposited');

    const id = a.i.intentId;
    await refused(id, 'fulfil', early, 'older_than_acceptance');
    await refused(id, 'fulfil', fakeTxHash('evm', 'a-fulfil'), 'not_found');
    await refused(
      id,
      'fulfil',
      await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, randomEvmAddress(), a.min),
      'recipient',
    );
    await refused(
      id,
      'fulfil',
      await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, dest, a.min - 1n),
      'amount',
    );
    await refused(
      id,
      'fulfil',
      await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.otherToken, dest, a.min),
      'token',
    );
    const notResolver = await chains.erc20Transfer(
      chains.evm.accounts[0]!.privateKey,
      chains.usdc,
      dest,
      a.min,
    );
    await refused(id, 'fulfil', notResolver, 'sender');
    expect((await call('GET', `/resolver/v1/intents/${id}/secret`, undefined, RESOLVER_KEY)).body.type).toBe(
      'SECRET_NOT_RELEASED',
    );

    const paid = await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, dest, a.min);
    await ok(id, 'fulfil', paid, 'Fulfilled');
    // One payment, two intents to the same address: the second report is refused and B keeps waiting.
    await refused(b.i.intentId, 'fulfil', paid, '', 'TX_ALREADY_USED');
    // Nor the same hash written otherwise: upper-case hex, without 0x, both.
    for (const variant of [`0x${paid.slice(2).toUpperCase()}`, paid.slice(2), paid.slice(2).toUpperCase()])
      await refused(b.i.intentId, 'fulfil', variant, '', 'TX_ALREADY_USED');
    expect(await status(b.i.intentId)).toBe('UserDeposited');

    const preimage = await secret(id);
    expect(
      `0x${createHash('sha256')
        .update(Buffer.from(preimage.slice(2), 'hex'))
        .digest('hex')}`,
    ).toBe(a.i.secretHash);
    const ex = await execution(id);
    const htlc = buildHtlc({
      secretHash: String(ex.secret_hash).slice(2),
      resolverPubkey: String(ex.resolver_pubkey),
      userPubkey: String(ex.user_pubkey),
      locktime: Number(ex.locktime),
      network: 'regtest',
    });
    const claim = buildHtlcClaimTx({
      htlc,
      fundingTxid: String(ex.funding_txid),
      vout: Number(ex.htlc_vout),
      amount: BigInt(String(ex.amount)),
      destinationAddress: RESOLVER_BTC.address,
      feeRate: 2n,
      preimage: Buffer.from(preimage.slice(2), 'hex'),
      resolverPrivateKey: RESOLVER_BTC.privateKey,
    });
    await devnet.rpc('sendrawtransaction', [claim.txHex]);
    await devnet.mine(1);
    // A transaction that does not spend this intent's HTLC output (here: B's funding, then any payment).
    await refused(id, 'claim', b.i.htlc!.fundingTxid, '', 'TX_ALREADY_USED');
    await refused(
      id,
      'claim',
      await devnet.fund(RESOLVER_BTC.address, '0.001', { confirm: true }),
      'not_spending_htlc',
    );
    await ok(id, 'claim', claim.txid, 'Fulfilled');

    // The record carries the proof of every leg, on both surfaces.
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement.map((l: { leg: string }) => l.leg)).toEqual(['deposit', 'fulfil', 'claim']);
    expect(rec.settlement[0]).toMatchObject({
      networkId: NET.btc,
      txHash: a.i.htlc!.fundingTxid,
      index: a.i.htlc!.htlcVout,
      recipient: a.i.htlc!.htlcAddress,
      token: 'BTC',
      amount: a.q.sourceAmountLots,
    });
    expect(rec.settlement[1]).toMatchObject({
      networkId: NET.evm,
      txHash: paid,
      recipient: dest,
      token: chains.usdc,
      amount: a.min.toString(),
      sender: RESOLVER_EVM.address,
    });
    expect(rec.settlement[1].confirmations).toBeGreaterThanOrEqual(1);
    expect(BigInt(rec.settlement[1].blockHeight)).toBeGreaterThan(0n);
    expect(rec.settlement[1].blockHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(rec.settlement[2]).toMatchObject({ txHash: claim.txid, recipient: RESOLVER_BTC.address });
    const recB = (await call('GET', `/affiliate/v1/swaps/intents/${id}`)).body;
    expect(recB.settlement[1]).toMatchObject({
      leg: 'fulfil',
      network_id: NET.evm,
      tx_hash: paid,
      sender: RESOLVER_EVM.address,
    });
  });

  it.runIf(dialect === 'postgres')(
    'two instances on one PostgreSQL: each acceptance, fulfilment and expiry happens exactly once under races',
    async () => {
      // A second, independent service instance (own pool, own scheduler) on the same database.
      const s2 = await startTestService({
        databaseUrl: dbs.url(dialect),
        electrumUrl: devnet.info.electrum,
        minConfirmations: 1,
        ...chains.config,
      });
      try {
        const on = (app: TestService, id: string, action: string, payload: unknown = {}) =>
          app.app.inject({
            method: 'POST',
            url: `/resolver/v1/intents/${id}/${action}`,
            headers: { 'x-api-key': RESOLVER_KEY },
            payload: payload as object,
          });
        const dest = randomEvmAddress();
        const a = await btcIntent(dest);
        const b = await btcIntent(dest);
        const accepts = await Promise.all([on(s, a.i.intentId, 'accept'), on(s2, a.i.intentId, 'accept')]);
        expect(accepts.map((r) => r.statusCode).sort()).toEqual([200, 409]);
        expect((await on(s2, b.i.intentId, 'accept')).statusCode).toBe(200);
        await devnet.mine(1);
        await ok(a.i.intentId, 'deposit', a.i.htlc!.fundingTxid, 'UserDeposited');
        await ok(b.i.intentId, 'deposit', b.i.htlc!.fundingTxid, 'UserDeposited');
        // One payment raced as the fulfilment of two intents through two instances: one wins.
        const paid = await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, dest, a.min);
        const fulfils = await Promise.all([
          on(s, a.i.intentId, 'fulfil', { tx_hash: paid }),
          on(s2, b.i.intentId, 'fulfil', { tx_hash: paid }),
        ]);
        expect(fulfils.map((r) => r.statusCode).sort(), fulfils.map((r) => r.body).join()).toEqual([
          200, 409,
        ]);
        expect(fulfils.map((r) => r.json().type ?? r.json().status).sort()).toEqual([
          'Fulfilled',
          'TX_ALREADY_USED',
        ]);
        const legs = await s.ctx.db
          .selectFrom('settlement_legs')
          .selectAll()
          .where('tx_hash', '=', paid)
          .execute();
        expect(legs).toHaveLength(1);

        // Both schedulers expire the same due intents at once: each intent expires exactly once.
        const due = await Promise.all(
          [0, 1, 2, 3, 4].map(async () => {
            const q = await quote({
              sourceChain: NET.evm,
              sourceToken: chains.usdc,
              destChain: NET.btc,
              destToken: 'BTC',
              amountLots: '250000000',
            });
            const owner = privateKeyToAccount(generatePrivateKey()).address;
            return (
              await intent({
                quoteId: q.quoteId,
                sourceAddress: owner,
                refundAddress: owner,
                destinationAddress: btcKey().address,
              })
            ).intentId;
          }),
        );
        const { expireDue } = await import('../store/intent-store.ts');
        const later = Date.now() + 7200_000;
        const counts = await Promise.all([expireDue(s.ctx.db, later), expireDue(s2.ctx.db, later)]);
        const events = await s.ctx.db
          .selectFrom('intent_events')
          .select(['intent_id', 'trigger'])
          .where('intent_id', 'in', due)
          .where('trigger', '=', 'expire')
          .execute();
        expect(events.map((e) => e.intent_id).sort()).toEqual([...due].sort());
        expect(counts[0]! + counts[1]!).toBeGreaterThanOrEqual(due.length);
        const accEvents = await s.ctx.db
          .selectFrom('intent_events')
          .select('trigger')
          .where('intent_id', '=', a.i.intentId)
          .where('trigger', 'in', ['accept', 'fulfil'])
          .execute();
        expect(accEvents.map((e) => e.trigger).sort()).toEqual(
          fulfils[0]!.statusCode === 200 ? ['accept', 'fulfil'] : ['accept'],
        );
      } finally {
        await s2.close();
      }
    },
  );

  it('EVM → Bitcoin: the escrow pulls the tokens with the Permit2 signature; the BTC payment verified; the escrow claim verified', async () => {
    const { owner, ownerKey, q, amount, dest, i } = await permit2Intent(
      NET.btc,
      'BTC',
      '250000000',
      btcKey().address,
    );
    const min = BigInt(q.minDestAmountLots);
    const id = i.intentId;
    // The commitment a Bitcoin fulfilment must carry, as the resolver API hands it out.
    const data = String(
      (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).body.fulfil_commitment,
    ).slice(4);
    expect(data).toBe(fulfilCommitment(id).toString('hex'));
    const early = await devnet.fund(dest, sats(min), { confirm: true, data });
    expect((await resolver(i.intentId, 'accept')).body.status).toBe('Accepted');

    // Deposits that are not the escrow's pull for this intent.
    await refused(
      id,
      'deposit',
      await chains.erc20Transfer(ownerKey, chains.usdc, chains.escrow, amount),
      'escrow_event',
    );
    await refused(
      id,
      'deposit',
      await chains.erc20Transfer(ownerKey, chains.usdc, randomEvmAddress(), amount),
      'escrow_event',
    );
    await refused(id, 'deposit', fakeTxHash('evm', 'b-deposit'), 'not_found');
    const pulled = await chains.escrowDepositFromExecution(await execution(id));
    await ok(id, 'deposit', pulled, 'UserDeposited');

    await refused(id, 'fulfil', early, 'older_than_acceptance');
    await refused(id, 'fulfil', fakeTxHash('btc', 'b-fulfil'), 'not_found');
    await refused(
      id,
      'fulfil',
      await devnet.fund(btcKey().address, sats(min), { confirm: true, data }),
      'recipient',
    );
    await refused(id, 'fulfil', await devnet.fund(dest, sats(min - 1n), { confirm: true, data }), 'amount');
    // Anyone's later payment to the user's address (the user's salary, a withdrawal): no commitment.
    await refused(id, 'fulfil', await devnet.fund(dest, sats(min), { confirm: true }), 'commitment');
    // A payment made for another intent (its commitment) does not fulfil this one.
    const other = fulfilCommitment(crypto.randomUUID()).toString('hex');
    await refused(
      id,
      'fulfil',
      await devnet.fund(dest, sats(min), { confirm: true, data: other }),
      'commitment',
    );
    const paid = await devnet.fund(dest, sats(min), { confirm: true, data });
    await ok(id, 'fulfil', paid, 'Fulfilled');

    // Not the escrow's Claimed event for this intent: a plain transfer, the deposit again.
    await refused(
      id,
      'claim',
      await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, owner.address, 1n),
      'escrow_event',
    );
    await refused(id, 'claim', pulled, '', 'TX_ALREADY_USED');
    const preimage = await secret(id);
    const claim = await escrowClaim(
      chains.evm.rpcUrl,
      chains.evm.chainId,
      RESOLVER_EVM_KEY,
      chains.escrow,
      uuidToBytes32(id),
      owner.address,
      preimage,
    );
    await ok(id, 'claim', claim, 'Fulfilled');
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement.map((l: { leg: string }) => l.leg)).toEqual(['deposit', 'fulfil', 'claim']);
    expect(rec.settlement[0]).toMatchObject({
      txHash: pulled,
      recipient: chains.escrow,
      amount: amount.toString(),
      sender: owner.address,
    });
    expect(rec.settlement[1]).toMatchObject({
      txHash: paid,
      recipient: dest,
      amount: min.toString(),
      sender: null,
    });
    expect(rec.settlement[2]).toMatchObject({ txHash: claim, recipient: RESOLVER_EVM.address.toLowerCase() });
  });

  it('an escrow deposit pulled before the resolver accepted proves nothing (EVM)', async () => {
    const { i } = await permit2Intent(NET.btc, 'BTC', '250000000', btcKey().address);
    const id = i.intentId;
    // The execution data is visible from ApprovalAdded: the resolver pulls first, accepts after.
    const pulledEarly = await chains.escrowDepositFromExecution(await execution(id));
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await refused(id, 'deposit', pulledEarly, 'older_than_acceptance');
  });

  it('EVM deposit: a stranger’s lock under this intent’s id (its own Permit2 signature, same token and amount, after the acceptance) is refused as the deposit (owner)', async () => {
    const { i } = await permit2Intent(NET.btc, 'BTC', '250000000', btcKey().address);
    const id = i.intentId;
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    const stranger = await lockUnderIntent(id);
    await refused(id, 'deposit', stranger.tx, 'owner');
    // The owner's own pull still proves the deposit.
    await ok(id, 'deposit', await chains.escrowDepositFromExecution(await execution(id)), 'UserDeposited');
  });

  it('EVM deposit: the owner’s own lock under this intent’s id that deviates from the intent is refused with the field (token, amount, resolver, secret_hash, refund_after)', async () => {
    const deviations: [string, (deadline: number) => Parameters<typeof lockUnderIntent>[1]][] = [
      ['token', () => ({ token: chains.otherToken })],
      ['amount', () => ({ amount: 1n })],
      ['resolver', () => ({ witness: { resolver: randomEvmAddress() } })],
      ['secret_hash', () => ({ witness: { secretHash: `0x${'ab'.repeat(32)}` } })],
      // refundAfter = deadline - 1 + the escrow's delay: the user could refund one second before the margin.
      ['refund_after', (deadline) => ({ witness: { deadline: String(deadline - 1) } })],
    ];
    for (const [reason, change] of deviations) {
      const { i, ownerKey } = await permit2Intent(NET.btc, 'BTC', '250000000', btcKey().address);
      const id = i.intentId;
      expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
      const lock = await lockUnderIntent(id, { key: ownerKey, ...change(i.deadlineSecs) });
      await refused(id, 'deposit', lock.tx, reason);
      expect(await status(id), reason).toBe('Accepted');
    }
  });

  it('EVM claim: strangers’ locks under this intent’s id with its secret hash, claimed with the released preimage, are refused as the claim (claim_transfer); the owner’s lock claimed is recorded', async () => {
    const { owner, q, i, dest } = await permit2Intent(NET.btc, 'BTC', '250000000', btcKey().address);
    const id = i.intentId;
    const min = BigInt(q.minDestAmountLots);
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await ok(id, 'deposit', await chains.escrowDepositFromExecution(await execution(id)), 'UserDeposited');
    const data = String(
      (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).body.fulfil_commitment,
    ).slice(4);
    await ok(id, 'fulfil', await devnet.fund(dest, sats(min), { confirm: true, data }), 'Fulfilled');
    const preimage = await secret(id);
    const claimLockOf = (lockOwner: Hex) =>
      escrowClaim(
        chains.evm.rpcUrl,
        chains.evm.chainId,
        RESOLVER_EVM_KEY,
        chains.escrow,
        uuidToBytes32(id),
        lockOwner,
        preimage,
      );
    // Each lock is another account's, under this intent id and its (public) secret hash: its claim
    // emits Claimed(this intent id, resolver, this preimage), but pays 1 unit, or another token, or
    // the exact amount to an address that is not the intent's resolver.
    for (const change of [
      { amount: 1n },
      { token: chains.otherToken },
      { witness: { resolver: randomEvmAddress() } },
    ]) {
      const lock = await lockUnderIntent(id, change);
      await refused(id, 'claim', await claimLockOf(lock.owner), 'claim_transfer');
    }
    const claim = await claimLockOf(owner.address);
    await ok(id, 'claim', claim, 'Fulfilled');
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement.map((l: { leg: string; txHash: string }) => [l.leg, l.txHash])).toEqual([
      ['deposit', rec.settlement[0].txHash],
      ['fulfil', rec.settlement[1].txHash],
      ['claim', claim],
    ]);
  });

  it('Tron → EVM: TIP-712 Permit2 pulled by the escrow, read through the Ethereum-compatible JSON-RPC with Tron addresses', async () => {
    const user = tronKey();
    const userHex = tronAddressToEvm(user.address) as Hex;
    const deployer = chains.evm.accounts[0]!.privateKey;
    await chains.ethTransfer(deployer, userHex, 10n ** 19n);
    await chains.erc20Transfer(deployer, chains.usdc, userHex, 10n ** 24n);
    const tronUsdt = String(chains.config.tronUsdt);
    const qr = await call('POST', '/affiliate/v1/quotes/best', {
      source_chain: NET.tron,
      source_token: tronUsdt,
      dest_chain: NET.evm,
      dest_token: chains.usdc,
      amount_lots: '100000000',
    });
    expect(qr.status, JSON.stringify(qr.body)).toBe(200);
    await chains.erc20Approve(
      user.privateKey,
      chains.usdc,
      chains.permit2,
      BigInt(qr.body.source_amount_lots),
    );
    const dest = randomEvmAddress();
    const r = await call('POST', '/affiliate/v1/intents', {
      quote_id: qr.body.quote_id,
      user_source_address: user.address,
      refund_address: user.address,
      user_destination_address: dest,
      user_source_public_key: null,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const id = r.body.intent_id as string;
    const td = affiliatePermit2TypedData({
      params: r.body.params_to_sign,
      sourceToken: qr.body.source_token,
      sourceAmountLots: qr.body.source_amount_lots,
      deadlineSecs: r.body.deadline_secs,
    });
    const sig = await privateKeyToAccount(user.privateKey).signTypedData(td as never);
    expect(
      (await call('POST', `/affiliate/v1/intents/${id}/approvals`, { type: 'permit2', signed_data: sig }))
        .status,
    ).toBe(200);
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await refused(id, 'deposit', fakeTxHash('evm', 'tron-deposit'), 'not_found');
    const pulled = await chains.escrowDepositFromExecution(await execution(id));
    await ok(id, 'deposit', pulled, 'UserDeposited');
    const min = BigInt(qr.body.min_dest_amount_lots);
    await ok(id, 'fulfil', await chains.erc20Transfer(RESOLVER_EVM_KEY, chains.usdc, dest, min), 'Fulfilled');
    const rec = (await call('GET', `/affiliate/v1/swaps/intents/${id}`)).body;
    expect(rec.settlement[0]).toMatchObject({
      leg: 'deposit',
      network_id: NET.tron,
      tx_hash: pulled,
      recipient: chains.config.tronEscrow,
      sender: user.address,
    });
  });

  it('Solana → Bitcoin: the user-signed, resolver-co-signed v0 transaction executes on the SVM and is the deposit; no claim leg', async () => {
    const user = await generateKeyPairSigner();
    await chains.sol.airdrop(user.address, 5n * 10n ** 9n);
    const q = await quote({
      sourceChain: NET.sol,
      sourceToken: SOL_MINT,
      destChain: NET.btc,
      destToken: 'BTC',
      amount: '1',
    });
    const lamports = BigInt(q.sourceAmountLots);
    const dest = btcKey().address;
    const i = await intent({
      quoteId: q.quoteId,
      sourceAddress: user.address,
      sourcePublicKey: user.address,
      refundAddress: user.address,
      destinationAddress: dest,
    });
    await approve(
      i.intentId,
      await signCosignApproval(
        i.cosign!,
        { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
        { destination: RESOLVER_SOL, lamports, feePayer: RESOLVER_SOL },
      ),
    );
    const id = i.intentId;
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    // The same lamports moved by another transaction (not the approved one) prove nothing.
    await refused(
      id,
      'deposit',
      await chains.solTransfer(user, RESOLVER_SOL, lamports),
      'not_the_approved_transaction',
    );
    await refused(id, 'deposit', fakeTxHash('sol', 'c-deposit'), 'not_found');
    // The resolver signs position 0 of the user-signed transaction and sends it.
    const wire = Buffer.from(String((await execution(id)).signed_transaction), 'hex');
    const count = wire[0]!;
    const message = wire.subarray(1 + 64 * count);
    wire.set(await signBytes(RESOLVER_SOL_SIGNER.keyPair.privateKey, message), 1);
    const sent = await chains.solSend(wire.toString('hex'));
    await ok(id, 'deposit', sent, 'UserDeposited');

    const min = BigInt(q.minDestAmountLots);
    const data = fulfilCommitment(id).toString('hex');
    await ok(id, 'fulfil', await devnet.fund(dest, sats(min), { confirm: true, data }), 'Fulfilled');
    await refused(id, 'claim', fakeTxHash('sol', 'c-claim'), 'no_claim_leg');
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement[0]).toMatchObject({
      leg: 'deposit',
      networkId: NET.sol,
      txHash: sent,
      recipient: RESOLVER_SOL,
      amount: lamports.toString(),
      sender: user.address,
      confirmations: 32,
    });
  });

  it('EVM → Solana: the resolver’s System transfer to the user verified on the SVM; other senders, too little, fake ids refused', async () => {
    const { q, dest, i } = await permit2Intent(
      NET.sol,
      SOL_MINT,
      '500000000',
      (await generateKeyPairSigner()).address,
    );
    const id = i.intentId;
    const min = BigInt(q.minDestAmountLots);
    // The resolver's own transfer to the user, but made before it accepted: proves nothing.
    const early = await chains.solTransfer(RESOLVER_SOL_SIGNER, dest, min);
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await ok(id, 'deposit', await chains.escrowDepositFromExecution(await execution(id)), 'UserDeposited');
    await refused(id, 'fulfil', early, 'older_than_acceptance');
    await refused(
      id,
      'fulfil',
      await chains.solTransfer(RESOLVER_SOL_SIGNER, randomSolanaAddress(), min),
      'recipient',
    );
    await refused(id, 'fulfil', fakeTxHash('sol', 'e-fulfil'), 'not_found');
    await refused(id, 'fulfil', await chains.solTransfer(RESOLVER_SOL_SIGNER, dest, min - 1n), 'amount');
    await refused(id, 'fulfil', await chains.sol.airdrop(dest, min), 'sender');
    const paid = await chains.solTransfer(RESOLVER_SOL_SIGNER, dest, min);
    await ok(id, 'fulfil', paid, 'Fulfilled');
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement[1]).toMatchObject({
      leg: 'fulfil',
      networkId: NET.sol,
      txHash: paid,
      recipient: dest,
      sender: RESOLVER_SOL,
      amount: min.toString(),
    });
  });
});
