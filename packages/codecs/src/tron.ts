/**
 * Tron addresses, decoded once for the whole repository (the chains' Tron module and the SDK): a
 * 21-byte payload (0x41, then the 20-byte account hash) in base58check, i.e. base58 of the payload and
 * the first 4 bytes of sha256(sha256(payload)).
 *
 * Pure: no I/O, no Node-only API.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { createBase58check } from '@scure/base';

/** First byte of every Tron account/contract address. */
export const TRON_ADDRESS_PREFIX = 0x41;

/** base58check over sha256 (Bitcoin's; Tron uses it for addresses). */
export const base58check = createBase58check(sha256);

/** Why a text is not a Tron address: its shape, its checksum, or its payload (length or prefix). */
export type TronAddressProblem = 'format' | 'checksum' | 'payload';

export class TronAddressError extends Error {
  override readonly name = 'TronAddressError';
  readonly problem: TronAddressProblem;
  /** The decoded payload, for a `payload` problem. */
  readonly payload?: Uint8Array;
  constructor(problem: TronAddressProblem, message: string, payload?: Uint8Array) {
    super(message);
    this.problem = problem;
    if (payload) this.payload = payload;
  }
}

const SHAPE = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;

/**
 * A Tron base58 address (`T…`) → its 21-byte payload (0x41 first), the checksum verified.
 *
 * @throws TronAddressError
 * @example
 * decodeTronAddress('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t').length // 21
 */
export function decodeTronAddress(address: string): Uint8Array {
  if (typeof address !== 'string' || !SHAPE.test(address))
    throw new TronAddressError('format', 'expected 34 base58 characters starting with T');
  let payload: Uint8Array;
  try {
    payload = base58check.decode(address);
  } catch {
    throw new TronAddressError('checksum', 'base58check checksum does not match');
  }
  if (payload.length !== 21 || payload[0] !== TRON_ADDRESS_PREFIX)
    throw new TronAddressError('payload', 'expected 21 bytes starting with 0x41', payload);
  return payload;
}

/**
 * A 21-byte payload (0x41 first) or a 20-byte account hash (0x41 is prepended) → the base58 address.
 *
 * @throws TronAddressError (`payload`) for any other length or prefix
 */
export function encodeTronAddress(bytes: Uint8Array): string {
  if (bytes.length === 20) {
    const payload = new Uint8Array(21);
    payload[0] = TRON_ADDRESS_PREFIX;
    payload.set(bytes, 1);
    return base58check.encode(payload);
  }
  if (bytes.length === 21 && bytes[0] === TRON_ADDRESS_PREFIX) return base58check.encode(bytes);
  throw new TronAddressError('payload', 'expected 20 bytes, or 21 bytes starting with 0x41', bytes);
}
