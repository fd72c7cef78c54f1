/**
 * Integration tests against the real rgb-lib addon, running in the child process (`child.ts` itself, the
 * current source, through the test-only TypeScript loader; `children.test.ts` runs the built `dist/`).
 * No indexer needed.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RgbCallTimeoutError, RgbChildDiedError, RgbLibError, RgbWalletClosedError } from './errors.ts';
import { RgbHost } from './host.ts';
import type { Keys, WitnessVersion } from './types.ts';
import { generateKeys, openWallet } from './wallet.ts';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'rgbx-rgb-test-'));
  dirs.push(d);
  return d;
}

/** A TCP server that accepts connections and never answers (a hung indexer). */
async function silentServer(): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return {
    server,
    url: `tcp://127.0.0.1:${addr.port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const host = new RgbHost();
const keys: Partial<Record<WitnessVersion, Keys>> = {};

beforeAll(async () => {
  await host.start();
});

afterAll(async () => {
  await host.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('RgbHost + watch-only wallet (real rgb-lib in a child process)', () => {
  it('spawns the child quickly and reports its spawn time', () => {
    expect(host.pid).toBeTypeOf('number');
    expect(host.pid).not.toBe(process.pid);
    expect(host.lastSpawnMs).toBeLessThan(5_000);
    console.info(`[rgb] child spawn → ready: ${host.lastSpawnMs?.toFixed(1)} ms`);
  });

  it.each(['SegWitV0', 'Taproot'] as const)('generateKeys(Regtest, %s)', async (wv) => {
    const k = await generateKeys('Regtest', wv, host);
    expect(k.witnessVersion).toBe(wv);
    expect(k.mnemonic.split(' ')).toHaveLength(12);
    expect(k.masterFingerprint).toMatch(/^[0-9a-f]{8}$/);
    expect(k.accountXpubVanilla).toMatch(/^tpub/);
    expect(k.accountXpubColored).toMatch(/^tpub/);
    expect(k.accountXpubColored).not.toBe(k.accountXpubVanilla);
    keys[wv] = k;
  });

  it.each([
    ['SegWitV0', 'bcrt1q'],
    ['Taproot', 'bcrt1p'],
  ] as const)('watch-only %s wallet: address %s…, empty, no issue without UTXOs', async (wv, prefix) => {
    const k = keys[wv]!;
    const w = await openWallet({
      host,
      dataDir: tempDir(),
      network: 'Regtest',
      keys: {
        accountXpubVanilla: k.accountXpubVanilla,
        accountXpubColored: k.accountXpubColored,
        masterFingerprint: k.masterFingerprint,
        witnessVersion: wv,
      },
    });
    expect(w.witnessVersion).toBe(wv);
    expect(w.online).toBeNull();
    const addr = await w.getAddress();
    expect(addr.startsWith(prefix)).toBe(true);
    expect(await w.getAddress()).not.toBe(addr); // each call reveals a new index

    expect(await w.listAssets()).toEqual({ nia: [], uda: [], cfa: [], ifa: [] });
    expect(await w.listTransfers()).toEqual([]);
    expect(await w.listUnspents(false, true)).toEqual([]);
    expect(await w.getBtcBalance(true)).toEqual({
      vanilla: { settled: 0n, future: 0n, spendable: 0n },
      colored: { settled: 0n, future: 0n, spendable: 0n },
    });

    const issue = await w.issueAssetNia('TST', 'Test asset', 0, [1000n]).catch((e: unknown) => e);
    expect(issue).toBeInstanceOf(RgbLibError);
    expect(issue).toMatchObject({ kind: 'rgb-lib', variant: 'InsufficientAllocationSlots' });

    const missing = await w.getAssetBalance('rgb:nope').catch((e: unknown) => e);
    expect(missing).toMatchObject({
      kind: 'rgb-lib',
      variant: 'AssetNotFound',
      details: { asset_id: 'rgb:nope' },
    });

    const offline = await w.createUtxosBegin(false, null, null, 2, false).catch((e: unknown) => e);
    expect(offline).toMatchObject({ kind: 'rgb-lib', variant: 'Offline' });

    await w.drop();
    await w.drop(); // idempotent
    await expect(w.getAddress()).rejects.toBeInstanceOf(RgbWalletClosedError);
  });

  it('refuses a second open of one wallet dir and detects witness-version mismatch on reopen', async () => {
    const k = keys.SegWitV0!;
    const dataDir = tempDir();
    const opts = {
      host,
      dataDir,
      network: 'Regtest' as const,
      keys: { ...k, witnessVersion: 'SegWitV0' as const },
    };
    const w = await openWallet(opts);
    await expect(openWallet(opts)).rejects.toMatchObject({ kind: 'host', variant: 'WalletAlreadyOpen' });
    await w.drop();
    const wrong = await openWallet({ ...opts, keys: { ...opts.keys, witnessVersion: 'Taproot' } }).catch(
      (e: unknown) => e,
    );
    expect(wrong).toMatchObject({
      variant: 'WalletSettingMismatch',
      details: { setting: 'witness_version', expected: 'SegWitV0', provided: 'Taproot' },
    });
    const lock = join(dataDir, k.masterFingerprint, 'rgb_runtime.lock');
    writeFileSync(lock, ''); // left behind by some crashed process
    const again = await openWallet({ ...opts, removeStaleLock: true }); // same dir, right settings: reopened
    expect(existsSync(lock)).toBe(false);
    expect((await again.getAddress()).startsWith('bcrt1q')).toBe(true);
    await again.drop();
  });

  it('rejects arguments that would crash or confuse rgb-lib before they reach the child', async () => {
    const k = keys.Taproot!;
    const w = await openWallet({
      host,
      dataDir: tempDir(),
      network: 'Regtest',
      keys: { ...k, witnessVersion: 'Taproot' },
    });
    const pid = host.pid;
    // a null expiration_timestamp_opt segfaults rgb-lib 0.3.0-beta.7's c-ffi
    await expect(
      w.blindReceive(null, 'Any', null as unknown as number, ['rpc://127.0.0.1:1/json-rpc'], 1),
    ).rejects.toMatchObject({ kind: 'host', variant: 'InvalidArguments' });
    await expect(
      openWallet({
        host,
        dataDir: tempDir(),
        network: 'Regtest',
        keys: { ...k, witnessVersion: 'Segwit' as WitnessVersion },
      }),
    ).rejects.toMatchObject({ variant: 'InvalidArguments' });
    // u64 max goes through exactly (rgb-lib then fails on the missing UTXO, not on the number)
    const exp = Math.floor(Date.now() / 1000) + 3600;
    await expect(
      w.blindReceive(null, { Fungible: 18446744073709551615n }, exp, ['rpc://127.0.0.1:1/json-rpc'], 1),
    ).rejects.toMatchObject({ variant: 'InsufficientAllocationSlots' });
    expect(host.pid).toBe(pid);
    await w.drop();
  });

  it('answers 200 consecutive getBtcBalance IPC calls (offline, skipSync), each the same balance', async () => {
    // The round-trip time is measured in bench/wallet-node.mjs, next to its baseline, not asserted here.
    const k = keys.Taproot!;
    const w = await openWallet({
      host,
      dataDir: tempDir(),
      network: 'Regtest',
      keys: { ...k, witnessVersion: 'Taproot' },
    });
    const first = await w.getBtcBalance(true);
    for (let i = 0; i < 200; i++) expect(await w.getBtcBalance(true)).toEqual(first);
    await w.drop();
  });

  it('keeps the parent event loop ticking while the child blocks in goOnline to a hung indexer', async () => {
    const hung = await silentServer();
    const k = keys.SegWitV0!;
    const w = await openWallet({
      host,
      dataDir: tempDir(),
      network: 'Regtest',
      keys: { ...k, witnessVersion: 'SegWitV0' },
    });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t0 = performance.now();
    try {
      const err = await w
        .goOnline({ indexerUrl: hung.url, skipConsistencyCheck: true })
        .catch((e: unknown) => e);
      const elapsed = performance.now() - t0;
      expect(err).toMatchObject({ kind: 'rgb-lib', variant: 'InvalidIndexer' });
      expect(elapsed).toBeGreaterThan(2_000);
      expect(elapsed).toBeLessThan(20_000);
      // ≥ 50% of the ideal tick count: the parent was never blocked by the synchronous rgb-lib call
      expect(ticks).toBeGreaterThan((elapsed / 10) * 0.5);
      console.info(`[rgb] goOnline to hung indexer: ${elapsed.toFixed(0)} ms, parent timer ticks: ${ticks}`);
    } finally {
      clearInterval(timer);
      await hung.close();
    }
    await w.drop();
  }, 30_000);

  it('SIGKILL mid-call rejects only in-flight calls with RgbChildDiedError; a fresh child works', async () => {
    const hung = await silentServer();
    const k = keys.SegWitV0!;
    const dataDir = tempDir();
    const wkeys = { ...k, witnessVersion: 'SegWitV0' as const };
    const w = await openWallet({ host, dataDir, network: 'Regtest', keys: wkeys });
    const before = await w.getAddress(); // completed before the crash: unaffected
    const oldPid = host.pid;
    const oldGeneration = host.generation;

    // as if the child had died inside an RGB operation: rgb-lib's lock file is left behind
    const lock = join(dataDir, k.masterFingerprint, 'rgb_runtime.lock');
    writeFileSync(lock, '');

    const blocking = w
      .goOnline({ indexerUrl: hung.url, skipConsistencyCheck: true })
      .catch((e: unknown) => e);
    const queued = w.getAddress().catch((e: unknown) => e); // in flight too (queued in the child)
    await new Promise((r) => setTimeout(r, 300));
    expect(host.killChild('SIGKILL')).toBe(true);

    const [e1, e2] = await Promise.all([blocking, queued]);
    for (const e of [e1, e2]) {
      expect(e).toBeInstanceOf(RgbChildDiedError);
      expect(e).toMatchObject({ pid: oldPid, signal: 'SIGKILL' });
    }
    await hung.close();

    expect(existsSync(lock)).toBe(false); // the host removed the dead child's stale lock

    // handles of the dead child are closed with a clear error
    expect(w.isOpen).toBe(false);
    const stale = await w.getAddress().catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(RgbWalletClosedError);
    expect((stale as Error).message).toMatch(/exited \(signal SIGKILL\).*reopen/);

    // the next call starts a new child; the same wallet dir reopens and keeps its state
    const fresh = await generateKeys('Regtest', 'Taproot', host);
    expect(fresh.masterFingerprint).toMatch(/^[0-9a-f]{8}$/);
    expect(host.pid).not.toBe(oldPid);
    expect(host.generation).toBe(oldGeneration + 1);
    const w2 = await openWallet({ host, dataDir, network: 'Regtest', keys: wkeys });
    const after = await w2.getAddress();
    expect(after.startsWith('bcrt1q')).toBe(true);
    expect(after).not.toBe(before);
    await w2.drop();
  }, 30_000);

  it('callTimeoutMs kills a stuck child and rejects the call with RgbCallTimeoutError', async () => {
    const h = new RgbHost({ callTimeoutMs: 300 });
    try {
      await h.start();
      const pid = h.pid;
      const err = await h.request('sleep', 5_000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RgbCallTimeoutError);
      expect(err).toBeInstanceOf(RgbChildDiedError);
      expect(await h.request('ping')).toBe('pong');
      expect(h.pid).not.toBe(pid);
    } finally {
      await h.close();
    }
  });

  it('the child and its watchdog thread run the current sources (child.ts, watchdog-worker.ts), not dist', async () => {
    let modules = await host.request('modules');
    for (let i = 0; modules.watchdog === null && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      modules = await host.request('modules');
    }
    expect(modules).toEqual({
      child: new URL('./child.ts', import.meta.url).href,
      watchdog: new URL('./watchdog-worker.ts', import.meta.url).href,
    });
  });

  it('the parent process never loaded the native addon', () => {
    const maps = readFileSync('/proc/self/maps', 'utf8');
    expect(maps).not.toMatch(/rgblib|librgblibcffi/);
    const require = createRequire(import.meta.url);
    expect(Object.keys(require.cache).filter((p) => /rgb-lib|rgblib/.test(p))).toEqual([]);
  });
});
