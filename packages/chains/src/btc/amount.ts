/**
 * Exact conversions between BTC decimal strings (as bitcoind prints them) and satoshis.
 * Amounts are `bigint` in code; a float never touches them.
 */

const SATS_PER_BTC = 100_000_000n;
const DECIMAL = /^(-)?(\d+)(?:\.(\d{1,8}))?$/;

/**
 * Parses a BTC decimal ("0.00001000", "21", "-1.5") into satoshis.
 * @example btcToSats('0.00001000') // 1000n
 */
export function btcToSats(btc: string): bigint {
  const m = DECIMAL.exec(btc.trim());
  if (!m)
    throw new RangeError(
      `btcToSats: expected a decimal with at most 8 fraction digits, got ${JSON.stringify(btc)}`,
    );
  const sats = BigInt(m[2]!) * SATS_PER_BTC + BigInt((m[3] ?? '').padEnd(8, '0') || '0');
  return m[1] ? -sats : sats;
}

/**
 * Formats satoshis as a BTC decimal with exactly 8 fraction digits, as bitcoind does.
 * @example satsToBtc(1000n) // '0.00001000'
 */
export function satsToBtc(sats: bigint): string {
  const neg = sats < 0n;
  const abs = neg ? -sats : sats;
  const s = `${abs / SATS_PER_BTC}.${(abs % SATS_PER_BTC).toString().padStart(8, '0')}`;
  return neg ? `-${s}` : s;
}
