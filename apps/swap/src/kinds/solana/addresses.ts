/** Solana addresses: base58 of a 32-byte ed25519 public key. */
import { base58 } from '@scure/base';

export function isSolanaAddress(s: string): boolean {
  if (s.length < 32 || s.length > 44) return false;
  try {
    return base58.decode(s).length === 32;
  } catch {
    return false;
  }
}

/** True when `publicKey` (base58 address form, or 64 hex chars) is the key of the Solana `address`. */
export function solanaKeyMatches(publicKey: string, address: string): boolean {
  if (!isSolanaAddress(address)) return false;
  if (/^(0x)?[0-9a-fA-F]{64}$/.test(publicKey)) {
    return Buffer.from(publicKey.replace(/^0x/, ''), 'hex').equals(Buffer.from(base58.decode(address)));
  }
  return publicKey === address;
}
