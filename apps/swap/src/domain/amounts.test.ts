import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AmountError,
  convert,
  formatLots,
  MAX_LOTS,
  minusBps,
  parseDecimal,
  parseLots,
  toLots,
} from './amounts.ts';

describe('amounts', () => {
  it('parses integer lots exactly and refuses anything else', () => {
    expect(parseLots('0')).toBe(0n);
    expect(parseLots(MAX_LOTS.toString())).toBe(MAX_LOTS);
    for (const bad of ['', '-1', '01', '1.0', '1e3', ' 1', '0x10', (MAX_LOTS + 1n).toString()]) {
      expect(() => parseLots(bad), bad).toThrow(AmountError);
    }
  });

  it('converts human amounts to lots without floating point, refusing extra decimals', () => {
    expect(toLots('0.5', 8)).toBe(50_000_000n);
    expect(toLots(0.1, 8)).toBe(10_000_000n);
    expect(toLots(1e-7, 8)).toBe(10n);
    expect(toLots(12.5, 6)).toBe(12_500_000n);
    expect(toLots('123456789012345678901234567890.123456789012345678', 18)).toBe(
      123456789012345678901234567890123456789012345678n,
    );
    expect(() => toLots('0.000000001', 8)).toThrow(/more than 8 decimals/);
    expect(() => toLots(-1, 8)).toThrow(AmountError);
    expect(() => toLots(Number.NaN, 8)).toThrow(AmountError);
  });

  it('formats and parses back (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 40n }),
        fc.integer({ min: 0, max: 30 }),
        (lots, decimals) => {
          expect(toLots(formatLots(lots, decimals), decimals)).toBe(lots);
        },
      ),
    );
  });

  it('converts at a decimal rate across decimals, rounding down', () => {
    // 0.01 BTC (8 decimals) at 60000 USDC/BTC = 600 USDC (6 decimals)
    expect(convert(1_000_000n, parseDecimal('60000'), 8, 6)).toBe(600_000_000n);
    expect(convert(1n, parseDecimal('0.5'), 0, 0)).toBe(0n);
    expect(minusBps(10_000n, 50)).toBe(9_950n);
  });
});
