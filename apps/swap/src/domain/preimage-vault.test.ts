import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PreimageVault, PreimageVaultError } from './preimage-vault.ts';

describe('preimage vault (AES-256-GCM)', () => {
  const vault = new PreimageVault(randomBytes(32));

  it('generates a 32-byte preimage with its SHA-256 lock and opens what it sealed', () => {
    const { preimage, secretHash } = PreimageVault.generate();
    expect(preimage).toHaveLength(32);
    expect(secretHash).toBe(`0x${createHash('sha256').update(preimage).digest('hex')}`);
    const sealed = vault.seal(preimage, 'intent-1');
    expect(sealed).not.toContain(preimage.toString('hex'));
    expect(vault.open(sealed, 'intent-1').equals(preimage)).toBe(true);
    expect(vault.seal(preimage, 'intent-1')).not.toBe(sealed); // fresh IV each time
  });

  it('refuses another intent id, a tampered ciphertext and another key', () => {
    const sealed = vault.seal(randomBytes(32), 'intent-1');
    expect(() => vault.open(sealed, 'intent-2')).toThrow(PreimageVaultError);
    const parts = sealed.split('.');
    parts[3] = `${parts[3]!.slice(0, -1)}${parts[3]!.endsWith('0') ? '1' : '0'}`;
    expect(() => vault.open(parts.join('.'), 'intent-1')).toThrow(/authentication/);
    expect(() => new PreimageVault(randomBytes(32)).open(sealed, 'intent-1')).toThrow(/sealed with key/);
    expect(() => new PreimageVault(randomBytes(16))).toThrow(/32 bytes/);
  });
});
