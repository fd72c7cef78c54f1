import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BitcoindRpc, BitcoindRpcError, BitcoindUnavailableError, losslessToJson } from './rpc.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A stand-in for bitcoind answering every POST with `reply(body)` (status and text). */
async function bitcoind(reply: (body: string) => [number, string] | undefined): Promise<string> {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const r = reply(body);
      if (!r) return; // silent
      res.writeHead(r[0], { 'content-type': 'application/json' });
      res.end(r[1]);
    });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail');
}

describe('BitcoindRpc over the kit HTTP client (stand-in server)', () => {
  it('calls with Basic auth, passes RPC errors through, keeps amounts exact with callLossless', async () => {
    let auth: string | undefined;
    const url = await bitcoind((body) => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      if (method === 'bad')
        return [500, JSON.stringify({ id, result: null, error: { code: -8, message: 'no' } })];
      return [200, `{"id":${id},"result":{"amount":0.10000000},"error":null}`];
    });
    const s = servers[0]!;
    s.on('request', (req) => {
      auth = req.headers.authorization;
    });
    const rpc = new BitcoindRpc({ url, user: 'u', password: 'p:w' });
    expect(await rpc.call('x')).toEqual({ amount: 0.1 });
    expect(auth).toBe(`Basic ${Buffer.from('u:p:w').toString('base64')}`);
    expect(losslessToJson(await rpc.callLossless('x'))).toBe('{"amount":0.10000000}');
    const e = (await failure(rpc.call('bad'))) as BitcoindRpcError;
    expect(e).toBeInstanceOf(BitcoindRpcError);
    expect([e.code, e.message]).toEqual([-8, 'no']);
  });

  it('a reply over the cap, a silent node and a closed port are BitcoindUnavailableError naming why', async () => {
    const big = await bitcoind((body) => [
      200,
      `{"id":${JSON.parse(body).id},"result":"${'a'.repeat(5000)}"}`,
    ]);
    expect(
      await failure(new BitcoindRpc({ url: big, user: 'u', password: 'p', maxReplyBytes: 4096 }).call('m')),
    ).toMatchObject({
      name: 'BitcoindUnavailableError',
      message: `bitcoind m at ${big}: reply is over 4096 bytes`,
    });
    expect(await new BitcoindRpc({ url: big, user: 'u', password: 'p' }).call('m')).toHaveLength(5000);
    const silent = await bitcoind(() => undefined);
    const t0 = Date.now();
    expect(
      await failure(new BitcoindRpc({ url: silent, user: 'u', password: 'p', timeoutMs: 150 }).call('m')),
    ).toMatchObject({
      message: `bitcoind m at ${silent}: no response within 150 ms`,
    });
    expect(Date.now() - t0).toBeLessThan(1_500);
    const refused = await failure(
      new BitcoindRpc({ url: 'http://127.0.0.1:9', user: 'u', password: 'p' }).call('m'),
    );
    expect(refused).toBeInstanceOf(BitcoindUnavailableError);
    expect((refused as Error).message).toBe('bitcoind m at http://127.0.0.1:9: ECONNREFUSED');
  });
});
