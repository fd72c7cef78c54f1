/**
 * The wallet node process (its build output, `npx tsc -b` first) against hostile clients over raw
 * sockets: slow bodies are cut at `[api] request_timeout_secs` with 408 while normal requests go on,
 * malformed HTTP and over-deep JSON get the documented `{error:{code,status,message,details}}`.
 * No devnet: nothing here reaches rgb-lib (the indexer check is off).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseResponse, rawExchange, slowBodies } from '@rgbx/service-kit/testing';
import { createBase58check } from '@scure/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = resolve(import.meta.dirname, '../dist/main.js');
const REQUEST_TIMEOUT_MS = 2000;
const dir = mkdtempSync(join(tmpdir(), 'wn-hardening-'));
let proc: ChildProcess;
let port: number;

/** A regtest tpub (BIP-32 serialization) around a given compressed public key. */
function tpub(compressedKeyHex: string): string {
  const b = new Uint8Array(78);
  new DataView(b.buffer).setUint32(0, 0x043587cf);
  b.set(new Uint8Array(32).fill(7), 13); // chain code
  b.set(Buffer.from(compressedKeyHex, 'hex'), 45);
  return createBase58check((d: Uint8Array) => createHash('sha256').update(d).digest()).encode(b);
}
// G and 2G of secp256k1: real points, so nothing about the keys is suspicious.
const IDENTITY = {
  'xpub-van': tpub('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798'),
  'xpub-col': tpub('02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5'),
  'master-fingerprint': 'a1b2c3d4',
};

beforeAll(async () => {
  const config = join(dir, 'wallet-node.toml');
  writeFileSync(
    config,
    [
      '[api]',
      'port = 0',
      `request_timeout_secs = ${REQUEST_TIMEOUT_MS / 1000}`,
      '[wallet]',
      `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
      'network = "regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "u"',
      'btc_rpc_password = "p"',
      'indexer_address = "tcp://127.0.0.1:9"',
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      'workers = 1',
      'check_indexer_at_start = false',
      '',
    ].join('\n'),
  );
  proc = spawn(process.execPath, [MAIN, '-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d) => {
    err += String(d);
  });
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += String(d);
      const m = /"event":"listening","url":"([^"]+)"/.exec(out);
      if (m) res(m[1]!);
    });
    proc.once('exit', (c) => rej(new Error(`wallet node exited ${c}: ${err}`)));
  });
  port = Number(new URL(url).port);
}, 60_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

const identityHeaders = Object.entries(IDENTITY)
  .map(([k, v]) => `${k}: ${v}\r\n`)
  .join('');

describe('wallet node: slow bodies', () => {
  it('cuts 10 slow-body connections at request_timeout_secs with 408 while GET /version answers', async () => {
    const attack = slowBodies(port, 10, { path: '/wallet/register', headers: IDENTITY, intervalMs: 250 });
    await new Promise((r) => setTimeout(r, 500));
    const normal = await fetch(`http://127.0.0.1:${port}/version`);
    expect(normal.status).toBe(200);
    expect(await normal.json()).toMatchObject({ app: 'rgbx-wallet-node', version: '0.1.0' });
    for (const r of await attack) {
      expect(r.closed).toBe(true);
      expect(r.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
      expect(r.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1000);
      const res = parseResponse(r.text);
      expect(res.status).toBe(408);
      expect(res.headers.connection).toBe('close');
      expect(JSON.parse(res.body)).toEqual({
        error: {
          code: 1010,
          status: 'invalid_request',
          message: 'Request not received in time',
          details: {},
        },
      });
    }
  });
});

describe('wallet node: malformed HTTP gets the envelope', () => {
  const post = (extra: string) =>
    `POST /wallet/register HTTP/1.1\r\nHost: 127.0.0.1\r\n${identityHeaders}Content-Type: application/json\r\n${extra}`;

  it.each([
    [
      'a non-numeric Content-Length',
      () => `${post('Content-Length: 2;\r\n\r\n')}{}`,
      400,
      {
        code: 1010,
        status: 'invalid_request',
        message: 'Malformed HTTP request: invalid Content-Length',
        details: {},
      },
    ],
    [
      'bad chunked encoding',
      () => `${post('Transfer-Encoding: chunked\r\n\r\n')}2x\r\n{}\r\n0\r\n\r\n`,
      400,
      {
        code: 1010,
        status: 'invalid_request',
        message: 'Malformed HTTP request: invalid chunked encoding',
        details: {},
      },
    ],
    [
      'a 32 KiB header',
      () => `GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(32 * 1024)}\r\n\r\n`,
      431,
      { code: 1010, status: 'invalid_request', message: 'Request headers are too large', details: {} },
    ],
  ])('%s', async (_name, request, status, error) => {
    const r = await rawExchange(port, request());
    expect(r.closed).toBe(true);
    const res = parseResponse(r.text);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual({ error });
    expect(r.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('JSON nested 100 000 levels deep on a body route: 422 bad_input naming the limit (no stack overflow message)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/wallet/assetbalance`, {
      method: 'POST',
      headers: { ...IDENTITY, 'content-type': 'application/json' },
      body: `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      error: {
        code: 1001,
        status: 'bad_input',
        message: 'invalid json format',
        details: { body: 'Invalid JSON body: nested deeper than 64 levels' },
      },
    });
  });
});
