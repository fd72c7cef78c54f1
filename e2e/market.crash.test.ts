/**
 * The reference resolver killed with SIGKILL in the middle of a swap, as real processes on the devnet
 * (startMarket: the devnodes, the swap service, the resolver; blocks every second; the user's side is
 * examples/swap-pairs.mjs with the SDK).
 *
 * 1. At each crash point (`RGBX_RESOLVER_CRASH_AT`) the resolver dies by the signal; started again
 *    without it, it finishes the swap exactly once: `Fulfilled`, the claim recorded where the source
 *    has one, the user holding exactly the quote's maximum, and on chain exactly one payment to the
 *    user (ERC-20 Transfer logs from the resolver; Bitcoin outputs to the user's address), which is
 *    the transaction the resolver stored before the crash when it had stored one. Every crash point
 *    on SQLite and on PostgreSQL (the swap's and the resolver's stores).
 * 2. A resolver that goes silent after accepting (short deadlines: `intent_ttl_secs` 60, a refund
 *    margin of 5 s): the user gets the source back by the refund path (HTLC refund leaf; the escrow's
 *    refund) → `Refunded`, or nothing was ever taken; the resolver started again after the deadline
 *    pays nobody and closes its fill. Five markets at once on one devnet (one per scenario). SQLite,
 *    and PostgreSQL for the escrow scenario.
 *    Known gap pinned here: an HTLC funded by the service on accept but never reported as a deposit
 *    (resolver dead right after accepting) cannot be marked Refunded; the user's BTC come back on chain.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildHtlc, buildHtlcRefundTx } from '@rgbx/chains/btc';
import { uuidToBytes32 } from '@rgbx/chains/evm';
import {
  type BlockProducer,
  DEVNET_RESOLVER,
  type Devnet,
  type Market,
  type MarketOptions,
  produceBlocks,
  type ServiceProcess,
  startDevnet,
  startMarket,
} from '@rgbx/devnet';
import { escrowRefund } from '@rgbx/devnet/evm-devnode';
import { SwapApiError } from '@rgbx/sdk';
import { createTestPgDatabase, type Dialect, openDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM example without type declarations
import { marketContext, runPair } from '../examples/swap-pairs.mjs';

type Hex = `0x${string}`;
type CrashPoint = 'after-accept' | 'after-deposit' | 'payment-signed' | 'payment-broadcast' | 'before-claim';
interface Leg {
  leg: string;
  txHash: string;
  amount: string;
  recipient: string;
}
interface User {
  btc: { privateKey: Uint8Array; xonly: Uint8Array; address: string };
  evmKey: Hex;
  evm: { address: Hex };
  sol: { address: string };
}
interface Approved {
  intentId: string;
  intent: {
    intentId: string;
    deadlineSecs: number;
    secretHash: string;
    htlc?: {
      locktime: number;
      resolverPubkey: string;
      userPubkey: string;
      htlcAddress: string;
      fundingTxid: string;
      htlcVout: number;
      fee: string;
    };
  };
  quote: { sourceAmountLots: string; maxDestAmountLots: string };
  user: User;
  before: { source: bigint; dest: bigint };
}
interface MarketCtx {
  swap: {
    status(id: string): Promise<string>;
    swap(id: string): Promise<{ settlement: Leg[] }>;
    requestRefund(id: string): Promise<{ status: string }>;
    reportRefundTx(id: string, tx: string): Promise<{ status: string }>;
  };
  usdcBalance(a: string): Promise<bigint>;
  btcBalance(a: string): Promise<bigint>;
}
interface FillRow {
  intent_id: string;
  state: string;
  note: string | null;
}
interface TxRow {
  intent_id: string;
  role: string;
  attempt: number;
  txid: string;
  state: string;
}

const RESOLVER_EVM = DEVNET_RESOLVER.evmAddress.toLowerCase();
const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sats = (btc: number) => BigInt(Math.round(btc * 1e8));
const topicAddress = (t: string | undefined) => `0x${(t ?? '').slice(26)}`.toLowerCase();

/** Polls `probe` until it returns a value other than undefined; throws `what` after `timeoutMs`. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const v = await probe().catch((err: unknown) => {
      last = err;
      return undefined;
    });
    if (v !== undefined) return v;
    if (Date.now() > end)
      throw new Error(
        `timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    await sleep(300);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'rgbx-market-crash-'));
let devnet: Devnet;
const dbs: { drop(): Promise<void> }[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ dir: join(dir, 'devnet') });
}, 120_000);
afterAll(async () => {
  await devnet?.stop();
  for (const d of dbs) await d.drop().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** A market on the shared devnet, without a resolver; stopped by `close`. */
async function openMarket(
  name: string,
  dialect: Dialect,
  opts: Pick<MarketOptions, 'swap' | 'fill'> & { mineBitcoin?: boolean } = {},
) {
  const urls: { swapDatabaseUrl?: string; resolverDatabaseUrl?: string } = {};
  let resolverDb = `sqlite:${join(dir, name, 'resolver', 'data', 'resolver.db')}`;
  if (dialect === 'postgres') {
    const swapDb = await createTestPgDatabase('rgbx_crash_swap');
    const rDb = await createTestPgDatabase('rgbx_crash_resolver');
    dbs.push(swapDb, rDb);
    urls.swapDatabaseUrl = swapDb.url;
    urls.resolverDatabaseUrl = rDb.url;
    resolverDb = rDb.url;
  }
  const exits: string[] = [];
  const market = await startMarket({
    dir: join(dir, name),
    devnet,
    noResolver: true,
    logLevel: 'warn',
    ...urls,
    ...(opts.swap ? { swap: opts.swap } : {}),
    ...(opts.fill ? { fill: opts.fill } : {}),
    onExit: (n, code) => exits.push(`${n} exited (${code})`),
  });
  let blocks: BlockProducer | undefined;
  try {
    // Bitcoin blocks every second (markets that run at once share the devnet: those that need no
    // Bitcoin confirmations leave it to the others).
    const miner = opts.mineBitcoin === false ? { mine: async () => [] } : devnet;
    blocks = produceBlocks({ devnet: miner, intervalMs: 1000, evmRpcUrl: market.evm.rpcUrl });
    const m = (await marketContext({
      swapUrl: market.swapUrl,
      apiKey: market.swapApiKey,
      evm: market.evm,
      solanaRpcUrl: market.solanaRpcUrl,
      devnet,
    })) as MarketCtx;
    return new MarketUnderTest(market, blocks, m, resolverDb, exits);
  } catch (err) {
    await blocks?.stop();
    await market.stop();
    throw err;
  }
}

class MarketUnderTest {
  readonly market: Market;
  readonly blocks: BlockProducer;
  readonly m: MarketCtx;
  readonly resolverDb: string;
  readonly exits: string[];

  constructor(market: Market, blocks: BlockProducer, m: MarketCtx, resolverDb: string, exits: string[]) {
    this.market = market;
    this.blocks = blocks;
    this.m = m;
    this.resolverDb = resolverDb;
    this.exits = exits;
  }

  async close(): Promise<void> {
    await this.blocks.stop();
    await this.market.stop();
  }

  /** The resolver's warnings and errors (for failure messages). */
  resolverLog(): string {
    return (this.market.resolver?.stderr() ?? '')
      .split('\n')
      .filter((l) => /"level":(40|50|60)/.test(l))
      .slice(-15)
      .join('\n');
  }

  /** Starts the resolver (stopping a running one first), optionally with a crash point. */
  async startResolver(point?: CrashPoint): Promise<ServiceProcess<string>> {
    const r = this.market.resolver;
    if (r && r.proc.exitCode === null && r.proc.signalCode === null) await r.stop();
    return this.market.startResolver(point ? { RGBX_RESOLVER_CRASH_AT: point } : undefined);
  }

  /** Waits until `p` died by SIGKILL at `point` (its own crash hook, not anything else). */
  async killedAt(p: ServiceProcess<string>, point: CrashPoint): Promise<void> {
    if (p.proc.exitCode === null && p.proc.signalCode === null) {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), 90_000);
      try {
        await once(p.proc, 'exit', { signal: ac.signal });
      } catch {
        throw new Error(`the resolver did not crash at ${point}:\n${p.stderr()}`);
      } finally {
        clearTimeout(timer);
      }
    }
    expect(p.proc.signalCode, p.stderr()).toBe('SIGKILL');
    expect(p.stderr()).toMatch(new RegExp(`"point":"${point}".*RGBX_RESOLVER_CRASH_AT: killing`));
  }

  async status(id: string): Promise<string> {
    return this.m.swap.status(id);
  }

  async waitStatus(id: string, want: string, timeoutMs = 90_000): Promise<void> {
    await until(
      `${id} ${want}`,
      async () => ((await this.status(id)) === want ? true : undefined),
      timeoutMs,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message} (is ${await this.status(id)})\n${this.resolverLog()}`);
    });
  }

  async legs(id: string): Promise<string[]> {
    return (await this.m.swap.swap(id)).settlement.map((l) => l.leg);
  }

  /** The resolver's own records of an intent (its store, SQLite or PostgreSQL). */
  async resolverRecords(id: string): Promise<{ fill: FillRow | undefined; txs: TxRow[] }> {
    const o = openDatabase<{ fills: FillRow; txs: TxRow }>(this.resolverDb);
    try {
      const fill = await o.db
        .selectFrom('fills')
        .select(['intent_id', 'state', 'note'])
        .where('intent_id', '=', id)
        .executeTakeFirst();
      const txs = await o.db
        .selectFrom('txs')
        .select(['intent_id', 'role', 'attempt', 'txid', 'state'])
        .where('intent_id', '=', id)
        .orderBy('role')
        .orderBy('attempt')
        .execute();
      return { fill, txs: txs.map((t) => ({ ...t, attempt: Number(t.attempt) })) };
    } finally {
      await o.close();
    }
  }

  async evmRpc<T>(method: string, params: unknown[] = []): Promise<T> {
    const res = await fetch(this.market.evm.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { result: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  }

  async evmBlock(): Promise<number> {
    return Number(BigInt(await this.evmRpc<string>('eth_blockNumber')));
  }

  /**
   * Every ERC-20 Transfer of the market's USDC from the resolver to `to` in blocks ≥ `fromBlock`
   * (the devnode has no eth_getLogs: every block and receipt is read), as amounts with their tx.
   */
  async usdcTransfersToFromResolver(
    to: string,
    fromBlock: number,
  ): Promise<{ tx: string; amount: bigint }[]> {
    const out: { tx: string; amount: bigint }[] = [];
    const usdc = this.market.evm.usdc.toLowerCase();
    const last = await this.evmBlock();
    for (let n = fromBlock; n <= last; n++) {
      const b = await this.evmRpc<{ transactions: string[] }>('eth_getBlockByNumber', [
        `0x${n.toString(16)}`,
        false,
      ]);
      for (const hash of b.transactions) {
        const r = await this.evmRpc<{ logs: { address: string; topics: string[]; data: string }[] }>(
          'eth_getTransactionReceipt',
          [hash],
        );
        for (const l of r.logs)
          if (
            l.address.toLowerCase() === usdc &&
            l.topics[0] === TRANSFER_TOPIC &&
            topicAddress(l.topics[1]) === RESOLVER_EVM &&
            topicAddress(l.topics[2]) === to.toLowerCase()
          )
            out.push({ tx: hash, amount: BigInt(l.data) });
      }
    }
    return out;
  }
}

/** Every output paying `address`: confirmed and unspent (scantxoutset) plus those in the mempool. */
async function btcOutputsTo(address: string): Promise<{ txid: string; sats: bigint }[]> {
  const scan = await devnet.rpc<{ unspents: { txid: string; amount: number }[] }>('scantxoutset', [
    'start',
    [`addr(${address})`],
  ]);
  const out = scan.unspents.map((u) => ({ txid: u.txid, sats: sats(u.amount) }));
  for (const txid of await devnet.rpc<string[]>('getrawmempool')) {
    const tx = await devnet
      .rpc<{ vout: { value: number; scriptPubKey: { address?: string } }[] }>('getrawtransaction', [
        txid,
        true,
      ])
      .catch(() => undefined); // mined meanwhile: then scantxoutset saw it or will on the next read
    for (const o of tx?.vout ?? [])
      if (o.scriptPubKey.address === address) out.push({ txid, sats: sats(o.value) });
  }
  return out;
}

const CASES: { point: CrashPoint; pair: string; claims: boolean; atCrash: string }[] = [
  // SOL → USDC: the co-signed deposit and the ERC-20 payment happen after the restart.
  { point: 'after-accept', pair: 'SOL->USDC', claims: false, atCrash: 'Accepted' },
  // USDC → BTC: the escrow holds the tokens; the BTC payment and the escrow claim after the restart.
  { point: 'after-deposit', pair: 'USDC->BTC', claims: true, atCrash: 'UserDeposited' },
  // BTC → USDC: the ERC-20 payment is signed and stored, never sent: the restart sends those bytes.
  { point: 'payment-signed', pair: 'BTC->USDC', claims: true, atCrash: 'UserDeposited' },
  // BTC → USDC: the payment is mined (automine) but not reported: the restart reports it, no new one.
  { point: 'payment-broadcast', pair: 'BTC->USDC', claims: true, atCrash: 'UserDeposited' },
  // USDC → BTC: paid and verified (Fulfilled), the escrow claim after the restart.
  { point: 'before-claim', pair: 'USDC->BTC', claims: true, atCrash: 'Fulfilled' },
];

describe.each<Dialect>(['sqlite', 'postgres'])(
  'resolver kill -9 at each crash point (%s stores)',
  (dialect) => {
    let t: MarketUnderTest;

    beforeAll(async () => {
      t = await openMarket(`crash-${dialect}`, dialect);
    }, 180_000);
    afterAll(async () => {
      await t?.close();
    }, 60_000);

    it.each(CASES)(
      'killed at $point ($pair): resumes and pays exactly once',
      async ({ point, pair, claims, atCrash }) => {
        const fromBlock = await t.evmBlock();
        const crashing = await t.startResolver(point);
        const r = (await runPair(t.m, pair, { log: () => {}, wait: false })) as Approved;
        const id = r.intentId;
        await t.killedAt(crashing, point);
        const max = BigInt(r.quote.maxDestAmountLots);
        const toEvm = pair.endsWith('USDC');
        const userDest = toEvm ? r.user.evm.address : r.user.btc.address;

        // Where the crash left it.
        expect(await t.status(id)).toBe(atCrash);
        const atKill = await t.resolverRecords(id);
        expect(atKill.fill?.state).toBe('active');
        const storedPayment = atKill.txs.filter((x) => x.role === 'payment');
        if (point === 'payment-signed') {
          // Signed and stored, not sent: nothing on chain yet.
          expect(storedPayment.map((x) => [x.attempt, x.state])).toEqual([[0, 'signed']]);
          expect(await t.usdcTransfersToFromResolver(userDest, fromBlock)).toEqual([]);
        }
        if (point === 'payment-broadcast') {
          expect(storedPayment.map((x) => [x.attempt, x.state])).toEqual([[0, 'sent']]);
          expect(await t.usdcTransfersToFromResolver(userDest, fromBlock)).toEqual([
            { tx: storedPayment[0]!.txid, amount: max },
          ]);
        }
        if (point === 'before-claim') expect(await t.legs(id)).toEqual(['deposit', 'fulfil']);

        // Started again without the crash point: it finishes the swap.
        await t.startResolver();
        await t.waitStatus(id, 'Fulfilled');
        const legs = await until(
          `${id}: every leg`,
          async () => {
            const l = await t.legs(id);
            return !claims || l.includes('claim') ? l : undefined;
          },
          60_000,
        ).catch((err: Error) => {
          throw new Error(`${err.message}\n${t.resolverLog()}`);
        });
        expect(legs).toEqual(claims ? ['deposit', 'fulfil', 'claim'] : ['deposit', 'fulfil']);
        const fulfil = (await t.m.swap.swap(id)).settlement.find((l) => l.leg === 'fulfil')!;

        // The resolver closes its fill, with one payment: attempt 0, confirmed, the transaction it
        // stored before the crash (when it had stored one).
        const done = await until(
          `${id}: the resolver's fill done`,
          async () => {
            const rec = await t.resolverRecords(id);
            return rec.fill?.state === 'done' ? rec : undefined;
          },
          30_000,
        );
        const payments = done.txs.filter((x) => x.role === 'payment');
        expect(payments.map((x) => [x.attempt, x.state])).toEqual([[0, 'confirmed']]);
        expect(payments[0]!.txid.replace(/^0x/, '')).toBe(fulfil.txHash.replace(/^0x/, ''));
        if (storedPayment.length) expect(payments[0]!.txid).toBe(storedPayment[0]!.txid);

        // Exactly one payment on chain, of exactly the quote's maximum; the user holds exactly that.
        await sleep(2500); // blocks keep coming: a second payment would be mined (or in the mempool) by now
        if (toEvm) {
          expect(await t.usdcTransfersToFromResolver(userDest, fromBlock)).toEqual([
            { tx: payments[0]!.txid, amount: max },
          ]);
          expect(await t.m.usdcBalance(userDest)).toBe(max);
        } else {
          expect(await btcOutputsTo(userDest)).toEqual([{ txid: payments[0]!.txid, sats: max }]);
          expect(await t.m.btcBalance(userDest)).toBe(max);
        }
        expect(r.before.dest).toBe(0n);
      },
      300_000,
    );
  },
);

/** Spends the HTLC's refund leaf to the user once the chain's median time passes the lock time. */
async function refundHtlc(r: Approved): Promise<{ txid: string; fee: bigint }> {
  const h = r.intent.htlc!;
  const htlc = buildHtlc({
    secretHash: r.intent.secretHash.replace(/^0x/, ''),
    resolverPubkey: h.resolverPubkey,
    userPubkey: h.userPubkey,
    locktime: h.locktime,
    network: 'regtest',
  });
  expect(htlc.address).toBe(h.htlcAddress);
  const funding = await devnet.rpc<{ vout: { value: number }[] }>('getrawtransaction', [h.fundingTxid, true]);
  const amount = sats(funding.vout[h.htlcVout]!.value);
  expect(amount).toBe(BigInt(r.quote.sourceAmountLots));
  const tx = buildHtlcRefundTx({
    htlc,
    fundingTxid: h.fundingTxid,
    vout: h.htlcVout,
    amount,
    destinationAddress: r.user.btc.address,
    feeRate: 2n,
    userPrivateKey: r.user.btc.privateKey,
  });
  // Refused as non-final until the median time past of the tip passes the lock time (BIP 113).
  await until(
    'the HTLC refund to be accepted (lock time)',
    async () => {
      try {
        await devnet.rpc('sendrawtransaction', [tx.txHex]);
        return true;
      } catch (err) {
        if (/non-final/i.test((err as Error).message)) return undefined;
        throw err;
      }
    },
    60_000,
  );
  await until('the refund mined', async () => {
    const info = await devnet.rpc<{ confirmations?: number }>('getrawtransaction', [tx.txid, true]);
    return (info.confirmations ?? 0) >= 1 ? true : undefined;
  });
  return { txid: tx.txid, fee: tx.fee };
}

/** Reports the refund until the service has seen it confirmed. */
async function reportRefund(t: MarketUnderTest, id: string, tx: string): Promise<string> {
  return until(
    `${id}: the refund report`,
    async () => {
      try {
        return (await t.m.swap.reportRefundTx(id, tx)).status;
      } catch (err) {
        if (err instanceof SwapApiError && err.type === 'TX_NOT_VERIFIED') return undefined;
        throw err;
      }
    },
    60_000,
  );
}

/** The late resolver pays nobody for `r` and marks its fill finished. */
async function lateResolverPaysNothing(
  t: MarketUnderTest,
  r: Approved,
  toEvm: boolean,
  fromBlock: number,
  storedPayments: [number, string][] = [],
) {
  const resolverUsdc = await t.m.usdcBalance(DEVNET_RESOLVER.evmAddress);
  await t.startResolver();
  const rec = await until(
    `${r.intentId}: the late resolver's fill finished`,
    async () => {
      const x = await t.resolverRecords(r.intentId);
      return x.fill && x.fill.state !== 'active' ? x : undefined;
    },
    30_000,
  );
  expect(rec.fill!.state).toBe('done');
  await sleep(3000); // time enough for a (wrong) payment to reach the chain
  const payments = (await t.resolverRecords(r.intentId)).txs.filter((x) => x.role === 'payment');
  expect(payments.map((x) => [x.attempt, x.state])).toEqual(storedPayments);
  if (toEvm) {
    expect(await t.usdcTransfersToFromResolver(r.user.evm.address, fromBlock)).toEqual([]);
    expect(await t.m.usdcBalance(r.user.evm.address)).toBe(0n);
    expect(await t.m.usdcBalance(DEVNET_RESOLVER.evmAddress)).toBe(resolverUsdc);
  } else {
    expect(await btcOutputsTo(r.user.btc.address)).toEqual([]);
  }
  expect(t.market.resolver!.proc.exitCode).toBe(null);
}

/** Short deadlines: 60 s intents (the schema's minimum), a 5 s refund margin, a 10 s payment cut-off. */
const SHORT = {
  swap: { intent_ttl_secs: 60, refund_safety_margin_secs: 5, scheduler_interval_ms: 500 },
  fill: { safety_secs: 10 },
};

describe.concurrent('a resolver that accepts and goes silent (short deadlines; five markets at once)', () => {
  it('BTC source (htlc), silent after the deposit (SQLite): the user spends the refund leaf → Refunded; the late resolver pays nothing', async () => {
    const t = await openMarket('silent-htlc', 'sqlite', SHORT);
    try {
      const fromBlock = await t.evmBlock();
      const crashing = await t.startResolver('after-deposit');
      const r = (await runPair(t.m, 'BTC->USDC', { log: () => {}, wait: false })) as Approved;
      await t.killedAt(crashing, 'after-deposit');
      expect(await t.status(r.intentId)).toBe('UserDeposited');
      expect(await t.m.btcBalance(r.intent.htlc!.htlcAddress)).toBe(BigInt(r.quote.sourceAmountLots));

      await t.waitStatus(r.intentId, 'Expired', 120_000);
      expect((await t.m.swap.requestRefund(r.intentId)).status).toBe('RefundRequested');
      const refund = await refundHtlc(r);
      expect(await reportRefund(t, r.intentId, refund.txid)).toBe('Refunded');
      expect(await t.legs(r.intentId)).toEqual(['deposit', 'refund']);
      // Back to the user: everything but the funding fee (signed in the approval) and the refund's fee.
      expect(await t.m.btcBalance(r.user.btc.address)).toBe(
        r.before.source - BigInt(r.intent.htlc!.fee) - refund.fee,
      );
      expect(await t.m.btcBalance(r.intent.htlc!.htlcAddress)).toBe(0n);

      await lateResolverPaysNothing(t, r, true, fromBlock);
      expect(await t.status(r.intentId)).toBe('Refunded');
    } finally {
      await t.close();
    }
  }, 300_000);

  it('BTC source (htlc), silent after the accept (SQLite): the service broadcast the funding; the user spends the refund leaf and has the BTC back on chain; the late resolver pays nothing; the service records the refund (it broadcast the funding itself)', async () => {
    const t = await openMarket('silent-htlc-accept', 'sqlite', SHORT);
    try {
      const fromBlock = await t.evmBlock();
      const crashing = await t.startResolver('after-accept');
      const r = (await runPair(t.m, 'BTC->USDC', { log: () => {}, wait: false })) as Approved;
      await t.killedAt(crashing, 'after-accept');
      expect(await t.status(r.intentId)).toBe('Accepted');
      // Accepting broadcast the user's funding: the HTLC holds the amount, the resolver never reported it.
      await until('the HTLC funded', async () =>
        (await t.m.btcBalance(r.intent.htlc!.htlcAddress)) === BigInt(r.quote.sourceAmountLots)
          ? true
          : undefined,
      );

      await t.waitStatus(r.intentId, 'Expired', 120_000);
      const refund = await refundHtlc(r);
      expect(await t.m.btcBalance(r.user.btc.address)).toBe(
        r.before.source - BigInt(r.intent.htlc!.fee) - refund.fee,
      );
      expect(await t.m.btcBalance(r.intent.htlc!.htlcAddress)).toBe(0n);

      await lateResolverPaysNothing(t, r, true, fromBlock);

      // No deposit was ever reported, but the service broadcast this funding itself on accept: the
      // user's refund (a spend of this intent's HTLC output through the refund leaf) is recorded.
      expect((await t.m.swap.requestRefund(r.intentId)).status).toBe('RefundRequested');
      expect((await t.m.swap.reportRefundTx(r.intentId, refund.txid)).status).toBe('Refunded');
      const legs = (await t.m.swap.swap(r.intentId)).settlement.map((l: { leg: string }) => l.leg);
      expect(legs).toEqual(['refund']);
    } finally {
      await t.close();
    }
  }, 300_000);

  it('BTC source (htlc), payment signed and stored, resolver back only after the deadline (SQLite): the stored payment is never sent; the user refunds → Refunded', async () => {
    const t = await openMarket('late-signed-payment', 'sqlite', SHORT);
    try {
      const fromBlock = await t.evmBlock();
      const crashing = await t.startResolver('payment-signed');
      const r = (await runPair(t.m, 'BTC->USDC', { log: () => {}, wait: false })) as Approved;
      await t.killedAt(crashing, 'payment-signed');
      expect(await t.status(r.intentId)).toBe('UserDeposited');
      const stored = (await t.resolverRecords(r.intentId)).txs.filter((x) => x.role === 'payment');
      expect(stored.map((x) => [x.attempt, x.state])).toEqual([[0, 'signed']]);

      // Back after the deadline: sending the stored payment now would pay a user who refunds too.
      await t.waitStatus(r.intentId, 'Expired', 120_000);
      await lateResolverPaysNothing(t, r, true, fromBlock, [[0, 'dead']]);

      expect((await t.m.swap.requestRefund(r.intentId)).status).toBe('RefundRequested');
      const refund = await refundHtlc(r);
      expect(await reportRefund(t, r.intentId, refund.txid)).toBe('Refunded');
      expect(await t.m.btcBalance(r.user.btc.address)).toBe(
        r.before.source - BigInt(r.intent.htlc!.fee) - refund.fee,
      );
      // Still nothing sent after the refund (the resolver follows the feed and re-drives its fills).
      await sleep(2000);
      expect(await t.usdcTransfersToFromResolver(r.user.evm.address, fromBlock)).toEqual([]);
    } finally {
      await t.close();
    }
  }, 300_000);

  it('EVM source (permit2), silent after the escrow deposit (PostgreSQL): the user calls the escrow refund → Refunded, USDC exactly back; the late resolver pays nothing', async () => {
    const t = await openMarket('silent-escrow', 'postgres', { ...SHORT, mineBitcoin: false });
    try {
      const escrowBefore = await t.m.usdcBalance(t.market.evm.escrow);
      const crashing = await t.startResolver('after-deposit');
      const r = (await runPair(t.m, 'USDC->BTC', { log: () => {}, wait: false })) as Approved;
      const amount = BigInt(r.quote.sourceAmountLots);
      await t.killedAt(crashing, 'after-deposit');
      expect(await t.status(r.intentId)).toBe('UserDeposited');
      expect(await t.m.usdcBalance(t.market.evm.escrow)).toBe(escrowBefore + amount);
      expect(await t.m.usdcBalance(r.user.evm.address)).toBe(r.before.source - amount);

      await t.waitStatus(r.intentId, 'Expired', 120_000);
      expect((await t.m.swap.requestRefund(r.intentId)).status).toBe('RefundRequested');
      // The escrow refuses before deadline + margin (by its block time): retried until it accepts.
      const refundTx = await until(
        'the escrow refund',
        async () => {
          try {
            return await escrowRefund(
              t.market.evm.rpcUrl,
              t.market.evm.chainId,
              r.user.evmKey,
              t.market.evm.escrow,
              uuidToBytes32(r.intentId),
              r.user.evm.address,
            );
          } catch (err) {
            if (/RefundNotYetAvailable/.test((err as Error).message)) return undefined;
            throw err;
          }
        },
        60_000,
      );
      expect(await reportRefund(t, r.intentId, refundTx)).toBe('Refunded');
      expect(await t.legs(r.intentId)).toEqual(['deposit', 'refund']);
      expect(await t.m.usdcBalance(r.user.evm.address)).toBe(r.before.source);
      expect(await t.m.usdcBalance(t.market.evm.escrow)).toBe(escrowBefore);

      await lateResolverPaysNothing(t, r, false, 0);
      expect(await t.status(r.intentId)).toBe('Refunded');
    } finally {
      await t.close();
    }
  }, 300_000);

  it('EVM source (permit2), silent after the accept (SQLite): nothing was taken, the intent Expired with the USDC untouched; the late resolver pays nothing', async () => {
    const t = await openMarket('silent-accept', 'sqlite', { ...SHORT, mineBitcoin: false });
    try {
      const escrowBefore = await t.m.usdcBalance(t.market.evm.escrow);
      const crashing = await t.startResolver('after-accept');
      const r = (await runPair(t.m, 'USDC->BTC', { log: () => {}, wait: false })) as Approved;
      await t.killedAt(crashing, 'after-accept');
      expect(await t.status(r.intentId)).toBe('Accepted');

      await t.waitStatus(r.intentId, 'Expired', 120_000);
      expect(await t.m.usdcBalance(r.user.evm.address)).toBe(r.before.source);
      expect(await t.m.usdcBalance(t.market.evm.escrow)).toBe(escrowBefore);
      expect(await t.legs(r.intentId)).toEqual([]);
      // Nothing to refund: the service says so.
      await expect(t.m.swap.requestRefund(r.intentId)).rejects.toMatchObject({
        details: { reason: 'nothing was deposited' },
      });
      // After deadline + margin the resolver comes back: too late for anything.
      await until(
        'deadline + margin',
        async () => (Date.now() / 1000 > r.intent.deadlineSecs + 5 ? true : undefined),
        30_000,
      );
      await lateResolverPaysNothing(t, r, false, 0);
      expect(await t.status(r.intentId)).toBe('Expired');
      expect(await t.m.usdcBalance(r.user.evm.address)).toBe(r.before.source);
    } finally {
      await t.close();
    }
  }, 300_000);
});
