import { U64Out } from '@rgbx/contracts/wallet-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRgbJson, toJson, u64String, uintString } from './json.ts';
import { RESULT_SCHEMAS } from './results.ts';

const U64_MAX = 18446744073709551615n;

describe('lossless rgb-lib JSON', () => {
  it('keeps u64 max exactly where JSON.parse rounds it', () => {
    const text =
      '{"settled":18446744073709551615,"future":0,"spendable":9007199254740993,' +
      '"details":{"entropy":18446744073709551615,"minConfirmations":1},"id":1767000000123456789}';
    expect(JSON.parse(text).settled).toBe(18446744073709552000);
    const v = parseRgbJson<Record<string, unknown>>(text, {
      type: 'object',
      properties: { settled: U64Out, future: U64Out, details: { properties: { entropy: U64Out } } },
    });
    expect(v.settled).toBe(U64_MAX);
    expect(v.future).toBe(0n);
    // not marked u64 by the schema, but unsafe: bigint, never rounded
    expect(v.spendable).toBe(9007199254740993n);
    expect(v.details).toEqual({ entropy: U64_MAX, minConfirmations: 1 });
    expect(v.id).toBe(1767000000123456789n);
    // with no schema nothing is rounded either
    expect(parseRgbJson<{ settled: bigint }>(text).settled).toBe(U64_MAX);
  });

  it("applies the number rule against the call's schema: u64 fields always bigint, other safe integers number", () => {
    const unspents = parseRgbJson<unknown>(
      '[{"utxo":{"outpoint":{"txid":"ab","vout":1},"btcAmount":1000,"colorable":true,"exists":true},' +
        '"rgbAllocations":[{"assetId":"rgb:x","assignment":{"Fungible":100},"settled":true},' +
        '{"assetId":null,"assignment":{"InflationRight":7},"settled":false},{"assetId":null,"assignment":"Any","settled":false}],' +
        '"pendingBlinded":0,"x":1.5,"neg":-3}]',
      RESULT_SCHEMAS.rgblib_list_unspents,
    );
    expect(unspents).toEqual([
      {
        utxo: { outpoint: { txid: 'ab', vout: 1 }, btcAmount: 1000n, colorable: true, exists: true },
        rgbAllocations: [
          { assetId: 'rgb:x', assignment: { Fungible: 100n }, settled: true },
          { assetId: null, assignment: { InflationRight: 7n }, settled: false },
          { assetId: null, assignment: 'Any', settled: false },
        ],
        pendingBlinded: 0,
        x: 1.5,
        neg: -3,
      },
    ]);
    const ifa = parseRgbJson<Record<string, unknown>>(
      '{"assetId":"rgb:y","initialSupply":5,"maxSupply":18446744073709551615,"knownCirculatingSupply":9223372036854775808,' +
        '"precision":0,"timestamp":1700000000,"balance":{"settled":5,"future":5,"spendable":5}}',
      RESULT_SCHEMAS.rgblib_issue_asset_ifa,
    );
    expect(ifa).toMatchObject({
      initialSupply: 5n,
      maxSupply: U64_MAX,
      knownCirculatingSupply: 2n ** 63n,
      precision: 0,
      timestamp: 1700000000,
      balance: { settled: 5n, future: 5n, spendable: 5n },
    });
    // listassets: every schema's supplies, through the Assets schema's references
    const assets = parseRgbJson<{ cfa: { issuedSupply: bigint }[]; ifa: { maxSupply: bigint }[] }>(
      '{"nia":[],"uda":[],"cfa":[{"issuedSupply":3}],"ifa":[{"maxSupply":4}]}',
      RESULT_SCHEMAS.rgblib_list_assets,
    );
    expect(assets.cfa[0]!.issuedSupply).toBe(3n);
    expect(assets.ifa[0]!.maxSupply).toBe(4n);
  });

  it('writes bigint arguments as exact digits', () => {
    expect(toJson({ Fungible: U64_MAX })).toBe('{"Fungible":18446744073709551615}');
    expect(toJson(['1', 2n, null])).toBe('["1",2,null]');
  });

  it('property: any bigint in [0, 2^64) survives toJson → parseRgbJson', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: U64_MAX }), (n) => {
        const back = parseRgbJson<{ assignment: { Fungible: bigint }; sent: bigint }>(
          toJson({ assignment: { Fungible: n }, sent: n }),
          { properties: { assignment: { anyOf: [{ properties: { Fungible: U64Out } }] }, sent: U64Out } },
        );
        return back.assignment.Fungible === n && back.sent === n;
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
