import { describe, expect, it } from 'vitest';
import { SwapApiError, SwapClient } from './client.ts';

function fakeFetch(status: number, body: string, seen: { url?: string; init?: RequestInit }) {
  return (async (url: URL, init?: RequestInit) => {
    seen.url = String(url);
    seen.init = init;
    return new Response(body, { status, headers: { 'content-type': 'application/json' } });
  }) as unknown as typeof fetch;
}

describe('SwapClient', () => {
  it('sends X-API-Key and query parameters, returns typed bodies', async () => {
    const seen: { url?: string; init?: RequestInit } = {};
    const c = new SwapClient({
      baseUrl: 'http://h:1/',
      apiKey: 'k',
      fetch: fakeFetch(200, '{"tokens":[],"pagination":{"limit":2,"offset":4,"total":0,"pages":0}}', seen),
    });
    const r = await c.tokens({ limit: 2, offset: 4, networkId: 3 });
    expect(r.pagination.limit).toBe(2);
    expect(seen.url).toBe('http://h:1/tokens?limit=2&offset=4&network-id=3');
    expect((seen.init!.headers as Record<string, string>)['x-api-key']).toBe('k');
  });

  it('turns error envelopes into SwapApiError with code, type and details', async () => {
    const body = JSON.stringify({
      code: 25,
      type: 'PERMIT2_ALLOWANCE_INSUFFICIENT',
      message: 'approve',
      details: { allowance: '0' },
    });
    const c = new SwapClient({ baseUrl: 'http://h', apiKey: 'k', fetch: fakeFetch(422, body, {}) });
    const err = await c.addApproval('i', { permit2: '0x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwapApiError);
    expect(err).toMatchObject({
      status: 422,
      code: 25,
      type: 'PERMIT2_ALLOWANCE_INSUFFICIENT',
      details: { allowance: '0' },
    });
    const plain = new SwapClient({
      baseUrl: 'http://h',
      apiKey: 'k',
      fetch: fakeFetch(502, 'bad gateway', {}),
    });
    expect(await plain.healthcheck().catch((e: unknown) => e)).toMatchObject({
      status: 502,
      type: 'HTTP_ERROR',
    });
  });
});
