// Wallet node benchmarks, each next to a baseline measured in the same run:
// (a) p50 of /wallet/listassets and /wallet/assetbalance through HTTP ÷ the same rgb-lib call made
//     directly (addon loaded in this process, same wallet data copied aside);
// (b) p99 of wallet B's offline calls and of /healthcheck while wallet A is stuck on a hung indexer
//     (Electrum SIGSTOPped), next to the same p99s with a healthy indexer;
// (c) requests/s of /wallet/listassets across 50 wallets with a pool of 1 versus 2 rgb-lib children.
// (b) and (c) run their phases interleaved: each of `rounds` rounds measures both sides, in an order that
// alternates by round; figures are over all rounds' samples (b) or medians of the per-round rates (c), ratios
// medians of the per-round ratios.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawnService, startDevnet, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys } from '@rgbx/rgb';
import { signPsbt, WalletNodeClient } from '@rgbx/sdk';
import { interleave, round, stats } from './lib.mjs';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const MAIN = resolve(fileURLToPath(new URL('.', import.meta.url)), '../apps/wallet-node/dist/main.js');

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

async function startNode(file) {
  const s = await spawnService('wallet node', [MAIN, '-c', file]);
  return { url: s.value, stop: () => s.stop() };
}

const clientFor = (url, k) =>
  new WalletNodeClient(url, {
    xpubVanilla: k.accountXpubVanilla,
    xpubColored: k.accountXpubColored,
    fingerprint: k.masterFingerprint,
  });

/** Runs `fn` with `concurrency` workers for `ms`; returns requests/s. */
async function throughput(fn, { concurrency = 16, ms = 5000 } = {}) {
  let n = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = w; Date.now() < end; i += concurrency) {
        await fn(i);
        n++;
      }
    }),
  );
  return round(n / (ms / 1000));
}

/**
 * @param {{ rounds?: number, isolationMs?: number, poolMs?: number }} [opts] rounds of (b) and (c); per round,
 * each side of (b) is sampled for `isolationMs` and each (pool, call) of (c) driven for `poolMs`.
 */
export async function benchWalletNode(opts = {}) {
  const ROUNDS = Math.max(2, opts.rounds ?? 4);
  const ISOLATION_MS = opts.isolationMs ?? 2000;
  const POOL_MS = opts.poolMs ?? 2000;
  const dir = mkdtempSync(join(tmpdir(), 'bench-wallet-node-'));
  const devnet = await startDevnet({ dir: join(dir, 'devnet') });
  const out = {};
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
      supportedSchemas: ['Nia', 'Cfa', 'Uda'],
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
    const a = await interleave(
      {
        http_listassets: () => A.listAssets(),
        direct_listassets: async () => direct('rgblib_list_assets', '[]'),
        http_assetbalance: () => A.assetBalance(asset.asset_id),
        direct_assetbalance: async () => direct('rgblib_get_asset_balance', asset.asset_id),
      },
      { n: 200, warmup: 20 },
    );
    out.a_http_vs_direct = {
      ...a,
      ratio_p50_listassets: round(a.http_listassets.p50 / a.direct_listassets.p50),
      ratio_p50_assetbalance: round(a.http_assetbalance.p50 / a.direct_assetbalance.p50),
    };

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
    const pid = JSON.parse(readFileSync(join(dir, 'devnet', 'devnet.json'), 'utf8')).pids.electrum;
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
      const runs = {};
      for (let r = 0; r < ROUNDS; r++) {
        for (const call of Object.keys(calls)) {
          for (const workers of r % 2 === 0 ? [1, 2] : [2, 1]) {
            const key = `pool_${workers}_${call}_rps`;
            if (!runs[key]) runs[key] = [];
            runs[key].push(
              await throughput(calls[call](pools[workers].clients), { concurrency: 32, ms: POOL_MS }),
            );
          }
        }
      }
      const c = {
        rounds: ROUNDS,
        ms_per_run: POOL_MS,
        order: 'pool 1 first in odd-numbered rounds, pool 2 first in even-numbered ones',
      };
      for (const [k, v] of Object.entries(runs)) c[k] = round(median(v));
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
    },
  });
  const out = await benchWalletNode({
    rounds: Number(values.rounds),
    isolationMs: Number(values['isolation-ms']),
    poolMs: Number(values['pool-ms']),
  });
  console.info(JSON.stringify(out, null, 2));
  process.exit(0);
}
