#!/usr/bin/env node
/**
 * Swap market benchmark, end to end on the devnet, on the built dist (`npx tsc -b` first): bitcoind +
 * our Electrum server (startDevnet), the EVM and Solana devnodes, the swap service and the reference
 * resolver as their own processes (startMarket, as `npm start` runs them), blocks produced by
 * themselves every --intervals ms (produceBlocks: one Bitcoin block and one `evm_mine` per tick). The
 * user's side is `runPair` of examples/swap-pairs.mjs (fund a fresh user, quote, intent, sign, submit the
 * approval, wait for `Fulfilled`), unchanged but for three things around it:
 * - the approval's submission time is taken when the SDK's `addApproval` is called; the end is the
 *   service's own `fulfilledAt` (same machine clock): latency = approval submitted → `Fulfilled`;
 * - Bitcoin faucet payments are confirmed by the block producer, not by an extra block mined on the spot
 *   (`fund(…, { confirm: true })` mines one, which would also confirm other users' transactions), then
 *   the user waits a random part of an interval (plus 300 ms for Electrum to index the block), so an
 *   approval lands at a random phase of the block clock, as a real user's would; pairs with an EVM,
 *   Tron or Solana source start after a random part of an interval for the same reason;
 * - concurrent users take their EVM funds from their own funder account (one viem client per
 *   account: concurrent sends from one account would race for its nonce).
 *
 * Per interval and round (rounds interleave the intervals, order alternating):
 * - idle: a --idle-secs window with the block producer running and no swap: the swap's and the
 *   resolver's CPU (utime + stime of `/proc/<pid>/stat`) per second — the polling, block-following
 *   and event-feed cost — the baseline of the CPU figures (pooled over the rounds' windows: one clock
 *   tick is 10 ms, so one window alone is coarse);
 * - sequential: --seq swaps of each pair, one user at a time (pair order rotating by round);
 * - concurrent: --users users of one pair at once, for each pair; then a mixed batch, --mixed users of
 *   every pair at once.
 * A phase's CPU window runs from its first user's start until every swap of it is fully settled (the
 * resolver's claim of the source verified, `swappedAt`; none for a Solana source, whose deposit paid
 * the resolver directly): CPU per swap = the window's CPU ÷ swaps; the baseline is the idle rate × the
 * window's length ÷ swaps; "added" is the difference, the ratio their quotient.
 * Throughput: sequential, 60 000 ÷ the median latency (swaps per minute of one user after another);
 * concurrent, swaps ÷ (last `fulfilledAt` − first approval submitted).
 *
 * Block floor: the confirmation waits a pair has on this devnet (min_confirmations 1 on Bitcoin, EVM and
 * Tron; the EVM devnode — also the devnet's "Tron" — mines every transaction into its own block at
 * once, so its transactions have their confirmation when sent; Solana's devnode confirms at once):
 * the Bitcoin legs before `Fulfilled` — the HTLC funding (BTC source) or the resolver's payment (BTC
 * destination). Floor = waits × interval; with a random phase a wait averages half an interval. Not
 * blocks but the market's own steps add to it: the service broadcasts the HTLC funding when the
 * resolver accepts (0.3–0.5 s after the approval here), and the resolver looks at fills waiting for a
 * confirmation every `fill.poll_interval_ms` (1 s on the devnet), not at each block.
 *
 * usage: npx tsc -b && node bench/market.mjs [--intervals 2000[,…]] [--rounds 3] [--seq 2] [--users 5]
 *        [--mixed 2] [--idle-secs 8] [--log-level info]  (env BENCH_MARKET_INTERVALS, BENCH_MARKET_ROUNDS)
 * or `node bench/run.mjs market` (writes bench/results/market.json). Prints a table on stderr and one
 * JSON document on stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { marketContext, runPair } from '../examples/swap-pairs.mjs';
import { CLK_TCK, median, procCpuMs } from './lib.mjs';

const { values } = parseArgs({
  options: {
    intervals: { type: 'string', default: process.env.BENCH_MARKET_INTERVALS ?? '2000' },
    rounds: { type: 'string', default: process.env.BENCH_MARKET_ROUNDS ?? '3' },
    seq: { type: 'string', default: '2' },
    users: { type: 'string', default: '5' },
    mixed: { type: 'string', default: '2' },
    'idle-secs': { type: 'string', default: '8' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const INTERVALS = values.intervals.split(',').map((s) => Number(s.trim()));
if (INTERVALS.some((i) => !Number.isInteger(i) || i < 100))
  throw new Error(`--intervals: integers ≥ 100 (ms) expected, got ${values.intervals}`);
const ROUNDS = Math.max(1, Number(values.rounds));
const SEQ = Math.max(1, Number(values.seq));
const USERS = Math.max(1, Number(values.users));
const MIXED = Math.max(1, Number(values.mixed));
const IDLE_MS = Math.max(1, Number(values['idle-secs'])) * 1000;

const { produceBlocks, startDevnet, startMarket } = await import('../packages/devnet/dist/index.js');

const PAIRS = ['BTC->USDC', 'USDC->BTC', 'USDT(TRON)->USDC', 'SOL->USDC', 'USDC->SOL'];
/** Confirmation waits on the block clock before `Fulfilled` (see the header). */
const WAITS = {
  'BTC->USDC': { waits: 1, which: 'HTLC funding (Bitcoin); the EVM payment confirms when sent' },
  'USDC->BTC': { waits: 1, which: 'the payment (Bitcoin); the escrow deposit confirms when sent (EVM)' },
  'USDT(TRON)->USDC': { waits: 0, which: 'none: deposit and payment on the automining devnode' },
  'SOL->USDC': { waits: 0, which: 'none: Solana confirms at once, the EVM payment when sent' },
  'USDC->SOL': { waits: 0, which: 'none: the EVM deposit when sent, Solana at once' },
};
/** The source is claimed by the resolver after `Fulfilled` (a Solana source paid it at deposit). */
const CLAIMED = (pair) => !pair.startsWith('SOL->');

const log = (m) => process.stderr.write(`${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const r1 = (x) => Math.round(x * 10) / 10;
const r3 = (x) => Math.round(x * 1000) / 1000;
const med = (xs) => (xs.length ? median(xs) : null);
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

const ERC20 = parseAbi(['function transfer(address,uint256) returns (bool)']);

const dir = mkdtempSync(join(tmpdir(), 'market-bench-'));
const load = [loadavg()[0]];
let devnet;
let market;
let blocks;
try {
  devnet = await startDevnet({ dir: join(dir, 'devnet') });
  market = await startMarket({
    dir: join(dir, 'market'),
    devnet,
    logLevel: values['log-level'],
    onExit: (n, c, e) => log(`${n} exited with ${c}\n${e.slice(-2000)}`),
  });
  const pids = { swap: market.swap.proc.pid, resolver: market.resolver.proc.pid };
  const cpuNow = () => ({ swap: procCpuMs(pids.swap), resolver: procCpuMs(pids.resolver), t: Date.now() });

  // -------------------------------------------------------------------------------------------
  // The user's side: runPair, timed from addApproval; the faucet payments confirmed by the producer.
  let interval = INTERVALS[0];
  /** The phase delay of the next Bitcoin-funded user (null: a fresh random one per user). */
  let batchPhase = null;
  const phase = () => batchPhase ?? Math.random() * interval;
  const approvedAt = new Map();
  // (runPair reads Bitcoin balances with scantxoutset: the devnet's rpc runs those one after another.)
  const userDevnet = {
    ...devnet,
    async fund(address, btc, o) {
      const txid = await devnet.fund(address, btc, o?.data === undefined ? {} : { data: o.data });
      if (o?.confirm) {
        // Confirmed by the block producer, then a random phase of the block clock (and Electrum's index).
        for (;;) {
          const tx = await devnet.wallet.call('gettransaction', [txid]);
          if (tx.confirmations >= 1) break;
          await sleep(100);
        }
        await sleep(300 + phase());
      }
      return txid;
    },
  };
  const contextOf = async (funderKey) => {
    const m = await marketContext({
      swapUrl: market.swapUrl,
      apiKey: market.swapApiKey,
      evm: { ...market.evm, funderKey },
      solanaRpcUrl: market.solanaRpcUrl,
      devnet: userDevnet,
    });
    const add = m.swap.addApproval.bind(m.swap);
    m.swap.addApproval = (id, body) => {
      approvedAt.set(id, Date.now());
      return add(id, body);
    };
    return m;
  };
  const main = await contextOf(market.evm.funderKey);

  // One funder account per concurrent user (ETH for gas and the users' ETH, USDC for the users).
  const chain = defineChain({
    id: Number(market.evm.chainId),
    name: 'devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [market.evm.rpcUrl] } },
  });
  const pub = createPublicClient({ chain, transport: http(market.evm.rpcUrl) });
  const funder0 = createWalletClient({
    account: privateKeyToAccount(market.evm.funderKey),
    chain,
    transport: http(market.evm.rpcUrl),
  });
  const mined = async (hash) => {
    const rc = await pub.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (rc.status !== 'success') throw new Error(`funder setup: ${hash} reverted`);
  };
  const funders = [];
  for (let i = 0; i < Math.max(USERS, MIXED * PAIRS.length); i++) {
    const key = generatePrivateKey();
    const to = privateKeyToAccount(key).address;
    await mined(await funder0.sendTransaction({ to, value: 100n * 10n ** 18n }));
    await mined(
      await funder0.writeContract({
        address: market.evm.usdc,
        abi: ERC20,
        functionName: 'transfer',
        args: [to, 10n ** 26n],
      }),
    );
    funders.push(await contextOf(key));
  }

  /** One swap by a fresh user; its latency and the service's timestamps. */
  async function swapOnce(m, pair) {
    const t0 = Date.now();
    try {
      const r = await runPair(m, pair, { log: () => {}, timeoutMs: 180_000 });
      const rec = await m.swap.swap(r.intentId);
      if (r.status !== 'Fulfilled') return { pair, ok: false, error: `ended ${r.status}`, t0 };
      const approved = approvedAt.get(r.intentId);
      const deposited = Date.parse(rec.swapMetadata.userDepositedAt);
      const fulfilled = Date.parse(rec.swapMetadata.fulfilledAt);
      return {
        pair,
        ok: true,
        intentId: r.intentId,
        t0,
        approved,
        fulfilled,
        latency: fulfilled - approved,
        deposit: deposited - approved,
        fulfil: fulfilled - deposited,
        m,
      };
    } catch (err) {
      return { pair, ok: false, error: err instanceof Error ? err.message : String(err), t0 };
    }
  }

  /** Waits until every swap is settled to the end (the resolver's claim verified where there is one). */
  async function settled(swaps) {
    const until = Date.now() + 120_000;
    for (const s of swaps) {
      if (!s.ok || !CLAIMED(s.pair)) continue;
      while ((await s.m.swap.swap(s.intentId)).swapMetadata.swappedAt === null) {
        if (Date.now() > until) throw new Error(`${s.pair} ${s.intentId}: not claimed within 120 s`);
        await sleep(200);
      }
    }
  }

  /** Runs `jobs` (functions returning swaps) at once; CPU from the start to the last claim. */
  async function phaseRun(jobs) {
    const c0 = cpuNow();
    const swaps = (await Promise.all(jobs.map((j) => j()))).flat();
    await settled(swaps);
    const c1 = cpuNow();
    return { swaps, cpu: { swap: c1.swap - c0.swap, resolver: c1.resolver - c0.resolver, ms: c1.t - c0.t } };
  }

  async function idle() {
    const c0 = cpuNow();
    await sleep(IDLE_MS);
    const c1 = cpuNow();
    return { swap: c1.swap - c0.swap, resolver: c1.resolver - c0.resolver, ms: c1.t - c0.t };
  }

  // -------------------------------------------------------------------------------------------
  const data = Object.fromEntries(
    INTERVALS.map((i) => [
      i,
      { idle: [], seq: [], conc: Object.fromEntries(PAIRS.map((p) => [p, []])), mixed: [] },
    ]),
  );
  const failures = [];
  const keep = (swaps, what) => {
    for (const s of swaps.filter((x) => !x.ok)) {
      failures.push({ interval_ms: interval, phase: what, pair: s.pair, error: s.error });
      log(`  FAILED ${what} ${s.pair}: ${s.error}`);
    }
  };
  for (let r = 0; r < ROUNDS; r++) {
    for (const iv of r % 2 === 0 ? INTERVALS : [...INTERVALS].reverse()) {
      interval = iv;
      await blocks?.stop();
      blocks = produceBlocks({
        devnet,
        intervalMs: iv,
        evmRpcUrl: market.evm.rpcUrl,
        onError: (e) => log(`block producer: ${e.message}`),
      });
      const d = data[iv];
      await sleep(iv); // the first block at the new interval
      d.idle.push(await idle());
      const order = PAIRS.map((_, k) => PAIRS[(k + r) % PAIRS.length]);
      // Sequential: one user at a time.
      batchPhase = null;
      for (const pair of Array.from({ length: SEQ }, () => order).flat()) {
        const ph = await phaseRun([
          async () => {
            if (pair.startsWith('BTC->')) return swapOnce(main, pair);
            await sleep(Math.random() * interval);
            return swapOnce(main, pair);
          },
        ]);
        keep(ph.swaps, 'sequential');
        d.seq.push({ pair, ...ph });
      }
      // Concurrent: USERS users of one pair at once, each pair; then MIXED of every pair at once.
      for (const pair of order) {
        batchPhase = Math.random() * interval;
        await sleep(Math.random() * interval);
        const ph = await phaseRun(funders.slice(0, USERS).map((m) => () => swapOnce(m, pair)));
        keep(ph.swaps, 'concurrent');
        d.conc[pair].push(ph);
      }
      batchPhase = Math.random() * interval;
      await sleep(Math.random() * interval);
      const jobs = [];
      for (let k = 0; k < MIXED; k++)
        for (const [j, pair] of order.entries())
          jobs.push(() => swapOnce(funders[k * PAIRS.length + j], pair));
      const ph = await phaseRun(jobs);
      keep(ph.swaps, 'mixed');
      d.mixed.push(ph);
      load.push(loadavg()[0]);
      log(
        `round ${r + 1}/${ROUNDS}, interval ${iv} ms: ` +
          PAIRS.map((p) => {
            const s = d.seq.filter((x) => x.pair === p).at(-1)?.swaps[0];
            return `${p} ${s?.ok ? `${s.latency} ms` : 'failed'}`;
          }).join(', '),
      );
    }
  }

  // -------------------------------------------------------------------------------------------
  // Summary: medians over rounds.
  const okOf = (swaps) => swaps.filter((s) => s.ok);
  const rate = (swaps) => {
    const ok = okOf(swaps);
    if (!ok.length) return null;
    const span = Math.max(...ok.map((s) => s.fulfilled)) - Math.min(...ok.map((s) => s.approved));
    return (ok.length * 60_000) / span;
  };
  /** CPU per swap of a list of phases, against the median idle rate of the same interval. */
  const cpuOf = (phases, idleRate) => {
    const out = {};
    for (const proc of ['swap', 'resolver']) {
      const per = [];
      const base = [];
      for (const ph of phases) {
        const n = okOf(ph.swaps).length;
        if (!n) continue;
        per.push(ph.cpu[proc] / n);
        base.push((idleRate[proc] * ph.cpu.ms) / 1000 / n);
      }
      if (!per.length) continue;
      out[proc] = {
        ms_per_swap: r1(median(per)),
        idle_ms_per_swap: r1(median(base)),
        added_ms_per_swap: r1(median(per.map((x, k) => x - base[k]))),
        vs_idle: r3(median(per.map((x, k) => x / base[k]))),
        runs: per.map(r1),
      };
    }
    return out;
  };
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadavg_1m: load.map((x) => Math.round(x * 100) / 100),
    clk_tck: CLK_TCK,
    intervals_ms: INTERVALS,
    rounds: ROUNDS,
    sequential_per_pair_per_round: SEQ,
    users_per_batch: USERS,
    mixed_users_per_pair: MIXED,
    idle_window_ms: IDLE_MS,
    log_level: values['log-level'],
    resolver_poll_interval_ms: 1000,
    method:
      'latency = approval submitted (SDK addApproval) → the service’s fulfilledAt; sequential swaps/min = 60000 ÷ median latency; concurrent = swaps ÷ (last Fulfilled − first approval) per batch, median over rounds; CPU per swap = /proc utime+stime from a phase’s first user to its last claim ÷ swaps, baseline = the idle CPU rate (block producer running, no swap) × the same length',
    waits: WAITS,
    failures,
    by_interval: {},
  };
  for (const iv of INTERVALS) {
    const d = data[iv];
    // Pooled over the idle windows (one clock tick is 10 ms: a single window's rate is coarse).
    const idleMs = sum(d.idle.map((x) => x.ms));
    const idleRate = {
      swap: (sum(d.idle.map((x) => x.swap)) * 1000) / idleMs,
      resolver: (sum(d.idle.map((x) => x.resolver)) * 1000) / idleMs,
    };
    const pairs = {};
    for (const p of PAIRS) {
      const seq = okOf(d.seq.filter((x) => x.pair === p).flatMap((x) => x.swaps));
      const concPhases = d.conc[p];
      const conc = okOf(concPhases.flatMap((x) => x.swaps));
      const mixed = okOf(d.mixed.flatMap((x) => x.swaps)).filter((s) => s.pair === p);
      const floor = WAITS[p].waits * iv;
      const lat = med(seq.map((s) => s.latency));
      const concRates = concPhases.map((x) => rate(x.swaps)).filter((x) => x !== null);
      const concLat = med(conc.map((s) => s.latency));
      pairs[p] = {
        block_waits: WAITS[p].waits,
        floor_ms: floor,
        sequential: {
          n: seq.length,
          latency_ms: { median: lat, runs: seq.map((s) => s.latency) },
          approval_to_deposit_ms: med(seq.map((s) => s.deposit)),
          deposit_to_fulfilled_ms: med(seq.map((s) => s.fulfil)),
          swaps_per_min: lat ? r1(60_000 / lat) : null,
          vs_floor: floor && lat ? r3(lat / floor) : null,
          vs_expected_block_wait: floor && lat ? r3(lat / (floor / 2)) : null,
          cpu: cpuOf(
            d.seq.filter((x) => x.pair === p),
            idleRate,
          ),
        },
        concurrent: {
          users: USERS,
          n: conc.length,
          swaps_per_min: { median: concRates.length ? r1(median(concRates)) : null, runs: concRates.map(r1) },
          latency_ms: {
            median: concLat,
            p_max: conc.length ? Math.max(...conc.map((s) => s.latency)) : null,
          },
          approval_to_deposit_ms: med(conc.map((s) => s.deposit)),
          deposit_to_fulfilled_ms: med(conc.map((s) => s.fulfil)),
          vs_floor: floor && concLat ? r3(concLat / floor) : null,
          cpu: cpuOf(concPhases, idleRate),
        },
        mixed_latency_ms: med(mixed.map((s) => s.latency)),
      };
    }
    const mixedRates = d.mixed.map((x) => rate(x.swaps)).filter((x) => x !== null);
    result.by_interval[iv] = {
      idle_cpu_ms_per_s: { swap: r3(idleRate.swap), resolver: r3(idleRate.resolver), windows: d.idle.length },
      pairs,
      mixed: {
        users: MIXED * PAIRS.length,
        swaps_per_min: {
          median: mixedRates.length ? r1(median(mixedRates)) : null,
          runs: mixedRates.map(r1),
        },
        latency_ms: med(okOf(d.mixed.flatMap((x) => x.swaps)).map((s) => s.latency)),
        cpu: cpuOf(d.mixed, idleRate),
      },
      cpu_all: {
        sequential: cpuOf(d.seq, idleRate),
        concurrent: cpuOf(Object.values(d.conc).flat(), idleRate),
        mixed: cpuOf(d.mixed, idleRate),
      },
    };
  }

  // Table on stderr.
  const rows = [];
  for (const iv of INTERVALS) {
    const b = result.by_interval[iv];
    rows.push(
      `\ninterval ${iv} ms; idle CPU swap ${b.idle_cpu_ms_per_s.swap} ms/s, resolver ${b.idle_cpu_ms_per_s.resolver} ms/s`,
    );
    rows.push(
      `${'pair'.padEnd(18)}${'seq p50 ms'.padStart(11)}${'seq /min'.padStart(9)}${'floor ms'.padStart(9)}${'×floor'.padStart(8)}${`conc×${USERS} /min`.padStart(13)}${'conc p50'.padStart(9)}${'cpu swap+'.padStart(10)}${'cpu res+'.padStart(9)}`,
    );
    for (const p of PAIRS) {
      const x = b.pairs[p];
      rows.push(
        `${p.padEnd(18)}${String(x.sequential.latency_ms.median).padStart(11)}${String(x.sequential.swaps_per_min).padStart(9)}${String(x.floor_ms).padStart(9)}${String(x.sequential.vs_floor ?? '–').padStart(8)}${String(x.concurrent.swaps_per_min.median).padStart(13)}${String(x.concurrent.latency_ms.median).padStart(9)}${String(x.concurrent.cpu.swap?.added_ms_per_swap).padStart(10)}${String(x.concurrent.cpu.resolver?.added_ms_per_swap).padStart(9)}`,
      );
    }
    rows.push(
      `mixed ×${b.mixed.users}: ${b.mixed.swaps_per_min.median}/min, p50 ${b.mixed.latency_ms} ms; CPU per swap (all concurrent) swap ${JSON.stringify(b.cpu_all.concurrent.swap)} resolver ${JSON.stringify(b.cpu_all.concurrent.resolver)}`,
    );
  }
  log(rows.join('\n'));
  if (failures.length) log(`${failures.length} swap(s) failed`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await blocks?.stop();
  await market?.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
}
