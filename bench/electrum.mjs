// Electrum server benchmarks against a real devnet (bitcoind 30.2 + our server as a process).
// (1) blockchain.scripthash.get_history for a script with 1,000 transactions, next to bitcoind's own
//     answer for the same script (a watch-only descriptor wallet's listtransactions) and a bare RPC
//     round trip (getblockcount), all measured interleaved in the same run.
// (2) Index rebuild time at start, per 1,000 blocks.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet } from '@rgbx/devnet';
import { ElectrumClient, ElectrumServer } from '@rgbx/electrum';
import { interleave, round } from './lib.mjs';

export async function benchElectrum({ txs = 1000, n = 50 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-electrum-'));
  const devnet = await startDevnet({ dir });
  try {
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
    const watch = devnet.bitcoind.withPath('/wallet/watch');
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
  console.info(JSON.stringify(await benchElectrum(), null, 2));
}
