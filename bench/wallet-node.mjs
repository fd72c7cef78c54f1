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
// (d) the cost of the Prometheus metrics: CPU time per request of a node with `[metrics] enabled` (scraped once
//     per phase) next to one with them off, same wallets and workload, phases interleaved (see benchMetricsCost);
//     `--only metrics` runs this section alone (`--save`: bench/results/wallet-node-metrics.json).
// (b) and (c) run their phases interleaved: each of `rounds` rounds measures both sides, in an order that
// alternates by round; figures are over all rounds' samples (b) or medians of the per-round rates (c), ratios
// medians of the per-round ratios.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnService, startDevnet, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { median, procCpuMs, round, stats } from './lib.mjs';
import { clientFor, startNode, WALLET_NODE_MAIN } from './wallet-node-lib.mjs';

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

function config(dir, info, workers, { name = String(workers), wallet = {}, metrics = {} } = {}) {
  const file = join(dir, `node-${name}.toml`);
  writeFileSync(
    file,
    walletNodeToml(info, {
      dataDir: join(dir, `data-${name}`),
      wallet: { witness_version: 'SegWitV0', workers, ...wallet },
      metrics,
    }),
  );
  return file;
}

/**
 * Nanoseconds a process has run on a CPU so far, all its live threads (`/proc/<pid>/task/<tid>/schedstat`, first
 * field: exact, unlike `/proc/<pid>/stat`'s 10 ms ticks); NaN once it is gone.
 */
function runNs(pid) {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // a thread that ended meanwhile
      }
    }
  } catch {
    return Number.NaN;
  }
  return ns;
}

/** CPU ms so far of a wallet node: its HTTP process and its rgb-lib children, by schedstat and by stat ticks. */
function nodeCpu(pid) {
  let kidsNs = 0;
  let kidsTicks = 0;
  for (const k of childPids(pid)) {
    const ns = runNs(k);
    if (Number.isFinite(ns)) kidsNs += ns;
    const t = cpuMsOrNaN(k);
    if (Number.isFinite(t)) kidsTicks += t;
  }
  return {
    front: runNs(pid) / 1e6,
    children: kidsNs / 1e6,
    frontTicks: cpuMsOrNaN(pid),
    childrenTicks: kidsTicks,
  };
}

/**
 * (d) What the metrics cost: four nodes on the same devnet, two with `[metrics] enabled` (port 0) and two with
 * `enabled = false` (no hook installed, nothing timed or counted), started in the order on, off, off, on (so neither
 * side is always the older process), the same `wallets` registered on each, driven alike: `rounds` rounds, each one
 * phase per node of `calls` /wallet/listassets (the cheapest call, so the one where the metrics weigh most) at
 * `concurrency` in flight across the wallets; `design` "concurrent" (default) drives the four nodes at once in each
 * round (both sides share the machine's state of that moment: on a shared machine the CPU time of a request varies
 * with what else runs), "sequential" one after the other, the order rotating by round; `control`: an A/A run, the
 * "on" side with metrics off too. CPU per request of each node's HTTP
 * process (and of its rgb-lib children) from schedstat; per round, on / off is the ratio of the two sides' summed
 * CPU over their summed requests; the figure is the median of the per-round ratios. The children's on / off ratio
 * is the noise control: nothing of the metrics runs there. Then what is not per request: the CPU of one scrape
 * (20 in a row per "on" node), spread over the requests of a 15 s scrape interval at the measured rate, and the
 * CPU of idle nodes over `idleMs` (the process metrics' timers and observers).
 */
export async function benchMetricsCost(devnet, dir, opts = {}) {
  const ROUNDS = Math.max(2, opts.rounds ?? 30);
  const CALLS = opts.calls ?? 600;
  const IDLE_MS = opts.idleMs ?? 10_000;
  const CONCURRENT = (opts.design ?? 'concurrent') === 'concurrent';
  /** A/A control: the "on" side runs with metrics off too, so the ratio shows the design's own bias and noise. */
  const CONTROL = opts.control === true;
  const SCRAPES = 20;
  const SCRAPE_INTERVAL_S = 15;
  const CONCURRENCY = opts.concurrency ?? 8;
  const WALLETS = opts.wallets ?? 10;
  const WARMUP = opts.warmupCalls ?? 1000;
  const keys = [];
  for (let i = 0; i < WALLETS; i++) keys.push(await generateKeys('Regtest', 'SegWitV0'));
  const nodes = [];
  try {
    for (const [name, side] of [
      ['on-a', 'on'],
      ['off-a', 'off'],
      ['off-b', 'off'],
      ['on-b', 'on'],
    ]) {
      // No background refresh (none of these wallets has a transfer): only the measured calls run.
      const file = config(dir, devnet.info, 2, {
        name: `metrics-${name}`,
        wallet: { refresh_interval_secs: 0 },
        metrics: side === 'on' && !CONTROL ? { enabled: true, port: 0 } : { enabled: false },
      });
      const s = await spawnService('wallet node', [WALLET_NODE_MAIN, '-c', file], {
        pick: (j) =>
          j.event === 'listening' && typeof j.url === 'string'
            ? { url: j.url, metrics: j.metrics_url }
            : undefined,
      });
      const clients = keys.map((k) => clientFor(s.value.url, k));
      nodes.push({ name, side, s, pid: s.proc.pid, clients, metricsUrl: s.value.metrics });
      if ((side === 'on' && !CONTROL) !== (s.value.metrics !== undefined))
        throw new Error(`metrics: node ${name} announced metrics_url ${s.value.metrics}`);
      for (const c of clients) await c.register();
    }
    const phase = async (node, n) => {
      const { clients, pid } = node;
      let next = 0;
      const c0 = nodeCpu(pid);
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let i = next++; i < n; i = next++) await clients[i % clients.length].listAssets();
        }),
      );
      const secs = (performance.now() - t0) / 1000;
      const c1 = nodeCpu(pid);
      return {
        n,
        rps: n / secs,
        front: c1.front - c0.front,
        children: c1.children - c0.children,
        frontTicks: c1.frontTicks - c0.frontTicks,
      };
    };
    for (const node of nodes) await phase(node, WARMUP);
    /** Per round and side: summed requests and CPU ms of that side's two nodes. */
    const rounds = [];
    const perNode = Object.fromEntries(nodes.map((n) => [n.name, []]));
    const loads = [];
    for (let r = 0; r < ROUNDS; r++) {
      loads.push(load1());
      const sum = {
        on: { n: 0, front: 0, children: 0, ticks: 0 },
        off: { n: 0, front: 0, children: 0, ticks: 0 },
      };
      // Sequential: one node at a time, the order rotating; concurrent: the four at once (each at `concurrency`),
      // so both sides see the same machine in each round.
      const order = Array.from({ length: nodes.length }, (_, k) => nodes[(r + k) % nodes.length]);
      const xs = [];
      if (CONCURRENT) xs.push(...(await Promise.all(order.map((node) => phase(node, CALLS)))));
      else for (const node of order) xs.push(await phase(node, CALLS));
      for (let k = 0; k < order.length; k++) {
        const node = order[k];
        const x = xs[k];
        const t = sum[node.side];
        t.n += x.n;
        t.front += x.front;
        t.children += x.children;
        t.ticks += x.frontTicks;
        perNode[node.name].push({
          rps: round(x.rps),
          http_process_ms: round(x.front / x.n),
          children_ms: round(x.children / x.n),
        });
      }
      rounds.push(sum);
    }
    // Not per request: a scrape (its CPU in the node), and idle nodes.
    const scrapeMs = [];
    let scrapeBytes = 0;
    for (const node of nodes.filter((n) => n.metricsUrl)) {
      const c0 = nodeCpu(node.pid);
      for (let i = 0; i < SCRAPES; i++) scrapeBytes = (await (await fetch(node.metricsUrl)).text()).length;
      scrapeMs.push((nodeCpu(node.pid).front - c0.front) / SCRAPES);
    }
    const idle0 = nodes.map((n) => nodeCpu(n.pid).front);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleMsPerS = nodes.map((n, i) => ({
      side: n.side,
      v: ((nodeCpu(n.pid).front - idle0[i]) * 1000) / IDLE_MS,
    }));
    const idleOf = (side) => round(median(idleMsPerS.filter((x) => x.side === side).map((x) => x.v)));
    // The workload really was counted on each "on" node: every listassets of every phase, warm-up included.
    const counted = [];
    for (const node of nodes.filter((n) => n.metricsUrl)) {
      const text = await (await fetch(node.metricsUrl)).text();
      counted.push(
        Number(
          /^rgbx_wallet_node_http_requests_total\{method="POST",route="\/wallet\/listassets",status_code="200"\} (\d+)$/m.exec(
            text,
          )?.[1],
        ),
      );
    }
    const perReq = (side, f) => round(median(rounds.map((r) => f(r[side]) / r[side].n)));
    const ratios = rounds.map((r) => ({
      front: r.on.front / r.on.n / (r.off.front / r.off.n),
      front_and_children: (r.on.front + r.on.children) / r.on.n / ((r.off.front + r.off.children) / r.off.n),
      children: r.on.children / r.on.n / (r.off.children / r.off.n),
      ticks: r.on.ticks / r.on.n / (r.off.ticks / r.off.n),
    }));
    const rps = (side) =>
      round(median(nodes.filter((n) => n.side === side).flatMap((n) => perNode[n.name].map((x) => x.rps))));
    const onMs = perReq('on', (x) => x.front);
    const offMs = perReq('off', (x) => x.front);
    const scrape = scrapeMs.length > 0 ? median(scrapeMs) : 0;
    /** The scrape's CPU spread over the requests of one interval at the "on" side's measured rate. */
    const scrapePerRequest = scrape / (SCRAPE_INTERVAL_S * rps('on'));
    return {
      rounds: ROUNDS,
      ...(CONTROL ? { control: 'A/A: the "on" nodes ran with metrics off too' } : {}),
      nodes: nodes.map((n) => n.name),
      calls_per_phase: CALLS,
      concurrency: CONCURRENCY,
      wallets: WALLETS,
      warmup_calls_per_node: WARMUP,
      call: '/wallet/listassets',
      design: CONCURRENT
        ? 'per round the four nodes driven at once, each with its own phase (started: on-a, off-a, off-b, on-b)'
        : 'per round one phase per node, the order rotating by one node each round (started: on-a, off-a, off-b, on-b)',
      cpu_measured:
        "/proc/<pid>/task/*/schedstat run time (ns) of each node's HTTP process and of its rgb-lib children, " +
        'before and after each phase; /proc/<pid>/stat ticks (10 ms) of the HTTP process as a cross-check',
      scrape_bytes: scrapeBytes,
      scrape_cpu_ms: round(scrape),
      scrape_cpu_ms_per_request_at_15s_interval: Math.round(scrapePerRequest * 1e6) / 1e6,
      idle_http_process_cpu_ms_per_s: { on: idleOf('on'), off: idleOf('off'), idle_ms: IDLE_MS },
      listassets_counted_by_on_nodes: counted,
      listassets_sent_to_each_on_node: WARMUP + ROUNDS * CALLS,
      load_avg_1m: { median: round(median(loads)), min: Math.min(...loads), max: Math.max(...loads) },
      on: {
        http_process_cpu_ms_per_request: onMs,
        rgb_lib_children_cpu_ms_per_request: perReq('on', (x) => x.children),
        http_process_cpu_ms_per_request_ticks: perReq('on', (x) => x.ticks),
        rps_per_node: rps('on'),
      },
      off: {
        http_process_cpu_ms_per_request: offMs,
        rgb_lib_children_cpu_ms_per_request: perReq('off', (x) => x.children),
        http_process_cpu_ms_per_request_ticks: perReq('off', (x) => x.ticks),
        rps_per_node: rps('off'),
      },
      median_ratio_on_off_http_process: round(median(ratios.map((x) => x.front))),
      median_ratio_on_off_http_process_and_children: round(median(ratios.map((x) => x.front_and_children))),
      median_ratio_on_off_http_process_ticks: round(median(ratios.map((x) => x.ticks))),
      median_ratio_on_off_rgb_lib_children_noise_control: round(median(ratios.map((x) => x.children))),
      ratio_on_off_http_process_with_scrapes_every_15s: round(
        (median(ratios.map((x) => x.front)) * offMs + scrapePerRequest) / offMs,
      ),
      per_round_ratio_http_process: ratios.map((x) => round(x.front)),
      per_node: perNode,
    };
  } finally {
    for (const n of nodes) await n.s.stop();
  }
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
    out.d_metrics_on_vs_off = await benchMetricsCost(devnet, dir, opts.metrics);
    return out;
  } finally {
    await closeDefaultHost();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** (d) alone, on a devnet of its own. */
export async function benchWalletNodeMetrics(opts = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wallet-node-metrics-'));
  const devnet = await startDevnet({ dir: join(dir, 'devnet') });
  try {
    return {
      date: new Date().toISOString(),
      node: process.version,
      cpus: CORES,
      load_avg_1m_at_start: load1(),
      d_metrics_on_vs_off: await benchMetricsCost(devnet, dir, opts),
    };
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
      only: { type: 'string' },
      'metrics-rounds': { type: 'string', default: '30' },
      'metrics-calls': { type: 'string', default: '600' },
      'metrics-design': { type: 'string', default: 'concurrent' },
      'metrics-control': { type: 'boolean', default: false },
      save: { type: 'boolean', default: false },
    },
  });
  const metrics = {
    rounds: Number(values['metrics-rounds']),
    calls: Number(values['metrics-calls']),
    design: values['metrics-design'],
    control: values['metrics-control'],
  };
  if (values.only === 'metrics') {
    const out = await benchWalletNodeMetrics(metrics);
    const json = JSON.stringify(out, null, 2);
    if (values.save) {
      mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
      writeFileSync(new URL('./results/wallet-node-metrics.json', import.meta.url), `${json}\n`);
    }
    console.info(json);
    process.exit(0);
  }
  if (values.only !== undefined) throw new Error(`--only: "metrics" is the one section that runs alone`);
  const out = await benchWalletNode({
    metrics,
    rounds: Number(values.rounds),
    isolationMs: Number(values['isolation-ms']),
    poolMs: Number(values['pool-ms']),
    roundsA: Number(values['rounds-a']),
    phaseCalls: Number(values['phase-calls']),
  });
  console.info(JSON.stringify(out, null, 2));
  process.exit(0);
}
