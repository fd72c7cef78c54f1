/**
 * `POST /wallet/generate_keys` (the BTCPay plugin's setup call) on the built node (`npx tsc -b` first), with
 * rgb-lib in its children: off by default (403/1017 naming the setting), and when enabled a fresh mnemonic whose
 * keys rgb-lib derives back to exactly the xpubs answered, for the node's network and witness version; never
 * written to the data dir, never in the node's log, and generated without holding up the event loop.
 * No devnet: generating keys needs no indexer (the indexer check is off).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceProcess } from '@rgbx/devnet';
import { closeDefaultHost, restoreKeys } from '@rgbx/rgb';
import { WalletNodeClient, type WalletNodeError } from '@rgbx/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWalletNode } from './test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'wn-generate-keys-'));
let on: ServiceProcess<string>;
let off: ServiceProcess<string>;

function config(name: string, extra: string[]): string {
  const file = join(dir, `${name}.toml`);
  writeFileSync(
    file,
    [
      '[api]',
      'port = 0',
      '[metrics]', // any free port: never the default 9401 in tests
      'port = 0',
      '[wallet]',
      `data_dir = ${JSON.stringify(join(dir, name))}`,
      'network = "regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "u"',
      'btc_rpc_password = "p"',
      'indexer_address = "tcp://127.0.0.1:9"',
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      'workers = 1',
      'check_indexer_at_start = false',
      ...extra,
      '',
    ].join('\n'),
  );
  return file;
}

/** Every file under `root`, as text (binary files too: a mnemonic written anywhere would show as its bytes). */
function allFiles(root: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, e.name);
    if (e.isDirectory()) out.push(...allFiles(p));
    else if (e.isFile() && statSync(p).size < 50_000_000) out.push(readFileSync(p, 'latin1'));
  }
  return out;
}

/** Any two consecutive words of the mnemonic, as they could appear in text (space, JSON, URL or comma joined). */
function wordPairs(mnemonic: string): string[] {
  const w = mnemonic.split(' ');
  return w.slice(1).flatMap((b, i) => [' ', '+', '%20', '","', ','].map((sep) => `${w[i]}${sep}${b}`));
}

beforeAll(async () => {
  [on, off] = await Promise.all([
    startWalletNode(config('on', ['allow_generate_keys = true', 'witness_version = "SegWitV0"'])),
    startWalletNode(config('off', [])),
  ]);
}, 60_000);

afterAll(async () => {
  try {
    await Promise.all([on?.stop(), off?.stop()]);
  } finally {
    await closeDefaultHost();
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('POST /wallet/generate_keys', () => {
  it('is refused by default with 403/1017 naming wallet.allow_generate_keys', async () => {
    // As the BTCPay plugin sends it: no identity headers, no body, no content type.
    const r = await fetch(`${off.value}/wallet/generate_keys`, { method: 'POST' });
    const body = (await r.json()) as { error: { code: number; status: string; message: string } };
    expect(r.status).toBe(403);
    expect(body.error).toMatchObject({ code: 1017, status: 'generate_keys_disabled' });
    expect(body.error.message).toContain('allow_generate_keys = true');
    await expect(WalletNodeClient.generateKeys(off.value)).rejects.toMatchObject({
      httpStatus: 403,
      code: 1017,
    } satisfies Partial<WalletNodeError>);
  });

  it('answers, when enabled, a fresh mnemonic whose keys are the xpubs answered (node network and witness version)', async () => {
    const r = await fetch(`${on.value}/wallet/generate_keys`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const k = (await r.json()) as Record<string, string>;
    expect(Object.keys(k).sort()).toEqual([
      'account_xpub_colored',
      'account_xpub_vanilla',
      'master_fingerprint',
      'mnemonic',
      'witness_version',
      'xpub',
    ]);
    expect(k.mnemonic!.split(' ')).toHaveLength(12);
    expect(k.master_fingerprint).toMatch(/^[0-9a-f]{8}$/);
    expect(k.witness_version).toBe('SegWitV0'); // the node's wallet.witness_version
    for (const x of [k.xpub, k.account_xpub_vanilla, k.account_xpub_colored]) expect(x).toMatch(/^tpub/);
    // rgb-lib derives the same keys from the mnemonic: the client can sign for the wallet it registers with them.
    const again = await restoreKeys('Regtest', k.mnemonic!, 'SegWitV0');
    expect({
      xpub: again.xpub,
      account_xpub_vanilla: again.accountXpubVanilla,
      account_xpub_colored: again.accountXpubColored,
      master_fingerprint: again.masterFingerprint,
    }).toEqual({
      xpub: k.xpub,
      account_xpub_vanilla: k.account_xpub_vanilla,
      account_xpub_colored: k.account_xpub_colored,
      master_fingerprint: k.master_fingerprint,
    });
  });

  it('replays the plugin’s request (any body ignored, no headers) and is fresh every call', async () => {
    const junk = await fetch(`${on.value}/wallet/generate_keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"not":"used"',
    });
    expect(junk.status).toBe(200);
    const a = await WalletNodeClient.generateKeys(on.value);
    const b = await WalletNodeClient.generateKeys(on.value);
    expect(a.mnemonic).not.toBe(b.mnemonic);
    expect(a.master_fingerprint).not.toBe(b.master_fingerprint);
  });

  it('keeps the event loop free while keys are generated, and the mnemonics reach neither the log nor the disk', async () => {
    // 30 generations queue in the rgb-lib child; the HTTP process keeps answering meanwhile.
    const keys = Array.from({ length: 30 }, () => WalletNodeClient.generateKeys(on.value));
    const lags: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      expect((await fetch(`${on.value}/healthcheck`)).status).toBe(200);
      lags.push(performance.now() - t0);
    }
    const mnemonics = (await Promise.all(keys)).map((k) => k.mnemonic);
    expect(new Set(mnemonics).size).toBe(30);
    expect(Math.max(...lags)).toBeLessThan(200);

    await new Promise((r) => setTimeout(r, 200)); // the last access-log lines
    const log = on.stderr();
    expect(log).toContain('/wallet/generate_keys'); // the calls were logged (method, url, status, time) …
    const files = allFiles(join(dir, 'on'));
    for (const m of mnemonics) {
      for (const pair of wordPairs(m)) {
        expect(log).not.toContain(pair); // … but no part of a mnemonic
        for (const f of files) expect(f.includes(pair)).toBe(false);
      }
    }
    // Nor anything shaped like one: 12 lowercase words in a row.
    expect(log).not.toMatch(/\b(?:[a-z]{3,8}[ ,+]){11}[a-z]{3,8}\b/);
  });
});
