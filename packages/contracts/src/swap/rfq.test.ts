import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  constantTimeEqual,
  RFQ_HEADERS,
  RfqError,
  RfqReplayCache,
  type RfqRequest,
  rfqSignature,
  signRfqAnswer,
  signRfqRequest,
  verifyRfqAnswer,
  verifyRfqRequest,
} from './rfq.ts';

const SECRET = 'a-test-secret-of-at-least-32-bytes!!';
const T = 1_750_000_000;
const ID = '3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b';

const request = (over: Partial<RfqRequest> = {}): RfqRequest => ({
  request_id: ID,
  resolver_id: 'r1',
  timestamp: T,
  source_network: { id: 2, type: 'EVM', chain_id: '31337' },
  source_token: { address: '0xA0b8', symbol: 'USDC', decimals: 6 },
  dest_network: { id: 1, type: 'BITCOIN', chain_id: 'regtest' },
  dest_token: { address: 'BTC', symbol: 'BTC', decimals: 8 },
  amount_lots: '250000000',
  ...over,
});

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof RfqError) return err.code;
    throw err;
  }
}

const verify = (
  headers: Record<string, string>,
  rawBody: string | Uint8Array,
  seen = new RfqReplayCache(),
  nowSecs = T,
) => verifyRfqRequest({ secret: SECRET, headers, rawBody, now: () => nowSecs * 1000 + 400, seen });

describe('RFQ signing', () => {
  it('signs a request over "<timestamp>.<body>" and the resolver verifies it once', () => {
    const signed = signRfqRequest(SECRET, request());
    expect(signed.headers[RFQ_HEADERS.timestamp]).toBe(String(T));
    expect(signed.headers[RFQ_HEADERS.signature]).toBe(rfqSignature(SECRET, `${T}.${signed.body}`));
    expect(signed.headers[RFQ_HEADERS.signature]).toMatch(/^v1=[0-9a-f]{64}$/);
    const seen = new RfqReplayCache();
    expect(verify(signed.headers, signed.body, seen)).toEqual(request());
    expect(codeOf(() => verify(signed.headers, signed.body, seen))).toBe('replayed');
  });

  it('refuses forged, stale, mismatched and malformed requests with their codes', () => {
    const signed = signRfqRequest(SECRET, request());
    const other = signRfqRequest('another-secret-of-at-least-32-bytes!', request());
    expect(codeOf(() => verify(other.headers, other.body))).toBe('bad_signature');
    expect(codeOf(() => verify({ ...signed.headers, [RFQ_HEADERS.signature]: '' }, signed.body))).toBe(
      'bad_signature',
    );
    const { [RFQ_HEADERS.timestamp]: _t, ...noTs } = signed.headers;
    expect(codeOf(() => verify(noTs, signed.body))).toBe('bad_signature');
    expect(codeOf(() => verify(signed.headers, signed.body, new RfqReplayCache(), T + 31))).toBe('stale');
    expect(codeOf(() => verify(signed.headers, signed.body, new RfqReplayCache(), T - 31))).toBe('stale');
    expect(verify(signed.headers, signed.body, new RfqReplayCache(), T + 30).request_id).toBe(ID);
    // Signed, but the body's timestamp is not the header's.
    const lying = JSON.stringify({ ...request(), timestamp: T - 1000 });
    const h = { ...signed.headers, [RFQ_HEADERS.signature]: rfqSignature(SECRET, `${T}.${lying}`) };
    expect(codeOf(() => verify(h, lying))).toBe('malformed');
    for (const body of [
      'not json',
      '{}',
      JSON.stringify({ ...request(), amount_lots: '0' }),
      JSON.stringify({ ...request(), request_id: 'not-a-uuid' }),
    ]) {
      const hh = { ...signed.headers, [RFQ_HEADERS.signature]: rfqSignature(SECRET, `${T}.${body}`) };
      expect(codeOf(() => verify(hh, body))).toBe('malformed');
    }
  });

  it('any single-byte change to the body or the timestamp fails verification', () => {
    const signed = signRfqRequest(SECRET, request());
    const bytes = new TextEncoder().encode(signed.body);
    fc.assert(
      fc.property(
        fc.nat(bytes.length - 1),
        fc.integer({ min: 1, max: 255 }),
        fc.boolean(),
        (at, xor, inTimestamp) => {
          if (inTimestamp) {
            const ts = new TextEncoder().encode(String(T));
            ts[at % ts.length]! ^= xor;
            const h = { ...signed.headers, [RFQ_HEADERS.timestamp]: new TextDecoder().decode(ts) };
            expect(codeOf(() => verify(h, signed.body))).toBe('bad_signature');
          } else {
            const changed = bytes.slice();
            changed[at]! ^= xor;
            expect(codeOf(() => verify(signed.headers, changed))).toBe('bad_signature');
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('answers: signed over "<request_id>.<body>", bound to the request id', () => {
    const signed = signRfqAnswer(SECRET, { request_id: ID, dest_amount_lots: '420000' });
    const sig = signed.headers[RFQ_HEADERS.signature];
    expect(verifyRfqAnswer(SECRET, ID, signed.body, sig)).toEqual({
      request_id: ID,
      dest_amount_lots: '420000',
    });
    const none = signRfqAnswer(SECRET, { request_id: ID, dest_amount_lots: null });
    expect(
      verifyRfqAnswer(SECRET, ID, none.body, none.headers[RFQ_HEADERS.signature]).dest_amount_lots,
    ).toBeNull();
    const otherId = '00000000-0000-4000-8000-000000000000';
    // A genuine answer to another request, replayed.
    expect(codeOf(() => verifyRfqAnswer(SECRET, otherId, signed.body, sig))).toBe('request_id_mismatch');
    // Signed for this request id, but naming another.
    const wrong = JSON.stringify({ request_id: otherId, dest_amount_lots: '1' });
    expect(codeOf(() => verifyRfqAnswer(SECRET, ID, wrong, rfqSignature(SECRET, `${ID}.${wrong}`)))).toBe(
      'request_id_mismatch',
    );
    expect(codeOf(() => verifyRfqAnswer('x'.repeat(32), ID, signed.body, sig))).toBe('bad_signature');
    expect(codeOf(() => verifyRfqAnswer(SECRET, ID, signed.body, undefined))).toBe('bad_signature');
    for (const body of [
      '{"request_id":',
      JSON.stringify({ request_id: ID, dest_amount_lots: '0' }),
      JSON.stringify({ request_id: ID, dest_amount_lots: '-5' }),
      JSON.stringify({ request_id: ID, dest_amount_lots: 5 }),
      JSON.stringify({ request_id: ID }),
    ]) {
      expect(codeOf(() => verifyRfqAnswer(SECRET, ID, body, rfqSignature(SECRET, `${ID}.${body}`)))).toBe(
        'malformed',
      );
    }
  });

  it('a single-byte change to an answer fails verification', () => {
    const signed = signRfqAnswer(SECRET, { request_id: ID, dest_amount_lots: '123456789' });
    const bytes = new TextEncoder().encode(signed.body);
    fc.assert(
      fc.property(fc.nat(bytes.length - 1), fc.integer({ min: 1, max: 255 }), (at, xor) => {
        const changed = bytes.slice();
        changed[at]! ^= xor;
        expect(() => verifyRfqAnswer(SECRET, ID, changed, signed.headers[RFQ_HEADERS.signature])).toThrow(
          RfqError,
        );
      }),
      { numRuns: 200 },
    );
  });

  it('replay cache: remembers ids for 2 × tolerance, stays bounded, and fails closed when full', () => {
    const cache = new RfqReplayCache({ toleranceSecs: 10, maxEntries: 3 });
    expect(cache.remember('a', 100, 100)).toBe(true);
    expect(cache.remember('a', 100, 119)).toBe(false);
    expect(cache.remember('a', 100, 120)).toBe(true); // expired after 20 s
    expect(cache.remember('b', 121, 121)).toBe(true);
    expect(cache.remember('c', 122, 122)).toBe(true);
    expect(cache.remember('d', 123, 123)).toBe(true); // drops 'a' (ts 100): ts <= 100 refused now
    expect(cache.size).toBe(3);
    expect(cache.remember('a', 100, 123)).toBe(false);
    expect(cache.remember('e', 124, 124)).toBe(true);
    expect(cache.size).toBe(3);
  });

  it('constant-time compare', () => {
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array([1]), new Uint8Array([1, 2]))).toBe(false);
  });
});
