import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpClient, HttpReplyTooLargeError, HttpTimeoutError } from './http-client.ts';

const servers: Server[] = [];
const clients: HttpClient[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
  for (const c of clients.splice(0)) c.close();
});

function client(): HttpClient {
  const c = new HttpClient();
  clients.push(c);
  return c;
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const s = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/path?q=1`;
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the request to fail');
}

describe('HttpClient (real sockets, local servers)', () => {
  it('sends method, path, headers and body; returns status, headers and body; keeps the socket alive', async () => {
    const seen: { method?: string; url?: string; auth?: string; socket: unknown }[] = [];
    const url = await serve((req, res) => {
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, socket: req.socket });
      res.writeHead(418, { 'x-reply': 'yes' });
      res.end('teapot');
    });
    const c = client();
    const opts = { headers: { authorization: 'Basic x' }, body: '{}', timeoutMs: 5_000, maxReplyBytes: 100 };
    const r = await c.request(url, opts);
    await c.request(url, opts);
    expect([r.status, r.headers['x-reply'], r.body.toString(), r.truncated]).toEqual([
      418,
      'yes',
      'teapot',
      false,
    ]);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/path?q=1', auth: 'Basic x' });
    expect(seen[1]!.socket).toBe(seen[0]!.socket);
  });

  it('caps the reply: exactly the cap is read whole, one byte more fails or is truncated, and the socket is dropped', async () => {
    const size = 3 * 65_536 + 7;
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(size, 0x61));
    });
    const c = client();
    const whole = await c.request(url, { timeoutMs: 5_000, maxReplyBytes: size });
    expect([whole.body.length, whole.truncated]).toEqual([size, false]);
    const e = await failure(c.request(url, { timeoutMs: 5_000, maxReplyBytes: size - 1 }));
    expect(e).toBeInstanceOf(HttpReplyTooLargeError);
    expect((e as Error).message).toBe(`reply is over ${size - 1} bytes`);
    const cut = await c.request(url, { timeoutMs: 5_000, maxReplyBytes: 1000, overflow: 'truncate' });
    expect([cut.status, cut.body.length, cut.truncated]).toEqual([200, 1000, true]);
    // A further request still works (on a new socket).
    expect((await c.request(url, { timeoutMs: 5_000, maxReplyBytes: size })).body.length).toBe(size);
  });

  it('times out the whole exchange, also a reply that starts and then stalls', async () => {
    const silent = await serve(() => {});
    const t0 = Date.now();
    const e = await failure(client().request(silent, { timeoutMs: 150, maxReplyBytes: 100 }));
    expect(e).toBeInstanceOf(HttpTimeoutError);
    expect(e).toMatchObject({ phase: 'total', message: 'no response within 150 ms' });
    expect(Date.now() - t0).toBeLessThan(1_500);
    const stalls = await serve((_req, res) => {
      res.writeHead(200);
      res.write('partial');
    });
    expect(await failure(client().request(stalls, { timeoutMs: 200, maxReplyBytes: 100 }))).toMatchObject({
      phase: 'total',
    });
  });

  it('times out a connect (a lookup that never answers keeps the socket connecting)', async () => {
    const never: LookupFunction = () => {};
    const e = await failure(
      client().request('http://stuck.invalid/', {
        timeoutMs: 5_000,
        connectTimeoutMs: 100,
        maxReplyBytes: 100,
        lookup: never,
      }),
    );
    expect(e).toMatchObject({
      name: 'HttpTimeoutError',
      phase: 'connect',
      message: 'connect timed out after 100 ms',
    });
  });

  it('rejects with what the lookup hook or the socket raised, unchanged', async () => {
    class Refused extends Error {}
    const refuse: LookupFunction = (_host, _opts, cb) =>
      cb(new Refused('no') as NodeJS.ErrnoException, '', 4);
    expect(
      await failure(
        client().request('http://x.invalid/', { timeoutMs: 5_000, maxReplyBytes: 1, lookup: refuse }),
      ),
    ).toBeInstanceOf(Refused);
    expect(
      await failure(client().request('http://127.0.0.1:9/', { timeoutMs: 5_000, maxReplyBytes: 1 })),
    ).toMatchObject({ code: 'ECONNREFUSED' });
    expect(
      await failure(client().request('ftp://x/', { timeoutMs: 5_000, maxReplyBytes: 1 })),
    ).toBeInstanceOf(TypeError);
  });

  it('retries a stale kept-alive socket once only when asked to', async () => {
    let calls = 0;
    const url = await serve((req, res) => {
      calls++;
      if (calls === 2 || calls === 4) {
        req.socket.destroy(); // an idle-timeout race: the reused socket is dropped without an answer
        return;
      }
      res.end(String(calls));
    });
    const c = client();
    const o = { timeoutMs: 5_000, maxReplyBytes: 10 };
    expect((await c.request(url, o)).body.toString()).toBe('1');
    expect((await c.request(url, { ...o, retryStaleSocket: true })).body.toString()).toBe('3');
    expect(await failure(c.request(url, o))).toMatchObject({ code: 'ECONNRESET' });
    expect(calls).toBe(4);
  });

  it('an aborted signal rejects with its reason', async () => {
    const silent = await serve(() => {});
    const ac = new AbortController();
    const p = client().request(silent, { timeoutMs: 5_000, maxReplyBytes: 10, signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stopped')), 50);
    expect(await failure(p)).toMatchObject({ message: 'stopped' });
  });
});
