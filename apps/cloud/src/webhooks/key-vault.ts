/**
 * Encryption at rest of the webhook signing keys' private parts: AES-256-GCM under the configured
 * 32-byte key (`[signing_keys] encryption_key` / `encryption_key_file` / `$RGBX_CLOUD_ENCRYPTION_KEY`).
 * A sealed value is `rgbxc-sk1.<keyId>.<iv>.<ciphertext>.<tag>` (base64url parts) with the signing
 * key's id as additional authenticated data, so a sealed key copied onto another row does not open.
 * `keyId` (8 hex) is the start of SHA-256("rgbx-cloud-signing-key-encryption" || key): opening with
 * another key fails with a message naming both ids instead of a bare authentication error.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const SEALED_PREFIX = 'rgbxc-sk1';

export class KeyVaultError extends Error {
  override readonly name = 'KeyVaultError';
}

export class SigningKeyVault {
  readonly #key: Buffer;
  /** Identifies the encryption key (not secret); stored in every sealed value. */
  readonly keyId: string;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new KeyVaultError(`the encryption key must be 32 bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
    this.keyId = createHash('sha256')
      .update('rgbx-cloud-signing-key-encryption')
      .update(this.#key)
      .digest('hex')
      .slice(0, 8);
  }

  static isSealed(value: string): boolean {
    return value.startsWith(`${SEALED_PREFIX}.`);
  }

  seal(privatePem: string, kid: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(kid, 'utf8'));
    const ct = Buffer.concat([cipher.update(privatePem, 'utf8'), cipher.final()]);
    return [SEALED_PREFIX, this.keyId, iv, ct, cipher.getAuthTag()]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  /** The PKCS#8 PEM sealed for signing key `kid`. */
  open(sealed: string, kid: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== SEALED_PREFIX)
      throw new KeyVaultError(`signing key ${kid}: not a sealed private key`);
    const [, keyId, iv, ct, tag] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) {
      throw new KeyVaultError(
        `signing key ${kid} is encrypted with encryption key ${keyId}, but the configured encryption key is ${this.keyId}`,
      );
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'), {
        authTagLength: 16,
      });
      decipher.setAAD(Buffer.from(kid, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch (err) {
      throw new KeyVaultError(`signing key ${kid}: sealed private key failed authentication`, { cause: err });
    }
  }
}
