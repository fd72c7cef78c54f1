import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DUMMY_DIGEST, digestsEqual, mintToken, parseToken, sha256 } from './tokens.ts';

const scheme = { prefix: 'rgbx_test_', idBytes: 6 };

describe('tokens', () => {
  it('mints tokens that parse back to their id and secret, unique each time', () => {
    const a = mintToken(scheme);
    const b = mintToken(scheme);
    expect(a.token).toMatch(/^rgbx_test_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(parseToken(scheme, a.token)).toEqual({ id: a.id, secret: a.secret });
    expect(a.token).not.toBe(b.token);
  });

  it('parses nothing but the exact form (other prefix, id length, charset, separator, non-strings)', () => {
    const { id, secret } = mintToken(scheme);
    for (const bad of [
      `rgbx_other_${id}_${secret}`,
      `rgbx_test_${id}0_${secret}`,
      `rgbx_test_${id.toUpperCase().replace(/[0-9]/g, 'A')}_${secret}`,
      `rgbx_test_${id}-${secret}`,
      `rgbx_test_${id}_${secret}=`,
      `rgbx_test_${id}_${secret.slice(1)}`,
      ` rgbx_test_${id}_${secret}`,
      undefined,
      42,
    ]) {
      expect(parseToken(scheme, bad), String(bad)).toBeUndefined();
    }
  });

  it('never throws on arbitrary input, and what it accepts re-assembles to the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        const p = parseToken(scheme, `rgbx_test_${s}`);
        if (p) expect(`rgbx_test_${p.id}_${p.secret}`).toBe(`rgbx_test_${s}`);
      }),
    );
  });

  it('compares 32-byte digests only', () => {
    const d = sha256('x');
    expect(digestsEqual(d, sha256('x'))).toBe(true);
    expect(digestsEqual(d, sha256('y'))).toBe(false);
    expect(digestsEqual(d, DUMMY_DIGEST)).toBe(false);
    expect(digestsEqual(d, d.subarray(0, 16))).toBe(false);
  });
});
