/**
 * The swap service against hostile clients, listening on a real socket (in-process, SQLite): slow
 * bodies are cut at the request timeout while normal requests go on, malformed HTTP and over-deep
 * JSON get the swap envelope `{code, type, message}`. The swap config has no timeout keys, so the
 * kit's 30 s default is shortened here with `setHttpTimeouts` before listening.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_HTTP_TIMEOUTS, setHttpTimeouts } from '@rgbx/service-kit';
import { cutSummary, parseResponse, rawExchange, slowBodies, timedOut } from '@rgbx/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../test-support.ts';

const REQUEST_TIMEOUT_MS = 1500;
const dir = mkdtempSync(join(tmpdir(), 'swap-hardening-'));
let s: TestService;
let port: number;

beforeAll(async () => {
  s = await startTestService({ databaseUrl: `sqlite:${join(dir, 'swap.db')}` });
  // The service runs with the kit's defaults…
  expect(s.app.server.requestTimeout).toBe(DEFAULT_HTTP_TIMEOUTS.requestTimeout);
  // …shortened for the test.
  setHttpTimeouts(s.app, { requestTimeout: REQUEST_TIMEOUT_MS });
  await s.app.listen({ host: '127.0.0.1', port: 0 });
  port = (s.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('swap: slow bodies', () => {
  it('cuts 10 slow-body POST /quote connections at the request timeout while GET /networks answers', async () => {
    const attack = slowBodies(port, 10, {
      path: '/quote',
      headers: { 'x-api-key': s.apiKey },
      intervalMs: 200,
    });
    await new Promise((r) => setTimeout(r, 500));
    const normal = await fetch(`http://127.0.0.1:${port}/networks`, { headers: { 'x-api-key': s.apiKey } });
    expect(normal.status).toBe(200);
    expect(((await normal.json()) as { networks: unknown[] }).networks.length).toBeGreaterThan(0);
    expect((await attack).map((r) => cutSummary(r, REQUEST_TIMEOUT_MS))).toEqual(
      Array(10).fill(
        timedOut({
          code: 38,
          type: 'REQUEST_TIMEOUT',
          message: 'Request not received in time',
        }),
      ),
    );
  });
});

describe('swap: malformed HTTP gets the envelope', () => {
  const post = (extra: string) =>
    `POST /quote HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${s.apiKey}\r\nContent-Type: application/json\r\n${extra}`;

  it.each([
    [
      'a non-numeric Content-Length',
      () => `${post('Content-Length: 0x10\r\n\r\n')}{}`,
      { code: 34, type: 'BAD_REQUEST', message: 'Malformed HTTP request: invalid Content-Length' },
    ],
    [
      'bad chunked encoding',
      () => `${post('Transfer-Encoding: chunked\r\n\r\n')}-1\r\n{}\r\n0\r\n\r\n`,
      { code: 34, type: 'BAD_REQUEST', message: 'Malformed HTTP request: invalid chunked encoding' },
    ],
    [
      'a 32 KiB header',
      () => `GET /networks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(32 * 1024)}\r\n\r\n`,
      { code: 39, type: 'HEADERS_TOO_LARGE', message: 'Request headers are too large' },
    ],
  ])('%s', async (_name, request, body) => {
    const r = await rawExchange(port, request());
    expect(r.closed).toBe(true);
    const res = parseResponse(r.text);
    expect(res.status).toBe(body.code === 39 ? 431 : 400);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual(body);
    expect(r.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('JSON nested 100 000 levels deep: 400 INVALID_JSON (3)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/quote`, {
      method: 'POST',
      headers: { 'x-api-key': s.apiKey, 'content-type': 'application/json' },
      body: `{"amount":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 3,
      type: 'INVALID_JSON',
      message: 'Invalid JSON body: nested deeper than 64 levels',
    });
  });
});
