/**
 * The Electrum client against a stand-in: a tiny in-test TCP server that speaks newline-delimited
 * JSON-RPC and answers what each test scripts (the real Electrum server is exercised by the wallet
 * node's devnet test, e2e/wallet-node.btc-send.test.ts).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ElectrumConnection,
  ElectrumServerError,
  ElectrumUnavailableError,
  electrumRequest,
  parseElectrumUrl,
  ReconnectingElectrum,
} from './electrum.ts';

interface Req {
  id: number;
  method: string;
  params: unknown[];
}
type Answer = (req: Req, sock: Socket) => string | string[] | null;

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** Stand-in Electrum server: records every request line and answers with `answer` (null = stay silent). */
async function standIn(answer: Answer): Promise<{ url: string; seen: Req[]; sockets: Socket[] }> {
  const seen: Req[] = [];
  const sockets: Socket[] = [];
  const server = createServer((sock) => {
    sockets.push(sock);
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('error', () => {});
    sock.on('data', (d: string) => {
      buf += d;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const req = JSON.parse(buf.slice(0, nl)) as Req;
        buf = buf.slice(nl + 1);
        seen.push(req);
        const out = answer(req, sock);
        if (out !== null) for (const line of Array.isArray(out) ? out : [out]) sock.write(line);
        nl = buf.indexOf('\n');
      }
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `tcp://127.0.0.1:${port}`, seen, sockets };
}

const ok = (id: number, result: unknown) => `${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`;
const version = (req: Req) => (req.method === 'server.version' ? ok(req.id, ['stand-in 1.0', '1.4']) : null);

describe('electrum client (against an in-test stand-in TCP server)', () => {
  it('sends server.version first, then the request, and returns the result', async () => {
    const s = await standIn((req) => version(req) ?? ok(req.id, 'ab'.repeat(32)));
    const txid = await electrumRequest<string>(s.url, 'blockchain.transaction.broadcast', ['0200beef'], {
      clientName: 'test-client',
    });
    expect(txid).toBe('ab'.repeat(32));
    expect(s.seen.map((r) => [r.method, r.params])).toEqual([
      ['server.version', ['test-client', ['1.4', '1.6']]],
      ['blockchain.transaction.broadcast', ['0200beef']],
    ]);
    expect(s.seen.map((r) => r.id)).toEqual([1, 2]);
  });

  it('matches replies by id when they arrive out of order, split across packets, with string ids', async () => {
    let held: Req | undefined;
    const s = await standIn((req, sock) => {
      if (req.method === 'server.version') return version(req);
      if (!held) {
        held = req;
        return null;
      }
      // answer the second request first, then the first one split in two writes with its id as a string
      const first = JSON.stringify({ jsonrpc: '2.0', id: String(held.id), result: 'first' });
      sock.write(ok(req.id, 'second'));
      sock.write(first.slice(0, 10));
      setTimeout(() => sock.write(`${first.slice(10)}\n`), 20);
      return null;
    });
    const c = await ElectrumConnection.connect(s.url);
    expect(c.serverVersion).toEqual(['stand-in 1.0', '1.4']);
    const [a, b] = await Promise.all([c.request('m', [1]), c.request('m', [2])]);
    c.close();
    expect([a, b]).toEqual(['first', 'second']);
  });

  it("rejects with ElectrumServerError carrying the server's own message and code", async () => {
    const s = await standIn(
      (req) =>
        version(req) ??
        `${JSON.stringify({ jsonrpc: '2.0', id: req.id, error: { code: -26, message: 'min relay fee not met, 100 < 141' } })}\n`,
    );
    const err = (await electrumRequest(s.url, 'blockchain.transaction.broadcast', ['00']).catch(
      (e) => e,
    )) as ElectrumServerError;
    expect(err).toBeInstanceOf(ElectrumServerError);
    expect(err.serverMessage).toBe('min relay fee not met, 100 < 141');
    expect(err.code).toBe(-26);
    expect(err.method).toBe('blockchain.transaction.broadcast');
  });

  it('accepts an error given as a bare string (some servers do)', async () => {
    const s = await standIn(
      (req) => version(req) ?? `${JSON.stringify({ id: req.id, error: 'bad-txns-inputs-missingorspent' })}\n`,
    );
    const err = (await electrumRequest(s.url, 'blockchain.transaction.broadcast', ['00']).catch(
      (e) => e,
    )) as ElectrumServerError;
    expect(err).toBeInstanceOf(ElectrumServerError);
    expect(err.serverMessage).toBe('bad-txns-inputs-missingorspent');
    expect(err.code).toBeUndefined();
  });

  it('times out a request the server never answers (ElectrumUnavailableError, connection still usable)', async () => {
    const s = await standIn((req) => version(req) ?? (req.params[0] === 'slow' ? null : ok(req.id, 7)));
    const c = await ElectrumConnection.connect(s.url, { timeoutMs: 150 });
    const err = (await c.request('x', ['slow']).catch((e) => e)) as Error;
    expect(err).toBeInstanceOf(ElectrumUnavailableError);
    expect(err.message).toMatch(/no answer to x within 150 ms/);
    expect(await c.request('x', ['fast'])).toBe(7);
    c.close();
    await expect(c.request('x', ['fast'])).rejects.toBeInstanceOf(ElectrumUnavailableError);
  });

  it('fails pending requests when the server closes the connection', async () => {
    const s = await standIn((req, sock) => {
      if (req.method === 'server.version') return version(req);
      sock.destroy();
      return null;
    });
    const c = await ElectrumConnection.connect(s.url);
    const err = (await c.request('x').catch((e) => e)) as Error;
    expect(err).toBeInstanceOf(ElectrumUnavailableError);
    expect(err.message).toMatch(/connection closed/);
  });

  it('ReconnectingElectrum: callers at once share one connect; a dropped connection is opened anew; close ends it', async () => {
    const s = await standIn((req) => version(req) ?? ok(req.id, req.method));
    const e = new ReconnectingElectrum(s.url, { clientName: 'lazy' });
    const [a, b] = await Promise.all([e.get(), e.get()]);
    expect(a).toBe(b);
    expect(s.sockets).toHaveLength(1);
    expect(await a.request('one')).toBe('one');
    s.sockets[0]!.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(a.closed).toBe(true);
    const c = await e.get();
    expect(c).not.toBe(a);
    expect(await c.request('two')).toBe('two');
    expect(s.sockets).toHaveLength(2);
    // close() ends the open connection, and one still being opened once it is up.
    await e.close();
    expect(c.closed).toBe(true);
    const opening = e.get();
    await e.close();
    expect((await opening).closed).toBe(true);
    expect(s.sockets).toHaveLength(3);
    // A failed connect is not kept: the next get() tries again.
    const bad = new ReconnectingElectrum('tcp://127.0.0.1:1', { timeoutMs: 500 });
    await expect(bad.get()).rejects.toBeInstanceOf(ElectrumUnavailableError);
    await expect(bad.get()).rejects.toBeInstanceOf(ElectrumUnavailableError);
  });

  it('refuses a server that does not answer server.version with a pair, and garbled replies', async () => {
    const notElectrum = await standIn((req) => ok(req.id, 'hello'));
    await expect(ElectrumConnection.connect(notElectrum.url)).rejects.toThrow(/not an Electrum server/);
    const garbled = await standIn((req) => version(req) ?? 'this is not json\n');
    const err = (await electrumRequest(garbled.url, 'x').catch((e) => e)) as Error;
    expect(err).toBeInstanceOf(ElectrumUnavailableError);
    expect(err.message).toMatch(/garbled reply/);
  });

  it('reports an unreachable server as ElectrumUnavailableError with the socket error code', async () => {
    const s = await standIn(version);
    const url = s.url;
    await Promise.all(servers.splice(0).map((x) => new Promise((r) => x.close(r))));
    const err = (await electrumRequest(url, 'x').catch((e) => e)) as ElectrumUnavailableError;
    expect(err).toBeInstanceOf(ElectrumUnavailableError);
    expect(err.message).toBe(`Electrum server ${url}: ECONNREFUSED`);
  });

  it('parses only tcp://host:port URLs', () => {
    expect(parseElectrumUrl('tcp://127.0.0.1:50001')).toEqual({ host: '127.0.0.1', port: 50001 });
    expect(parseElectrumUrl('tcp://[::1]:50001')).toEqual({ host: '::1', port: 50001 });
    expect(() => parseElectrumUrl('ssl://example.com:50002')).toThrow(ElectrumUnavailableError);
    expect(() => parseElectrumUrl('tcp://example.com')).toThrow(/expected tcp:\/\/host:port/);
    expect(() => parseElectrumUrl('not a url')).toThrow(/expected tcp:\/\/host:port/);
  });
  it('passes notifications interleaved with replies to listeners and waiters, and queues them when asked', async () => {
    const note = (method: string, params: unknown[]) =>
      `${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`;
    const s = await standIn((req) => {
      if (req.method === 'server.version') return version(req);
      if (req.method === 'blockchain.headers.subscribe') {
        // a notification before the reply, the reply split with a notification glued to its end, then another
        const reply = ok(req.id, { height: 100, hex: '00' });
        return [
          note('blockchain.scripthash.subscribe', ['aa', 'st1']),
          reply.slice(0, 7),
          `${reply.slice(7)}${note('blockchain.headers.subscribe', [{ height: 101, hex: '01' }])}`,
          note('blockchain.scripthash.subscribe', ['bb', 'st2']),
        ];
      }
      return ok(req.id, null);
    });
    const c = await ElectrumConnection.connect(s.url, { bufferNotifications: true });
    const seen: string[] = [];
    const off = c.onNotification((n) => seen.push(n.method));
    const header = c.nextNotification((n) => n.method === 'blockchain.headers.subscribe', 2000);
    expect(await c.headersSubscribe()).toEqual({ height: 100, hex: '00' });
    expect((await header).params).toEqual([{ height: 101, hex: '01' }]);
    expect((await c.nextNotification((n) => n.params[0] === 'bb', 2000)).params).toEqual(['bb', 'st2']);
    // the one nobody waited for stayed queued; the header went to its waiter only
    expect(c.notifications).toEqual([{ method: 'blockchain.scripthash.subscribe', params: ['aa', 'st1'] }]);
    expect(seen).toEqual([
      'blockchain.scripthash.subscribe',
      'blockchain.headers.subscribe',
      'blockchain.scripthash.subscribe',
    ]);
    off();
    expect(await c.request('x')).toBeNull();
    c.close();
  });

  it('does not queue notifications by default, and a waiter fails on timeout and on a dropped connection', async () => {
    const s = await standIn((req, sock) => {
      if (req.method === 'server.version') return version(req);
      if (req.method === 'drop') {
        sock.destroy();
        return null;
      }
      return [
        `${JSON.stringify({ method: 'blockchain.headers.subscribe', params: [{ height: 1 }] })}\n`,
        ok(req.id, 1),
      ];
    });
    const c = await ElectrumConnection.connect(s.url);
    expect(await c.request('x')).toBe(1);
    expect(c.notifications).toEqual([]);
    const late = (await c.nextNotification(() => true, 100).catch((e) => e)) as Error;
    expect(late).toBeInstanceOf(ElectrumUnavailableError);
    expect(late.message).toMatch(/no matching notification within 100 ms/);
    const waiting = c.nextNotification(() => true, 5000).catch((e) => e);
    const dropped = c.request('drop').catch((e) => e);
    expect(await waiting).toBeInstanceOf(ElectrumUnavailableError);
    expect(((await dropped) as ElectrumUnavailableError).reason).toBe('connection closed');
    expect(c.closed).toBe(true);
    await expect(c.nextNotification(() => true)).rejects.toBeInstanceOf(ElectrumUnavailableError);
  });

  it('resolves each request of a batch reply and reports every raw line', async () => {
    let first: Req | undefined;
    const s = await standIn((req) => {
      if (req.method === 'server.version') return version(req);
      if (!first) {
        first = req;
        return null;
      }
      return `${JSON.stringify([
        { jsonrpc: '2.0', id: req.id, result: 'b' },
        { jsonrpc: '2.0', id: first.id, error: { code: 2, message: 'nope' } },
      ])}\n`;
    });
    const lines: string[] = [];
    const c = await ElectrumConnection.connect(s.url, { onLine: (l) => lines.push(l) });
    const [a, b] = await Promise.all([c.request('m', [1]).catch((e) => e), c.request('m', [2])]);
    expect(b).toBe('b');
    expect(a).toBeInstanceOf(ElectrumServerError);
    expect((a as ElectrumServerError).serverMessage).toBe('nope');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!).result).toEqual(['stand-in 1.0', '1.4']);
    c.close();
  });

  it('without the handshake sends only what the caller asks, raw bytes included', async () => {
    const s = await standIn((req) => ok(req.id, req.method));
    const c = await ElectrumConnection.connect(s.url, { handshake: false });
    expect(c.serverVersion).toEqual(['', '']);
    c.writeRaw(`${JSON.stringify({ jsonrpc: '2.0', id: 900, method: 'raw', params: [] })}\n`);
    expect(await c.request('server.version', ['me', '1.4'])).toBe('server.version');
    expect(s.seen.map((r) => r.method)).toEqual(['raw', 'server.version']);
    c.close();
  });

  it('has typed helpers for the common calls', async () => {
    const utxo = { tx_hash: 'cd'.repeat(32), tx_pos: 1, height: 5, value: 1000 };
    const s = await standIn((req) => {
      if (req.method === 'server.version') return version(req);
      const results: Record<string, unknown> = {
        'blockchain.scripthash.listunspent': [utxo],
        'blockchain.scripthash.get_history': [{ tx_hash: utxo.tx_hash, height: 5 }],
        'blockchain.transaction.broadcast': 'ef'.repeat(32),
        'server.ping': null,
      };
      return ok(req.id, results[req.method]);
    });
    const c = await ElectrumConnection.connect(s.url);
    expect(await c.listUnspent('11'.repeat(32))).toEqual([utxo]);
    expect(await c.getHistory('11'.repeat(32))).toEqual([{ tx_hash: utxo.tx_hash, height: 5 }]);
    expect(await c.broadcast('00')).toBe('ef'.repeat(32));
    await c.ping();
    c.close();
    expect(s.seen.slice(1).map((r) => [r.method, r.params])).toEqual([
      ['blockchain.scripthash.listunspent', ['11'.repeat(32)]],
      ['blockchain.scripthash.get_history', ['11'.repeat(32)]],
      ['blockchain.transaction.broadcast', ['00']],
      ['server.ping', []],
    ]);
  });
});
