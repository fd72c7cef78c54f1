/**
 * API tokens: `rgbxc_<id>_<secret>`. Only SHA-256 of the secret is stored; a presented token is
 * looked up by its id and its secret hash compared with `timingSafeEqual`. Each token belongs to
 * one account, and every API call is scoped to that account.
 */
import { randomBytes } from 'node:crypto';
import {
  DUMMY_DIGEST,
  digestsEqual,
  mintToken,
  parseToken,
  sha256,
  type TokenScheme,
} from '@rgbx/service-kit';
import { bigintNumber } from '@rgbx/store';
import type { CloudDb } from '../db/schema.ts';

/** `rgbxc_<16 hex>_<43 base64url>`; the stored digest is SHA-256 of the secret part. */
const TOKEN_SCHEME: TokenScheme = { prefix: 'rgbxc_', idBytes: 8 };

export interface TokenInfo {
  id: string;
  accountId: string;
  account: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface Principal {
  accountId: string;
  tokenId: string;
}

/** Finds or creates the account named `name`; returns its id. */
export async function ensureAccount(db: CloudDb, name: string, now = Date.now()): Promise<string> {
  const found = await db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirst();
  if (found) return found.id;
  const id = `acc_${randomBytes(8).toString('hex')}`;
  await db
    .insertInto('accounts')
    .values({ id, name, created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirstOrThrow();
  return row.id;
}

/** Creates a token for `account` (created if new). The returned token is shown once and never stored. */
export async function createToken(
  db: CloudDb,
  account: string,
  name: string,
  now = Date.now(),
): Promise<{ token: string; info: TokenInfo }> {
  const accountId = await ensureAccount(db, account, now);
  const { id, secret, token } = mintToken(TOKEN_SCHEME);
  await db
    .insertInto('api_tokens')
    .values({
      id,
      account_id: accountId,
      name,
      secret_hash: sha256(secret).toString('hex'),
      created_at: now,
      last_used_at: null,
      revoked_at: null,
    })
    .execute();
  return {
    token,
    info: {
      id,
      accountId,
      account,
      name,
      createdAt: new Date(now).toISOString(),
      lastUsedAt: null,
      revokedAt: null,
    },
  };
}

const iso = (v: number | string | null) => (v === null ? null : new Date(bigintNumber(v)).toISOString());

export async function listTokens(db: CloudDb, account?: string): Promise<TokenInfo[]> {
  let q = db
    .selectFrom('api_tokens')
    .innerJoin('accounts', 'accounts.id', 'api_tokens.account_id')
    .select([
      'api_tokens.id',
      'api_tokens.account_id',
      'accounts.name as account',
      'api_tokens.name',
      'api_tokens.created_at',
      'api_tokens.last_used_at',
      'api_tokens.revoked_at',
    ])
    .orderBy('api_tokens.created_at')
    .orderBy('api_tokens.id');
  if (account !== undefined) q = q.where('accounts.name', '=', account);
  const rows = await q.execute();
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    account: r.account,
    name: r.name,
    createdAt: iso(r.created_at)!,
    lastUsedAt: iso(r.last_used_at),
    revokedAt: iso(r.revoked_at),
  }));
}

/** Revokes a token by id (or by the full token). Returns false if no such active token. */
export async function revokeToken(db: CloudDb, idOrToken: string, now = Date.now()): Promise<boolean> {
  const id = parseToken(TOKEN_SCHEME, idOrToken)?.id ?? idOrToken;
  const r = await db
    .updateTable('api_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Resolves a bearer token to its account; undefined when unknown, malformed or revoked. */
export async function authenticate(
  db: CloudDb,
  token: string,
  now = Date.now(),
): Promise<Principal | undefined> {
  const m = parseToken(TOKEN_SCHEME, token);
  if (!m) return undefined;
  const { id, secret } = m;
  const row = await db
    .selectFrom('api_tokens')
    .select(['id', 'account_id', 'secret_hash', 'revoked_at', 'last_used_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  // An unknown id is compared against a dummy digest: both paths do the same work.
  const ok =
    digestsEqual(sha256(secret), row ? Buffer.from(row.secret_hash, 'hex') : DUMMY_DIGEST) &&
    row !== undefined;
  if (!ok || row.revoked_at !== null) return undefined;
  // Last use is recorded at most once a minute per token.
  if (row.last_used_at === null || now - bigintNumber(row.last_used_at) > 60_000) {
    await db.updateTable('api_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
  }
  return { accountId: row.account_id, tokenId: row.id };
}
