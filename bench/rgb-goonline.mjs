// A watch-only rgb-lib wallet's full-scan goOnline through our Electrum server, next to bitcoind
// scanning the same descriptors itself (scantxoutset over both keychains, same stop gap), same run.
// The wallet (xpubs + fingerprint only) has 10 funded addresses; each run opens it in a fresh data dir,
// as a restore does, so rgb-lib scans both keychains from scratch (stop gap 20).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys, openWallet } from '@rgbx/rgb';
import { round, stats } from './lib.mjs';

export async function benchGoOnline({ n = 9, funded = 10 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-goonline-'));
  const devnet = await startDevnet({ dir: join(dir, 'devnet') });
  const results = {};
  try {
    for (const witnessVersion of ['SegWitV0', 'Taproot']) {
      const keys = await generateKeys('Regtest', witnessVersion);
      const watchOnly = {
        accountXpubVanilla: keys.accountXpubVanilla,
        accountXpubColored: keys.accountXpubColored,
        masterFingerprint: keys.masterFingerprint,
        witnessVersion,
      };
      const seedDir = join(dir, `seed-${witnessVersion}`);
      mkdirSync(seedDir);
      const w = await openWallet({ dataDir: seedDir, network: 'Regtest', keys: watchOnly });
      await w.goOnline({ indexerUrl: devnet.info.electrum, skipConsistencyCheck: true });
      for (let i = 0; i < funded; i++) await devnet.fund(await w.getAddress(), '0.01');
      await devnet.mine(1);
      const expected = (await w.getBtcBalance(false)).vanilla.settled;
      await w.drop();

      const fn = witnessVersion === 'Taproot' ? 'tr' : 'wpkh';
      const scanDescs = [
        { desc: `${fn}(${keys.accountXpubVanilla}/0/*)`, range: [0, funded + 20] },
        { desc: `${fn}(${keys.accountXpubColored}/0/*)`, range: [0, 20] },
      ];
      const goOnline = [];
      const scan = [];
      let balanceOk = true;
      for (let i = 0; i < n + 1; i++) {
        const d = join(dir, `run-${witnessVersion}-${i}`);
        mkdirSync(d);
        const r = await openWallet({ dataDir: d, network: 'Regtest', keys: watchOnly });
        let t0 = performance.now();
        await r.goOnline({ indexerUrl: devnet.info.electrum, skipConsistencyCheck: false });
        const dt = performance.now() - t0;
        const bal = (await r.getBtcBalance(true)).vanilla.settled;
        if (BigInt(bal) !== BigInt(expected)) balanceOk = false;
        await r.drop();
        t0 = performance.now();
        const s = await devnet.rpc('scantxoutset', ['start', scanDescs]);
        const ds = performance.now() - t0;
        if (i > 0) {
          goOnline.push(dt);
          scan.push(ds);
        }
        if (!s.success) throw new Error('scantxoutset failed');
      }
      const g = stats(goOnline);
      const b = stats(scan);
      results[witnessVersion] = {
        rgb_goonline_full_scan_ms: g,
        bitcoind_scantxoutset_ms: b,
        ratio_p50: round(g.p50 / b.p50),
        balance_after_scan_matches: balanceOk,
        expected_vanilla_sats: String(expected),
      };
    }
    return results;
  } finally {
    await closeDefaultHost();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.info(JSON.stringify(await benchGoOnline(), (_k, v) => (typeof v === 'bigint' ? String(v) : v), 2));
}
