// Wallet node benchmarks, each next to a baseline measured in the same run:
// (a) p50/p99 of /wallet/listassets and /wallet/assetbalance through HTTP next to the same rgb-lib call made
//     directly (addon loaded in this process, same wallet data copied aside), in rounds that alternate HTTP and
//     direct phases; with the CPU time per request of every process involved (HTTP process and rgb-lib children
//     from /proc/<pid>/stat, this load generator from process.cpuUsage);
// (b) p99 of wallet B's offline calls and of /healthcheck while wallet A is stuck on a hung indexer
//     (Electrum SIGSTOPped), next to the same p99s with a healthy indexer;
// (c) requests/s of /wallet/listassets and /wallet/btcbalance across 50 wallets with a pool of 1 versus 2 rgb-lib
//     children, each next to the CPU-bound ceiling of this machine computed from the CPU time per request measured
//     for every process in the same phase (load generator + HTTP process + children share the cores).
// (b) and (c) run their phases interleaved: each of `rounds` rounds measures both sides, in an order that
// alternates by round; figures are over all rounds' samples (b) or medians of the per-round rates (c), ratios
// medians of the per-round ratios.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDevnet, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { median, procCpuMs, round, stats } from './lib.mjs';
import { clientFor, startNode } from './wallet-node-lib.mjs';

/** CPU ms (user + system, all threads) of a process so far; NaN once it is gone. */
function cpuMsOrNaN(pid) {
  try {
    return procCpuMs(pid);
  } catch {
    return Number.NaN;
  }
}
/** Direct children of a process (the wallet node's rgb-lib children). */
function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}
/** CPU ms so far of: the wallet node (`front`), its children, and this process (load generator, direct calls). */
function cpuSnapshot(frontPid) {
  const kids = frontPid === undefined ? [] : childPids(frontPid);
  const u = process.cpuUsage();
  return {
    front: frontPid === undefined ? 0 : cpuMsOrNaN(frontPid),
    children: Object.fromEntries(kids.map((k) => [k, cpuMsOrNaN(k)])),
    self: (u.user + u.system) / 1000,
  };
}
/** CPU ms per request of each process between two snapshots (a child present in only one counts from/to 0). */
function cpuPerRequest(a, b, n) {
  let kids = 0;
  for (const pid of new Set([...Object.keys(a.children), ...Object.keys(b.children)])) {
    const end = b.children[pid] ?? cpuMsOrNaN(Number(pid));
    const start = a.children[pid] ?? 0;
    if (Number.isFinite(end)) kids += end - start;
  }
  return {
    front: (b.front - a.front) / n,
    children: kids / n,
    loadgen: (b.self - a.self) / n,
  };
}
const load1 = () => round(loadavg()[0]);
const CORES = cpus().length;

function config(dir, info, workers) {
  const file = join(dir, `node-${workers}.toml`);
  writeFileSync(
    file,
    walletNodeToml(info, {
      dataDir: join(dir, `data-${workers}`),
      wallet: { witness_version: 'SegWitV0', workers },
    }),
  );
  return file;
}

/**
 * Runs `fn` with `concurrency` workers for `ms`; returns requests/s, and the CPU ms per request of the wallet node
 * (`frontPid`), its children and this process over the run.
 */
async function throughput(fn, { concurrency = 16, ms = 5000, frontPid } = {}) {
  let n = 0;
  const c0 = cpuSnapshot(frontPid);
  const t0 = performance.now();
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = w; Date.now() < end; i += concurrency) {
        await fn(i);
        n++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { rps: n / secs, cpu: cpuPerRequest(c0, cpuSnapshot(frontPid), n) };
}

/**
 * @param {{ rounds?: number, isolationMs?: number, poolMs?: number, roundsA?: number, phaseCalls?: number,
 *   warmupCalls?: number }} [opts] rounds of (b) and (c); per round, each side of (b) is sampled for `isolationMs`
 * and each (pool, call) of (c) driven for `poolMs`. (a): `roundsA` rounds of `phaseCalls` calls per phase, after
 * `warmupCalls` of each call both ways.
 */
export async function benchWalletNode(opts = {}) {
  const ROUNDS = Math.max(2, opts.rounds ?? 4);
  const ISOLATION_MS = opts.isolationMs ?? 2000;
  const POOL_MS = opts.poolMs ?? 2000;
  const ROUNDS_A = Math.max(2, opts.roundsA ?? 10);
  const PHASE_N = opts.phaseCalls ?? 100;
  const WARMUP_A = opts.warmupCalls ?? 300;
  const dir = mkdtempSync(join(tmpdir(), 'bench-wallet-node-'));
  const devnet = await startDevnet({ dir: join(dir, 'devnet') });
  const out = { load_avg_1m_at_start: load1() };
  const devnetPids = JSON.parse(readFileSync(join(dir, 'devnet', 'devnet.json'), 'utf8')).pids;
  /** CPU ms so far of the devnet's processes (bitcoind, Electrum, RGB proxy). */
  const devnetCpu = () =>
    Object.values(devnetPids).reduce((sum, p) => {
      const ms = cpuMsOrNaN(p);
      return Number.isFinite(ms) ? sum + ms : sum;
    }, 0);
  try {
    const node = await startNode(config(dir, devnet.info, 2));
    const kA = await generateKeys('Regtest', 'SegWitV0');
    const kB = await generateKeys('Regtest', 'SegWitV0');
    const A = clientFor(node.url, kA);
    const B = clientFor(node.url, kB);
    await A.register();
    await B.register();
    await devnet.fund(await A.address(), '0.01', { confirm: true });
    await A.createUtxosEnd(
      signPsbt(await A.createUtxosBegin({ num: 5, size: 1000, fee_rate: 2 }), kA.mnemonic),
    );
    await devnet.mine(1);
    const asset = await A.issueAssetNia({ ticker: 'BNC', name: 'Bench', amounts: [1000] });

    // (a) direct baseline on a copy of A's wallet, addon loaded here.
    await A.drop();
    const fp = kA.masterFingerprint.toLowerCase();
    const copy = join(dir, 'direct');
    mkdirSync(copy);
    cpSync(join(dir, 'data-2', fp), join(copy, fp), { recursive: true });
    const lib = createRequire(import.meta.url)('@rgb-tools/rgb-lib-linux-x64/rgblib');
    const wd = JSON.stringify({
      dataDir: copy,
      bitcoinNetwork: 'Regtest',
      databaseType: 'Sqlite',
      maxAllocationsPerUtxo: '1',
      // As the wallet node opens its wallets (apps/wallet-node/src/wallets.ts): listAssets([]) lists every one.
      supportedSchemas: ['Nia', 'Cfa', 'Uda', 'Ifa'],
    });
    const keys = JSON.stringify({
      accountXpubVanilla: kA.accountXpubVanilla,
      accountXpubColored: kA.accountXpubColored,
      masterFingerprint: fp,
      mnemonic: null,
      vanillaKeychain: null,
      witnessVersion: 'SegWitV0',
    });
    const w = lib.rgblib_new_wallet(wd, keys);
    const direct = (fn, ...args) => {
      const r = lib[fn](w, ...args);
      if (r && typeof r === 'object' && 'error' in r && r.error) throw new Error(String(r.error));
      return r;
    };
    await A.listAssets(); // reopen in the node
    // Rounds of phases: per call, `PHASE_N` HTTP calls then `PHASE_N` direct ones (the other way round in odd
    // rounds). CPU per request: the wallet node and its children over the HTTP phases (both idle in the direct
    // ones), this process per phase (it drives HTTP, and makes the direct calls itself).
    const calls = {
      listassets: { http: () => A.listAssets(), direct: async () => direct('rgblib_list_assets', '[]') },
      assetbalance: {
        http: () => A.assetBalance(asset.asset_id),
        direct: async () => direct('rgblib_get_asset_balance', asset.asset_id),
      },
    };
    for (let i = 0; i < WARMUP_A; i++) {
      for (const c of Object.values(calls)) {
        await c.http();
        await c.direct();
      }
    }
    const samples = {};
    const roundP50 = {};
    const cpuA = { http_front: 0, http_children: 0, http_loadgen: 0, direct_self: 0, http_n: 0, direct_n: 0 };
    const loadsA = [];
    for (let r = 0; r < ROUNDS_A; r++) {
      loadsA.push(load1());
      for (const [name, c] of Object.entries(calls)) {
        for (const mode of r % 2 === 0 ? ['http', 'direct'] : ['direct', 'http']) {
          const key = `${mode}_${name}`;
          samples[key] ??= [];
          roundP50[key] ??= [];
          const xs = [];
          const c0 = cpuSnapshot(mode === 'http' ? node.pid : undefined);
          for (let i = 0; i < PHASE_N; i++) {
            const t = performance.now();
            await c[mode]();
            xs.push(performance.now() - t);
          }
          const cpu = cpuPerRequest(c0, cpuSnapshot(mode === 'http' ? node.pid : undefined), 1);
          if (mode === 'http') {
            cpuA.http_front += cpu.front;
            cpuA.http_children += cpu.children;
            cpuA.http_loadgen += cpu.loadgen;
            cpuA.http_n += PHASE_N;
          } else {
            cpuA.direct_self += cpu.loadgen;
            cpuA.direct_n += PHASE_N;
          }
          samples[key].push(...xs);
          roundP50[key].push(stats(xs).p50);
        }
      }
    }
    const a = {
      rounds: ROUNDS_A,
      calls_per_phase: PHASE_N,
      warmup_calls: WARMUP_A,
      order: 'HTTP phase first in odd-numbered rounds, direct first in even-numbered ones',
      load_avg_1m: { median: round(median(loadsA)), min: Math.min(...loadsA), max: Math.max(...loadsA) },
    };
    for (const name of Object.keys(calls)) {
      const h = stats(samples[`http_${name}`]);
      const d = stats(samples[`direct_${name}`]);
      a[`http_${name}`] = h;
      a[`direct_${name}`] = d;
      a[`delta_p50_${name}_ms`] = round(h.p50 - d.p50);
      a[`delta_p99_${name}_ms`] = round(h.p99 - d.p99);
      a[`ratio_p50_${name}`] = round(h.p50 / d.p50);
      a[`median_round_delta_p50_${name}_ms`] = round(
        median(roundP50[`http_${name}`].map((x, i) => x - roundP50[`direct_${name}`][i])),
      );
    }
    a.cpu_ms_per_request = {
      http_process: round(cpuA.http_front / cpuA.http_n),
      rgb_lib_children: round(cpuA.http_children / cpuA.http_n),
      load_generator: round(cpuA.http_loadgen / cpuA.http_n),
      direct_call_in_this_process: round(cpuA.direct_self / cpuA.direct_n),
      note:
        'HTTP requests: both calls alike; /proc/<pid>/stat ticks (10 ms) summed over all HTTP phases; the direct ' +
        "call includes rgb-lib's own threads (process.cpuUsage)",
    };
    out.a_http_vs_direct = a;

    // (b) B's offline calls and /healthcheck, healthy indexer vs A stuck on a hung one.
    const sample = async (ms) => {
      const bCalls = [];
      const health = [];
      const end = Date.now() + ms;
      while (Date.now() < end) {
        let t = performance.now();
        await B.listAssets();
        bCalls.push(performance.now() - t);
        t = performance.now();
        await fetch(`${node.url}/healthcheck`);
        health.push(performance.now() - t);
      }
      return { bCalls, health };
    };
    const pid = devnetPids.electrum;
    /** One stuck phase: Electrum stopped, A's online call hanging in its child while B and /healthcheck are sampled. */
    const stuckPhase = async () => {
      process.kill(pid, 'SIGSTOP');
      let settledEarly = false;
      let aCall;
      try {
        aCall = A.btcBalance().then(
          () => 'ok',
          (e) => `error ${e.httpStatus ?? e.message}`,
        );
        aCall.then(() => {
          settledEarly = true;
        });
        await new Promise((r) => setTimeout(r, 300));
        const s = await sample(ISOLATION_MS);
        // A must still be hanging when the sample ends, or the phase proved nothing.
        const stuckThroughout = !settledEarly;
        process.kill(pid, 'SIGCONT');
        return { s, aResult: await aCall, stuckThroughout };
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    };
    const healthySamples = { b: [], h: [] };
    const stuckSamples = { b: [], h: [] };
    const perRound = [];
    const aResults = [];
    for (let r = 0; r < ROUNDS; r++) {
      let healthy;
      let stuck;
      if (r % 2 === 0) {
        healthy = await sample(ISOLATION_MS);
        stuck = await stuckPhase();
      } else {
        stuck = await stuckPhase();
        healthy = await sample(ISOLATION_MS);
      }
      healthySamples.b.push(...healthy.bCalls);
      healthySamples.h.push(...healthy.health);
      stuckSamples.b.push(...stuck.s.bCalls);
      stuckSamples.h.push(...stuck.s.health);
      aResults.push({ result: stuck.aResult, stuck_throughout_sample: stuck.stuckThroughout });
      perRound.push({
        p99_b_offline: round(stats(stuck.s.bCalls).p99 / stats(healthy.bCalls).p99),
        p99_healthcheck: round(stats(stuck.s.health).p99 / stats(healthy.health).p99),
      });
    }
    const healthy = { b_offline_ms: stats(healthySamples.b), healthcheck_ms: stats(healthySamples.h) };
    const stuck = { b_offline_ms: stats(stuckSamples.b), healthcheck_ms: stats(stuckSamples.h) };
    out.b_isolation = {
      rounds: ROUNDS,
      ms_per_phase: ISOLATION_MS,
      order: 'healthy first in odd-numbered rounds (1, 3, …), stuck first in even-numbered ones',
      healthy,
      while_a_stuck: stuck,
      a_calls: aResults,
      ratio_p99_b_offline: round(stuck.b_offline_ms.p99 / healthy.b_offline_ms.p99),
      ratio_p99_healthcheck: round(stuck.healthcheck_ms.p99 / healthy.healthcheck_ms.p99),
      per_round_ratios: perRound,
      median_round_ratio_p99_b_offline: round(median(perRound.map((x) => x.p99_b_offline))),
      median_round_ratio_p99_healthcheck: round(median(perRound.map((x) => x.p99_healthcheck))),
    };
    await node.stop();

    // (c) 50 wallets, pool of 1 vs 2.
    const many = [];
    for (let i = 0; i < 50; i++) many.push(await generateKeys('Regtest', 'SegWitV0'));
    // Both nodes (own data dirs) run side by side; only one is driven at a time.
    const pools = {};
    try {
      for (const workers of [1, 2]) {
        const n = await startNode(config(dir, devnet.info, workers));
        const clients = many.map((k) => clientFor(n.url, k));
        pools[workers] = { node: n, clients };
        await Promise.all(clients.map((c) => c.register())); // create (only register may), open, go online
      }
      // listassets: offline, ~1 ms in rgb-lib, so bound by the HTTP process; btcbalance: syncs with the
      // indexer inside the child, so bound by the children.
      const calls = {
        listassets: (clients) => (i) => clients[i % 50].listAssets(),
        btcbalance: (clients) => (i) => clients[i % 50].btcBalance(),
      };
      // One unmeasured run each first: the registrations' scans settle in the indexer, the JITs warm up.
      for (const call of Object.keys(calls))
        for (const workers of [1, 2])
          await throughput(calls[call](pools[workers].clients), { concurrency: 32, ms: POOL_MS / 2 });
      const runs = {};
      const cpuRuns = {};
      const loadsC = [];
      for (let r = 0; r < ROUNDS; r++) {
        loadsC.push(load1());
        for (const call of Object.keys(calls)) {
          for (const workers of r % 2 === 0 ? [1, 2] : [2, 1]) {
            const key = `pool_${workers}_${call}`;
            runs[`${key}_rps`] ??= [];
            cpuRuns[key] ??= [];
            const d0 = devnetCpu();
            const t = await throughput(calls[call](pools[workers].clients), {
              concurrency: 32,
              ms: POOL_MS,
              frontPid: pools[workers].node.pid,
            });
            const indexer = (devnetCpu() - d0) / (t.rps * (POOL_MS / 1000));
            runs[`${key}_rps`].push(round(t.rps));
            // The devnet (bitcoind, Electrum, proxy) serves btcbalance's syncs; listassets never reaches it.
            const all = t.cpu.front + t.cpu.children + t.cpu.loadgen + (call === 'btcbalance' ? indexer : 0);
            cpuRuns[key].push({
              ...t.cpu,
              devnet: indexer,
              // Every process shares the machine's cores: req/s cannot exceed cores x 1000 / CPU ms per request.
              ceiling_rps: (CORES * 1000) / all,
            });
          }
        }
      }
      const c = {
        rounds: ROUNDS,
        ms_per_run: POOL_MS,
        cores: CORES,
        order: 'pool 1 first in odd-numbered rounds, pool 2 first in even-numbered ones',
        load_avg_1m: { median: round(median(loadsC)), min: Math.min(...loadsC), max: Math.max(...loadsC) },
        note:
          'ceiling = cores x 1000 / (CPU ms per request of the load generator + HTTP process + rgb-lib children, + ' +
          'the devnet (bitcoind, Electrum, proxy) for btcbalance, which syncs with it; for listassets its CPU is ' +
          'background only), medians of per-run figures; front_alone = 1000 / HTTP-process CPU ms per request (one ' +
          'event loop)',
      };
      for (const [k, v] of Object.entries(runs)) c[k] = round(median(v));
      for (const [key, list] of Object.entries(cpuRuns)) {
        const med = (f) => round(median(list.map(f)));
        c[`${key}_cpu_ms_per_request`] = {
          http_process: med((x) => x.front),
          rgb_lib_children: med((x) => x.children),
          load_generator: med((x) => x.loadgen),
          devnet: med((x) => x.devnet),
        };
        c[`${key}_ceiling_rps`] = med((x) => x.ceiling_rps);
        c[`${key}_front_alone_rps`] = med((x) => 1000 / x.front);
        c[`${key}_vs_ceiling`] = round(median(runs[`${key}_rps`].map((rps, i) => rps / list[i].ceiling_rps)));
      }
      c.runs = runs;
      for (const call of Object.keys(calls)) {
        const per = runs[`pool_2_${call}_rps`].map((x, i) => x / runs[`pool_1_${call}_rps`][i]);
        c[`ratio_2_vs_1_${call}`] = round(median(per));
        c[`ratio_2_vs_1_${call}_runs`] = per.map(round);
      }
      out.c_50_wallets = c;
    } finally {
      for (const p of Object.values(pools)) await p.node.stop();
    }
    lib.rgblib_free_wallet?.(w);
    return out;
  } finally {
    await closeDefaultHost();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '4' },
      'isolation-ms': { type: 'string', default: '2000' },
      'pool-ms': { type: 'string', default: '2000' },
      'rounds-a': { type: 'string', default: '10' },
      'phase-calls': { type: 'string', default: '100' },
    },
  });
  const out = await benchWalletNode({
    rounds: Number(values.rounds),
    isolationMs: Number(values['isolation-ms']),
    poolMs: Number(values['pool-ms']),
    roundsA: Number(values['rounds-a']),
    phaseCalls: Number(values['phase-calls']),
  });
  console.info(JSON.stringify(out, null, 2));
  process.exit(0);
}
