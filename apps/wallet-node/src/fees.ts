/**
 * `get_fee_estimation` answers what `fee_rate` accepts: an integer sat/vB. rgb-lib's estimate is a float with
 * binary noise (`2.0040000000000004`); it is rounded to 1/1000 sat/vB first (the noise goes, 2.004 stays), then up
 * to the next integer, so a rate taken from it never pays less than the estimate. At least 1.
 */
export function suggestedFeeRate(estimate: number): number {
  if (!Number.isFinite(estimate)) throw new Error(`fee estimate ${estimate} is not a number`);
  return Math.max(1, Math.ceil(Math.round(estimate * 1000) / 1000));
}
