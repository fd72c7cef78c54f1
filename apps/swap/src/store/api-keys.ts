/**
 * API keys. A key is `rgbx_swap_<id>_<secret>`: `id` is 12 hex chars (public, the row's primary
 * key, shown by `keys list`), `secret` is 32 random bytes in base64url. The store keeps only the
 * SHA-256 of the whole key: with 256 bits of entropy a plain hash cannot be brute-forced, and a
 * slow KDF would only slow down every request. Checking a key looks the row up by `id` and
 * compares the hashes with `timingSafeEqual`; a key with an unknown id is hashed and compared
 * against a dummy so that both paths cost the same.
 *
 * Resolvers authenticate the same way with a key whose SHA-256 is in the configuration.
 */
import {
  DUMMY_DIGEST,
  digestsEqual,
  mintToken,
  parseToken,
  sha256,
  type TokenScheme,
} from '@rgbx/service-kit';
import { bigintNumber } from '@rgbx/store';
import type { SwapDb } from './database.ts';

/** `rgbx_swap_<12 hex>_<43 base64url>`; the stored digest is SHA-256 of the whole key. */
const KEY_SCHEME: TokenScheme = { prefix: 'rgbx_swap_', idBytes: 6 };

export interface ApiKeyInfo {
  id: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface CreatedApiKey extends ApiKeyInfo {
  /** The only time the full key exists outside the client. */
  key: string;
}

export async function createApiKey(db: SwapDb, name: string, now = Date.now()): Promise<CreatedApiKey> {
  const { id, token: key } = mintToken(KEY_SCHEME);
  await db
    .insertInto('api_keys')
    .values({ id, name, key_hash: sha256(key).toString('hex'), created_at: now, revoked_at: null })
    .execute();
  return { id, name, createdAt: now, revokedAt: null, key };
}

export async function listApiKeys(db: SwapDb): Promise<ApiKeyInfo[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'created_at', 'revoked_at'])
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    createdAt: bigintNumber(r.created_at),
    revokedAt: bigintNumber(r.revoked_at),
  }));
}

/** Revokes by id; returns false when there is no such key. Revoking twice keeps the first time. */
export async function revokeApiKey(db: SwapDb, id: string, now = Date.now()): Promise<boolean> {
  const found = await db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst();
  if (!found) return false;
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
  return true;
}

/** The id of a valid, unrevoked key, or undefined. */
export async function authenticateApiKey(
  db: SwapDb,
  presented: string | undefined,
): Promise<string | undefined> {
  if (typeof presented !== 'string' || presented.length > 128) return undefined;
  const m = parseToken(KEY_SCHEME, presented);
  const digest = sha256(presented);
  if (!m) {
    digestsEqual(digest, DUMMY_DIGEST);
    return undefined;
  }
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'key_hash', 'revoked_at'])
    .where('id', '=', m.id)
    .executeTakeFirst();
  const stored = row ? Buffer.from(row.key_hash, 'hex') : DUMMY_DIGEST;
  const ok = digestsEqual(digest, stored);
  return ok && row && row.revoked_at === null ? row.id : undefined;
}

/**
 * Finds the resolver whose configured key hash matches, comparing against every resolver (no early
 * exit) in constant time per comparison.
 */
export function authenticateResolver(
  resolvers: readonly { id: string; api_key_sha256: string; enabled: boolean }[],
  presented: string | undefined,
): string | undefined {
  if (typeof presented !== 'string' || presented.length === 0 || presented.length > 256) return undefined;
  const digest = sha256(presented);
  let found: string | undefined;
  for (const r of resolvers) {
    if (digestsEqual(digest, Buffer.from(r.api_key_sha256, 'hex')) && r.enabled) found = r.id;
  }
  return found;
}
