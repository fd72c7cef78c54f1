/**
 * Backups and uploads: the store (ids, files, modes, one backup per wallet, expiry, start-up cleanup) in
 * process, then the routes on two real wallet node processes (the build output, `npx tsc -b` first) with their
 * rgb-lib children: backup, download, restore and the upload checks of the issuance routes. No devnet: a new
 * wallet can be backed up and restored offline, and issuance is refused before rgb-lib needs a UTXO.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnService } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys, type Keys } from '@rgbx/rgb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupStore } from './backups.ts';
import type { WalletIdentity } from './identity.ts';
import { registerOffline } from './test-support.ts';
import { intField, optionalField, type Upload, u64List } from './uploads.ts';

const dir = mkdtempSync(join(tmpdir(), 'wn-backups-'));

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
});

const mode = (p: string) => statSync(p).mode & 0o777;
const idA: WalletIdentity = { fingerprint: 'aaaaaaaa', xpubVanilla: 'tpubVanA', xpubColored: 'tpubColA' };
const idB: WalletIdentity = { fingerprint: 'bbbbbbbb', xpubVanilla: 'tpubVanB', xpubColored: 'tpubColB' };

describe('BackupStore', () => {
  let clock = 1_000_000;
  const now = () => clock;
  const fake = (content: string) => async (path: string) => writeFileSync(path, content, { mode: 0o644 });

  it('keeps a backup private to its wallet, by id or as the latest by xpub_van, one per wallet', async () => {
    const data = join(dir, 'store1');
    mkdirSync(data);
    const store = new BackupStore(data, { ttlMs: 1000, now });
    const a1 = await store.create(idA, fake('first'));
    expect(a1.id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(a1).toMatchObject({ fingerprint: 'aaaaaaaa', size: 5, createdAt: clock, expiresAt: clock + 1000 });
    expect(mode(store.dir)).toBe(0o700);
    expect(mode(store.pathOf(a1))).toBe(0o600);
    expect(mode(join(store.dir, `${a1.id}.json`))).toBe(0o600);
    expect(store.find(idA, a1.id)).toEqual(a1);
    expect(store.find(idA, 'tpubVanA')).toEqual(a1);
    // Another wallet, or the same fingerprint with other xpubs, cannot tell it from a missing one.
    expect(store.find(idB, a1.id)).toBeUndefined();
    expect(store.find({ ...idA, xpubColored: 'tpubOther' }, a1.id)).toBeUndefined();
    expect(store.find(idB, 'tpubVanA')).toBeUndefined();
    expect(store.find(idA, 'nope')).toBeUndefined();

    const b1 = await store.create(idB, fake('bee'));
    clock += 10;
    const a2 = await store.create(idA, fake('second'));
    expect(a2.id).not.toBe(a1.id);
    expect(store.find(idA, a1.id)).toBeUndefined();
    expect(existsSync(store.pathOf(a1))).toBe(false);
    expect(store.find(idA, 'tpubVanA')?.id).toBe(a2.id);
    expect(readFileSync(store.pathOf(a2), 'utf8')).toBe('second');
    expect(store.find(idB, b1.id)?.id).toBe(b1.id);
    expect(readdirSync(store.dir).sort()).toEqual(
      [`${a2.id}.backup`, `${a2.id}.json`, `${b1.id}.backup`, `${b1.id}.json`].sort(),
    );
  });

  it('deletes a backup once expired, downloaded or not', async () => {
    const data = join(dir, 'store2');
    mkdirSync(data);
    const store = new BackupStore(data, { ttlMs: 1000, now });
    const a = await store.create(idA, fake('x'));
    clock += 999;
    expect(store.find(idA, a.id)?.id).toBe(a.id);
    clock += 1;
    expect(store.find(idA, a.id)).toBeUndefined();
    expect(readdirSync(store.dir)).toEqual([]);
  });

  it('keeps nothing when rgb-lib fails to write the backup', async () => {
    const data = join(dir, 'store3');
    mkdirSync(data);
    const store = new BackupStore(data, { now });
    const boom = async (path: string) => {
      writeFileSync(path, 'partial');
      throw new Error('rgb-lib failed');
    };
    await expect(store.create(idA, boom)).rejects.toThrow('rgb-lib failed');
    expect(readdirSync(store.dir)).toEqual([]);
    expect(store.size).toBe(0);
  });

  it('reloads kept backups at start-up and deletes expired ones, orphans and staging leftovers', async () => {
    const data = join(dir, 'store4');
    mkdirSync(data);
    const first = new BackupStore(data, { ttlMs: 1000, now });
    const keep = await first.create(idA, fake('keep'));
    const expired = await first.create(idB, fake('old'));
    // rgb-lib's staging directory of an interrupted backup (the wallet zipped in clear), an orphan file,
    // a record without its file.
    mkdirSync(join(first.dir, '.tmpAbC123'));
    writeFileSync(join(first.dir, '.tmpAbC123', 'backup.zip'), 'cleartext');
    writeFileSync(join(first.dir, 'ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ.backup'), 'orphan');
    writeFileSync(
      join(first.dir, 'YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY.json'),
      JSON.stringify({ ...keep, id: 'YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY' }),
    );
    // B's backup expired meanwhile.
    writeFileSync(
      join(first.dir, `${expired.id}.json`),
      JSON.stringify({ ...expired, expiresAt: clock - 1 }),
    );

    const second = new BackupStore(data, { ttlMs: 1000, now });
    second.open();
    expect(second.size).toBe(1);
    expect(second.find(idA, keep.id)).toEqual(keep);
    expect(readdirSync(second.dir).sort()).toEqual([`${keep.id}.backup`, `${keep.id}.json`].sort());
  });
});

describe('multipart field helpers', () => {
  const up = (fields: Record<string, string[]>): Upload => ({
    fields: new Map(Object.entries(fields)),
    files: [],
  });

  it('reads u64 lists repeated, as a JSON array or comma-separated, keeping every digit', () => {
    expect(u64List(up({ amounts: ['1', '18446744073709551615'] }), 'amounts')).toEqual([
      '1',
      '18446744073709551615',
    ]);
    expect(u64List(up({ amounts: ['[10, 18446744073709551615]'] }), 'amounts')).toEqual([
      '10',
      '18446744073709551615',
    ]);
    expect(u64List(up({ amounts: ['5, 6'] }), 'amounts')).toEqual(['5', '6']);
    expect(u64List(up({ amounts: ['[1, "x"'] }), 'amounts')).toEqual(['[1, "x"']);
    expect(u64List(up({}), 'amounts')).toBeUndefined();
  });

  it('reads optional text and small integers, empty inputs as absent', () => {
    expect(intField(up({ precision: ['2'] }), 'precision')).toBe(2);
    expect(intField(up({ precision: ['two'] }), 'precision')).toBe('two');
    expect(intField(up({ precision: [''] }), 'precision')).toBeUndefined();
    expect(optionalField(up({ details: [''] }), 'details')).toBeUndefined();
    expect(optionalField(up({ details: ['a', 'b'] }), 'details')).toBe('b');
  });
});

// ---------- the routes, on real processes ----------

const MAIN = resolve(import.meta.dirname, '../dist/main.js');
const BODY_LIMIT = 64 * 1024;
interface Node {
  url: string;
  data: string;
  stop(): Promise<unknown>;
}
let n1: Node;
let n2: Node;
let A: Keys;
let B: Keys;

async function startNode(name: string): Promise<Node> {
  const root = join(dir, name);
  mkdirSync(root);
  const data = join(root, 'data');
  const file = join(root, 'config.toml');
  writeFileSync(
    file,
    [
      '[api]',
      'port = 0',
      `body_limit_bytes = ${BODY_LIMIT}`,
      '[metrics]', // any free port: never the default 9401 in tests
      'port = 0',
      '[wallet]',
      `data_dir = ${JSON.stringify(data)}`,
      'network = "regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "dev"',
      'btc_rpc_password = "dev"',
      'indexer_address = "tcp://127.0.0.1:9"',
      'proxy_address = ["rpc://127.0.0.1:9/json-rpc"]',
      'check_indexer_at_start = false',
      'workers = 1',
      // The spec's node issues NIA only; these tests cover the operator's opt-in for the others.
      'issue_schemas = ["nia", "cfa", "uda", "ifa"]',
    ].join('\n'),
  );
  const s = await spawnService('wallet node', [MAIN, '-c', file]);
  return { url: s.value, data, stop: () => s.stop() };
}

const headers = (k: Keys) => ({
  'xpub-van': k.accountXpubVanilla,
  'xpub-col': k.accountXpubColored,
  'master-fingerprint': k.masterFingerprint,
});

// biome-ignore lint/suspicious/noExplicitAny: replies are read field by field, each compared exactly
type Json = Record<string, any>;

async function call(
  node: Node,
  method: string,
  path: string,
  init: { headers?: object; body?: RequestInit['body'] } = {},
) {
  const res = await fetch(node.url + path, {
    method,
    headers: init.headers as Record<string, string>,
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, buf, text, json: json as Json };
}

/** The form rgb-sdk's restoreWallet sends (file first, named wallet.backup). */
function restoreForm(file: Uint8Array, password: string, k: Keys): FormData {
  const f = new FormData();
  f.append('file', new Blob([file]), 'wallet.backup');
  f.append('password', password);
  f.append('xpub_van', k.accountXpubVanilla);
  f.append('xpub_col', k.accountXpubColored);
  f.append('master_fingerprint', k.masterFingerprint);
  return f;
}

const leftovers = (node: Node) =>
  ['restore', 'issue'].flatMap((a) => {
    const p = join(node.data, '.uploads', a);
    return existsSync(p) ? readdirSync(p) : [];
  });

describe('backup and restore routes (two wallet node processes)', () => {
  let backupId: string;
  let file: Buffer;

  beforeAll(async () => {
    [A, B] = [await generateKeys('Regtest', 'SegWitV0'), await generateKeys('Regtest', 'SegWitV0')];
    [n1, n2] = await Promise.all([startNode('n1'), startNode('n2')]);
    // Only register creates a wallet (offline here: it creates it, then fails to go online).
    await registerOffline(n1.url, headers(A));
    await registerOffline(n1.url, headers(B));
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([n1?.stop(), n2?.stop()]);
    await closeDefaultHost();
  });

  it('keeps wallet data private (data_dir and wallet dirs 0700, rgb-lib files 0600) and creates no wallet but by register', async () => {
    const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
    const w = join(n1.data, A.masterFingerprint);
    expect([
      mode(n1.data),
      mode(w),
      mode(join(w, 'rgb_lib_db')),
      mode(join(w, 'wallet_manifest.json')),
    ]).toEqual(['700', '700', '600', '600']);
    // Any other route on an identity the node has no wallet for: 404/1015, and nothing on disk.
    const C = await generateKeys('Regtest', 'SegWitV0');
    const r = await call(n1, 'POST', '/wallet/listassets', { headers: headers(C) });
    expect([r.status, r.json.error.code, r.json.error.status]).toEqual([404, 1015, 'wallet_not_found']);
    expect(existsSync(join(n1.data, C.masterFingerprint))).toBe(false);
    // drop of an unknown wallet is a no-op.
    const d = await call(n1, 'POST', '/wallet/drop', { headers: headers(C) });
    expect([d.status, d.json]).toEqual([200, null]);
  });

  it('makes a backup with a password of at least 8 characters', async () => {
    const short = await call(n1, 'POST', '/wallet/backup', {
      headers: { ...headers(A), 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'seven77' }),
    });
    expect(short.status).toBe(422);
    expect(short.json.error.details.body).toBe('body: /password must NOT have fewer than 8 characters');

    const t0 = Date.now();
    const r = await call(n1, 'POST', '/wallet/backup', {
      headers: { ...headers(A), 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'correct horse' }),
    });
    expect(r.status).toBe(200);
    backupId = r.json.backup_id;
    expect(backupId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(r.json).toEqual({
      message: 'Backup created successfully',
      backup_id: backupId,
      download_url: `/wallet/backup/${backupId}`,
      expires_at: r.json.expires_at,
      size: r.json.size,
    });
    expect(r.json.expires_at).toBeGreaterThanOrEqual(Math.floor(t0 / 1000) + 86_400);
    expect(r.json.expires_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 86_400);
    const onDisk = join(n1.data, '.backups', `${backupId}.backup`);
    file = readFileSync(onDisk);
    expect(file.length).toBe(r.json.size);
    expect(mode(onDisk)).toBe(0o600);
    expect(mode(join(n1.data, '.backups'))).toBe(0o700);
  });

  it('serves the file only to the wallet that made it', async () => {
    const got = await call(n1, 'GET', `/wallet/backup/${backupId}`, { headers: headers(A) });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/octet-stream');
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="wallet-${A.masterFingerprint}.backup"`,
    );
    expect(got.buf.equals(file)).toBe(true);
    // rgb-sdk's default id: the wallet's xpub_van (longer than the router's 100-character parameter limit).
    const latest = await call(n1, 'GET', `/wallet/backup/${A.accountXpubVanilla}`, { headers: headers(A) });
    expect(latest.status).toBe(200);
    expect(latest.buf.equals(file)).toBe(true);

    for (const [path, h] of [
      [`/wallet/backup/${backupId}`, headers(B)],
      [`/wallet/backup/${A.accountXpubVanilla}`, headers(B)],
      [`/wallet/backup/${B.accountXpubVanilla}`, headers(B)],
      [`/wallet/backup/${backupId}`, { ...headers(A), 'xpub-col': B.accountXpubColored }],
    ] as const) {
      const r = await call(n1, 'GET', path, { headers: h });
      expect(r.status).toBe(404);
      expect(r.json).toEqual({
        error: { code: 1000, status: 'not_found', message: 'backup not found', details: {} },
      });
    }
    const anonymous = await call(n1, 'GET', `/wallet/backup/${backupId}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).toBe('Missing xpub-van/xpub-col/master-fingerprint header');
  });

  it('refuses a wrong password, another wallet claimed, mismatched headers and a non-backup: nothing created', async () => {
    const wrong = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(A),
      body: restoreForm(file, 'not the password', A),
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json).toEqual({
      error: {
        code: 1010,
        status: 'invalid_request',
        message: 'wrong password: the backup cannot be decrypted with it',
        details: { kind: 'WrongPassword' },
      },
    });

    const claimB = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(B),
      body: restoreForm(file, 'correct horse', B),
    });
    expect(claimB.status).toBe(409);
    expect(claimB.json.error.code).toBe(1012);
    expect(claimB.json.error.message).toBe(
      `the backup is not the claimed wallet's: it holds wallet ${A.masterFingerprint}, not ${B.masterFingerprint}`,
    );

    // A's fingerprint with B's xpubs: the backup's manifest names other xpubs. (The failed attempts above did
    // not leave A's fingerprint claimed in memory, else this would be the registry's 409.)
    const otherXpubs = { ...B, masterFingerprint: A.masterFingerprint };
    const claimXpubs = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(otherXpubs),
      body: restoreForm(file, 'correct horse', otherXpubs),
    });
    expect(claimXpubs.status).toBe(409);
    expect(claimXpubs.json.error.message).toBe("the backup is not the claimed wallet's: its xpubs differ");

    const mixed = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(B),
      body: restoreForm(file, 'correct horse', A),
    });
    expect(mixed.status).toBe(409);
    expect(mixed.json.error.message).toBe(
      'the form fields and the xpub-van/xpub-col/master-fingerprint headers name different wallets',
    );

    const garbage = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(A),
      body: restoreForm(Buffer.from('not a backup at all'), 'correct horse', A),
    });
    expect(garbage.status).toBe(400);
    expect(garbage.json.error.details).toEqual({ kind: 'InvalidFilePath' });

    const json = await call(n2, 'POST', '/wallet/restore', {
      headers: { ...headers(A), 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'correct horse' }),
    });
    expect(json.status).toBe(422);
    expect(json.json.error.details.body).toBe(
      'Content type error: expected multipart/form-data, got application/json',
    );

    const noFile = new FormData();
    noFile.append('password', 'correct horse');
    const missing = await call(n2, 'POST', '/wallet/restore', { headers: headers(A), body: noFile });
    expect(missing.status).toBe(422);
    expect(missing.json.error.details.body).toBe('missing field `file`');

    const big = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(A),
      body: restoreForm(Buffer.alloc(BODY_LIMIT + 1), 'correct horse', A),
    });
    expect(big.status).toBe(413);
    expect(big.json.error).toMatchObject({
      code: 1013,
      message: `file larger than ${BODY_LIMIT} bytes (api.body_limit_bytes)`,
    });

    const entries = readdirSync(n2.data).filter((e) => !e.startsWith('.'));
    expect(entries).toEqual([]);
    expect(leftovers(n2)).toEqual([]);
  });

  it('restores the wallet on another node exactly as rgb-sdk sends it, then refuses it as existing', async () => {
    const ok = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(A),
      body: restoreForm(file, 'correct horse', A),
    });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({
      message: 'Wallet restored successfully',
      master_fingerprint: A.masterFingerprint,
    });
    const manifest = JSON.parse(
      readFileSync(join(n2.data, A.masterFingerprint, 'wallet_manifest.json'), 'utf8'),
    );
    expect(manifest).toMatchObject({
      account_xpub_vanilla: A.accountXpubVanilla,
      account_xpub_colored: A.accountXpubColored,
      bitcoin_network: 'Regtest',
    });
    expect(leftovers(n2)).toEqual([]);
    const assets = await call(n2, 'POST', '/wallet/listassets', { headers: headers(A) });
    expect(assets.status).toBe(200);
    expect(assets.json).toEqual({ nia: [], uda: [], cfa: [], ifa: [] });

    const again = await call(n2, 'POST', '/wallet/restore', {
      headers: headers(A),
      body: restoreForm(file, 'correct horse', A),
    });
    expect(again.status).toBe(409);
    expect(again.json.error).toEqual({
      code: 1012,
      status: 'wallet_mismatch',
      message: `a wallet with master fingerprint ${A.masterFingerprint} already exists on this node`,
      details: { master_fingerprint: A.masterFingerprint },
    });
    // On the node that made the backup the wallet exists as well.
    const there = await call(n1, 'POST', '/wallet/restore', {
      headers: headers(A),
      body: restoreForm(file, 'correct horse', A),
    });
    expect(there.status).toBe(409);
  });

  it('checks issuance uploads before rgb-lib and deletes them whatever happens', async () => {
    const form = (entries: Array<[string, string | Blob]>) => {
      const f = new FormData();
      for (const [k, v] of entries) f.append(k, v);
      return f;
    };
    const media = new Blob([Buffer.from('89504e470d0a1a0a', 'hex')]);
    const cases: Array<[string, FormData, number, string]> = [
      ['/wallet/issueassetcfa', form([['amounts', '1']]), 422, 'missing field `name`'],
      [
        '/wallet/issueassetcfa',
        form([
          ['name', 'Coll'],
          ['amounts', '1'],
          ['other', media],
        ]),
        422,
        'multipart: unexpected file part `other`',
      ],
      [
        '/wallet/issueassetcfa',
        form([
          ['name', 'Coll'],
          ['amounts', '[1, -2]'],
        ]),
        422,
        'body: /amounts/1 must be integer >= 0; /amounts/1 must match pattern "^(0|[1-9][0-9]{0,19})$"; /amounts/1 must match a schema in anyOf',
      ],
      [
        '/wallet/issueassetuda',
        form([
          ['ticker', 'UNI'],
          ['name', 'U'],
          ...Array.from({ length: 21 }, () => ['attachments', media] as [string, Blob]),
        ]),
        422,
        'multipart: at most 20 file part(s) `attachments`',
      ],
    ];
    for (const [path, body, status, message] of cases) {
      const r = await call(n1, 'POST', path, { headers: headers(A), body });
      expect({ path, status: r.status, body: r.json.error.details.body }).toEqual({
        path,
        status,
        body: message,
      });
    }
    const big = await call(n1, 'POST', '/wallet/issueassetcfa', {
      headers: headers(A),
      body: form([
        ['name', 'Coll'],
        ['amounts', '1'],
        ['file', new Blob([Buffer.alloc(BODY_LIMIT + 1)])],
      ]),
    });
    expect(big.status).toBe(413);
    // A valid form reaches rgb-lib, which wants a free colored UTXO this offline wallet lacks.
    const noUtxo = await call(n1, 'POST', '/wallet/issueassetcfa', {
      headers: headers(A),
      body: form([
        ['name', 'Coll'],
        ['amounts', '1'],
        ['file', media],
      ]),
    });
    expect(noUtxo.status).toBe(400);
    expect(noUtxo.json.error).toMatchObject({ code: 1004, details: { kind: 'InsufficientAllocationSlots' } });
    const emptyBody = await call(n1, 'POST', '/wallet/issueassetuda', { headers: headers(A) });
    expect(emptyBody.status).toBe(422);
    expect(emptyBody.json.error.details.body).toBe('missing field `ticker`');
    const replace = await call(n1, 'POST', '/wallet/issueassetifa', {
      headers: { ...headers(A), 'content-type': 'application/json' },
      body: JSON.stringify({
        ticker: 'INF',
        name: 'I',
        precision: 0,
        amounts: [1],
        inflation_amounts: [1],
        replace_rights_num: 1,
      }),
    });
    expect(replace.status).toBe(400);
    expect(replace.json.error.message).toBe(
      'replace_rights_num: rgb-lib 0.3.0-beta.7 issues no replace rights; send 0 or leave it out',
    );
    expect(leftovers(n1)).toEqual([]);
  });
});
