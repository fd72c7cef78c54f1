import { sha256 } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { DIALECTS, testDatabases } from '../test-support.ts';
import {
  authenticateApiKey,
  authenticateResolver,
  createApiKey,
  listApiKeys,
  revokeApiKey,
} from './api-keys.ts';
import { openSwapDatabase } from './database.ts';

const dbs = testDatabases();

describe.each(DIALECTS)('API keys (%s)', (dialect) => {
  it('stores only the SHA-256, authenticates in constant time by id + hash, and honours revocation', async () => {
    const { db, close } = await openSwapDatabase(dbs.url(dialect));
    try {
      const k = await createApiKey(db, 'partner');
      expect(k.key).toMatch(/^rgbx_swap_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
      const row = await db
        .selectFrom('api_keys')
        .selectAll()
        .where('id', '=', k.id)
        .executeTakeFirstOrThrow();
      expect(row.key_hash).toBe(sha256(k.key).toString('hex'));
      // The secret is everything after `rgbx_swap_<id>_` (base64url: it may itself contain `_`).
      const secret = k.key.slice(`rgbx_swap_${k.id}_`.length);
      expect(secret).toHaveLength(43);
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(await authenticateApiKey(db, k.key)).toBe(k.id);
      expect(
        await authenticateApiKey(db, `${k.key.slice(0, -1)}${k.key.endsWith('A') ? 'B' : 'A'}`),
      ).toBeUndefined();
      expect(await authenticateApiKey(db, k.key.replace(k.id, '000000000000'))).toBeUndefined();
      expect(await authenticateApiKey(db, undefined)).toBeUndefined();
      expect(await authenticateApiKey(db, 'x'.repeat(1000))).toBeUndefined();
      expect(await revokeApiKey(db, k.id)).toBe(true);
      expect(await revokeApiKey(db, 'ffffffffffff')).toBe(false);
      expect(await authenticateApiKey(db, k.key)).toBeUndefined();
      expect((await listApiKeys(db)).find((x) => x.id === k.id)).toMatchObject({
        name: 'partner',
        revokedAt: expect.any(Number),
      });
    } finally {
      await close();
    }
  });
});

it('authenticates resolvers against configured hashes, enabled ones only', () => {
  const resolvers = [
    { id: 'a', api_key_sha256: sha256('key-a').toString('hex'), enabled: true },
    { id: 'b', api_key_sha256: sha256('key-b').toString('hex'), enabled: false },
  ];
  expect(authenticateResolver(resolvers, 'key-a')).toBe('a');
  expect(authenticateResolver(resolvers, 'key-b')).toBeUndefined();
  expect(authenticateResolver(resolvers, 'key-c')).toBeUndefined();
  expect(authenticateResolver(resolvers, undefined)).toBeUndefined();
});
