import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import {
  decodeTronAddress,
  encodeTronAddress,
  TRON_ADDRESS_PREFIX,
  TronAddressError,
} from '@rgbx/codecs/tron';
import { type BytesLike, hex, preview, toBytes } from '../bytes.ts';
import { ChainInputError } from '../errors.ts';
import type { EvmAddress } from '../evm/permit2.ts';

/** First byte of every Tron account/contract address (the shared codec's). */
export { TRON_ADDRESS_PREFIX };

/** The 21-byte payload of a Tron address (the shared codec), its problems as {@link ChainInputError}s. */
function decode(address: unknown, field: string): Uint8Array {
  try {
    return decodeTronAddress(address as string);
  } catch (err) {
    if (!(err instanceof TronAddressError)) throw err;
    if (err.problem === 'format')
      throw new ChainInputError(
        field,
        `expected a Tron base58 address (34 characters starting with T), received ${preview(address)}`,
      );
    if (err.problem === 'checksum')
      throw new ChainInputError(field, `base58check checksum does not match in ${preview(address)}`);
    const bytes = err.payload ?? new Uint8Array();
    throw new ChainInputError(
      field,
      `expected 21 bytes starting with 0x41, received ${bytes.length} bytes starting with 0x${hex(bytes.subarray(0, 1))}`,
    );
  }
}

/**
 * True for a valid Tron base58check address (`T…`, 21 bytes, 0x41 prefix).
 *
 * @example
 * isTronAddress('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t') // true
 */
export function isTronAddress(address: string): boolean {
  try {
    decode(address, 'address');
    return true;
  } catch {
    return false;
  }
}

/**
 * Tron base58 address → 21-byte hex with the 41 prefix, lower case, no `0x` (Tron's "hex address").
 *
 * @example
 * tronAddressToHex('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t') // '41a614f803b6fd780986a42c78ec9c7f77e6ded13c'
 */
export function tronAddressToHex(address: string): string {
  return hex(decode(address, 'address'));
}

/**
 * Tron base58 address → 20-byte `0x` EVM-style address (the 41 prefix dropped), as used in TIP-712.
 *
 * @example
 * tronAddressToEvm('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t') // '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c'
 */
export function tronAddressToEvm(address: string): EvmAddress {
  return `0x${hex(decode(address, 'address').subarray(1))}`;
}

/**
 * Hex → Tron base58 address. Accepts 21 bytes with the 41 prefix (`41…` or `0x41…`) or 20 bytes
 * (`0x…`, an EVM-style address, to which 41 is prepended).
 *
 * @example
 * tronAddressFromHex('41a614f803b6fd780986a42c78ec9c7f77e6ded13c') // 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t'
 */
export function tronAddressFromHex(value: string): string {
  if (typeof value !== 'string')
    throw new ChainInputError('address', `expected hex text, received ${typeof value}`);
  const body = toBytes(value, 'address');
  try {
    return encodeTronAddress(body);
  } catch {
    throw new ChainInputError(
      'address',
      `expected 20 bytes or 21 bytes starting with 41, received ${body.length} bytes: ${preview(value)}`,
    );
  }
}

/**
 * Tron address of a secp256k1 public key: keccak256 of the 64-byte uncompressed key (without the 0x04
 * byte), last 20 bytes, prefixed with 0x41, base58check.
 *
 * @example
 * tronAddressFromPublicKey(secp256k1.getPublicKey(privateKey, false)) // 'T…'
 */
export function tronAddressFromPublicKey(publicKey: BytesLike): string {
  const raw = toBytes(publicKey, 'publicKey');
  if (raw.length !== 33 && raw.length !== 65)
    throw new ChainInputError(
      'publicKey',
      `expected 33 (compressed) or 65 (uncompressed) bytes, received ${raw.length}`,
    );
  let uncompressed: Uint8Array;
  try {
    uncompressed = secp256k1.Point.fromBytes(raw).toBytes(false);
  } catch {
    throw new ChainInputError('publicKey', `not a point on secp256k1: ${preview(hex(raw))}`);
  }
  return encodeTronAddress(keccak_256(uncompressed.subarray(1)).subarray(12));
}

/** Canonical form of a Tron address (validates the checksum; base58 is case-sensitive, so this is identity). */
export function requireTronAddress(address: unknown, field: string): string {
  return encodeTronAddress(decode(address, field));
}
