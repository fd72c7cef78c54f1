// Wallet node benchmarks, each next to a baseline measured in the same run:
// (a) p50 of /wallet/listassets and /wallet/assetbalance through HTTP ÷ the same rgb-lib call made
//     directly (addon loaded in this process, same wallet data copied aside);
// (b) p99 of wallet B's offline calls and of /healthcheck while wallet A is stuck on a hung indexer
//     (Electrum SIGSTOPped), next to the same p99s with a healthy indexer;
// (c) requests/s of /wallet/listassets across 50 wallets with a pool of 1 versus 2 rgb-lib children.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnService, startDevnet, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys } from '@rgbx/rgb';
import { signPsbt, WalletNodeClient } from '@rgbx/sdk';
import { interleave, round, stats } from './lib.mjs';

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

export async function benchWalletNode() {
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
      return { b_offline_ms: stats(bCalls), healthcheck_ms: stats(health) };
    };
    const healthy = await sample(4000);
    const pid = JSON.parse(readFileSync(join(dir, 'devnet', 'devnet.json'), 'utf8')).pids.electrum;
    process.kill(pid, 'SIGSTOP');
    let stuck;
    let aResult;
    try {
      const aCall = A.btcBalance().then(
        () => 'ok',
        (e) => `error ${e.httpStatus ?? e.message}`,
      );
      await new Promise((r) => setTimeout(r, 300));
      stuck = await sample(8000);
      process.kill(pid, 'SIGCONT');
      aResult = await aCall;
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    out.b_isolation = {
      healthy,
      while_a_stuck: stuck,
      a_call_result: aResult,
      ratio_p99_b_offline: round(stuck.b_offline_ms.p99 / healthy.b_offline_ms.p99),
      ratio_p99_healthcheck: round(stuck.healthcheck_ms.p99 / healthy.healthcheck_ms.p99),
    };
    await node.stop();

    // (c) 50 wallets, pool of 1 vs 2.
    const many = [];
    for (let i = 0; i < 50; i++) many.push(await generateKeys('Regtest', 'SegWitV0'));
    out.c_50_wallets = {};
    for (const workers of [1, 2]) {
      const n = await startNode(config(dir, devnet.info, workers));
      const clients = many.map((k) => clientFor(n.url, k));
      await Promise.all(clients.map((c) => c.btcBalance())); // open all and go online (full scan)
      // listassets: offline, ~1 ms in rgb-lib, so bound by the HTTP process; btcbalance: syncs with the
      // indexer inside the child, so bound by the children.
      out.c_50_wallets[`pool_${workers}_listassets_rps`] = await throughput(
        (i) => clients[i % 50].listAssets(),
        {
          concurrency: 32,
          ms: 5000,
        },
      );
      out.c_50_wallets[`pool_${workers}_btcbalance_rps`] = await throughput(
        (i) => clients[i % 50].btcBalance(),
        {
          concurrency: 32,
          ms: 5000,
        },
      );
      await n.stop();
    }
    const c = out.c_50_wallets;
    c.ratio_2_vs_1_listassets = round(c.pool_2_listassets_rps / c.pool_1_listassets_rps);
    c.ratio_2_vs_1_btcbalance = round(c.pool_2_btcbalance_rps / c.pool_1_btcbalance_rps);
    lib.rgblib_free_wallet?.(w);
    return out;
  } finally {
    await closeDefaultHost();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.info(JSON.stringify(await benchWalletNode(), null, 2));
  process.exit(0);
}
