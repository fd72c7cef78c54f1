/**
 * The kit's connection guards against a real listening server and raw sockets: timeouts (slow body,
 * slow headers, idle sockets, keep-alive, long handlers left alone), parser errors answered in the
 * service's envelope, and the JSON depth limit for the kit's parser and a service's own.
 */
import type { AddressInfo } from 'node:net';
import { Type } from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorEnvelope, type ErrorEnvelopeFactory } from './errors.ts';
import { DEFAULT_HTTP_TIMEOUTS, resolveHttpTimeouts, setHttpTimeouts } from './http-guards.ts';
import { createLogger } from './logger.ts';
import { type CreateServerOptions, createServer, type ServiceApp } from './server.ts';
import { parseResponse, rawExchange, slowBodies, slowBody, slowHeaders } from './testing.ts';

let current: ServiceApp | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});

/** A custom envelope shape, to prove raw replies go through the service's factory. */
const envelope: ErrorEnvelopeFactory = (e) => ({
  statusCode: e.statusCode,
  body: { failure: { kind: e.code, text: e.message } },
});

async function start(opts: Partial<CreateServerOptions> = {}): Promise<{ app: ServiceApp; port: number }> {
  const app = createServer({
    name: 'guards',
    version: '1.0.0',
    logger: createLogger({ name: 'guards', level: 'silent' }),
    envelope,
    ...opts,
  });
  app.post('/echo', async (req) => ({ body: req.body ?? null }));
  app.post('/typed', { schema: { body: Type.Object({ n: Type.Integer() }) } }, async (req) => req.body);
  app.get('/ping', async () => ({ pong: true }));
  app.get('/slow', async () => {
    await new Promise((r) => setTimeout(r, 900));
    return { slow: true };
  });
  current = app;
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as AddressInfo).port };
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;

describe('timeouts', () => {
  it('resolves defaults and refuses inconsistent values', () => {
    expect(resolveHttpTimeouts()).toEqual({
      requestTimeout: 30_000,
      headersTimeout: 10_000,
      connectionTimeout: 60_000,
      keepAliveTimeout: 5_000,
    });
    expect(DEFAULT_HTTP_TIMEOUTS.requestTimeout).toBe(30_000);
    // Only requestTimeout given: the headers timeout follows it down.
    expect(resolveHttpTimeouts({ requestTimeout: 1500 }).headersTimeout).toBe(1500);
    expect(() => resolveHttpTimeouts({ requestTimeout: 1000, headersTimeout: 2000 })).toThrow(
      'headersTimeout (2000 ms) must not exceed requestTimeout (1000 ms)',
    );
    expect(() => resolveHttpTimeouts({ keepAliveTimeout: -1 })).toThrow(
      'keepAliveTimeout must be a non-negative integer (ms), got -1',
    );
  });

  it('sets the defaults on the server of every app', async () => {
    const { app } = await start();
    expect(app.server.requestTimeout).toBe(30_000);
    expect(app.server.headersTimeout).toBe(10_000);
    expect(app.server.timeout).toBe(60_000);
    expect(app.server.keepAliveTimeout).toBe(5_000);
  });

  it('cuts 20 slow-body connections with 408 in the envelope while normal requests succeed', async () => {
    const { port } = await start({ timeouts: { requestTimeout: 1200 } });
    const attack = slowBodies(port, 20, { path: '/echo', intervalMs: 150 });
    await new Promise((r) => setTimeout(r, 400));
    const normal = await fetch(`http://127.0.0.1:${port}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"ok":1}',
    });
    expect(normal.status).toBe(200);
    expect(await normal.json()).toEqual({ body: { ok: 1 } });
    for (const r of await attack) {
      expect(r.closed).toBe(true);
      expect(r.elapsedMs).toBeGreaterThanOrEqual(1150);
      expect(r.elapsedMs).toBeLessThan(1200 + 800);
      const res = parseResponse(r.text);
      expect(res.status).toBe(408);
      expect(res.headers.connection).toBe('close');
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.parse(res.body)).toEqual({
        failure: { kind: 'REQUEST_TIMEOUT', text: 'Request not received in time' },
      });
    }
  });

  it('cuts headers sent a byte at a time at headersTimeout', async () => {
    const { port } = await start({ timeouts: { requestTimeout: 5000, headersTimeout: 800 } });
    const r = await slowHeaders(port, { path: '/echo', intervalMs: 100 });
    expect(r.closed).toBe(true);
    expect(r.bytesSent).toBeGreaterThan(3);
    expect(r.elapsedMs).toBeGreaterThanOrEqual(750);
    expect(r.elapsedMs).toBeLessThan(800 + 700);
    const res = parseResponse(r.text);
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual({
      failure: { kind: 'REQUEST_TIMEOUT', text: 'Request not received in time' },
    });
  });

  it('does not add a 408 after an answer sent before the body was read (one response, then close)', async () => {
    const app = createServer({
      name: 'early',
      version: '1',
      logger: createLogger({ name: 'x', level: 'silent' }),
      envelope,
      timeouts: { requestTimeout: 800 },
    });
    current = app;
    app.addHook('onRequest', async (_req, reply) => reply.code(401).send({ denied: true }));
    app.post('/echo', async () => ({}));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const r = await slowBody((app.server.address() as AddressInfo).port, { path: '/echo', intervalMs: 100 });
    expect(r.closed).toBe(true);
    expect(r.elapsedMs).toBeLessThan(800 + 700);
    expect(r.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(parseResponse(r.text).status).toBe(401);
    expect(JSON.parse(parseResponse(r.text).body)).toEqual({ denied: true });
  });

  it('closes a silent connection at connectionTimeout without an answer', async () => {
    const { port } = await start({ timeouts: { connectionTimeout: 500 } });
    const r = await rawExchange(port, Buffer.alloc(0), { timeoutMs: 5000 });
    expect(r.closed).toBe(true);
    expect(r.text).toBe('');
    expect(r.elapsedMs).toBeGreaterThanOrEqual(450);
    expect(r.elapsedMs).toBeLessThan(1500);
  });

  it('never cuts a request being handled, however long the handler takes', async () => {
    const { port } = await start({ timeouts: { connectionTimeout: 300 } });
    const r = await rawExchange(port, get('/slow'), { timeoutMs: 5000 });
    const res = parseResponse(r.text);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ slow: true });
    expect(r.elapsedMs).toBeGreaterThanOrEqual(850);
  });

  it('closes an idle keep-alive connection after keepAliveTimeout (+ Node’s 1 s grace)', async () => {
    const { port } = await start({ timeouts: { keepAliveTimeout: 300 } });
    const r = await rawExchange(port, 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n', { timeoutMs: 5000 });
    expect(parseResponse(r.text).status).toBe(200);
    expect(r.closed).toBe(true);
    expect(r.elapsedMs).toBeLessThan(300 + 1000 + 700);
  });

  it('setHttpTimeouts changes an app before listen, keeping what was given at creation', async () => {
    const app = createServer({
      name: 'x',
      version: '1',
      logger: createLogger({ name: 'x', level: 'silent' }),
      envelope,
      timeouts: { connectionTimeout: 1234 },
    });
    current = app;
    const t = setHttpTimeouts(app, { requestTimeout: 2000 });
    expect(t).toEqual({
      requestTimeout: 2000,
      headersTimeout: 2000,
      connectionTimeout: 1234,
      keepAliveTimeout: 5000,
    });
    expect(app.server.requestTimeout).toBe(2000);
    expect(app.server.timeout).toBe(1234);
    expect(
      (app.server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval,
    ).toBe(200);
  });
});

describe('malformed HTTP gets the envelope', () => {
  const cases: [string, string, number, { kind: string; text: string }][] = [
    [
      'a non-numeric Content-Length',
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
      400,
      { kind: 'MALFORMED_REQUEST', text: 'Malformed HTTP request: invalid Content-Length' },
    ],
    [
      'two different Content-Lengths',
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      400,
      { kind: 'MALFORMED_REQUEST', text: 'Malformed HTTP request: invalid Content-Length' },
    ],
    [
      'a bad chunk size',
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      400,
      { kind: 'MALFORMED_REQUEST', text: 'Malformed HTTP request: invalid chunked encoding' },
    ],
    [
      'a garbage request line (llhttp’s reason is passed on)',
      '\x01\x02 / HTTP/1.1\r\nHost: x\r\n\r\n',
      400,
      { kind: 'MALFORMED_REQUEST', text: 'Malformed HTTP request: Invalid method encountered' },
    ],
    [
      'a 32 KiB header',
      `GET /ping HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`,
      431,
      { kind: 'HEADERS_TOO_LARGE', text: 'Request headers are too large' },
    ],
  ];

  it.each(cases)('%s', async (_name, request, status, failure) => {
    const { port } = await start();
    const r = await rawExchange(port, request);
    expect(r.closed).toBe(true);
    const res = parseResponse(r.text);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(res.body)).toEqual({ failure });
    // Exactly one response, nothing else on the wire.
    expect(r.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('answers with a factory’s content type and the common envelope', async () => {
    const { port } = await start({ envelope: ErrorEnvelope.factory });
    const r = await rawExchange(port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n');
    expect(JSON.parse(parseResponse(r.text).body)).toEqual({
      error: { code: 'MALFORMED_REQUEST', message: 'Malformed HTTP request: invalid Content-Length' },
    });
  });
});

describe('JSON depth limit', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
  const post = (port: number, body: string, path = '/echo') =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

  it('accepts the limit and refuses one level more with INVALID_JSON (400)', async () => {
    const { port } = await start({ jsonMaxDepth: 8 });
    const ok = await post(port, nested(8));
    expect(ok.status).toBe(200);
    expect(JSON.stringify(((await ok.json()) as { body: unknown }).body)).toBe(nested(8));
    const deep = await post(port, nested(9));
    expect(deep.status).toBe(400);
    expect(await deep.json()).toEqual({
      failure: { kind: 'INVALID_JSON', text: 'Invalid JSON body: nested deeper than 8 levels' },
    });
  });

  it('does not count brackets inside strings, escaped quotes included', async () => {
    const { port } = await start({ jsonMaxDepth: 2 });
    const body = JSON.stringify({ a: `\\"${'[{'.repeat(50)}`, b: ['x'] });
    const r = await post(port, body);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { body: unknown }).body).toEqual(JSON.parse(body));
  });

  it('refuses 100 000 levels with the default limit (64), sequential bodies still served', async () => {
    const { port } = await start();
    const deep = await post(port, `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { failure: { text: string } }).failure.text).toBe(
      'Invalid JSON body: nested deeper than 64 levels',
    );
    const typed = await post(port, '{"n":3}', '/typed');
    expect(await typed.json()).toEqual({ n: 3 });
  });

  it('protects a parser a service installs in place of the kit’s', async () => {
    const app = createServer({
      name: 'own-parser',
      version: '1',
      logger: createLogger({ name: 'x', level: 'silent' }),
      envelope,
    });
    current = app;
    let parsed = 0;
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
      parsed++;
      done(null, JSON.parse(body as string));
    });
    app.post('/own', async (req) => ({ body: req.body }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    const r = await post(port, nested(65), '/own');
    expect(r.status).toBe(400);
    expect(parsed).toBe(0);
    const ok = await post(port, nested(3), '/own');
    expect(ok.status).toBe(200);
    expect(parsed).toBe(1);
  });
});
