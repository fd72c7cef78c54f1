/**
 * The RGB proxy against hostile clients, listening on a real socket (in-process): slow bodies are
 * cut at the request timeout while normal calls go on, malformed HTTP gets the proxy's JSON-RPC
 * shaped envelope `{jsonrpc, id: null, error: {code, message}}`, over-deep JSON a JSON-RPC parse
 * error. The proxy has no timeout options, so the kit's 30 s default is shortened here with
 * `setHttpTimeouts` before listening.
 */
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { DEFAULT_HTTP_TIMEOUTS, setHttpTimeouts } from '@rgbx/service-kit';
import { cutSummary, parseResponse, rawExchange, slowBodies, timedOut } from '@rgbx/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ProxyApp } from './app.ts';
import { tempDataDir } from './test-util.ts';

const REQUEST_TIMEOUT_MS = 1500;
let px: ProxyApp;
let dataDir: string;
let port: number;

beforeAll(async () => {
  dataDir = tempDataDir();
  px = buildApp({ dataDir });
  expect(px.app.server.requestTimeout).toBe(DEFAULT_HTTP_TIMEOUTS.requestTimeout);
  setHttpTimeouts(px.app, { requestTimeout: REQUEST_TIMEOUT_MS });
  await px.app.listen({ host: '127.0.0.1', port: 0 });
  port = (px.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await px?.app.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const rpc = (body: string) =>
  fetch(`http://127.0.0.1:${port}/json-rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });

describe('rgb proxy: slow bodies', () => {
  it('cuts 10 slow-body connections at the request timeout with 408 while server.info answers', async () => {
    const attack = slowBodies(port, 10, { path: '/json-rpc', intervalMs: 200 });
    await new Promise((r) => setTimeout(r, 500));
    const normal = await rpc('{"jsonrpc":"2.0","id":7,"method":"server.info"}');
    expect(normal.status).toBe(200);
    expect(await normal.json()).toMatchObject({ jsonrpc: '2.0', id: 7, result: {} });
    expect((await attack).map((r) => cutSummary(r, REQUEST_TIMEOUT_MS))).toEqual(
      Array(10).fill(
        timedOut({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: 'Request not received in time' },
        }),
      ),
    );
  });
});

describe('rgb proxy: malformed HTTP gets the envelope', () => {
  const post = (extra: string) =>
    `POST /json-rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}`;

  it.each([
    [
      'a non-numeric Content-Length',
      () => `${post('Content-Length: +2\r\n\r\n')}{}`,
      400,
      'Malformed HTTP request: invalid Content-Length',
    ],
    [
      'bad chunked encoding',
      () => `${post('Transfer-Encoding: chunked\r\n\r\n')}g\r\n{}\r\n0\r\n\r\n`,
      400,
      'Malformed HTTP request: invalid chunked encoding',
    ],
    [
      'a 32 KiB header',
      () => `GET /json-rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(32 * 1024)}\r\n\r\n`,
      431,
      'Request headers are too large',
    ],
  ])('%s', async (_name, request, status, message) => {
    const r = await rawExchange(port, request());
    expect(r.closed).toBe(true);
    const res = parseResponse(r.text);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message } });
    expect(r.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('JSON nested 100 000 levels deep: JSON-RPC parse error (-32700)', async () => {
    const res = await rpc(
      `{"jsonrpc":"2.0","id":1,"method":"server.info","params":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'Parse error' },
    });
  });
});
