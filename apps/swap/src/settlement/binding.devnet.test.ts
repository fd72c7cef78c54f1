/**
 * Issue 23: a payment the resolver did not make, or made before, never settles a leg. On real chains
 * (Bitcoin regtest through our Electrum server, the Solana devnode), SQLite and PostgreSQL:
 *
 * - the Solana refund of a co-signed deposit (the resolver holds the user's SOL): the reported
 *   finding was an airdrop to the user's source address, mined before the intent existed, accepted
 *   as the refund. Each forgery below lacks exactly one property (sender, recipient, exact amount,
 *   after the deposit) and is refused with its reason, moving nothing;
 * - the Bitcoin fulfilment's height, read while a block is mined between the transaction read and
 *   the tip read: a payment mined in the acceptance block is still older than the acceptance.
 *
 * (The Bitcoin fulfilment's commitment forgeries are in settlement.devnet.test.ts, next to the
 * other fulfilment forgeries of each network.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fulfilCommitment } from '@rgbx/chains/btc';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { type IntentCreated, signCosignApproval } from '@rgbx/sdk';
import { generateKeyPairSigner, type KeyPairSigner, signBytes } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BitcoinGateway, type ChainGateway, createChainGateway } from '../chains/chain-gateway.ts';
import { fakeTxHash, startTestChains, type TestChains } from '../test-chains.ts';
import {
  btcKey,
  DIALECTS,
  NET,
  RESOLVER_KEY,
  RESOLVER_SOL,
  RESOLVER_SOL_SIGNER,
  SOL_MINT,
  startTestService,
  type TestService,
  testClock,
  testDatabases,
} from '../test-support.ts';

const dbs = testDatabases();
let devnet: Devnet;
let dir: string;
let chains: TestChains;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'swap-binding-'));
  [devnet, chains] = await Promise.all([startDevnet({ dir }), startTestChains()]);
}, 120_000);

afterAll(async () => {
  await chains?.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sats = (n: bigint) => `${n / 100_000_000n}.${(n % 100_000_000n).toString().padStart(8, '0')}`;
const SOL_TO_BTC = `
[[resolvers.rates]]
source_network = ${NET.sol}
source_token = "${SOL_MINT}"
dest_network = ${NET.btc}
dest_token = "BTC"
rate = "0.002"
`;

/**
 * The real chain gateway, except that, when armed, the Bitcoin tip read first mines a block and
 * waits for the indexer to see it: the race between reading a transaction and reading the tip.
 */
function racingGateway(electrumUrl: string): { gateway: ChainGateway; arm(): void; raced(): number } {
  const real = createChainGateway({ electrumUrl, electrumTimeoutMs: 10_000 });
  let armed = false;
  let raced = 0;
  const gateway: ChainGateway = {
    bitcoin(): BitcoinGateway {
      const b = real.bitcoin();
      return {
        listUnspent: (s) => b.listUnspent(s),
        history: (s) => b.history(s),
        transaction: (t) => b.transaction(t),
        blockHeader: (h) => b.blockHeader(h),
        broadcast: (hex, txid) => b.broadcast(hex, txid),
        ping: () => b.ping(),
        async tip() {
          if (armed) {
            armed = false;
            const before = await b.tip();
            await devnet.mine(1);
            while ((await b.tip()) === before) await new Promise((r) => setTimeout(r, 50));
            raced++;
          }
          return b.tip();
        },
      };
    },
    allowance: (...a) => real.allowance(...a),
    evm: (n) => real.evm(n),
    solana: (n) => real.solana(n),
    close: () => real.close(),
  };
  return {
    gateway,
    arm: () => {
      armed = true;
    },
    raced: () => raced,
  };
}

describe.each(DIALECTS)('what binds a leg to its intent, party and moment (%s)', (dialect) => {
  let s: TestService;
  const clock = testClock();
  let race: ReturnType<typeof racingGateway>;

  beforeAll(async () => {
    race = racingGateway(devnet.info.electrum);
    s = await startTestService({
      databaseUrl: dbs.url(dialect),
      electrumUrl: devnet.info.electrum,
      minConfirmations: 1,
      now: clock.now,
      gateway: race.gateway,
      ...chains.config,
      extra: SOL_TO_BTC,
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  /** The service the helpers below call (`s`, or another one a test starts). */
  let target: TestService | undefined;
  async function call(method: 'GET' | 'POST', url: string, payload?: unknown, key = (target ?? s).apiKey) {
    const res = await (target ?? s).app.inject({
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
  const legs = async (id: string) =>
    (await call('GET', `/swaps/${id}`)).body.settlement.map((l: { leg: string }) => l.leg) as string[];
  /** A report refused with `reason` (TX_NOT_VERIFIED, 422), leaving the status and the proven legs as they were. */
  async function refused(id: string, action: string, tx: string, reason: string, type = 'TX_NOT_VERIFIED') {
    const [before, legsBefore] = [await status(id), await legs(id)];
    const r = await resolver(id, action, { tx_hash: tx });
    expect([r.status, r.body.type, r.body.details?.reason], JSON.stringify(r.body)).toEqual([
      type === 'TX_NOT_VERIFIED' ? 422 : 409,
      type,
      type === 'TX_NOT_VERIFIED' ? reason : undefined,
    ]);
    expect([await status(id), await legs(id)]).toEqual([before, legsBefore]);
  }

  /** A SOL → BTC intent approved by a fresh user (co-signed transfer to the resolver). */
  async function solIntent(user: KeyPairSigner, refundAddress: string) {
    const q = (
      await call('POST', '/quote', {
        sourceChain: NET.sol,
        sourceToken: SOL_MINT,
        destChain: NET.btc,
        destToken: 'BTC',
        amount: '1',
      })
    ).body as { quoteId: string; sourceAmountLots: string; minDestAmountLots: string };
    const lamports = BigInt(q.sourceAmountLots);
    const dest = btcKey().address;
    const created = await call('POST', '/intents', {
      quoteId: q.quoteId,
      sourceAddress: user.address,
      sourcePublicKey: user.address,
      refundAddress,
      destinationAddress: dest,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const i = created.body as IntentCreated;
    const approval = await signCosignApproval(
      i.cosign!,
      { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
      { destination: RESOLVER_SOL, lamports, feePayer: RESOLVER_SOL },
    );
    expect((await call('POST', `/intents/${i.intentId}/approvals`, approval)).body.status).toBe(
      'ApprovalAdded',
    );
    return { id: i.intentId, i, lamports, dest, min: BigInt(q.minDestAmountLots) };
  }

  /** The resolver co-signs position 0 of the user-signed transaction and sends it: the deposit. */
  async function deposit(id: string): Promise<string> {
    const ex = (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).body.execution;
    const wire = Buffer.from(String(ex.signed_transaction), 'hex');
    const message = wire.subarray(1 + 64 * wire[0]!);
    wire.set(await signBytes(RESOLVER_SOL_SIGNER.keyPair.privateKey, message), 1);
    const sent = await chains.solSend(wire.toString('hex'));
    expect((await resolver(id, 'deposit', { tx_hash: sent })).body.status).toBe('UserDeposited');
    return sent;
  }

  it('Solana refund: only the resolver returning exactly the deposit to the refund address, after the deposit, refunds', async () => {
    clock.set(Date.now());
    // The reported finding: 3 SOL airdropped to the user's source (= refund) address before the intent existed.
    const user = await generateKeyPairSigner();
    const airdrop = await chains.sol.airdrop(user.address, 3n * 10n ** 9n);
    const { id, i, lamports } = await solIntent(user, user.address);
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    // The resolver "refunds" before the user's SOL is even deposited: not a return of the deposit.
    const beforeDeposit = await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports);
    const deposited = await deposit(id);
    // Not expired yet: no refund at all, whatever the transaction.
    const early = await resolver(id, 'refund', { tx_hash: airdrop });
    expect([early.status, early.body.type]).toEqual([409, 'INVALID_TRANSITION']);

    clock.set(i.deadlineSecs * 1000 + 1000); // the deadline passes, nobody fulfils
    await refused(id, 'refund', airdrop, 'older_than_deposit');
    await refused(id, 'refund', beforeDeposit, 'older_than_deposit');
    await refused(id, 'refund', deposited, '', 'TX_ALREADY_USED');
    await refused(id, 'refund', fakeTxHash('sol', `refund-${dialect}`), 'not_found');
    // A third party's transfer of exactly the deposit (the faucet), and the user's own: not the resolver's.
    await refused(id, 'refund', await chains.sol.airdrop(user.address, lamports), 'sender');
    const stranger = await generateKeyPairSigner();
    await chains.sol.airdrop(stranger.address, 5n * 10n ** 9n);
    await refused(id, 'refund', await chains.solTransfer(stranger, user.address, lamports), 'sender');
    // The resolver's, but not exactly what was deposited.
    await refused(
      id,
      'refund',
      await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports - 1n),
      'amount',
    );
    await refused(
      id,
      'refund',
      await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports + 1n),
      'amount',
    );
    expect(await status(id)).toBe('Expired');

    const refund = await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports);
    const done = await resolver(id, 'refund', { tx_hash: refund });
    expect(done.body, JSON.stringify(done.body)).toEqual({ intent_id: id, status: 'Refunded' });
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement[1]).toMatchObject({
      leg: 'refund',
      networkId: NET.sol,
      txHash: refund,
      recipient: user.address,
      sender: RESOLVER_SOL,
      amount: lamports.toString(),
    });
    expect(BigInt(rec.settlement[1].blockHeight)).toBeGreaterThan(BigInt(rec.settlement[0].blockHeight));
  });

  it('Solana refund: a refund address other than the source receives it; the source address does not count', async () => {
    clock.set(Date.now());
    const user = await generateKeyPairSigner();
    await chains.sol.airdrop(user.address, 3n * 10n ** 9n);
    const refundTo = (await generateKeyPairSigner()).address;
    const { id, i, lamports } = await solIntent(user, refundTo);
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await deposit(id);
    clock.set(i.deadlineSecs * 1000 + 1000);
    expect((await call('POST', `/intents/${id}/refund-request`)).body.status).toBe('RefundRequested');
    await refused(
      id,
      'refund',
      await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports),
      'recipient',
    );
    const refund = await chains.solTransfer(RESOLVER_SOL_SIGNER, refundTo, lamports);
    // The user reports it (Surface A): the same rules.
    const done = await call('POST', `/intents/${id}/refund-tx`, { txHash: refund });
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'Refunded' });
    expect((await call('GET', `/swaps/${id}`)).body.settlement[1]).toMatchObject({
      recipient: refundTo,
      sender: RESOLVER_SOL,
    });
  });

  /** The resolver co-signs the approved transaction and sends it, reporting nothing: its signature. */
  async function depositUnreported(id: string): Promise<string> {
    const ex = (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).body.execution;
    const wire = Buffer.from(String(ex.signed_transaction), 'hex');
    wire.set(await signBytes(RESOLVER_SOL_SIGNER.keyPair.privateKey, wire.subarray(1 + 64 * wire[0]!)), 1);
    return chains.solSend(wire.toString('hex'));
  }

  it('Solana deposit: the approved co-signed transaction, executed before the resolver accepted, proves nothing — until the intent expires: then the user records it and the refund path opens', async () => {
    clock.set(Date.now());
    const user = await generateKeyPairSigner();
    await chains.sol.airdrop(user.address, 3n * 10n ** 9n);
    const { id, i, lamports } = await solIntent(user, user.address);
    const early = await depositUnreported(id);
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await refused(id, 'deposit', early, 'older_than_acceptance');
    // Not before the intent has ended: a live intent's deposit is the resolver's to report.
    const live = await call('POST', `/intents/${id}/deposit-tx`, { txHash: early });
    expect([live.status, live.body.type]).toEqual([409, 'INVALID_TRANSITION']);
    // Nothing recorded, nothing refundable: what the user saw before record_deposit existed.
    clock.set(i.deadlineSecs * 1000 + 1000);
    const asked = await call('POST', `/intents/${id}/refund-request`);
    expect([asked.status, asked.body.details?.reason]).toEqual([409, 'nothing was deposited']);

    const recorded = await call('POST', `/intents/${id}/deposit-tx`, { txHash: early });
    expect(recorded.body, JSON.stringify(recorded.body)).toMatchObject({ status: 'Expired' });
    expect(await legs(id)).toEqual(['deposit']);
    const again = await call('POST', `/intents/${id}/deposit-tx`, { txHash: early });
    expect([again.status, again.body.details?.reason]).toEqual([409, 'a deposit is already recorded']);
    expect((await call('POST', `/intents/${id}/refund-request`)).body.status).toBe('RefundRequested');
    const refund = await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports);
    const done = await resolver(id, 'refund', { tx_hash: refund });
    expect(done.body, JSON.stringify(done.body)).toEqual({ intent_id: id, status: 'Refunded' });
    expect(await legs(id)).toEqual(['deposit', 'refund']);
  });

  it("Solana deposit made before a decline: the Declined intent records it (not another intent's) and is refunded", async () => {
    clock.set(Date.now());
    const user = await generateKeyPairSigner();
    await chains.sol.airdrop(user.address, 5n * 10n ** 9n);
    const { id, lamports } = await solIntent(user, user.address);
    const other = await solIntent(user, user.address);
    // The resolver takes the user's SOL with the approval it was shown, then declines.
    const taken = await depositUnreported(id);
    const otherDeposit = await depositUnreported(other.id);
    expect((await resolver(id, 'decline', { reason: 'changed my mind' })).body.status).toBe('Declined');

    // Another intent's executed approval is not this intent's deposit.
    const forged = await call('POST', `/intents/${id}/deposit-tx`, { txHash: otherDeposit });
    expect([forged.status, forged.body.details?.reason]).toEqual([422, 'not_the_approved_transaction']);
    const recorded = await call('POST', `/intents/${id}/deposit-tx`, { txHash: taken });
    expect(recorded.body, JSON.stringify(recorded.body)).toMatchObject({ status: 'Declined' });
    expect((await call('POST', `/intents/${id}/refund-request`)).body.status).toBe('RefundRequested');
    const refund = await chains.solTransfer(RESOLVER_SOL_SIGNER, user.address, lamports);
    const done = await call('POST', `/intents/${id}/refund-tx`, { txHash: refund });
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'Refunded' });
  });

  it('Bitcoin fulfilment: a block mined between the transaction read and the tip read does not make a payment in the acceptance block fresh', async () => {
    clock.set(Date.now());
    const user = await generateKeyPairSigner();
    await chains.sol.airdrop(user.address, 3n * 10n ** 9n);
    const { id, dest, min } = await solIntent(user, user.address);
    const data = fulfilCommitment(id).toString('hex');
    // Paid (with this intent's commitment) and mined; the resolver accepts with that block as the tip.
    const inAcceptanceBlock = await devnet.fund(dest, sats(min), { confirm: true, data });
    const electrumTip = () => s.ctx.gateway.bitcoin().tip();
    const mined = await devnet.rpc<{ blockhash: string }>('getrawtransaction', [inAcceptanceBlock, true]);
    const height = (await devnet.rpc<{ height: number }>('getblockheader', [mined.blockhash])).height;
    while ((await electrumTip()) < height) await new Promise((r) => setTimeout(r, 50));
    expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
    await deposit(id);
    const tips = JSON.parse(
      String(
        (
          await s.ctx.db
            .selectFrom('intents')
            .select('accepted_tips')
            .where('id', '=', id)
            .executeTakeFirstOrThrow()
        ).accepted_tips,
      ),
    ) as Record<string, string>;
    expect(tips[String(NET.btc)]).toBe(String(height));

    // tip − confirmations + 1 would read height + 1 here, "after" the acceptance.
    race.arm();
    const racedBefore = race.raced();
    await refused(id, 'fulfil', inAcceptanceBlock, 'older_than_acceptance');
    expect(race.raced()).toBe(racedBefore + 1);

    // A later payment, read under the same race, is recorded at its block's own height.
    const paid = await devnet.fund(dest, sats(min), { confirm: true, data });
    const paidAt = await devnet.rpc<{ blockhash: string }>('getrawtransaction', [paid, true]);
    const paidHeight = (await devnet.rpc<{ height: number }>('getblockheader', [paidAt.blockhash])).height;
    while ((await electrumTip()) < paidHeight) await new Promise((r) => setTimeout(r, 50));
    race.arm();
    const ok = await resolver(id, 'fulfil', { tx_hash: paid });
    expect(ok.body, JSON.stringify(ok.body)).toEqual({ intent_id: id, status: 'Fulfilled' });
    expect(race.raced()).toBe(racedBefore + 2);
    const rec = (await call('GET', `/swaps/${id}`)).body;
    expect(rec.settlement[1]).toMatchObject({
      leg: 'fulfil',
      txHash: paid,
      blockHeight: String(paidHeight),
      blockHash: paidAt.blockhash,
    });
  });
  it('Bitcoin fulfilment: the preimage waits for fulfil_min_confirmations (2 here) while the deposit needed min_confirmations (1)', async () => {
    const strict = await startTestService({
      databaseUrl: dbs.url(dialect),
      electrumUrl: devnet.info.electrum,
      minConfirmations: 1,
      now: clock.now,
      ...chains.config,
      extra: SOL_TO_BTC,
      bitcoinNetwork: { fulfil_min_confirmations: 2 },
    });
    target = strict;
    try {
      clock.set(Date.now());
      const user = await generateKeyPairSigner();
      await chains.sol.airdrop(user.address, 3n * 10n ** 9n);
      const { id, dest, min } = await solIntent(user, user.address);
      expect((await resolver(id, 'accept')).body.status).toBe('Accepted');
      await deposit(id); // UserDeposited at one confirmation
      const electrumTip = () => strict.ctx.gateway.bitcoin().tip();
      const untilIndexed = async (height: number) => {
        while ((await electrumTip()) < height) await new Promise((r) => setTimeout(r, 50));
      };
      const paid = await devnet.fund(dest, sats(min), {
        confirm: true,
        data: fulfilCommitment(id).toString('hex'),
      });
      const mined = await devnet.rpc<{ blockhash: string }>('getrawtransaction', [paid, true]);
      const height = (await devnet.rpc<{ height: number }>('getblockheader', [mined.blockhash])).height;
      await untilIndexed(height);
      const early = await resolver(id, 'fulfil', { tx_hash: paid });
      expect(
        [early.status, early.body.details?.reason, early.body.details?.required],
        JSON.stringify(early.body),
      ).toEqual([422, 'confirmations', 2]);
      expect(await status(id)).toBe('UserDeposited');
      const secret = await call('GET', `/resolver/v1/intents/${id}/secret`, undefined, RESOLVER_KEY);
      expect([secret.status, secret.body.type]).toEqual([409, 'SECRET_NOT_RELEASED']);

      await devnet.mine(1);
      await untilIndexed(height + 1);
      const ok = await resolver(id, 'fulfil', { tx_hash: paid });
      expect(ok.body, JSON.stringify(ok.body)).toEqual({ intent_id: id, status: 'Fulfilled' });
      expect((await call('GET', `/swaps/${id}`)).body.settlement[1]).toMatchObject({
        leg: 'fulfil',
        txHash: paid,
        confirmations: 2,
      });
    } finally {
      target = undefined;
      await strict.close();
    }
  });
});
