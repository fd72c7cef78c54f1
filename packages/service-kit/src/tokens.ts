/**
 * Bearer secrets of the services (the cloud's API tokens, the swap's API keys): `<prefix><id>_<secret>`, where
 * `id` is public hex (the stored row's key, shown in listings) and `secret` is 32 random bytes in base64url.
 * Only a SHA-256 digest is stored: with 256 bits of entropy a plain hash cannot be brute-forced, and a slow KDF
 * would only slow every request. A presented secret is looked up by its id and compared with
 * `timingSafeEqual`; an unknown id is compared against a dummy digest, so both paths do the same work.
 *
 * @example
 * ```ts
 * const scheme = { prefix: 'rgbx_swap_', idBytes: 6 };
 * const { id, token } = mintToken(scheme);   // store sha256(token) under id, show token once
 * const parsed = parseToken(scheme, token);  // { id, secret } or undefined when malformed
 * digestsEqual(sha256(token), storedDigest); // constant time, false unless both are 32 bytes
 * ```
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface TokenScheme {
  /** Everything before the id, e.g. `rgbxc_` or `rgbx_swap_`. */
  prefix: string;
  /** Random bytes in the id (written as 2 × idBytes hex characters). */
  idBytes: number;
}

const SECRET_CHARS = 43; // 32 bytes in unpadded base64url

/** A new token: its public id, the secret part, and the whole token (shown once, never stored). */
export function mintToken(scheme: TokenScheme): { id: string; secret: string; token: string } {
  const id = randomBytes(scheme.idBytes).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { id, secret, token: `${scheme.prefix}${id}_${secret}` };
}

/** The id and secret of a well-formed token of this scheme; undefined otherwise (never throws). */
export function parseToken(scheme: TokenScheme, text: unknown): { id: string; secret: string } | undefined {
  if (typeof text !== 'string' || !text.startsWith(scheme.prefix)) return undefined;
  const rest = text.slice(scheme.prefix.length);
  const idChars = scheme.idBytes * 2;
  if (rest.length !== idChars + 1 + SECRET_CHARS || rest[idChars] !== '_') return undefined;
  const id = rest.slice(0, idChars);
  const secret = rest.slice(idChars + 1);
  if (!/^[0-9a-f]+$/.test(id) || !/^[A-Za-z0-9_-]+$/.test(secret)) return undefined;
  return { id, secret };
}

export function sha256(data: string | Uint8Array): Buffer {
  return createHash('sha256').update(data).digest();
}

/** Constant-time equality of two 32-byte digests (false for any other length). */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== 32 || b.length !== 32) return false;
  return timingSafeEqual(a, b);
}

/** Compared against when no stored digest exists, so an unknown id costs what a known one does. */
export const DUMMY_DIGEST: Buffer = Buffer.alloc(32);
