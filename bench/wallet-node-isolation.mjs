// Wallet node isolation benchmarks (shared rgb-lib children, one hanging wallet), each next to a baseline
// measured in the same run:
// (1) p50/p99 of six other wallets' btcbalance and listassets while wallet H hangs in its child (its
//     `sendbegin` names a transport endpoint that accepts TCP and never answers) vs while no wallet hangs;
//     7 wallets over 2 children. Per round both phases run, in an order that alternates by round; a new hang
//     is started per round, checked to be in flight throughout its phase, and ended after it (its sockets
//     are closed, so the call fails at once instead of at its deadline).
// (2) requests/s of /wallet/listassets and /wallet/btcbalance across 50 wallets with 1, 2 and 4 children
//     (interleaved per round), with the CPU spent per request (whole machine, from /proc/stat) and the
//     CPU-bound ceiling it implies (cores ÷ CPU seconds per request).
// (3) memory (RSS and PSS from /proc/<pid>/smaps_rollup) of the node process plus its rgb-lib children with
//     0 and 100 wallets open, and with 1,000 registered of which 100 are in use; how long registering takes;
//     the child count (an idle wallet costs no process).
// Keys for the many wallets are derived in-process with @scure/bip32 from random seeds, on rgb-lib's paths
// (vanilla m/84'/1'/0', colored m/84'/827167'/0' on regtest, SegWitV0); checked once against rgb-lib's
// `restoreKeys`.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDevnet, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, restoreKeys } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { HDKey } from '@scure/bip32';
import { generateMnemonic, mnemonicToSeedSync } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { median, round, stats } from './lib.mjs';
import { clientFor, startNode } from './wallet-node-lib.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- keys ---------------------------------------------------------------------------------------------
const TPUB = { private: 0x04358394, public: 0x043587cf };
/** rgb-lib's account keys of a master key (regtest, SegWitV0). */
function keysOf(root) {
  return {
    accountXpubVanilla: root.derive("m/84'/1'/0'").publicExtendedKey,
    accountXpubColored: root.derive("m/84'/827167'/0'").publicExtendedKey,
    masterFingerprint: root.fingerprint.toString(16).padStart(8, '0'),
  };
}
const keysFromMnemonic = (mnemonic) => ({
  ...keysOf(HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic), TPUB)),
  mnemonic,
});
const fastKeys = () => keysOf(HDKey.fromMasterSeed(randomBytes(32), TPUB));

// --- node processes -----------------------------------------------------------------------------------
function writeConfig(dir, info, name, wallet) {
  const file = join(dir, `${name}.toml`);
  writeFileSync(
    file,
    walletNodeToml(info, {
      dataDir: join(dir, `data-${name}`),
      wallet: { witness_version: 'SegWitV0', refresh_interval_secs: 0, ...wallet },
    }),
  );
  return file;
}

// --- /proc --------------------------------------------------------------------------------------------
const readProc = (pid, f) => {
  try {
    return readFileSync(`/proc/${pid}/${f}`, 'utf8');
  } catch {
    return null;
  }
};
/** pid → ppid of every process. */
function ppids() {
  const m = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = readProc(d, 'stat');
    if (!st) continue;
    m.set(Number(d), Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]));
  }
  return m;
}
/** The node pid and all its descendants, children = rgb-lib children (cmdline has `--rgbx-rgb-child=`). */
function tree(root) {
  const pp = ppids();
  const desc = [];
  for (const pid of pp.keys()) {
    for (let p = pp.get(pid), hops = 0; p && hops < 20; p = pp.get(p), hops++) {
      if (p === root) {
        desc.push(pid);
        break;
      }
    }
  }
  const children = desc.filter((p) => (readProc(p, 'cmdline') ?? '').includes('--rgbx-rgb-child='));
  return { desc, children };
}
const kib = (text, key) => {
  const m = text?.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'));
  return m ? Number(m[1]) : 0;
};
const mib = (k) => round(k / 1024);
/** RSS and PSS (MiB) of the node process, its rgb-lib children, and in total (node + all descendants). */
function memory(nodePid) {
  const { desc, children } = tree(nodePid);
  const one = (p) => ({
    rss: kib(readProc(p, 'status'), 'VmRSS'),
    pss: kib(readProc(p, 'smaps_rollup'), 'Pss'),
  });
  const node = one(nodePid);
  const ch = children.map(one);
  const all = [node, ...desc.map(one)];
  const sum = (xs, k) => xs.reduce((a, x) => a + x[k], 0);
  return {
    node_rss_mib: mib(node.rss),
    node_pss_mib: mib(node.pss),
    children: children.length,
    children_rss_mib: mib(sum(ch, 'rss')),
    children_pss_mib: mib(sum(ch, 'pss')),
    per_child_rss_mib: ch.map((c) => mib(c.rss)),
    total_rss_mib: mib(sum(all, 'rss')),
    total_pss_mib: mib(sum(all, 'pss')),
    other_descendants: desc.length - children.length,
  };
}
const childCount = (nodePid) => tree(nodePid).children.length;
/** Busy and total jiffies of the whole machine (/proc/stat). */
function machineCpu() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] ?? 0);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** Runs `fn(i)` with `concurrency` loops for `ms`; returns requests/s and failures. */
async function throughput(fn, { concurrency = 32, ms = 2000 } = {}) {
  let n = 0;
  let failed = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = w; Date.now() < end; i += concurrency) {
        try {
          await fn(i);
          n++;
        } catch {
          failed++;
        }
      }
    }),
  );
  return { rps: round(n / (ms / 1000)), n, failed };
}

/** Runs `fn` over `items` with `concurrency` at once. */
async function pool(items, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/**
 * @param {{ rounds?: number, phaseMs?: number, poolMs?: number, wallets?: number, openWallets?: number,
 *   registerConcurrency?: number, skip?: string[] }} [opts] rounds of (1) and (2); per round each phase of (1)
 * is sampled for `phaseMs`, each (children, call) of (2) driven for `poolMs`; (3) registers `wallets` (1000)
 * of which `openWallets` (100) are in use (opened `openConcurrency` (1) at a time). `skip`: any of 'hang', 'throughput', 'memory'.
 */
export async function benchWalletNodeIsolation(opts = {}) {
  const ROUNDS = Math.max(2, opts.rounds ?? 5);
  const PHASE_MS = opts.phaseMs ?? 4000;
  const POOL_MS = opts.poolMs ?? 2000;
  const WALLETS = opts.wallets ?? 1000;
  const OPEN = Math.min(WALLETS, opts.openWallets ?? 100);
  const REG_CONC = opts.registerConcurrency ?? 8;
  const OPEN_CONC = opts.openConcurrency ?? 1;
  const skip = new Set(opts.skip ?? []);
  const DEADLINE_S = 20;
  const dir = mkdtempSync(join(tmpdir(), 'bench-wallet-node-isolation-'));
  const devnet = await startDevnet({ dir: join(dir, 'devnet') });
  const out = { cpus: cpus().length, loadavg_start: loadavg().map(round) };
  const loads = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0]), 5000);
  const sockets = new Set();
  let connections = 0;
  const blackHole = createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  try {
    // The derivation replicated here must be rgb-lib's.
    const mnemonic = generateMnemonic(wordlist);
    const mine = keysFromMnemonic(mnemonic);
    const theirs = await restoreKeys('Regtest', mnemonic, 'SegWitV0');
    const same =
      theirs.accountXpubVanilla === mine.accountXpubVanilla &&
      theirs.accountXpubColored === mine.accountXpubColored &&
      theirs.masterFingerprint.toLowerCase() === mine.masterFingerprint;
    if (!same)
      throw new Error(
        `in-process key derivation differs from rgb-lib's: ${JSON.stringify({ mine, theirs })}`,
      );
    out.keys_derivation_matches_rgb_lib = true;
    let t = performance.now();
    const sampleKeys = Array.from({ length: 100 }, fastKeys);
    out.key_derivation_ms_per_wallet = round((performance.now() - t) / sampleKeys.length);

    if (!skip.has('hang')) out.hang = await hangBench();
    if (!skip.has('throughput')) out.throughput = await throughputBench();
    if (!skip.has('memory')) out.memory = await memoryBench();
    out.loadavg_end = loadavg().map(round);
    out.loadavg_1m_during = loads.length ? stats(loads) : null;
    return out;

    // (1) ------------------------------------------------------------------------------------------------
    async function hangBench() {
      await new Promise((r) => blackHole.listen(0, '127.0.0.1', r));
      const port = blackHole.address().port;
      const dirH = join(dir, 'hang');
      mkdirSync(dirH);
      const node = await startNode(
        writeConfig(dirH, devnet.info, 'hang', { workers: 2, transport_call_timeout_secs: DEADLINE_S }),
      );
      try {
        const kH = keysFromMnemonic(generateMnemonic(wordlist));
        const H = clientFor(node.url, kH);
        await H.register();
        await devnet.fund(await H.address(), '0.01', { confirm: true });
        await H.createUtxosEnd(
          signPsbt(await H.createUtxosBegin({ num: 4, size: 1000, fee_rate: 2 }), kH.mnemonic),
        );
        await devnet.mine(1);
        await H.btcBalance(); // sync
        const asset = await H.issueAssetNia({ ticker: 'HANG', name: 'hang', precision: 0, amounts: [1000] });
        const others = Array.from({ length: 6 }, () => clientFor(node.url, fastKeys()));
        for (const c of others) await c.register(); // 7 wallets over 2 children: three share H's child
        const inv = await others[0].witnessReceive({ amount: 10 });

        /** One phase: the six in parallel, each btcbalance then listassets, for `PHASE_MS`. */
        const sample = async () => {
          const lat = { btcbalance: [], listassets: [] };
          let failed = 0;
          const end = Date.now() + PHASE_MS;
          await Promise.all(
            others.map(async (c) => {
              while (Date.now() < end) {
                for (const [k, f] of [
                  ['btcbalance', () => c.btcBalance()],
                  ['listassets', () => c.listAssets()],
                ]) {
                  const s = performance.now();
                  try {
                    await f();
                    lat[k].push(performance.now() - s);
                  } catch {
                    failed++;
                  }
                }
              }
            }),
          );
          return { lat, failed, children: childCount(node.pid) };
        };
        const hangPhase = async () => {
          const c0 = connections;
          const t0 = Date.now();
          let settled = false;
          const call = H.sendBegin({
            recipient_map: {
              [asset.asset_id]: [
                {
                  recipient_id: inv.recipient_id,
                  witness_data: { amount_sat: 1000 },
                  amount: 10,
                  transport_endpoints: [`rpc://127.0.0.1:${port}/json-rpc`],
                },
              ],
            },
            fee_rate: 2,
          })
            .then(
              () => 'ok (unexpected)',
              (e) => `error ${e.httpStatus ?? ''} ${e.code ?? ''} ${e.message ?? ''}`.trim(),
            )
            .finally(() => {
              settled = true;
            });
          // H's child is inside rgb-lib, talking to the black hole.
          while (connections === c0 && !settled && Date.now() - t0 < 30_000) await sleep(20);
          const connectedAfterMs = Date.now() - t0;
          if (connections === c0)
            throw new Error(`hanging sendbegin never reached the black hole: ${await call}`);
          const s = await sample();
          const inFlightThroughout = !settled && Date.now() - t0 < DEADLINE_S * 1000;
          // End the hang now (not at its deadline): the endpoint closes its connections.
          const tEnd = Date.now();
          for (const so of sockets) so.destroy();
          const result = await call;
          return {
            s,
            hang: {
              connected_after_ms: connectedAfterMs,
              in_flight_throughout: inFlightThroughout,
              result,
              ended_after_close_ms: Date.now() - tEnd,
            },
          };
        };
        // Warm-up: every wallet online and one hang/cleanup cycle, so both phases start from moved wallets.
        await sample();
        await hangPhase();
        await sample();

        const all = { none: { btcbalance: [], listassets: [] }, hang: { btcbalance: [], listassets: [] } };
        const perRound = [];
        const hangs = [];
        const children = { none: [], hang: [] };
        let failedCalls = 0;
        for (let r = 0; r < ROUNDS; r++) {
          let none;
          let hang;
          if (r % 2 === 0) {
            none = await sample();
            hang = await hangPhase();
          } else {
            hang = await hangPhase();
            none = await sample();
          }
          for (const k of ['btcbalance', 'listassets']) {
            all.none[k].push(...none.lat[k]);
            all.hang[k].push(...hang.s.lat[k]);
          }
          failedCalls += none.failed + hang.s.failed;
          children.none.push(none.children);
          children.hang.push(hang.s.children);
          hangs.push(hang.hang);
          const rr = {};
          for (const k of ['btcbalance', 'listassets']) {
            const a = stats(hang.s.lat[k]);
            const b = stats(none.lat[k]);
            rr[`p50_${k}`] = round(a.p50 / b.p50);
            rr[`p99_${k}`] = round(a.p99 / b.p99);
          }
          perRound.push(rr);
        }
        const res = {
          rounds: ROUNDS,
          ms_per_phase: PHASE_MS,
          transport_call_timeout_secs: DEADLINE_S,
          setup: 'workers 2 (max_workers default 4), isolation_budget_ms 250; H + 6 others (SegWitV0)',
          order: 'none first in odd-numbered rounds (1, 3, …), hang first in even-numbered ones',
          none: Object.fromEntries(Object.entries(all.none).map(([k, v]) => [`${k}_ms`, stats(v)])),
          while_one_hangs: Object.fromEntries(
            Object.entries(all.hang).map(([k, v]) => [`${k}_ms`, stats(v)]),
          ),
          failed_calls: failedCalls,
          children_at_phase_end: children,
          hangs,
          all_hangs_in_flight_throughout: hangs.every((h) => h.in_flight_throughout),
          per_round_ratios: perRound,
        };
        for (const k of ['btcbalance', 'listassets']) {
          for (const p of ['p50', 'p99']) {
            res[`ratio_${p}_${k}`] = round(res.while_one_hangs[`${k}_ms`][p] / res.none[`${k}_ms`][p]);
            res[`median_round_ratio_${p}_${k}`] = round(median(perRound.map((x) => x[`${p}_${k}`])));
          }
        }
        return res;
      } finally {
        for (const s of sockets) s.destroy();
        await node.stop();
      }
    }

    // (2) ------------------------------------------------------------------------------------------------
    async function throughputBench() {
      const many = Array.from({ length: 50 }, fastKeys);
      const pools = {};
      const sizes = [1, 2, 4];
      try {
        for (const workers of sizes) {
          const n = await startNode(writeConfig(dir, devnet.info, `tp-${workers}`, { workers }));
          const clients = many.map((k) => clientFor(n.url, k));
          pools[workers] = { node: n, clients };
          await pool(clients, 8, (c) => c.register()); // create, open, go online
          await pool(clients, 8, (c) => c.listAssets());
        }
        const calls = {
          listassets: (clients) => (i) => clients[i % 50].listAssets(),
          btcbalance: (clients) => (i) => clients[i % 50].btcBalance(),
        };
        const runs = {};
        const cpuPerReq = {};
        let failed = 0;
        for (let r = 0; r < ROUNDS; r++) {
          const order = [sizes, [...sizes].reverse(), [2, 4, 1], [4, 1, 2]][r % 4];
          for (const call of Object.keys(calls)) {
            for (const workers of order) {
              const key = `children_${workers}_${call}`;
              runs[key] ??= [];
              cpuPerReq[key] ??= [];
              const c0 = machineCpu();
              const res = await throughput(calls[call](pools[workers].clients), {
                concurrency: 32,
                ms: POOL_MS,
              });
              const c1 = machineCpu();
              failed += res.failed;
              runs[key].push(res.rps);
              // Jiffies are 1/100 s: busy CPU-seconds of the whole machine per request.
              cpuPerReq[key].push((c1.busy - c0.busy) / 100 / Math.max(1, res.n));
            }
          }
        }
        const c = {
          rounds: ROUNDS,
          ms_per_run: POOL_MS,
          concurrency: 32,
          wallets: 50,
          order: 'rotating per round: 1,2,4 / 4,2,1 / 2,4,1 / 4,1,2',
          failed_calls: failed,
          rps: {},
          cpu_ms_per_request: {},
          cpu_bound_ceiling_rps: {},
          runs,
        };
        for (const [k, v] of Object.entries(runs)) {
          c.rps[k] = round(median(v));
          const cpu = median(cpuPerReq[k]);
          c.cpu_ms_per_request[k] = round(cpu * 1000);
          c.cpu_bound_ceiling_rps[k] = round(cpus().length / cpu);
        }
        for (const call of Object.keys(calls)) {
          for (const w of [2, 4]) {
            const per = runs[`children_${w}_${call}`].map((x, i) => x / runs[`children_1_${call}`][i]);
            c[`ratio_${w}_vs_1_${call}`] = round(median(per));
          }
        }
        // Isolation can grow a pool up to max_workers (2 × workers) while calls outlive the budget.
        c.children_at_end = Object.fromEntries(sizes.map((w) => [w, childCount(pools[w].node.pid)]));
        c.cpu_note =
          'whole-machine busy CPU (/proc/stat) per request, includes the bench client, the devnet (Electrum) and anything else running; ceiling = cores / CPU-seconds per request';
        return c;
      } finally {
        for (const p of Object.values(pools)) await p.node.stop();
      }
    }

    // (3) ------------------------------------------------------------------------------------------------
    async function memoryBench() {
      const m = {
        wallets: WALLETS,
        open: OPEN,
        register_concurrency: REG_CONC,
        open_concurrency: OPEN_CONC,
        workers: 2,
        max_workers: 4,
      };
      const file = writeConfig(dir, devnet.info, 'mem', { workers: 2 });
      const settle = async () => {
        await sleep(1500);
        return null;
      };
      t = performance.now();
      const keys = Array.from({ length: WALLETS }, fastKeys);
      m.keygen_ms_total = round(performance.now() - t);
      let node = await startNode(file);
      try {
        await settle();
        m.fresh_0_wallets = memory(node.pid);
        // 100 (OPEN) registered, all open (register opens the wallet and goes online).
        const first = keys.slice(0, OPEN).map((k) => clientFor(node.url, k));
        t = performance.now();
        await pool(first, REG_CONC, (c) => c.register());
        m.register_first_ms_per_wallet = round((performance.now() - t) / OPEN);
        await settle();
        m[`registered_${OPEN}_all_open_right_after_register`] = memory(node.pid);
        // Restarted on the same data dir: 0 open, then all OPEN in use (btcbalance: open + go online).
        const inUse = async (label) => {
          await node.stop();
          node = await startNode(file);
          await settle();
          const zero = memory(node.pid);
          const use = keys.slice(0, OPEN).map((k) => clientFor(node.url, k));
          const t0 = performance.now();
          // One at a time: no call waits behind another wallet's long call, so isolation starts no extra child
          // and the difference is the wallets' own cost.
          await pool(use, OPEN_CONC, (c) => c.btcBalance());
          m[`${label}_first_btcbalance_ms_per_wallet`] = round((performance.now() - t0) / OPEN);
          await settle();
          const open = memory(node.pid);
          return { zero, open };
        };
        const r100 = await inUse(`registered_${OPEN}`);
        m[`registered_${OPEN}_open_0_after_restart`] = r100.zero;
        m[`registered_${OPEN}_open_${OPEN}_after_restart`] = r100.open;
        m.per_open_wallet_mib = {
          rss: round((r100.open.total_rss_mib - r100.zero.total_rss_mib) / OPEN),
          pss: round((r100.open.total_pss_mib - r100.zero.total_pss_mib) / OPEN),
          note: `(${OPEN} open − 0 open, same node after restart, ${OPEN} registered) / ${OPEN}`,
        };
        // The rest registered and closed again at once (/wallet/drop), as wallets not in use.
        const rest = keys.slice(OPEN).map((k) => clientFor(node.url, k));
        t = performance.now();
        let regFailed = 0;
        const deadline = Date.now() + (opts.registerBudgetMs ?? 8 * 60_000);
        let registered = OPEN;
        await pool(rest, REG_CONC, async (c) => {
          if (Date.now() > deadline) return;
          try {
            await c.register();
            await c.drop();
            registered++;
          } catch {
            regFailed++;
          }
        });
        const restMs = performance.now() - t;
        m.registered = registered;
        m.register_failed = regFailed;
        m.register_rest_s = round(restMs / 1000);
        m.register_rest_ms_per_wallet = round(restMs / Math.max(1, registered - OPEN));
        m.register_rest_wallets_per_s = round((registered - OPEN) / (restMs / 1000));
        await settle();
        m[`registered_${registered}_open_${OPEN}_same_process`] = memory(node.pid);
        const r1000 = await inUse(`registered_${registered}`);
        m[`registered_${registered}_open_0_after_restart`] = r1000.zero;
        m[`registered_${registered}_open_${OPEN}_after_restart`] = r1000.open;
        const inUse1000 = r1000.open;
        m.fits_2gb = inUse1000.total_pss_mib < 2048 && inUse1000.total_rss_mib < 2048;
        m.children_counts = Object.fromEntries(
          Object.entries(m)
            .filter(([, v]) => v && typeof v === 'object' && 'children' in v)
            .map(([k, v]) => [k, v.children]),
        );
        const dataDir = join(dir, 'data-mem');
        m.data_dir_wallet_dirs = readdirSync(dataDir).filter((d) => /^[0-9a-f]{8}$/.test(d)).length;
        return m;
      } finally {
        await node.stop();
      }
    }
  } finally {
    clearInterval(loadTimer);
    for (const s of sockets) s.destroy();
    blackHole.close();
    await closeDefaultHost();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** {@link benchWalletNodeIsolation}, its result also written to bench/results/wallet-node-isolation.json. */
export async function run(opts = {}) {
  const out = { date: new Date().toISOString(), ...(await benchWalletNodeIsolation(opts)) };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('./results/wallet-node-isolation.json', import.meta.url),
    `${JSON.stringify(out, null, 2)}\n`,
  );
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      'phase-ms': { type: 'string', default: '4000' },
      'pool-ms': { type: 'string', default: '2000' },
      wallets: { type: 'string', default: '1000' },
      open: { type: 'string', default: '100' },
      'register-concurrency': { type: 'string', default: '8' },
      skip: { type: 'string', default: '' },
      save: { type: 'boolean', default: false },
    },
  });
  const out = await (values.save ? run : benchWalletNodeIsolation)({
    rounds: Number(values.rounds),
    phaseMs: Number(values['phase-ms']),
    poolMs: Number(values['pool-ms']),
    wallets: Number(values.wallets),
    openWallets: Number(values.open),
    registerConcurrency: Number(values['register-concurrency']),
    skip: values.skip ? values.skip.split(',') : [],
  });
  console.info(JSON.stringify(out, null, 2));
  process.exit(0);
}
