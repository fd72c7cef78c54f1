import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RfqRequest, rfqHandler, signRfqRequest, verifyRfqAnswer } from '../index.ts';

const SECRET = 'sdk-test-secret-at-least-32-bytes-long';

describe('rfqHandler', () => {
  let server: Server;
  let url: string;
  let calls = 0;
  let answer: () => Promise<{ dest_amount_lots: string } | null> = async () => ({ dest_amount_lots: '777' });

  beforeAll(async () => {
    server = createServer(
      rfqHandler({
        secret: SECRET,
        maxBodyBytes: 2048,
        quote: async () => {
          calls++;
          return answer();
        },
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const request = (): RfqRequest => ({
    request_id: crypto.randomUUID(),
    resolver_id: 'me',
    timestamp: Math.floor(Date.now() / 1000),
    source_network: { id: 2, type: 'EVM', chain_id: '1' },
    source_token: { address: '0xA0b8', symbol: 'USDC', decimals: 6 },
    dest_network: { id: 1, type: 'BITCOIN', chain_id: 'mainnet' },
    dest_token: { address: 'BTC', symbol: 'BTC', decimals: 8 },
    amount_lots: '1000000',
  });

  async function post(body: string, headers: Record<string, string>) {
    const res = await fetch(url, { method: 'POST', body, headers });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  it('answers signed, bound to the request id; null for no quote; 500 when quote throws', async () => {
    const req = request();
    const signed = signRfqRequest(SECRET, req);
    const r = await post(signed.body, signed.headers);
    expect(r.status).toBe(200);
    expect(
      verifyRfqAnswer(SECRET, req.request_id, r.text, r.headers.get('x-rgbx-signature') ?? undefined),
    ).toEqual({ request_id: req.request_id, dest_amount_lots: '777' });
    answer = async () => null;
    const req2 = request();
    const s2 = signRfqRequest(SECRET, req2);
    const r2 = await post(s2.body, s2.headers);
    expect(JSON.parse(r2.text)).toEqual({ request_id: req2.request_id, dest_amount_lots: null });
    answer = async () => {
      throw new Error('no price feed');
    };
    const s3 = signRfqRequest(SECRET, request());
    expect((await post(s3.body, s3.headers)).status).toBe(500);
  });

  it('405 for other methods, 413 over the size, 400 malformed, 401 forged; quote not called', async () => {
    const before = calls;
    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const big = signRfqRequest(SECRET, { ...request(), resolver_id: 'x'.repeat(4000) });
    const tooLarge = await post(big.body, big.headers);
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.text)).toMatchObject({ code: 'too_large' });
    const bad = { ...request(), amount_lots: '-1' };
    const malformed = signRfqRequest(SECRET, bad as RfqRequest);
    const m = await post(malformed.body, malformed.headers);
    expect(m.status).toBe(400);
    expect(JSON.parse(m.text)).toMatchObject({ code: 'malformed' });
    const forged = signRfqRequest('x'.repeat(32), request());
    const f = await post(forged.body, forged.headers);
    expect(f.status).toBe(401);
    expect(JSON.parse(f.text)).toMatchObject({ code: 'bad_signature', error: expect.any(String) });
    expect(calls).toBe(before);
  });
});
