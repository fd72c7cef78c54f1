import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRgbJson, toJson, u64String, uintString } from './json.ts';

const U64_MAX = 18446744073709551615n;

describe('lossless rgb-lib JSON', () => {
  it('keeps u64 max exactly where JSON.parse rounds it', () => {
    const text =
      '{"settled":18446744073709551615,"future":0,"spendable":9007199254740993,' +
      '"details":{"entropy":18446744073709551615,"minConfirmations":1},"id":1767000000123456789}';
    expect(JSON.parse(text).settled).toBe(18446744073709552000);
    const v = parseRgbJson<Record<string, unknown>>(text);
    expect(v.settled).toBe(U64_MAX);
    expect(v.future).toBe(0n);
    expect(v.spendable).toBe(9007199254740993n);
    expect(v.details).toEqual({ entropy: U64_MAX, minConfirmations: 1 });
    // not a u64 quantity key, but unsafe: bigint, never rounded
    expect(v.id).toBe(1767000000123456789n);
  });

  it('applies the number rule: u64 keys always bigint, other safe integers number', () => {
    const v = parseRgbJson<unknown>(
      '[{"assignment":{"Fungible":100},"assetId":"rgb:x","settled":true},' +
        '{"outpoint":{"txid":"ab","vout":1},"btcAmount":1000},{"issuedSupply":5,"precision":0,"timestamp":1700000000},' +
        '{"amounts":[1,2]},{"x":1.5,"neg":-3}]',
    );
    expect(v).toEqual([
      { assignment: { Fungible: 100n }, assetId: 'rgb:x', settled: true },
      { outpoint: { txid: 'ab', vout: 1 }, btcAmount: 1000n },
      { issuedSupply: 5n, precision: 0, timestamp: 1700000000 },
      { amounts: [1, 2] },
      { x: 1.5, neg: -3 },
    ]);
  });

  it('writes bigint arguments as exact digits', () => {
    expect(toJson({ Fungible: U64_MAX })).toBe('{"Fungible":18446744073709551615}');
    expect(toJson(['1', 2n, null])).toBe('["1",2,null]');
  });

  it('property: any bigint in [0, 2^64) survives toJson → parseRgbJson', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: U64_MAX }), (n) => {
        const back = parseRgbJson<{ Fungible: bigint; sent: bigint[] }>(toJson({ Fungible: n, sent: [n] }));
        return back.Fungible === n && back.sent[0] === n;
      }),
      { numRuns: 2000 },
    );
  });

  it('validates u64 and small unsigned arguments', () => {
    expect(u64String(U64_MAX)).toBe('18446744073709551615');
    expect(u64String(42)).toBe('42');
    expect(() => u64String(U64_MAX + 1n)).toThrow(RangeError);
    expect(() => u64String(-1n)).toThrow(RangeError);
    expect(() => u64String(1.5)).toThrow(RangeError);
    expect(() => u64String(2 ** 53)).toThrow(RangeError);
    expect(uintString(255, 8)).toBe('255');
    expect(() => uintString(256, 8)).toThrow(RangeError);
  });
});
