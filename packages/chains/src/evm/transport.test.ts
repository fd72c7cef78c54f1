import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RpcReadError } from '../errors.ts';
import { JsonRpcAnswerError, jsonRpcTransport } from './transport.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A local HTTP server answering with `handler`; resolves to its URL. */
async function serve(
  handler: (req: IncomingMessage, body: string, res: ServerResponse) => void,
): Promise<string> {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => handler(req, body, res));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

const result = (res: ServerResponse, body: string, value: unknown) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: value }));
};

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail');
}

describe('jsonRpcTransport (real sockets, local stand-in servers)', () => {
  it('posts one JSON-RPC 2.0 request per call with increasing ids, on one kept-alive socket', async () => {
    const seen: { body: Record<string, unknown>; socket: unknown; type?: string }[] = [];
    const url = await serve((req, body, res) => {
      seen.push({ body: JSON.parse(body), socket: req.socket, type: req.headers['content-type'] });
      result(res, body, '0x10');
    });
    const t = jsonRpcTransport(url, 5_000);
    expect(await t.request({ method: 'eth_blockNumber' })).toBe('0x10');
    expect(await t.request({ method: 'eth_call', params: [{ to: '0x01' }, 'latest'] })).toBe('0x10');
    expect(seen.map((s) => s.body)).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_call', params: [{ to: '0x01' }, 'latest'] },
    ]);
    expect(seen[0]!.type).toBe('application/json');
    expect(seen[1]!.socket).toBe(seen[0]!.socket);
  });

  it('URL credentials become a Basic authorization header and never appear in messages', async () => {
    let auth: string | undefined;
    const base = await serve((req, _body, res) => {
      auth = req.headers.authorization;
      res.writeHead(503);
      res.end('busy');
    });
    const t = jsonRpcTransport(base.replace('http://', 'http://us%40er:s3cret@'), 5_000);
    const e = (await failure(t.request({ method: 'eth_chainId' }))) as RpcReadError;
    expect(auth).toBe(`Basic ${Buffer.from('us@er:s3cret').toString('base64')}`);
    expect(e).toBeInstanceOf(RpcReadError);
    expect(e.code).toBe('http');
    expect(e.message).toMatch(/^eth_chainId: HTTP 503 from http:\/\/127\.0\.0\.1:\d+: "busy"$/);
    expect(e.message).not.toMatch(/s3cret/);
  });

  it('a JSON-RPC error answer keeps the node code and data, also on a non-2xx status', async () => {
    const url = await serve((_req, body, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: JSON.parse(body).id,
          error: { code: 3, message: 'execution reverted', data: '0x08c379a0' },
        }),
      );
    });
    const e = (await failure(
      jsonRpcTransport(url, 5_000).request({ method: 'eth_call' }),
    )) as JsonRpcAnswerError;
    expect(e).toBeInstanceOf(JsonRpcAnswerError);
    expect([e.code, e.message, e.data]).toEqual([3, 'execution reverted', '0x08c379a0']);
  });

  it('not JSON-RPC, or over 10 MiB, is bad_response; a silent server is a timeout; a closed port unreachable', async () => {
    const junk = await serve((_req, _body, res) => {
      res.writeHead(200);
      res.end('<html>');
    });
    expect(await failure(jsonRpcTransport(junk, 5_000).request({ method: 'm' }))).toMatchObject({
      code: 'bad_response',
      message: 'm: expected a JSON-RPC response from ' + junk + ', received "<html>"',
    });
    const huge = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"jsonrpc":"2.0","id":1,"result":"${'a'.repeat(11 * 1024 * 1024)}`);
      res.end('"}');
    });
    expect(await failure(jsonRpcTransport(huge, 10_000).request({ method: 'm' }))).toMatchObject({
      code: 'bad_response',
      message: expect.stringMatching(/is over 10485760 bytes/),
    });
    const silent = await serve(() => {});
    const t0 = Date.now();
    expect(await failure(jsonRpcTransport(silent, 150).request({ method: 'm' }))).toMatchObject({
      code: 'timeout',
      message: `m: no answer from ${silent} within 150 ms`,
    });
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(
      await failure(jsonRpcTransport('http://127.0.0.1:9', 5_000).request({ method: 'm' })),
    ).toMatchObject({
      code: 'unreachable',
      message: 'm: cannot reach http://127.0.0.1:9: ECONNREFUSED',
    });
    expect(() => jsonRpcTransport('ftp://node', 5_000)).toThrow(/expected an http\(s\) URL/);
  });

  it('a kept-alive socket the server closed in the meantime is retried once on a new socket', async () => {
    let calls = 0;
    const url = await serve((req, body, res) => {
      calls++;
      if (calls === 2) {
        // The second call arrives on the reused socket: drop it without answering (an idle-timeout race).
        req.socket.destroy();
        return;
      }
      result(res, body, calls);
    });
    const t = jsonRpcTransport(url, 5_000);
    expect(await t.request({ method: 'm' })).toBe(1);
    expect(await t.request({ method: 'm' })).toBe(3);
    expect(calls).toBe(3);
  });
});
