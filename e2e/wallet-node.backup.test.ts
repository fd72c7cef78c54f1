/**
 * Issuance of every schema, backup and restore, end to end on the devnet: a real wallet node process funds a
 * watch-only wallet (PSBTs signed outside), issues NIA, CFA and UDA with media uploaded as multipart/form-data,
 * and IFA; backs the wallet up, downloads it; a second, fresh node restores it from a form built exactly as
 * RGB-OS rgb-sdk builds it and then holds the same assets and balances.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt, WalletNodeClient } from '@rgbx/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcess, startNode, writeNodeConfig } from './helpers/wallet-node.ts';

const T = 300_000;
let devnet: Devnet;
let dir: string;
let node1: NodeProcess;
let node2: NodeProcess | undefined;
let keysA: Keys;
let keysB: Keys;

const hdrs = (k: Keys) => ({
  'xpub-van': k.accountXpubVanilla,
  'xpub-col': k.accountXpubColored,
  'master-fingerprint': k.masterFingerprint,
});
const client = (node: NodeProcess, k: Keys) =>
  new WalletNodeClient(node.url, {
    xpubVanilla: k.accountXpubVanilla,
    xpubColored: k.accountXpubColored,
    fingerprint: k.masterFingerprint,
  });

/** u64 exact: integers above 2^53 become bigint, the others numbers (string literals are left alone). */
function parseExact(text: string): unknown {
  const marked = text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (tok) =>
    /^\d+$/.test(tok) && !Number.isSafeInteger(Number(tok)) ? `"\\u0000u64:${tok}"` : tok,
  );
  return JSON.parse(marked, (_k, v) =>
    typeof v === 'string' && v.startsWith('\u0000u64:') ? BigInt(v.slice(5)) : v,
  );
}

// biome-ignore lint/suspicious/noExplicitAny: replies are read field by field, each compared exactly
type Json = any;

async function call(
  node: NodeProcess,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  body?: FormData | string,
): Promise<{ status: number; headers: Headers; buf: Buffer; json: Json }> {
  const res = await fetch(node.url + path, {
    method,
    headers: typeof body === 'string' ? { ...headers, 'content-type': 'application/json' } : headers,
    ...(body === undefined ? {} : { body }),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  let json: Json;
  try {
    json = parseExact(buf.toString('utf8'));
  } catch {}
  return { status: res.status, headers: res.headers, buf, json };
}

/** The multipart form rgb-sdk's `restoreWallet` posts: file first (named wallet.backup), then the text fields. */
function rgbSdkRestoreForm(file: Uint8Array, password: string, k: Keys): FormData {
  const form = new FormData();
  form.append('file', new Blob([file]), 'wallet.backup');
  form.append('password', password);
  form.append('xpub_van', k.accountXpubVanilla);
  form.append('xpub_col', k.accountXpubColored);
  form.append('master_fingerprint', k.masterFingerprint);
  return form;
}

/** A 1×1 PNG: rgb-lib sniffs the media type from the content. */
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cf' +
    'c0f01f0005000201c2e2a6c40000000049454e44ae426082',
  'hex',
);
const ATTACHMENT = Buffer.from('terms of the unique asset\n');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const BIG = 9_007_199_254_740_993n; // 2^53 + 1: loses its last digit in a plain JSON.parse

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wallet-node-backup-e2e-'));
  devnet = await startDevnet({ dir: join(dir, 'devnet') });
  mkdirSync(join(dir, 'n1'));
  node1 = await startNode(
    writeNodeConfig(join(dir, 'n1'), devnet.info, {
      witness_version: 'SegWitV0',
      // The spec's node issues NIA only; this node opts in to the other schemas.
      issue_schemas: ['nia', 'cfa', 'uda', 'ifa'],
    }),
  );
  keysA = await generateKeys('Regtest', 'SegWitV0');
  keysB = await generateKeys('Regtest', 'SegWitV0');
}, T);

afterAll(async () => {
  try {
    await node1?.stop();
    await node2?.stop();
  } finally {
    await closeDefaultHost();
    await devnet?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

const data1 = () => join(dir, 'n1', 'data');
const data2 = () => join(dir, 'n2', 'data');
const assets: Record<'nia' | 'cfa' | 'uda' | 'ifa', string> = { nia: '', cfa: '', uda: '', ifa: '' };
let backupId = '';
let backupFile: Buffer;
let listedOn1: Json;

describe('issuance of every schema, backup and restore on a second node', () => {
  it(
    'funds wallet A and creates colored UTXOs (signed outside the node)',
    async () => {
      const A = client(node1, keysA);
      await A.register();
      await devnet.fund(await A.address(), '0.01', { confirm: true });
      const psbt = await A.createUtxosBegin({ num: 8, size: 1000, fee_rate: 2 });
      expect(await A.createUtxosEnd(signPsbt(psbt, keysA.mnemonic))).toBe(8);
      await devnet.mine(1);
      expect((await A.btcBalance()).colored.settled).toBe(8000n);
    },
    T,
  );

  it(
    'issues NIA (JSON), CFA and UDA with media uploaded as multipart, and IFA watch-only',
    async () => {
      const nia = await client(node1, keysA).issueAssetNia({ ticker: 'NIA', name: 'Plain', amounts: [1000] });
      assets.nia = nia.asset_id;

      const cfaForm = new FormData();
      cfaForm.append('name', 'Collectible');
      cfaForm.append('details', 'with a picture');
      cfaForm.append('precision', '2');
      cfaForm.append('amounts', BIG.toString());
      cfaForm.append('amounts', '7');
      cfaForm.append('file', new Blob([PNG], { type: 'image/png' }), 'picture.png');
      const cfa = await call(node1, 'POST', '/wallet/issueassetcfa', hdrs(keysA), cfaForm);
      expect(cfa.status).toBe(200);
      assets.cfa = cfa.json.asset_id;
      expect(cfa.json).toEqual({
        asset_id: expect.stringMatching(/^rgb:/),
        name: 'Collectible',
        details: 'with a picture',
        precision: 2,
        issued_supply: BIG + 7n,
        timestamp: expect.any(Number),
        added_at: expect.any(Number),
        balance: { settled: BIG + 7n, future: BIG + 7n, spendable: BIG + 7n },
        media: { file_path: expect.any(String), digest: sha256(PNG), mime: 'image/png' },
      });
      // rgb-lib copied the upload into the wallet's media store; the upload itself is gone.
      expect(cfa.json.media.file_path).toBe(
        join(data1(), keysA.masterFingerprint, 'media_files', sha256(PNG)),
      );
      expect(readFileSync(cfa.json.media.file_path).equals(PNG)).toBe(true);

      const udaForm = new FormData();
      udaForm.append('ticker', 'UNQ');
      udaForm.append('name', 'Unique');
      udaForm.append('file', new Blob([PNG]), 'token.png');
      udaForm.append('attachments', new Blob([ATTACHMENT]), 'terms.txt');
      const uda = await call(node1, 'POST', '/wallet/issueassetuda', hdrs(keysA), udaForm);
      expect(uda.status).toBe(200);
      assets.uda = uda.json.asset_id;
      expect(uda.json).toMatchObject({
        ticker: 'UNQ',
        name: 'Unique',
        details: null,
        precision: 0,
        balance: { settled: 1, future: 1, spendable: 1 },
        token: {
          index: 0,
          embedded_media: false,
          media: { digest: sha256(PNG), mime: 'image/png' },
          attachments: { '0': { digest: sha256(ATTACHMENT), mime: 'text/plain' } },
          reserves: false,
        },
      });

      const ifa = await call(
        node1,
        'POST',
        '/wallet/issueassetifa',
        hdrs(keysA),
        JSON.stringify({
          ticker: 'INF',
          name: 'Inflatable',
          precision: 0,
          amounts: [500],
          inflation_amounts: [250],
          replace_rights_num: 0,
          reject_list_url: 'https://example.com/reject-list',
        }),
      );
      expect(ifa.status).toBe(200);
      assets.ifa = ifa.json.asset_id;
      expect(ifa.json).toMatchObject({
        ticker: 'INF',
        name: 'Inflatable',
        initial_supply: 500,
        max_supply: 750,
        known_circulating_supply: 500,
        balance: { settled: 500, future: 500, spendable: 500 },
        reject_list_url: 'https://example.com/reject-list',
      });
      expect(readdirSync(join(data1(), '.uploads', 'issue'))).toEqual([]);

      listedOn1 = (await call(node1, 'POST', '/wallet/listassets', hdrs(keysA))).json;
      expect(listedOn1.nia.map((a: Json) => a.asset_id)).toEqual([assets.nia]);
      expect(listedOn1.cfa.map((a: Json) => a.asset_id)).toEqual([assets.cfa]);
      expect(listedOn1.uda.map((a: Json) => a.asset_id)).toEqual([assets.uda]);
      expect(listedOn1.ifa.map((a: Json) => a.asset_id)).toEqual([assets.ifa]);
    },
    T,
  );

  it(
    'backs wallet A up and serves the file to A only',
    async () => {
      const made = await call(
        node1,
        'POST',
        '/wallet/backup',
        hdrs(keysA),
        JSON.stringify({ password: 'correct horse battery' }),
      );
      expect(made.status).toBe(200);
      backupId = made.json.backup_id;
      expect(made.json.download_url).toBe(`/wallet/backup/${backupId}`);
      const onDisk = readFileSync(join(data1(), '.backups', `${backupId}.backup`));
      expect(made.json.size).toBe(onDisk.length);

      const got = await call(node1, 'GET', `/wallet/backup/${backupId}`, hdrs(keysA));
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('application/octet-stream');
      expect(got.buf.equals(onDisk)).toBe(true);
      backupFile = got.buf;
      // rgb-sdk's downloadBackup() default id: the wallet's xpub_van.
      const latest = await call(node1, 'GET', `/wallet/backup/${keysA.accountXpubVanilla}`, hdrs(keysA));
      expect(latest.buf.equals(onDisk)).toBe(true);

      for (const path of [`/wallet/backup/${backupId}`, `/wallet/backup/${keysA.accountXpubVanilla}`]) {
        const asB = await call(node1, 'GET', path, hdrs(keysB));
        expect(asB.status).toBe(404);
        expect(asB.json).toEqual({
          error: { code: 1000, status: 'not_found', message: 'backup not found', details: {} },
        });
      }

      // The SDK's backup/downloadBackup: a new backup replaces the previous one; the restore below uses it.
      const A1 = client(node1, keysA);
      const viaSdk = await A1.backup('correct horse battery');
      expect(viaSdk.backup_id).not.toBe(backupId);
      const bytes = await A1.downloadBackup(viaSdk.backup_id);
      expect(bytes.length).toBe(viaSdk.size);
      expect((await call(node1, 'GET', `/wallet/backup/${backupId}`, hdrs(keysA))).status).toBe(404);
      await expect(client(node1, keysB).downloadBackup(viaSdk.backup_id)).rejects.toMatchObject({
        httpStatus: 404,
        code: 1000,
      });
      backupFile = Buffer.from(bytes);
    },
    T,
  );

  it(
    'restores on a fresh node only with the right password and identity, then holds the same wallet',
    async () => {
      mkdirSync(join(dir, 'n2'));
      node2 = await startNode(writeNodeConfig(join(dir, 'n2'), devnet.info, { witness_version: 'Taproot' }));
      const walletDir2 = join(data2(), keysA.masterFingerprint);

      const wrong = await call(
        node2,
        'POST',
        '/wallet/restore',
        hdrs(keysA),
        rgbSdkRestoreForm(backupFile, 'wrong password', keysA),
      );
      expect(wrong.status).toBe(400);
      expect(wrong.json.error).toEqual({
        code: 1010,
        status: 'invalid_request',
        message: 'wrong password: the backup cannot be decrypted with it',
        details: { kind: 'WrongPassword' },
      });
      expect(existsSync(walletDir2)).toBe(false);

      const asB = await call(
        node2,
        'POST',
        '/wallet/restore',
        hdrs(keysB),
        rgbSdkRestoreForm(backupFile, 'correct horse battery', keysB),
      );
      expect(asB.status).toBe(409);
      expect(asB.json.error.code).toBe(1012);
      expect(readdirSync(data2()).filter((e) => !e.startsWith('.'))).toEqual([]);

      const ok = await call(
        node2,
        'POST',
        '/wallet/restore',
        hdrs(keysA),
        rgbSdkRestoreForm(backupFile, 'correct horse battery', keysA),
      );
      expect(ok.status).toBe(200);
      expect(ok.json).toEqual({
        message: 'Wallet restored successfully',
        master_fingerprint: keysA.masterFingerprint,
      });
      expect(existsSync(join(walletDir2, 'wallet_manifest.json'))).toBe(true);
      expect(readdirSync(join(data2(), '.uploads', 'restore'))).toEqual([]);

      // The same assets and balances; media paths now point into the second node's wallet directory.
      const listed2 = (await call(node2, 'POST', '/wallet/listassets', hdrs(keysA))).json;
      const moved = JSON.parse(
        JSON.stringify(listedOn1, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)).replaceAll(
          join(data1(), keysA.masterFingerprint),
          walletDir2,
        ),
      );
      expect(JSON.parse(JSON.stringify(listed2, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)))).toEqual(
        moved,
      );
      expect(listed2.cfa[0].balance.settled).toBe(BIG + 7n);
      expect(readFileSync(listed2.cfa[0].media.file_path).equals(PNG)).toBe(true);
      // Online on the new node (full consistency check of the restored wallet against the chain).
      const A2 = client(node2, keysA);
      expect(await A2.btcBalance()).toEqual(await client(node1, keysA).btcBalance());
      expect(await A2.assetBalance(assets.ifa)).toEqual({ settled: 500n, future: 500n, spendable: 500n });
      // The restored wallet knows its free colored UTXOs: it can issue again (2 of the 8 are still free).
      const again = await A2.issueAssetNia({ ticker: 'AGN', name: 'After restore', amounts: [1] });
      expect(again.balance.settled).toBe(1n);

      // Again through the SDK's restore (the same form): the wallet exists now.
      await expect(A2.restore(backupFile, 'correct horse battery')).rejects.toMatchObject({
        httpStatus: 409,
        message: `409 wallet_mismatch: a wallet with master fingerprint ${keysA.masterFingerprint} already exists on this node`,
      });
    },
    T,
  );
});
