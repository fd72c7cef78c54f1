import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SealedBox, SealedBoxError } from './sealed-box.ts';

const opts = { domain: 'test-domain', prefix: 't1', encoding: 'base64url' } as const;
const reason = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof SealedBoxError ? err.reason : `other: ${String(err)}`;
  }
  return 'opened';
};

describe('SealedBox', () => {
  const key = randomBytes(32);
  const box = new SealedBox(key, opts);

  it('opens what it sealed, only for the same context, key and format', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.string(), (data, ctx) => {
        const sealed = box.seal(data, ctx);
        expect(box.isSealed(sealed)).toBe(true);
        expect(new Uint8Array(box.open(sealed, ctx))).toEqual(data);
        expect(reason(() => box.open(sealed, `${ctx}x`))).toBe('auth');
      }),
      { numRuns: 100 },
    );
  });

  it('names the key of a value sealed under another key; refuses other formats and tampering', () => {
    const other = new SealedBox(randomBytes(32), opts);
    const sealed = other.seal('secret', 'row-1');
    expect(reason(() => box.open(sealed, 'row-1'))).toBe('wrong_key');
    expect(reason(() => box.open('v9.x.y.z.w', 'row-1'))).toBe('format');
    expect(reason(() => box.open(box.seal('secret', 'row-1').replace(/^t1/, 'v1'), 'row-1'))).toBe('format');
    const parts = box.seal('secret', 'row-1').split('.');
    const flip = (s: string) => (s[0] === 'A' ? `B${s.slice(1)}` : `A${s.slice(1)}`);
    expect(
      reason(() => box.open([parts[0], parts[1], parts[2], flip(parts[3]!), parts[4]].join('.'), 'row-1')),
    ).toBe('auth');
  });

  it('refuses a truncated tag (GCM would verify a shorter tag if allowed)', () => {
    const parts = box.seal('secret', 'row-1').split('.');
    const short = Buffer.from(parts[4]!, 'base64url').subarray(0, 4).toString('base64url');
    expect(reason(() => box.open([...parts.slice(0, 4), short].join('.'), 'row-1'))).toBe('auth');
  });

  it('keyId depends on the domain; a key of another length is refused', () => {
    expect(new SealedBox(key, { ...opts, domain: 'other' }).keyId).not.toBe(box.keyId);
    expect(reason(() => new SealedBox(randomBytes(31), opts))).toBe('key_length');
  });
});
