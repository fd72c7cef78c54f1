/**
 * The wallet node process (its build output, `npx tsc -b` first) against hostile clients over raw
 * sockets: slow bodies are cut at `[api] request_timeout_secs` with 408 while normal requests go on,
 * malformed HTTP and over-deep JSON get the documented `{error:{code,status,message,details}}`.
 * No devnet: nothing here reaches rgb-lib (the indexer check is off).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceProcess } from '@rgbx/devnet';
import { cutSummary, parseResponse, rawExchange, slowBodies, timedOut } from '@rgbx/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWalletNode, syntheticIdentity } from './test-support.ts';

const REQUEST_TIMEOUT_MS = 2000;
const dir = mkdtempSync(join(tmpdir(), 'wn-hardening-'));
let node: ServiceProcess<string>;
let port: number;

const IDENTITY = syntheticIdentity('a1b2c3d4');

beforeAll(async () => {
  const config = join(dir, 'wallet-node.toml');
  writeFileSync(
    config,
    [
      '[api]',
      'port = 0',
      `request_timeout_secs = ${REQUEST_TIMEOUT_MS / 1000}`,
      '[metrics]', // any free port: never the default 9401 in tests
      'port = 0',
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
  node = await startWalletNode(config);
  const url = node.value;
  port = Number(new URL(url).port);
}, 60_000);

afterAll(async () => {
  await node?.stop();
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
    expect((await attack).map((r) => cutSummary(r, REQUEST_TIMEOUT_MS))).toEqual(
      Array(10).fill(
        timedOut({
          error: {
            code: 1010,
            status: 'invalid_request',
            message: 'Request not received in time',
            details: {},
          },
        }),
      ),
    );
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
