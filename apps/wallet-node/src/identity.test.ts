import { describe, expect, it } from 'vitest';
import { IdentityCache, readIdentity } from './identity.ts';
import { syntheticIdentity } from './test-support.ts';

const A = syntheticIdentity('A1B2C3D4');
const B = syntheticIdentity('b1b2c3d4', 9);

describe('IdentityCache', () => {
  it('answers exactly as readIdentity, and serves a header triple seen before without validating it again', () => {
    const cache = new IdentityCache('regtest');
    const first = cache.read(A);
    expect(first).toEqual(readIdentity(A, 'regtest'));
    expect(first?.fingerprint).toBe('a1b2c3d4');
    expect(Object.isFrozen(first)).toBe(true);
    expect(cache.read({ ...A })).toBe(first); // same strings, another headers object: the cached identity
    expect(cache.size).toBe(1);
  });

  it('is keyed by the exact header strings: any difference is validated on its own', () => {
    const cache = new IdentityCache('regtest');
    const id = cache.read(A)!;
    // Same wallet after trimming and lowercasing, but other header bytes: a separate entry, equal identity.
    const spaced = cache.read({ ...A, 'master-fingerprint': ' a1b2c3d4 ' })!;
    expect(spaced).toEqual(id);
    expect(spaced).not.toBe(id);
    expect(cache.size).toBe(2);
    // xpubs swapped: another triple (another wallet claim), never the cached one.
    const swapped = cache.read({ ...A, 'xpub-van': A['xpub-col'], 'xpub-col': A['xpub-van'] })!;
    expect(swapped.xpubVanilla).toBe(A['xpub-col']);
    expect(cache.size).toBe(3);
    // Length-prefixed keys: moving characters between the values gives another key.
    const vanCol = `${A['xpub-van']}${A['xpub-col']}`;
    expect(() =>
      cache.read({
        'xpub-van': vanCol.slice(0, 10),
        'xpub-col': vanCol.slice(10),
        'master-fingerprint': 'a1b2c3d4',
      }),
    ).toThrow(/xpub-van/);
  });

  it('never caches a refusal: a malformed triple is refused every time', () => {
    const cache = new IdentityCache('regtest');
    const bad = { ...A, 'xpub-col': `${A['xpub-col'].slice(0, -1)}x` }; // checksum broken
    for (let i = 0; i < 3; i++) expect(() => cache.read(bad)).toThrow(/xpub-col/);
    expect(cache.size).toBe(0);
    // A mainnet service refuses the cached regtest triple of another cache: the network is part of the cache.
    expect(() => new IdentityCache('mainnet').read(A)).toThrow(/mainnet xpub/);
  });

  it('answers null for a missing header and refuses a repeated one, without caching either', () => {
    const cache = new IdentityCache('regtest');
    expect(cache.read({ 'xpub-van': A['xpub-van'], 'xpub-col': A['xpub-col'] })).toBeNull();
    expect(() => cache.read({ ...A, 'xpub-van': [A['xpub-van'], A['xpub-van']] })).toThrow(/more than once/);
    expect(cache.size).toBe(0);
  });

  it('is bounded: the least recently used triple goes first', () => {
    const cache = new IdentityCache('regtest', 2);
    const C = syntheticIdentity('c1b2c3d4', 11);
    const a = cache.read(A);
    const b = cache.read(B);
    expect(cache.read(A)).toBe(a); // A used again: B is now the oldest
    cache.read(C);
    expect(cache.size).toBe(2);
    expect(cache.read(A)).toBe(a); // kept
    const b2 = cache.read(B); // evicted: validated again (a new object)
    expect(b2).toEqual(b);
    expect(b2).not.toBe(b);
    expect(cache.size).toBe(2);
    expect(() => new IdentityCache('regtest', 0)).toThrow(RangeError);
  });
});
