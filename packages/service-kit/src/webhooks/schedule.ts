/**
 * Retry timing. Attempt 1 is immediate; attempt n+1 waits `schedule[n-1]` (the last value repeats)
 * with ±`jitter` random spread; a 429/503 `Retry-After` longer than that wins (capped at the
 * schedule's largest step). An event still undelivered `giveUpAfterMs` after its first attempt is
 * abandoned.
 */

export interface RetryPolicy {
  scheduleMs: readonly number[];
  jitter: number;
  giveUpAfterMs: number;
}

/** Delay before the next attempt, after `attempts` failed attempts (≥ 1). */
export function retryDelay(policy: RetryPolicy, attempts: number, random = Math.random): number {
  const s = policy.scheduleMs;
  const base = s[Math.min(Math.max(attempts, 1), s.length) - 1]!;
  const spread = base * policy.jitter * (random() * 2 - 1);
  return Math.max(0, Math.round(base + spread));
}

/** True when the event's give-up window is over. */
export function givenUp(policy: RetryPolicy, firstAttemptAt: number, now: number): boolean {
  return now - firstAttemptAt >= policy.giveUpAfterMs;
}
