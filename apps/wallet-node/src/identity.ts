import { createHash } from 'node:crypto';
import { createBase58check } from '@scure/base';
import { E } from './errors.ts';

/** The three headers that select a wallet context (not an authentication mechanism). */
export const HEADER_XPUB_VAN = 'xpub-van';
export const HEADER_XPUB_COL = 'xpub-col';
export const HEADER_FINGERPRINT = 'master-fingerprint';
/** The spec's exact 401 text. */
export const MISSING_HEADERS_TEXT = 'Missing xpub-van/xpub-col/master-fingerprint header';

export interface WalletIdentity {
  xpubVanilla: string;
  xpubColored: string;
  /** Lowercased: rgb-lib's directory name is case-sensitive, so "ABCD…" and "abcd…" must be one wallet. */
  fingerprint: string;
}

const base58check = createBase58check((d: Uint8Array) => createHash('sha256').update(d).digest());

/** BIP-32 version bytes of public extended keys per network family. */
const XPUB_VERSIONS = { mainnet: 0x0488b21e, test: 0x043587cf } as const;

export function networkFamily(network: string): keyof typeof XPUB_VERSIONS {
  return network === 'mainnet' ? 'mainnet' : 'test';
}

/** Validates an extended public key: base58check checksum, 78 bytes, the network's version, a compressed key. */
export function validateXpub(header: string, value: string, network: string): string {
  let bytes: Uint8Array;
  try {
    bytes = base58check.decode(value);
  } catch {
    throw E.INVALID_HEADER.create(
      header,
      'expected a base58check extended public key (bad characters or checksum)',
    );
  }
  if (bytes.length !== 78) {
    throw E.INVALID_HEADER.create(header, `expected a 78-byte extended key, got ${bytes.length} bytes`);
  }
  const version = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0);
  const family = networkFamily(network);
  if (version !== XPUB_VERSIONS[family]) {
    const got = Object.entries(XPUB_VERSIONS).find(([, v]) => v === version)?.[0];
    throw E.INVALID_HEADER.create(
      header,
      `expected a ${family === 'mainnet' ? 'mainnet xpub' : 'testnet/signet/regtest tpub'} for network ${network}, got ${got ? `a ${got === 'mainnet' ? 'mainnet xpub' : 'test tpub'}` : `version 0x${version.toString(16).padStart(8, '0')}`}`,
    );
  }
  const prefix = bytes[45];
  if (prefix !== 0x02 && prefix !== 0x03) {
    throw E.INVALID_HEADER.create(header, 'expected a public key (the key data is not a compressed point)');
  }
  return value;
}

/**
 * Reads and validates the wallet headers. Returns `null` when any is missing (the caller answers the
 * spec's plain-text 401); throws INVALID_HEADER (400) for malformed values.
 */
export function readIdentity(
  headers: Record<string, string | string[] | undefined>,
  network: string,
): WalletIdentity | null {
  const van = headers[HEADER_XPUB_VAN];
  const col = headers[HEADER_XPUB_COL];
  const fp = headers[HEADER_FINGERPRINT];
  if (van === undefined || col === undefined || fp === undefined) return null;
  for (const [name, v] of [
    [HEADER_XPUB_VAN, van],
    [HEADER_XPUB_COL, col],
    [HEADER_FINGERPRINT, fp],
  ] as const) {
    if (Array.isArray(v)) throw E.INVALID_HEADER.create(name, 'sent more than once');
  }
  const fingerprint = (fp as string).trim();
  if (!/^[0-9a-fA-F]{8}$/.test(fingerprint)) {
    throw E.INVALID_HEADER.create(
      HEADER_FINGERPRINT,
      `expected 8 hex characters, got ${JSON.stringify(fingerprint.slice(0, 20))}`,
    );
  }
  const xpubVanilla = validateXpub(HEADER_XPUB_VAN, (van as string).trim(), network);
  const xpubColored = validateXpub(HEADER_XPUB_COL, (col as string).trim(), network);
  if (xpubVanilla === xpubColored) {
    throw E.INVALID_HEADER.create(
      HEADER_XPUB_COL,
      'must differ from xpub-van (the colored and vanilla accounts are distinct)',
    );
  }
  return { xpubVanilla, xpubColored, fingerprint: fingerprint.toLowerCase() };
}

/** Default bound of {@link IdentityCache}: validated identities kept (about 0.4 KiB each). */
export const IDENTITY_CACHE_SIZE = 1024;

/**
 * The validated identities of recently seen header triples, so a wallet's calls do not repeat the base58check
 * decoding and SHA-256 checksums of both xpubs on every request (~70 µs). Keyed by the exact header strings
 * (before trimming; a repeated header, which arrives as an array, is never cached), bounded (least recently used
 * out first), and only successful validations are kept: a malformed triple is validated, and refused, every
 * time. A cached identity is only what `readIdentity` would return for the same headers: the caller still
 * checks it against the wallet registered for its fingerprint on every request.
 */
export class IdentityCache {
  readonly #network: string;
  readonly #max: number;
  readonly #ids = new Map<string, WalletIdentity>();

  constructor(network: string, max = IDENTITY_CACHE_SIZE) {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError(`max must be a positive integer, got ${max}`);
    this.#network = network;
    this.#max = max;
  }

  get size(): number {
    return this.#ids.size;
  }

  /** As {@link readIdentity}, served from the cache for header values validated before. */
  read(headers: Record<string, string | string[] | undefined>): WalletIdentity | null {
    const van = headers[HEADER_XPUB_VAN];
    const col = headers[HEADER_XPUB_COL];
    const fp = headers[HEADER_FINGERPRINT];
    if (typeof van !== 'string' || typeof col !== 'string' || typeof fp !== 'string') {
      return readIdentity(headers, this.#network);
    }
    // Length-prefixed: no two distinct triples share a key, whatever characters the values hold.
    const key = `${van.length}:${van}${col.length}:${col}${fp}`;
    const hit = this.#ids.get(key);
    if (hit !== undefined) {
      this.#ids.delete(key);
      this.#ids.set(key, hit);
      return hit;
    }
    const id = readIdentity(headers, this.#network);
    if (id === null) return null;
    const frozen = Object.freeze(id);
    this.#ids.set(key, frozen);
    if (this.#ids.size > this.#max) this.#ids.delete(this.#ids.keys().next().value as string);
    return frozen;
  }
}
