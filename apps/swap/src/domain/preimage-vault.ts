/**
 * The HTLC preimages. The service generates a 32-byte preimage per intent and keeps it only sealed
 * with AES-256-GCM under the configured key: `v1.<keyId>.<iv>.<ciphertext>.<tag>` (hex parts),
 * with the intent id as additional authenticated data, so a sealed value copied onto another intent
 * does not open. `keyId` is the first 4 bytes of SHA-256("rgbx-swap-preimage-key" || key): opening
 * with the wrong key fails with a clear message instead of an authentication error.
 */
import { createHash, randomBytes } from 'node:crypto';
import { SealedBox, SealedBoxError } from '@rgbx/service-kit';

export class PreimageVaultError extends Error {
  override readonly name = 'PreimageVaultError';
}

export interface NewSecret {
  preimage: Buffer;
  /** 0x-prefixed hex SHA-256 of the preimage (the HTLC and witness hash lock). */
  secretHash: string;
}

/** The preimages' vault: the service kit's `SealedBox` in this format, with the swap's messages. */
export class PreimageVault {
  readonly #box: SealedBox;
  readonly keyId: string;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new PreimageVaultError(`preimage key must be 32 bytes, got ${key.length}`);
    this.#box = new SealedBox(key, { domain: 'rgbx-swap-preimage-key', prefix: 'v1', encoding: 'hex' });
    this.keyId = this.#box.keyId;
  }

  /** A fresh preimage and its SHA-256 hash lock. */
  static generate(): NewSecret {
    const preimage = randomBytes(32);
    return { preimage, secretHash: `0x${createHash('sha256').update(preimage).digest('hex')}` };
  }

  seal(preimage: Uint8Array, intentId: string): string {
    return this.#box.seal(preimage, intentId);
  }

  open(sealed: string, intentId: string): Buffer {
    try {
      return this.#box.open(sealed, intentId);
    } catch (err) {
      if (!(err instanceof SealedBoxError)) throw err;
      if (err.reason === 'format') throw new PreimageVaultError('unknown sealed preimage format');
      if (err.reason === 'wrong_key')
        throw new PreimageVaultError(
          `preimage sealed with key ${err.sealedKeyId}, configured key is ${this.keyId}`,
        );
      throw new PreimageVaultError('sealed preimage failed authentication', { cause: err });
    }
  }
}
