/**
 * The HTLC preimages. The service generates a 32-byte preimage per intent and keeps it only sealed
 * with AES-256-GCM under the configured key: `v1.<keyId>.<iv>.<ciphertext>.<tag>` (hex parts),
 * with the intent id as additional authenticated data, so a sealed value copied onto another intent
 * does not open. `keyId` is the first 4 bytes of SHA-256("rgbx-swap-preimage-key" || key): opening
 * with the wrong key fails with a clear message instead of an authentication error.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export class PreimageVaultError extends Error {
  override readonly name = 'PreimageVaultError';
}

export interface NewSecret {
  preimage: Buffer;
  /** 0x-prefixed hex SHA-256 of the preimage (the HTLC and witness hash lock). */
  secretHash: string;
}

export class PreimageVault {
  readonly #key: Buffer;
  readonly keyId: string;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new PreimageVaultError(`preimage key must be 32 bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
    this.keyId = createHash('sha256')
      .update('rgbx-swap-preimage-key')
      .update(this.#key)
      .digest('hex')
      .slice(0, 8);
  }

  /** A fresh preimage and its SHA-256 hash lock. */
  static generate(): NewSecret {
    const preimage = randomBytes(32);
    return { preimage, secretHash: `0x${createHash('sha256').update(preimage).digest('hex')}` };
  }

  seal(preimage: Uint8Array, intentId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(intentId, 'utf8'));
    const ct = Buffer.concat([cipher.update(preimage), cipher.final()]);
    return [
      'v1',
      this.keyId,
      iv.toString('hex'),
      ct.toString('hex'),
      cipher.getAuthTag().toString('hex'),
    ].join('.');
  }

  open(sealed: string, intentId: string): Buffer {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1')
      throw new PreimageVaultError('unknown sealed preimage format');
    const [, keyId, ivHex, ctHex, tagHex] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) {
      throw new PreimageVaultError(`preimage sealed with key ${keyId}, configured key is ${this.keyId}`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(ivHex, 'hex'));
      decipher.setAAD(Buffer.from(intentId, 'utf8'));
      decipher.setAuthTag(Buffer.from(tagHex, 'hex'));
      return Buffer.concat([decipher.update(Buffer.from(ctHex, 'hex')), decipher.final()]);
    } catch (err) {
      throw new PreimageVaultError('sealed preimage failed authentication', { cause: err });
    }
  }
}
