/**
 * Secrets sealed at rest with AES-256-GCM under a 32-byte key from the service's configuration (the cloud's
 * webhook signing keys, the swap's HTLC preimages). A sealed value is one string,
 * `<prefix>.<keyId>.<iv>.<ciphertext>.<tag>`, with the parts in the box's encoding (hex or base64url), and is
 * bound to a context string (the row it belongs to) as additional authenticated data, so a sealed value
 * copied onto another row does not open. `keyId` (8 hex) is the start of SHA-256(domain || key): opening under
 * another key fails with an error naming both ids instead of a bare authentication failure. Tags are 16 bytes,
 * and only 16-byte tags are accepted (GCM would otherwise verify a truncated tag).
 *
 * @example
 * ```ts
 * const box = new SealedBox(key, { domain: 'rgbx-swap-preimage-key', prefix: 'v1', encoding: 'hex' });
 * const sealed = box.seal(preimage, intentId);
 * box.open(sealed, intentId); // the preimage; another intent id throws SealedBoxError 'auth'
 * ```
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export type SealedBoxFailure = 'key_length' | 'format' | 'wrong_key' | 'auth';

export class SealedBoxError extends Error {
  override readonly name = 'SealedBoxError';
  readonly reason: SealedBoxFailure;
  /** For `wrong_key`: the key id the value was sealed with. */
  readonly sealedKeyId: string | undefined;

  constructor(reason: SealedBoxFailure, message: string, sealedKeyId?: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.sealedKeyId = sealedKeyId;
  }
}

export interface SealedBoxOptions {
  /** Domain separation for the key id (each use of a key gets its own). */
  domain: string;
  /** First part of every sealed value: names the format and its version. */
  prefix: string;
  encoding: 'hex' | 'base64url';
}

const TAG_BYTES = 16;

export class SealedBox {
  readonly #key: Buffer;
  readonly #o: SealedBoxOptions;
  /** Identifies the key (not secret); stored in every sealed value. */
  readonly keyId: string;

  constructor(key: Uint8Array, options: SealedBoxOptions) {
    if (key.length !== 32)
      throw new SealedBoxError('key_length', `the key must be 32 bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
    this.#o = options;
    this.keyId = createHash('sha256').update(options.domain).update(this.#key).digest('hex').slice(0, 8);
  }

  /** Whether a stored value is in this box's sealed format (as opposed to a legacy plain value). */
  isSealed(value: string): boolean {
    return value.startsWith(`${this.#o.prefix}.`);
  }

  seal(plaintext: Uint8Array | string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const data = typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext;
    const ct = Buffer.concat([cipher.update(data), cipher.final()]);
    const enc = this.#o.encoding;
    return [
      this.#o.prefix,
      this.keyId,
      iv.toString(enc),
      ct.toString(enc),
      cipher.getAuthTag().toString(enc),
    ].join('.');
  }

  /** The plaintext sealed for `context`; throws `SealedBoxError` (format, wrong_key, auth). */
  open(sealed: string, context: string): Buffer {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== this.#o.prefix)
      throw new SealedBoxError(
        'format',
        `not a sealed value (expected ${this.#o.prefix}.<keyId>.<iv>.<ct>.<tag>)`,
      );
    const [, keyId, iv, ct, tag] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId)
      throw new SealedBoxError(
        'wrong_key',
        `sealed with key ${keyId}, the configured key is ${this.keyId}`,
        keyId,
      );
    const enc = this.#o.encoding;
    const tagBytes = Buffer.from(tag, enc);
    if (tagBytes.length !== TAG_BYTES) throw new SealedBoxError('auth', 'sealed value failed authentication');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, enc), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tagBytes);
      return Buffer.concat([decipher.update(Buffer.from(ct, enc)), decipher.final()]);
    } catch (err) {
      throw new SealedBoxError('auth', 'sealed value failed authentication', undefined, { cause: err });
    }
  }
}
