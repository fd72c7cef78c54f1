import * as C from '@rgbx/contracts/wallet-node';
import { describe, expect, it } from 'vitest';
import { parseReply, retryAfterSeconds, WalletNodeError } from './client.ts';

const MAX = 18446744073709551615n;

describe('SDK replies read against their route schema', () => {
  it("keeps an IFA/CFA's supplies exact (no key list: they were rounded when not in it)", () => {
    const text = `{"asset_id":"rgb:x","initial_supply":9223372036854775808,"max_supply":${MAX},"known_circulating_supply":9223372036854775808,"precision":0,"timestamp":1,"added_at":2,"balance":{"settled":1,"future":1,"spendable":1}}`;
    expect(JSON.parse(text).max_supply).toBe(18446744073709552000); // what a double makes of it
    const ifa = parseReply(text, C.AssetIfa) as Record<string, unknown>;
    expect([ifa.initial_supply, ifa.max_supply, ifa.known_circulating_supply]).toEqual([
      2n ** 63n,
      MAX,
      2n ** 63n,
    ]);
    expect([ifa.precision, ifa.timestamp]).toEqual([0, 1]);
    const assets = parseReply(`{"nia":[],"uda":[],"cfa":[{"issued_supply":3}],"ifa":[]}`, C.Assets) as {
      cfa: { issued_supply: bigint }[];
    };
    expect(assets.cfa[0]!.issued_supply).toBe(3n);
    // A field no schema names is never rounded either.
    expect(parseReply(`{"new_field":${MAX}}`, C.AssetIfa)).toEqual({ new_field: MAX });
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-27T15:00:00Z');
  it('reads delta-seconds and HTTP-dates; null when absent or unreadable', () => {
    expect(retryAfterSeconds('7', now)).toBe(7);
    expect(retryAfterSeconds(' 0 ', now)).toBe(0);
    expect(retryAfterSeconds('Fri, 27 Nov 2026 15:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Fri, 27 Nov 2026 14:59:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(null, now)).toBeNull();
    expect(retryAfterSeconds('-3', now)).toBeNull();
    expect(retryAfterSeconds('soon', now)).toBeNull();
  });
  it('is carried by WalletNodeError beside the envelope', () => {
    const body = JSON.stringify({
      error: { code: 1018, status: 'indexer_unavailable', message: 'm', details: {} },
    });
    const e = new WalletNodeError(503, body, '5');
    expect([e.httpStatus, e.code, e.status, e.retryAfterSecs]).toEqual([503, 1018, 'indexer_unavailable', 5]);
    expect(new WalletNodeError(500, 'x').retryAfterSecs).toBeNull();
  });
});
