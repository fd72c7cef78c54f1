// Wallet node at scale (issue 29): N wallets registered on one node (default config, 2 rgb-lib children) against the
// devnet's Electrum server at its default limit (max_connections 1,024), then M of them in use in rotation. Measures:
// - every call's answer (no 5xx is the goal; counts by status);
// - `/wallet/listassets` p50/p99 with 10, 100 (and 1,000) wallets in rotation (flat is the goal): first touch (each
//   wallet once, one at a time: it may have to be opened first), warm with 8 in flight, and warm one at a time; and
//   `/wallet/btcbalance` (online: a sync) likewise, where more wallets than max_online_wallets must come online;
// - RSS/PSS of the node and its children (goal: within 2 GB), their file descriptors and threads;
// - the indexer connections: the Electrum server's sessions (every 50 ms) and the node's own sockets (its process and
//   children, from /proc, every 1 s), never above the node's budget (max_online_wallets × 2 + 2);
// - time to register.
// Default (`node bench/run.mjs wallet_node_scale`): 1,000 registered, 10 and 100 in rotation (~6 min). `--full`:
// 10,000 registered (at most 15 minutes of registering: `--register-minutes`), 10, 100 and 1,000 in rotation
// (`--registered`, `--rotations` override). Keys are derived
// in-process with @scure/bip32 on rgb-lib's paths (regtest, SegWitV0), checked once against rgb-lib's restoreKeys.
import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDevnet, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, restoreKeys } from '@rgbx/rgb';
import { HDKey } from '@scure/bip32';
import { generateMnemonic, mnemonicToSeedSync } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { procCpuMs, round, stats } from './lib.mjs';
import { clientFor, startNode } from './wallet-node-lib.mjs';

// --- keys (rgb-lib's account paths on regtest, SegWitV0) ----------------------------------------------------------
const TPUB = { private: 0x04358394, public: 0x043587cf };
const keysOf = (root) => ({
  accountXpubVanilla: root.derive("m/84'/1'/0'").publicExtendedKey,
  accountXpubColored: root.derive("m/84'/827167'/0'").publicExtendedKey,
  masterFingerprint: root.fingerprint.toString(16).padStart(8, '0'),
});
const fastKeys = () => keysOf(HDKey.fromMasterSeed(randomBytes(32), TPUB));

// --- /proc ---------------------------------------------------------------------------------------------------------
const readProc = (pid, f) => {
  try {
    return readFileSync(`/proc/${pid}/${f}`, 'utf8');
  } catch {
    return null;
  }
};
const childPids = (pid) =>
  (readProc(pid, `task/${pid}/children`) ?? '').trim().split(/\s+/).filter(Boolean).map(Number);
/** Socket inode → {local, remote port, established}, from /proc/net/tcp{,6}. */
function tcpTable() {
  const rows = new Map();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const p = line.trim().split(/\s+/);
      if (p.length < 10) continue;
      rows.set(p[9], {
        local: Number.parseInt(p[1].split(':')[1], 16),
        remote: Number.parseInt(p[2].split(':')[1], 16),
        est: p[3] === '01',
      });
    }
  }
  return rows;
}
/** Sessions of the server listening on `port` (server-side ends of established connections): one file read. */
function serverSessions(port) {
  let n = 0;
  for (const r of tcpTable().values()) if (r.est && r.local === port) n++;
  return n;
}
/** Established connections from the node and its children to `port` (walks their descriptors: ~ms per 1,000). */
function nodeConnections(nodePid, port) {
  const tcp = tcpTable();
  let node = 0;
  for (const pid of [nodePid, ...childPids(nodePid)]) {
    let fds = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link = '';
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      const r = m ? tcp.get(m[1]) : undefined;
      if (r?.est && r.remote === port) node++;
    }
  }
  return node;
}
const kib = (text, key) => Number(text?.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))?.[1] ?? 0);
const mib = (k) => round(k / 1024);
/** RSS/PSS (MiB), file descriptors and threads of the node and of its rgb-lib children. */
function resources(nodePid) {
  const one = (p) => ({
    rss: kib(readProc(p, 'status'), 'VmRSS'),
    pss: kib(readProc(p, 'smaps_rollup'), 'Pss'),
    fds: (() => {
      try {
        return readdirSync(`/proc/${p}/fd`).length;
      } catch {
        return 0;
      }
    })(),
    threads: Number(readProc(p, 'status')?.match(/^Threads:\s+(\d+)/m)?.[1] ?? 0),
  });
  const node = one(nodePid);
  const kids = childPids(nodePid)
    .filter((p) => (readProc(p, 'cmdline') ?? '').includes('--rgbx-rgb-child='))
    .map(one);
  const sum = (k) => kids.reduce((a, c) => a + c[k], 0);
  return {
    node_rss_mib: mib(node.rss),
    node_pss_mib: mib(node.pss),
    children: kids.length,
    children_rss_mib: mib(sum('rss')),
    children_pss_mib: mib(sum('pss')),
    total_rss_mib: mib(node.rss + sum('rss')),
    total_pss_mib: mib(node.pss + sum('pss')),
    children_fds: kids.map((c) => c.fds),
    children_threads: kids.map((c) => c.threads),
  };
}

/** CPU ms so far of the node, of its children (by pid), and of this process (the load generator). */
function cpuSnapshot(nodePid) {
  const cpu = (p) => {
    try {
      return procCpuMs(p);
    } catch {
      return Number.NaN;
    }
  };
  const u = process.cpuUsage();
  return {
    node: cpu(nodePid),
    children: Object.fromEntries(childPids(nodePid).map((p) => [p, cpu(p)])),
    self: (u.user + u.system) / 1000,
  };
}
/** CPU ms per call between two snapshots (a child in only one counts from 0 / to its last value). */
function cpuPerCall(a, b, n) {
  let kids = 0;
  for (const p of new Set([...Object.keys(a.children), ...Object.keys(b.children)])) {
    const end = b.children[p];
    if (Number.isFinite(end)) kids += end - (a.children[p] ?? 0);
  }
  return {
    node: round((b.node - a.node) / n),
    children: round(kids / n),
    load_generator: round((b.self - a.self) / n),
  };
}

/** Runs `fn(item, i)` over `items` with `concurrency` at once. */
async function pool(items, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}
/** Fisher–Yates, in place. */
function shuffle(xs) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

/**
 * @param {{ registered?: number, rotations?: number[], rounds?: number, concurrency?: number,
 *   registerConcurrency?: number, btcbalanceRounds?: number, sequentialCalls?: number, registerBudgetS?: number }} [opts]
 * `registerBudgetS`: registration stops after this many seconds (what was registered by then is measured).
 */
export async function benchWalletNodeScale(opts = {}) {
  const REGISTERED = opts.registered ?? 1000;
  const ROTATIONS = (opts.rotations ?? [10, 100]).filter((m) => m <= REGISTERED);
  const ROUNDS = opts.rounds ?? 5;
  const CONC = opts.concurrency ?? 8;
  const REG_CONC = opts.registerConcurrency ?? 8;
  const BAL_ROUNDS = opts.btcbalanceRounds ?? 2;
  const SEQ_CALLS = opts.sequentialCalls ?? 200;
  const REG_BUDGET_S = opts.registerBudgetS ?? Number.POSITIVE_INFINITY;
  const dir = mkdtempSync(join(tmpdir(), 'bench-wallet-node-scale-'));
  const devnet = await startDevnet({ dir: join(dir, 'devnet') });
  const electrumPort = Number(devnet.info.electrum.split(':').pop());
  const out = {
    cpus: cpus().length,
    loadavg_start: loadavg().map(round),
    config: {
      registered: REGISTERED,
      rotations: ROTATIONS,
      rounds: ROUNDS,
      btcbalance_rounds: BAL_ROUNDS,
      sequential_calls: SEQ_CALLS,
      concurrency: CONC,
      register_concurrency: REG_CONC,
      workers: 2,
      electrum_max_connections: 1024,
    },
  };
  const status = {};
  const count = (s) => {
    status[s] = (status[s] ?? 0) + 1;
  };
  /** One call, timed; its answer counted by HTTP status (the SDK throws on non-2xx); true if it answered 200. */
  const timed = async (f, lat) => {
    const t0 = performance.now();
    try {
      await f();
      count(200);
      lat?.push(performance.now() - t0);
      return true;
    } catch (err) {
      count(err?.httpStatus ?? `error: ${String(err?.message ?? err).slice(0, 80)}`);
      return false;
    }
  };
  const loads = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0]), 5000);
  let node;
  const conn = { node_max: 0, server_max: 0, samples: 0, node_samples: 0 };
  /** Every rgb-lib child pid seen (2 at start; more = spares started or children restarted by isolation). */
  const childrenSeen = new Set();
  let sampler;
  try {
    const mnemonic = generateMnemonic(wordlist);
    const mine = keysOf(HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic), TPUB));
    const theirs = await restoreKeys('Regtest', mnemonic, 'SegWitV0');
    if (
      theirs.accountXpubVanilla !== mine.accountXpubVanilla ||
      theirs.accountXpubColored !== mine.accountXpubColored ||
      theirs.masterFingerprint.toLowerCase() !== mine.masterFingerprint
    )
      throw new Error('in-process key derivation differs from rgb-lib');
    await closeDefaultHost();

    const file = join(dir, 'node.toml');
    // The default configuration (budget derived from indexer_max_connections = 512: 255 online), 2 children.
    writeFileSync(
      file,
      walletNodeToml(devnet.info, {
        dataDir: join(dir, 'data'),
        wallet: { witness_version: 'SegWitV0', workers: 2 },
      }),
    );
    node = await startNode(file);
    const readiness = async () => (await fetch(`${node.url}/readiness`)).json();
    out.budget = (await readiness()).wallets;
    out.budget_connections = out.budget.max_online * 2 + 2;
    out.idle = resources(node.pid);
    // The Electrum server's sessions every 50 ms (only this node connects to it), the node's own sockets every 1 s
    // (walking ~1,000 descriptors costs the load generator a few ms each time).
    let ticks = 0;
    sampler = setInterval(() => {
      conn.server_max = Math.max(conn.server_max, serverSessions(electrumPort));
      conn.samples++;
      if (ticks++ % 20 === 0) {
        for (const p of childPids(node.pid)) childrenSeen.add(p);
        conn.node_max = Math.max(conn.node_max, nodeConnections(node.pid, electrumPort));
        conn.node_samples++;
      }
    }, 50);

    // --- register -------------------------------------------------------------------------------------------------
    const wanted = Array.from({ length: REGISTERED }, fastKeys);
    const regLat = [];
    const t0 = performance.now();
    let lastReport = Date.now();
    // Registration stops at REG_BUDGET_S (a shared machine may not allow the whole N): the wallets registered by
    // then are the ones measured, and the result says how many.
    const keys = [];
    await pool(wanted, REG_CONC, async (k) => {
      if ((performance.now() - t0) / 1000 > REG_BUDGET_S) return;
      if (await timed(() => clientFor(node.url, k).register(), regLat)) keys.push(k);
      if (Date.now() - lastReport > 30_000) {
        lastReport = Date.now();
        console.error(
          `registered ${keys.length}/${REGISTERED} in ${Math.round((performance.now() - t0) / 1000)} s`,
        );
      }
    });
    const regS = (performance.now() - t0) / 1000;
    out.register = {
      wanted: REGISTERED,
      time_budget_s: Number.isFinite(REG_BUDGET_S) ? REG_BUDGET_S : null,
      wallets: keys.length,
      seconds: round(regS),
      per_second: round(keys.length / regS),
      latency_ms: stats(regLat),
      status: { ...status },
    };
    out.after_register = { resources: resources(node.pid), readiness: (await readiness()).wallets };

    // --- rotation -------------------------------------------------------------------------------------------------
    out.rotation = [];
    for (const m of ROTATIONS.filter((x) => x <= keys.length)) {
      // M wallets in use: a random subset of the registered ones, every round in a new random order.
      const inUse = shuffle([...keys]).slice(0, m);
      const clients = inUse.map((k) => clientFor(node.url, k));
      const r = { wallets: m, listassets: {}, btcbalance: {} };
      const before = { ...status };
      for (const [name, call, rounds] of [
        ['listassets', (c) => c.listAssets(), ROUNDS],
        ['btcbalance', (c) => c.btcBalance(), BAL_ROUNDS],
      ]) {
        // First touch: each wallet once, one at a time (it may have to be opened, or brought online, first).
        const first = [];
        for (const c of shuffle([...clients])) await timed(() => call(c), first);
        // Warm, `CONC` in flight: `rounds` passes over the M wallets, each pass in a new random order.
        const warm = [];
        const cpu0 = cpuSnapshot(node.pid);
        const ts = performance.now();
        for (let round_ = 0; round_ < rounds; round_++)
          await pool(shuffle([...clients]), CONC, (c) => timed(() => call(c), warm));
        const warmS = (performance.now() - ts) / 1000;
        const cpu = cpuPerCall(cpu0, cpuSnapshot(node.pid), warm.length);
        const afterWarm = resources(node.pid);
        // One at a time (the latency of a call alone): SEQ_CALLS calls cycling over the M wallets in random order.
        const seq = [];
        const order = shuffle([...clients]);
        for (let i = 0; i < SEQ_CALLS; i++) await timed(() => call(order[i % order.length]), seq);
        r[name] = {
          first_touch: stats(first),
          warm: stats(warm),
          warm_per_second: round(warm.length / warmS),
          warm_cpu_ms_per_call: cpu,
          one_at_a_time: stats(seq),
          resources_after_warm: afterWarm,
          open_after_warm: (await readiness()).wallets.open,
        };
      }
      r.status = Object.fromEntries(
        Object.entries(status)
          .map(([k, v]) => [k, v - (before[k] ?? 0)])
          .filter(([, v]) => v > 0),
      );
      r.resources = resources(node.pid);
      r.readiness = (await readiness()).wallets;
      out.rotation.push(r);
      console.error(
        `rotation ${m}: listassets warm p50 ${r.listassets.warm.p50} p99 ${r.listassets.warm.p99} ms, alone p50 ${r.listassets.one_at_a_time.p50} p99 ${r.listassets.one_at_a_time.p99} ms; btcbalance warm p50 ${r.btcbalance.warm.p50} p99 ${r.btcbalance.warm.p99} ms`,
      );
    }
    clearInterval(sampler);
    out.connections = {
      ...conn,
      budget: out.budget_connections,
      within_budget: Math.max(conn.node_max, conn.server_max) <= out.budget_connections,
    };
    out.children_processes_seen = childrenSeen.size;
    out.status = status;
    out.no_5xx = Object.keys(status).every((s) => !(Number(s) >= 500) && !String(s).startsWith('error'));
    out.readiness_end = await readiness();
    out.fits_2gb = out.rotation.every((r) => r.resources.total_rss_mib < 2048);
    out.loadavg_end = loadavg().map(round);
    out.loadavg_1m_during = loads.length ? stats(loads) : null;
    return out;
  } finally {
    clearInterval(loadTimer);
    if (sampler) clearInterval(sampler);
    await node?.stop();
    await closeDefaultHost();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The default run (for bench/run.mjs: `node bench/run.mjs wallet_node_scale`). */
export async function run(opts = {}) {
  return { date: new Date().toISOString(), ...(await benchWalletNodeScale(opts)) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      full: { type: 'boolean', default: false },
      registered: { type: 'string' },
      rotations: { type: 'string' },
      rounds: { type: 'string', default: '5' },
      concurrency: { type: 'string', default: '8' },
      'register-concurrency': { type: 'string', default: '8' },
      'register-minutes': { type: 'string' },
      save: { type: 'boolean', default: false },
    },
  });
  const out = await run({
    registered: Number(values.registered ?? (values.full ? 10_000 : 1000)),
    rotations: (values.rotations ?? (values.full ? '10,100,1000' : '10,100')).split(',').map(Number),
    rounds: Number(values.rounds),
    concurrency: Number(values.concurrency),
    registerConcurrency: Number(values['register-concurrency']),
    // --full: at most 15 minutes of registering (10,000 take ~40 min on 2 shared cores), then the rotations.
    registerBudgetS: 60 * Number(values['register-minutes'] ?? (values.full ? 15 : Number.POSITIVE_INFINITY)),
  });
  if (values.save) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    const name = values.full ? 'wallet-node-scale-full.json' : 'wallet-node-scale.json';
    writeFileSync(new URL(`./results/${name}`, import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
  }
  console.info(JSON.stringify(out, null, 2));
  process.exit(0);
}
