import { createHash } from 'node:crypto';

/** SHA-256 (OpenSSL through node:crypto: native speed for indexing whole blocks). */
export function sha256(data: Uint8Array): Buffer {
  return createHash('sha256').update(data).digest();
}

/** Double SHA-256, Bitcoin's hash for txids, block hashes and merkle nodes. */
export function sha256d(data: Uint8Array): Buffer {
  return sha256(sha256(data));
}

/** Hex of the byte-reversed buffer: Bitcoin displays hashes little-endian-reversed ("RPC byte order"). */
export function reversedHex(data: Uint8Array): string {
  return Buffer.from(data).reverse().toString('hex');
}

/** Inverse of {@link reversedHex}. */
export function fromReversedHex(hex: string): Buffer {
  return Buffer.from(hex, 'hex').reverse();
}

/**
 * Electrum scripthash: sha256(scriptPubKey), byte-reversed, hex.
 * @example scriptHash(Buffer.from('0014…', 'hex'))
 */
export function scriptHash(script: Uint8Array): string {
  return reversedHex(sha256(script));
}
