import { describe, expect, it } from 'vitest';
import { AssetCfa, AssetIfa, Assets, RgbLibTransfer, Transfer, WALLET_NODE_REFS } from './wallet-node.ts';
import { reviveNumbers, u64Paths } from './wire.ts';

const MAX = 18446744073709551615n;
/** A parsed JSON number as a lossless parser hands it over: its digits. */
class Digits {
  readonly digits: string;
  constructor(digits: string) {
    this.digits = digits;
  }
}
/** JSON text parsed with every number kept as its digits (a stand-in for lossless-json). */
const parseDigits = (text: string) =>
  JSON.parse(text.replace(/(?<=[:,[])(-?[0-9][0-9.eE+-]*)/g, '{"$$d":"$1"}'), (_k, v) =>
    v !== null && typeof v === 'object' && typeof v.$d === 'string' ? new Digits(v.$d) : v,
  );
const read = (text: string, schema: unknown) =>
  reviveNumbers(parseDigits(text), schema, WALLET_NODE_REFS, {
    digitsOf: (v) => (v instanceof Digits ? v.digits : undefined),
  });

describe('the one u64 marker', () => {
  it('marks every supply and amount of the issuance replies, through references', () => {
    expect(u64Paths(AssetIfa, WALLET_NODE_REFS)).toEqual([
      '/balance/future',
      '/balance/settled',
      '/balance/spendable',
      '/initial_supply',
      '/known_circulating_supply',
      '/max_supply',
    ]);
    expect(u64Paths(AssetCfa, WALLET_NODE_REFS)).toContain('/issued_supply');
    expect(u64Paths(Assets, WALLET_NODE_REFS)).toEqual(
      expect.arrayContaining([
        '/cfa/items/issued_supply',
        '/ifa/items/max_supply',
        '/nia/items/issued_supply',
      ]),
    );
    expect(u64Paths(RgbLibTransfer, WALLET_NODE_REFS)).toEqual([
      '/assignments/items/Fungible',
      '/assignments/items/InflationRight',
      '/requested_assignment/Fungible',
      '/requested_assignment/InflationRight',
    ]);
    expect(u64Paths(Transfer, WALLET_NODE_REFS)).toContain('/amount');
  });

  it('reads marked integers as bigint at any size, others as number (bigint when unsafe), never rounded', () => {
    const ifa = read(
      `{"initial_supply":5,"max_supply":${MAX},"known_circulating_supply":9223372036854775808,"precision":0,` +
        `"timestamp":1700000000,"extra":${MAX},"rate":1.5,"balance":{"settled":1,"future":2,"spendable":3}}`,
      AssetIfa,
    );
    expect(ifa).toEqual({
      initial_supply: 5n,
      max_supply: MAX,
      known_circulating_supply: 2n ** 63n,
      precision: 0,
      timestamp: 1700000000,
      extra: MAX,
      rate: 1.5,
      balance: { settled: 1n, future: 2n, spendable: 3n },
    });
    // Either record format of one route (a union of arrays): each element's u64 fields, by its own shape.
    const either = {
      anyOf: [
        { type: 'array', items: { $ref: 'Transfer' } },
        { type: 'array', items: RgbLibTransfer },
      ],
    };
    expect(read(`[{"amount":${MAX},"idx":1,"assignments":[{"Fungible":7},"Any"]}]`, either)).toEqual([
      { amount: MAX, idx: 1, assignments: [{ Fungible: 7n }, 'Any'] },
    ]);
  });
});
