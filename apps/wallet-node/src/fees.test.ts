import { describe, expect, it } from 'vitest';
import { suggestedFeeRate } from './fees.ts';

describe('suggestedFeeRate', () => {
  it("rounds rgb-lib's float estimate up to an integer fee_rate, ignoring binary noise", () => {
    expect(suggestedFeeRate(2.0000000000000004)).toBe(2);
    expect(suggestedFeeRate(2.0040000000000004)).toBe(3);
    expect(suggestedFeeRate(1.5)).toBe(2);
    expect(suggestedFeeRate(7)).toBe(7);
    expect(suggestedFeeRate(0.25)).toBe(1);
    expect(() => suggestedFeeRate(Number.NaN)).toThrow(/not a number/);
  });
});
