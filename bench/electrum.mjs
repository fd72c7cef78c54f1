// Electrum server benchmarks against a real devnet (bitcoind 30.2 + our server as a process).
// (1) blockchain.scripthash.get_history for a script with 1,000 transactions, next to bitcoind's own
//     answer for the same script (a watch-only descriptor wallet's listtransactions) and a bare RPC
//     round trip (getblockcount), all measured interleaved in the same run.
// (2) Index rebuild time at start, per 1,000 blocks.
// (3) Idle CPU of an Electrum server process (% of one core, /proc/<pid>/stat utime+stime) per follow
//     mode, next to bitcoind's own idle CPU over the same windows (the floor); modes interleaved
//     round by round. Plus freshness: generatetoaddress → headers notification and sendtoaddress →
//     scripthash notification, p50 per mode.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BitcoindRpc } from '@rgbx/chains/btc';
import { spawnService, startDevnet } from '@rgbx/devnet';
import { ElectrumClient, ElectrumServer } from '@rgbx/electrum';
import { writeToml } from '@rgbx/service-kit';
import { CLK_TCK, interleave, procCpuMs, round, stats } from './lib.mjs';

const ELECTRUM_MAIN = fileURLToPath(new URL('../apps/electrum/dist/main.js', import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid) {
  return procCpuMs(pid) / 1000;
}

const scripthashOf = (scriptPubKey) =>
  createHash('sha256').update(Buffer.from(scriptPubKey, 'hex')).digest().reverse().toString('hex');

/** The follow modes measured: the old polling, events without ZMQ, events with ZMQ (the default). */
const MODES = {
  poll_100ms: { follow: 'poll', poll_interval_ms: 100 },
  events_no_zmq: { follow: 'events', zmq: false },
  events_zmq: { follow: 'events' },
};

/**
 * Idle CPU and notification latency per follow mode against the devnet's bitcoind. Each mode runs as its
 * own process with one client subscribed to the headers and to a scripthash (a wallet left open: the
 * worst idle case, since without ZMQ that makes the mempool be polled). Rounds interleave the modes.
 */
export async function benchElectrumIdle(
  devnet,
  { rounds = 3, windowMs = 15_000, settleMs = 3_000, tries = 10 } = {},
) {
  const b = devnet.info.bitcoind;
  const state = JSON.parse(readFileSync(join(devnet.dir, 'devnet.json'), 'utf8'));
  const bitcoindPid = state.pids.bitcoind;
  const devnetElectrumPid = state.pids.electrum;
  const addr = await devnet.wallet.call('getnewaddress');
  const { scriptPubKey } = await devnet.wallet.call('getaddressinfo', [addr]);
  const sh = scripthashOf(scriptPubKey);
  const minerAddr = await devnet.wallet.call('getnewaddress');

  const start = async (mode) => {
    const conf = join(devnet.dir, `electrum-bench-${mode}.toml`);
    writeFileSync(
      conf,
      writeToml({
        server: { port: 0 },
        bitcoind: { rpc_url: b.rpc_url, rpc_user: b.rpc_user, rpc_password: b.rpc_password },
        index: MODES[mode],
        log: { level: 'warn' },
        metrics: { port: 0 },
      }),
      { mode: 0o600 },
    );
    const proc = await spawnService(`electrum (${mode})`, [ELECTRUM_MAIN, '-c', conf]);
    const c = await ElectrumClient.connect(proc.value);
    await c.request('server.version', ['bench-idle', '1.4']);
    await c.request('blockchain.headers.subscribe');
    await c.request('blockchain.scripthash.subscribe', [sh]);
    return { proc, c };
  };

  const load = [loadavg()[0]];
  const idle = Object.fromEntries(Object.keys(MODES).map((m) => [m, { electrum: [], bitcoind: [] }]));
  const devnetElectrum = [];
  for (let r = 0; r < rounds; r++) {
    for (const mode of Object.keys(MODES)) {
      const { proc, c } = await start(mode);
      try {
        await sleep(settleMs);
        const e0 = cpuSeconds(proc.proc.pid);
        const b0 = cpuSeconds(bitcoindPid);
        const d0 = devnetElectrumPid ? cpuSeconds(devnetElectrumPid) : 0;
        const t0 = performance.now();
        await sleep(windowMs);
        const secs = (performance.now() - t0) / 1000;
        idle[mode].electrum.push(((cpuSeconds(proc.proc.pid) - e0) / secs) * 100);
        idle[mode].bitcoind.push(((cpuSeconds(bitcoindPid) - b0) / secs) * 100);
        if (devnetElectrumPid) devnetElectrum.push(((cpuSeconds(devnetElectrumPid) - d0) / secs) * 100);
      } finally {
        c.close();
        await proc.stop();
      }
      load.push(loadavg()[0]);
    }
  }

  // Freshness: the same client set-up; one block or one payment at a time, modes interleaved per try.
  const fresh = Object.fromEntries(Object.keys(MODES).map((m) => [m, { block: [], tx: [] }]));
  const rpcFloor = { generatetoaddress: [], sendtoaddress: [] };
  const servers = {};
  for (const mode of Object.keys(MODES)) servers[mode] = await start(mode);
  try {
    await sleep(settleMs);
    for (let i = 0; i < tries; i++) {
      for (const mode of Object.keys(MODES)) {
        const { c } = servers[mode];
        // Every client has caught up with the previous step before anything is timed.
        const quiet = async () => {
          await sleep(300);
          for (const s of Object.values(servers)) s.c.notifications.length = 0;
        };
        await quiet();
        const height = (await devnet.rpc('getblockcount')) + 1;
        let t0 = performance.now();
        const header = c.nextNotification(
          (n) => n.method === 'blockchain.headers.subscribe' && n.params[0].height === height,
          10_000,
        );
        await devnet.rpc('generatetoaddress', [1, minerAddr]);
        rpcFloor.generatetoaddress.push(performance.now() - t0);
        await header;
        fresh[mode].block.push(performance.now() - t0);
        await quiet();
        t0 = performance.now();
        const note = c.nextNotification(
          (n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === sh,
          10_000,
        );
        await devnet.wallet.call('sendtoaddress', [addr, '0.0001']);
        rpcFloor.sendtoaddress.push(performance.now() - t0);
        await note;
        fresh[mode].tx.push(performance.now() - t0);
      }
    }
  } finally {
    for (const { proc, c } of Object.values(servers)) {
      c.close();
      await proc.stop();
    }
  }
  await devnet.mine(1); // leaves an empty mempool

  const med = (xs) => stats(xs).p50;
  const floor = med(Object.values(idle).flatMap((m) => m.bitcoind));
  const out = {
    window_s: windowMs / 1000,
    rounds,
    clk_tck: CLK_TCK,
    load_avg_1m: { min: round(Math.min(...load)), max: round(Math.max(...load)) },
    floor_bitcoind_idle_cpu_pct: round(floor),
    devnet_electrum_no_clients_cpu_pct: devnetElectrum.length ? round(med(devnetElectrum)) : null,
    modes: {},
    freshness_rpc_floor_ms: {
      generatetoaddress_p50: round(med(rpcFloor.generatetoaddress)),
      sendtoaddress_p50: round(med(rpcFloor.sendtoaddress)),
    },
  };
  for (const mode of Object.keys(MODES)) {
    const cpu = med(idle[mode].electrum);
    out.modes[mode] = {
      electrum_idle_cpu_pct: round(cpu),
      electrum_idle_cpu_pct_samples: idle[mode].electrum.map(round),
      bitcoind_idle_cpu_pct: round(med(idle[mode].bitcoind)),
      ratio_vs_bitcoind_floor: floor > 0 ? round(cpu / floor) : null,
      block_to_headers_notification_ms: stats(fresh[mode].block),
      tx_to_scripthash_notification_ms: stats(fresh[mode].tx),
    };
  }
  out.idle_cpu_ratio_events_zmq_vs_poll = round(
    out.modes.events_zmq.electrum_idle_cpu_pct / out.modes.poll_100ms.electrum_idle_cpu_pct,
  );
  return out;
}

export async function benchElectrum({ txs = 1000, n = 50, idleOnly = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-electrum-'));
  const devnet = await startDevnet({ dir });
  try {
    // First, while the chain is short and the mempool empty.
    const idle = await benchElectrumIdle(devnet);
    if (idleOnly) return { idle };
    const b = devnet.info.bitcoind;
    const w = devnet.wallet;
    // The target address belongs to another wallet so the miner never spends from it (1 tx = 1 entry).
    await devnet.rpc('createwallet', ['sink']);
    const addr = await devnet.bitcoind.withPath('/wallet/sink').call('getnewaddress');
    // Mature coins to spend from without hitting mempool chain limits.
    await devnet.mine(100);
    for (let sent = 0; sent < txs; sent += 20) {
      const k = Math.min(20, txs - sent);
      const r = await w.batch(
        Array.from({ length: k }, () => ({ method: 'sendtoaddress', params: [addr, '0.001'] })),
      );
      const bad = r.find((x) => x instanceof Error);
      if (bad) throw bad;
      await devnet.mine(1);
    }
    const info = await devnet.bitcoind.withPath('/wallet/sink').call('getaddressinfo', [addr]);
    const sh = Buffer.from(createHash('sha256').update(Buffer.from(info.scriptPubKey, 'hex')).digest())
      .reverse()
      .toString('hex');

    // bitcoind's own answer for the same script: a watch-only wallet holding addr(<A>).
    await devnet.rpc('createwallet', ['watch', true, true]);
    // The import rescans the whole chain: on a loaded machine that outlasts the devnet client's 30 s timeout.
    const watch = new BitcoindRpc({
      url: `${b.rpc_url}/wallet/watch`,
      user: b.rpc_user,
      password: b.rpc_password,
      timeoutMs: 600_000,
    });
    const { descriptor } = await devnet.rpc('getdescriptorinfo', [`addr(${addr})`]);
    await watch.call('importdescriptors', [[{ desc: descriptor, timestamp: 0 }]]);
    const listed = await watch.call('listtransactions', ['*', txs + 10, 0, true]);

    const c = await ElectrumClient.connect(devnet.info.electrum);
    await c.request('server.version', ['bench', ['1.4', '1.6']]);
    const height = await devnet.rpc('getblockcount');
    while ((await c.request('blockchain.headers.subscribe')).height < height)
      await new Promise((r) => setTimeout(r, 50));
    const history = await c.request('blockchain.scripthash.get_history', [sh]);
    if (history.length !== txs || listed.length !== txs) {
      throw new Error(
        `setup: expected ${txs} txs, electrum has ${history.length}, bitcoind ${listed.length}`,
      );
    }
    const r = await interleave(
      {
        electrum_get_history: () => c.request('blockchain.scripthash.get_history', [sh]),
        bitcoind_listtransactions: () => watch.call('listtransactions', ['*', txs + 10, 0, true]),
        bitcoind_getblockcount: () => devnet.rpc('getblockcount'),
      },
      { n },
    );
    c.close();

    // Index rebuild: a fresh in-process server indexing the whole chain from bitcoind.
    const chainHeight = await devnet.rpc('getblockcount');
    const rebuilds = [];
    for (let i = 0; i < 3; i++) {
      const srv = new ElectrumServer({ rpc: devnet.bitcoind, port: 0 });
      const { indexMs } = await srv.start();
      await srv.close();
      rebuilds.push(indexMs);
    }
    rebuilds.sort((a, b) => a - b);
    const rebuildMs = rebuilds[1];
    return {
      get_history_1000: {
        ...r,
        ratio_p50_vs_listtransactions: round(r.electrum_get_history.p50 / r.bitcoind_listtransactions.p50),
        ratio_p50_vs_rpc_roundtrip: round(r.electrum_get_history.p50 / r.bitcoind_getblockcount.p50),
      },
      idle,
      index_rebuild: {
        blocks: chainHeight + 1,
        transactions: txs + chainHeight + 1,
        median_ms: round(rebuildMs),
        ms_per_1000_blocks: round((rebuildMs / (chainHeight + 1)) * 1000),
      },
    };
  } finally {
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.info(JSON.stringify(await benchElectrum({ idleOnly: process.argv.includes('--idle') }), null, 2));
}
