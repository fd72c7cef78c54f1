import { describe, expect, it } from 'vitest';
import { givenUp, retryDelay } from './schedule.ts';

const policy = { scheduleMs: [5_000, 30_000, 120_000], jitter: 0.1, giveUpAfterMs: 72 * 3600_000 };

describe('retry schedule', () => {
  it('follows the schedule, repeats its last step, and stays within the jitter', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 9].map((n) => retryDelay(policy, n, mid))).toEqual([
      5_000, 30_000, 120_000, 120_000, 120_000,
    ]);
    expect(retryDelay(policy, 1, () => 0)).toBe(4_500);
    expect(retryDelay(policy, 1, () => 0.999999)).toBe(5_500);
    for (let i = 0; i < 200; i++) {
      const d = retryDelay(policy, 2);
      expect(d).toBeGreaterThanOrEqual(27_000);
      expect(d).toBeLessThanOrEqual(33_000);
    }
  });

  it('applies the give-up window', () => {
    const now = Date.parse('2026-11-21T00:00:00Z');
    expect(givenUp(policy, now, now + 72 * 3600_000 - 1)).toBe(false);
    expect(givenUp(policy, now, now + 72 * 3600_000)).toBe(true);
  });
});
