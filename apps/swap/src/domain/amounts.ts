/**
 * Exact amounts. On the wire an amount is an integer number of lots (the token's smallest unit) as
 * a decimal string; in code it is a `bigint`; in the database it is TEXT. Human amounts ("0.5 BTC")
 * and rates are parsed into exact fractions, never into floating point.
 */

/** Largest amount accepted anywhere: uint256, the widest token amount a supported chain has. */
export const MAX_LOTS = 2n ** 256n - 1n;

const LOTS = /^(0|[1-9][0-9]{0,77})$/;
const DECIMAL = /^(0|[1-9][0-9]{0,77})(\.[0-9]{1,78})?$/;

export class AmountError extends Error {
  override readonly name = 'AmountError';
}

/** `"1500"` → `1500n`. Rejects signs, leading zeros, exponents, and values above uint256. */
export function parseLots(text: string): bigint {
  if (!LOTS.test(text)) throw new AmountError(`"${clip(text)}" is not an integer amount of lots`);
  const v = BigInt(text);
  if (v > MAX_LOTS) throw new AmountError('amount is above 2^256-1');
  return v;
}

/** A positive fraction `num/den` (both > 0n for rates; `num` may be 0n for amounts). */
export interface Fraction {
  num: bigint;
  den: bigint;
}

/** `"12.5"` → `{num: 125n, den: 10n}`. Accepts JSON numbers through their shortest decimal text. */
export function parseDecimal(value: string | number): Fraction {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new AmountError(`${value} is not a non-negative number`);
    text = numberToPlainString(value);
  } else {
    text = value;
  }
  const m = DECIMAL.exec(text);
  if (!m) throw new AmountError(`"${clip(text)}" is not a decimal number`);
  const frac = (m[2] ?? '').slice(1);
  return { num: BigInt(m[1]! + frac), den: 10n ** BigInt(frac.length) };
}

/** Human units → lots, exactly; more decimals than the token has is an error, not a rounding. */
export function toLots(human: string | number, decimals: number): bigint {
  const f = parseDecimal(human);
  const scaled = f.num * 10n ** BigInt(decimals);
  if (scaled % f.den !== 0n) throw new AmountError(`more than ${decimals} decimals`);
  const lots = scaled / f.den;
  if (lots > MAX_LOTS) throw new AmountError('amount is above 2^256-1');
  return lots;
}

/** Lots → human text with exactly `decimals` places trimmed of trailing zeros (`150000000, 8` → `"1.5"`). */
export function formatLots(lots: bigint, decimals: number): string {
  const s = lots.toString().padStart(decimals + 1, '0');
  if (decimals === 0) return s;
  const int = s.slice(0, s.length - decimals);
  const frac = s.slice(s.length - decimals).replace(/0+$/, '');
  return frac ? `${int}.${frac}` : int;
}

/**
 * Converts `lots` of a source token into destination lots at `rate` (destination units per source
 * unit, human units), rounding down: `dest = lots * rate * 10^destDec / 10^srcDec`.
 */
export function convert(lots: bigint, rate: Fraction, srcDecimals: number, destDecimals: number): bigint {
  return (lots * rate.num * 10n ** BigInt(destDecimals)) / (rate.den * 10n ** BigInt(srcDecimals));
}

/** `amount * (10000 - bps) / 10000`, rounded down. */
export function minusBps(amount: bigint, bps: number): bigint {
  return (amount * BigInt(10_000 - bps)) / 10_000n;
}

/** `amount * bps / 10000`, rounded down. */
export function bpsOf(amount: bigint, bps: number): bigint {
  return (amount * BigInt(bps)) / 10_000n;
}

function numberToPlainString(n: number): string {
  const s = String(n);
  if (!/e/i.test(s)) return s;
  // 1e-7 and friends: expand the exponent exactly from the shortest round-trip text.
  const [mant, expText] = s.toLowerCase().split('e') as [string, string];
  const exp = Number(expText);
  const [int, frac = ''] = mant.split('.') as [string, string?];
  const digits = int + frac;
  const point = int.length + exp;
  if (point <= 0) return `0.${'0'.repeat(-point)}${digits}`.replace(/\.?0+$/, '') || '0';
  if (point >= digits.length) return digits + '0'.repeat(point - digits.length);
  return `${digits.slice(0, point)}.${digits.slice(point)}`;
}

function clip(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
