/**
 * A BIGINT column as a number, whichever driver read it: better-sqlite3 returns a number, pg a
 * string (BIGINT exceeds what pg parses to a number by default). For times (milliseconds, Unix
 * seconds) and counters, which stay far below 2^53.
 */
export function bigintNumber(v: number | string): number;
export function bigintNumber(v: number | string | null): number | null;
export function bigintNumber(v: number | string | null): number | null {
  return v === null ? null : Number(v);
}
