/**
 * Lossless JSON for rgb-lib results and arguments.
 *
 * rgb-lib's c-ffi returns JSON strings whose u64 fields (amounts, balances, supplies, `entropy`,
 * `Online.id`) routinely exceed `Number.MAX_SAFE_INTEGER`; `JSON.parse` silently rounds them (the
 * bug in the binding's `wrapper.js`). We parse with `lossless-json`, which hands us every number as
 * its original digit string, and read the result against the schema of what the call returns, with the
 * contracts' one rule (`reviveNumbers` of `@rgbx/contracts`):
 *
 * - **a field the schema marks u64 is always a `bigint`**, whatever its size. The schemas are the wallet
 *   node's wire schemas of rgb-lib's shapes (`Balance`, `AssetIfa`, `RgbLibTransfer`, …), whose snake_case
 *   names are rgb-lib's camelCase keys converted (`issuedSupply` is `issued_supply`); see `results.ts`.
 * - **Every other integer is a `number` when it is a safe integer, otherwise a `bigint`** (never
 *   rounded). Indexes, vouts, precisions, confirmation counts and unix timestamps are therefore
 *   plain numbers.
 * - Non-integer numbers (rgb-lib emits none in the parsed results) become `number`.
 *
 * Serialization ({@link toJson}) writes `bigint` as exact JSON digits, so values up to 2^64-1
 * round-trip: `{"Fungible":18446744073709551615}`.
 */
import { reviveNumbers, WALLET_NODE_REFS } from '@rgbx/contracts/wallet-node';
import { isLosslessNumber, parse, stringify } from 'lossless-json';

const MAX_U64 = (1n << 64n) - 1n;

const digitsOf = (v: unknown) => (isLosslessNumber(v) ? v.value : undefined);
/** rgb-lib's camelCase field names as the wire schemas spell them; enum tags (`Fungible`) and map keys stay. */
const snakeKey = (k: string) =>
  /^[a-z][a-zA-Z0-9]*$/.test(k) ? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : k;

/**
 * Parse a JSON string returned by an `rgblib_*` function without losing integer precision, reading it
 * against `schema` (what the call returns; undefined = no u64 field known, see the module doc).
 */
export function parseRgbJson<T = unknown>(text: string, schema?: unknown): T {
  return reviveNumbers(parse(text), schema, WALLET_NODE_REFS, { digitsOf, keyOf: snakeKey }) as T;
}

/**
 * Serialize a value to JSON, writing `bigint` as exact integer digits. `undefined` object members
 * are dropped (as with `JSON.stringify`).
 */
export function toJson(value: unknown): string {
  const out = stringify(value);
  if (out === undefined) throw new TypeError('value is not JSON-serializable');
  return out;
}

/** An unsigned 64-bit integer given as `bigint` or a safe-integer `number`. */
export type U64 = bigint | number;

/**
 * Validate a u64 argument and return its decimal digits (rgb-lib's c-ffi takes numbers as strings).
 * @throws RangeError if not an integer in [0, 2^64).
 */
export function u64String(value: U64, name = 'value'): string {
  let big: bigint;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) big = BigInt(value);
  else throw new RangeError(`${name} must be a bigint or a safe integer, got ${String(value)}`);
  if (big < 0n || big > MAX_U64) throw new RangeError(`${name} must be in [0, 2^64), got ${big}`);
  return big.toString();
}

/** Validate an unsigned integer argument with a small bit width (u8/u16/u32) and return its digits. */
export function uintString(value: number, bits: 8 | 16 | 32, name = 'value'): string {
  if (!Number.isSafeInteger(value) || value < 0 || value > 2 ** bits - 1) {
    throw new RangeError(`${name} must be an integer in [0, ${2 ** bits - 1}], got ${String(value)}`);
  }
  return String(value);
}

/** Convert a validated u64 to `bigint` (so JSON members built with it serialize exactly). */
export function toU64(value: U64, name = 'value'): bigint {
  return BigInt(u64String(value, name));
}
