/**
 * Encryption at rest of the webhook signing keys' private parts: AES-256-GCM under the configured
 * 32-byte key (`[signing_keys] encryption_key` / `encryption_key_file` / `$RGBX_CLOUD_ENCRYPTION_KEY`).
 * A sealed value is `rgbxc-sk1.<keyId>.<iv>.<ciphertext>.<tag>` (base64url parts) with the signing
 * key's id as additional authenticated data, so a sealed key copied onto another row does not open.
 * `keyId` (8 hex) is the start of SHA-256("rgbx-cloud-signing-key-encryption" || key): opening with
 * another key fails with a message naming both ids instead of a bare authentication error.
 */
import { SealedBox, SealedBoxError } from '@rgbx/service-kit';

export const SEALED_PREFIX = 'rgbxc-sk1';

export class KeyVaultError extends Error {
  override readonly name = 'KeyVaultError';
}

/** The signing keys' vault: the service kit's `SealedBox` in this format, with the cloud's messages. */
export class SigningKeyVault {
  readonly #box: SealedBox;
  /** Identifies the encryption key (not secret); stored in every sealed value. */
  readonly keyId: string;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new KeyVaultError(`the encryption key must be 32 bytes, got ${key.length}`);
    this.#box = new SealedBox(key, {
      domain: 'rgbx-cloud-signing-key-encryption',
      prefix: SEALED_PREFIX,
      encoding: 'base64url',
    });
    this.keyId = this.#box.keyId;
  }

  static isSealed(value: string): boolean {
    return value.startsWith(`${SEALED_PREFIX}.`);
  }

  seal(privatePem: string, kid: string): string {
    return this.#box.seal(privatePem, kid);
  }

  /** The PKCS#8 PEM sealed for signing key `kid`. */
  open(sealed: string, kid: string): string {
    try {
      return this.#box.open(sealed, kid).toString('utf8');
    } catch (err) {
      if (!(err instanceof SealedBoxError)) throw err;
      if (err.reason === 'format') throw new KeyVaultError(`signing key ${kid}: not a sealed private key`);
      if (err.reason === 'wrong_key')
        throw new KeyVaultError(
          `signing key ${kid} is encrypted with encryption key ${err.sealedKeyId}, but the configured encryption key is ${this.keyId}`,
        );
      throw new KeyVaultError(`signing key ${kid}: sealed private key failed authentication`, { cause: err });
    }
  }
}
