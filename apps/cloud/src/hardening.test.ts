/**
 * The cloud API against hostile clients, listening on a real socket (in-process, SQLite, the fake
 * wallet node as hosted process): slow bodies are cut at `[api] request_timeout_ms` with 408 while
 * normal requests go on, wrong JSON types are 400 and change nothing, malformed HTTP gets the envelope.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@rgbx/service-kit';
import { cutSummary, parseResponse, rawExchange, slowBodies, timedOut } from '@rgbx/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import { loadConfig } from './config.ts';
import { testConfigText } from './test-support.ts';

const REQUEST_TIMEOUT_MS = 1500;
const root = mkdtempSync(join(tmpdir(), 'cloud-hardening-'));
let cloud: Cloud;
let port: number;
let token: string;
let base: string;

beforeAll(async () => {
  const text = testConfigText({ dir: root, databaseUrl: `sqlite:${join(root, 'cloud.db')}` }).replace(
    '[api]\nport = 0',
    `[api]\nport = 0\nrequest_timeout_ms = ${REQUEST_TIMEOUT_MS}`,
  );
  cloud = await buildCloud(loadConfig({ text }), {
    logger: createLogger({ name: 'cloud-test', level: 'silent' }),
  });
  cloud.startWorkers();
  token = (await createToken(cloud.db, 'mallory', 'test')).token;
  await cloud.app.listen({ host: '127.0.0.1', port: 0 });
  port = (cloud.app.server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await cloud?.close({ stopNodes: true });
  rmSync(root, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${token}` });

/** Sends `body` exactly as given (no client-side re-encoding). */
async function send(method: string, path: string, body?: string) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const nodeCount = async () => (await cloud.db.selectFrom('nodes').select('id').execute()).length;

describe('slow bodies', () => {
  it('cuts 10 slow-body connections at request_timeout_ms with 408 REQUEST_TIMEOUT while normal requests succeed', async () => {
    const attack = slowBodies(port, 10, { path: '/api/nodes', headers: auth(), intervalMs: 200 });
    await new Promise((r) => setTimeout(r, 500));
    const normal = await send('GET', '/api/nodes');
    expect(normal.status).toBe(200);
    expect(normal.body).toEqual({ data: [] });
    expect((await attack).map((r) => cutSummary(r, REQUEST_TIMEOUT_MS))).toEqual(
      Array(10).fill(
        timedOut({
          error: { code: 'REQUEST_TIMEOUT', message: 'Request not received in time' },
        }),
      ),
    );
    expect(await nodeCount()).toBe(0);
  });
});

describe('wrong JSON types are 400 VALIDATION_ERROR, never coerced', () => {
  it.each([
    ['{"name": true}', '{"name":true,"network":"regtest"}', 'body/name must be string', '/name'],
    ['{"name": 1e999}', '{"name":1e999,"network":"regtest"}', 'body/name must be string', '/name'],
    [
      '{"network": ["regtest"]}',
      '{"name":"n1","network":["regtest"]}',
      'body/network must be string',
      '/network',
    ],
  ])('POST /api/nodes %s creates nothing', async (_label, body, message, path) => {
    const r = await send('POST', '/api/nodes', body);
    expect(r.status).toBe(400);
    const error = r.body.error as { code: string; message: string; details: { validation: unknown[] } };
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe(message);
    expect(error.details.validation).toEqual([
      { path, message: 'must be string', keyword: 'type', params: { type: 'string' } },
    ]);
    expect(await nodeCount()).toBe(0);
    expect((await send('GET', '/api/nodes')).body).toEqual({ data: [] });
  });

  it('DELETE /api/nodes {"destroyNodeId": ["<id>"]} is refused and the node stays', async () => {
    const created = await send('POST', '/api/nodes', '{"name":"keep-me","network":"regtest"}');
    expect(created.status).toBe(201);
    const id = (created.body.data as { nodeId: string }).nodeId;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const r = await send('DELETE', '/api/nodes', JSON.stringify({ destroyNodeId: [id] }));
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      error: {
        code: 'VALIDATION_ERROR',
        message: 'body/destroyNodeId must be string',
        details: {
          validation: [
            {
              path: '/destroyNodeId',
              message: 'must be string',
              keyword: 'type',
              params: { type: 'string' },
            },
          ],
        },
      },
    });
    const after = await send('GET', `/api/nodes/${id}`);
    expect(after.status).toBe(200);
    expect(after.body.data).toMatchObject({ nodeId: id, name: 'keep-me' });
    expect(await nodeCount()).toBe(1);
  });

  it('still coerces the query string (?limit=5 is an integer)', async () => {
    const created = await send('POST', '/api/nodes', '{"name":"events","network":"regtest"}');
    const id = (created.body.data as { nodeId: string }).nodeId;
    const r = await send('GET', `/api/nodes/${id}/webhooks/events?limit=5`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: [] });
  });
});

describe('malformed HTTP gets the cloud envelope', () => {
  const head = (extra: string) =>
    `POST /api/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n${extra}`;

  it.each([
    [
      'a non-numeric Content-Length',
      () => `${head('Content-Length: 1x\r\n\r\n')}{}`,
      400,
      { code: 'MALFORMED_REQUEST', message: 'Malformed HTTP request: invalid Content-Length' },
    ],
    [
      'bad chunked encoding',
      () => `${head('Transfer-Encoding: chunked\r\n\r\n')}not-hex\r\n{}\r\n0\r\n\r\n`,
      400,
      { code: 'MALFORMED_REQUEST', message: 'Malformed HTTP request: invalid chunked encoding' },
    ],
    [
      'a 32 KiB header',
      () => `GET /api/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(32 * 1024)}\r\n\r\n`,
      431,
      { code: 'HEADERS_TOO_LARGE', message: 'Request headers are too large' },
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

  it('JSON nested 10 000 levels deep: 400 INVALID_JSON, nothing created', async () => {
    const before = await nodeCount();
    const r = await send('POST', '/api/nodes', `{"name":${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      error: { code: 'INVALID_JSON', message: 'Invalid JSON body: nested deeper than 64 levels' },
    });
    expect(await nodeCount()).toBe(before);
  });
});
