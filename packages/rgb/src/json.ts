/**
 * Lossless JSON for rgb-lib results and arguments.
 *
 * rgb-lib's c-ffi returns JSON strings whose u64 fields (amounts, balances, supplies, `entropy`,
 * `Online.id`) routinely exceed `Number.MAX_SAFE_INTEGER`; `JSON.parse` silently rounds them (the
 * bug in the binding's `wrapper.js`). We parse with `lossless-json`, which hands us every number as
 * its original digit string, and then apply ONE documented rule:
 *
 * - **u64 quantity fields are always `bigint`**, whatever their size: every integer stored under a
 *   key in {@link U64_KEYS} (directly, or as an element of an array under such a key), e.g.
 *   `settled`, `future`, `spendable`, `issuedSupply`, `btcAmount`, `amountSat`, `received`, `sent`,
 *   `fee`, `entropy`, and the assignment tags `Fungible` / `InflationRight`.
 * - **Every other integer is a `number` when it is a safe integer, otherwise a `bigint`** (never
 *   rounded). Indexes, vouts, precisions, confirmation counts and unix timestamps are therefore
 *   plain numbers.
 * - Non-integer numbers (rgb-lib emits none in the parsed results) become `number`.
 *
 * Serialization ({@link toJson}) writes `bigint` as exact JSON digits, so values up to 2^64-1
 * round-trip: `{"Fungible":18446744073709551615}`.
 */
import { isLosslessNumber, type LosslessNumber, parse, stringify } from 'lossless-json';

/** JSON keys whose integer values are u64 quantities and are always returned as `bigint`. */
export const U64_KEYS: ReadonlySet<string> = new Set([
  // Balance
  'settled',
  'future',
  'spendable',
  // assets / metadata
  'issuedSupply',
  'initialSupply',
  'maxSupply',
  'knownCirculatingSupply',
  // bitcoin amounts
  'btcAmount',
  'amountSat',
  'amount',
  'received',
  'sent',
  'fee',
  // transfers
  'entropy',
  // Assignment enum tags
  'Fungible',
  'InflationRight',
]);

const MAX_U64 = (1n << 64n) - 1n;

function isIntegerLiteral(digits: string): boolean {
  return /^-?\d+$/.test(digits);
}

function convertNumber(n: LosslessNumber, forceBigint: boolean): number | bigint {
  const digits = n.value;
  if (!isIntegerLiteral(digits)) return Number(digits);
  if (forceBigint) return BigInt(digits);
  const asNumber = Number(digits);
  return Number.isSafeInteger(asNumber) ? asNumber : BigInt(digits);
}

function convert(value: unknown, key: string | undefined): unknown {
  if (isLosslessNumber(value)) return convertNumber(value, key !== undefined && U64_KEYS.has(key));
  if (Array.isArray(value)) return value.map((item) => convert(item, key));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = convert(v, k);
    return out;
  }
  return value;
}

/**
 * Parse a JSON string returned by an `rgblib_*` function without losing integer precision
 * (see the module doc for the number rule).
 */
export function parseRgbJson<T = unknown>(text: string): T {
  return convert(parse(text), undefined) as T;
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
