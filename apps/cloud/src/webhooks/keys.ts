/**
 * The webhook signing key ring, kept in the database: RSA 3072-bit keys, one `current` (signs every
 * delivery), any number `published` (announced by `GET /api/webhook-public-key` so receivers can
 * pin them before they sign), and `retired` ones (private part erased). Rotation: `keys add` →
 * receivers fetch the new key → `keys activate KID` → `keys retire OLD_KID`.
 * The key id is the RFC 7638 JWK thumbprint (SHA-256, base64url). Private parts are stored only
 * sealed by the `SigningKeyVault` (AES-256-GCM under the configured encryption key).
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { generateWebhookKey, keyIdOf, WEBHOOK_KEY_BITS } from '@rgbx/service-kit/webhooks';
import { bigintNumber, type Dialect, isUniqueViolation } from '@rgbx/store';
import { sql } from 'kysely';
import type { CloudDb, KeyStatus } from '../db/schema.ts';
import { KeyVaultError, SigningKeyVault } from './key-vault.ts';

export const KEY_BITS = WEBHOOK_KEY_BITS;

export interface PublishedKey {
  keyId: string;
  status: Exclude<KeyStatus, 'retired'>;
  pem: string;
  createdAt: string;
  activatedAt: string | null;
}

export interface Signer {
  keyId: string;
  privateKey: KeyObject;
}

export { keyIdOf };

/**
 * Generates a key and stores it (its private part sealed) as `current` (the first key) or
 * `published` (a rotation's next key). Returns its key id.
 */
async function insertNewKey(
  db: CloudDb,
  vault: SigningKeyVault,
  status: 'current' | 'published',
  now: number,
): Promise<string> {
  const { privateKey, publicKey } = await generateWebhookKey();
  const kid = keyIdOf(publicKey);
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      private_key_sealed: vault.seal(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, kid),
      public_pem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
      status,
      created_at: now,
      activated_at: status === 'current' ? now : null,
      retired_at: null,
    })
    .execute();
  return kid;
}

/** The private key of a row, checked against the row's key id. */
function openPrivateKey(vault: SigningKeyVault, kid: string, sealed: string): KeyObject {
  const key = createPrivateKey(vault.open(sealed, kid));
  if (keyIdOf(createPublicKey(key)) !== kid)
    throw new KeyRingError(`signing key ${kid}: the stored private key belongs to another key`);
  return key;
}

/**
 * Run at every start (service and `keys` commands): seals any private key still stored as plain
 * PEM (rows written before encryption at rest), then opens every stored private key once, so a
 * wrong or changed encryption key stops the start with a clear message instead of failing the first
 * delivery. Returns how many plain keys were sealed.
 */
export async function sealSigningKeys(
  db: CloudDb,
  vault: SigningKeyVault,
  dialect: Dialect,
): Promise<number> {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'private_key_sealed'])
    .where('private_key_sealed', '!=', '')
    .execute();
  let sealed = 0;
  for (const r of rows) {
    if (SigningKeyVault.isSealed(r.private_key_sealed)) {
      try {
        openPrivateKey(vault, r.kid, r.private_key_sealed);
      } catch (err) {
        throw new KeyRingError(err instanceof KeyVaultError ? err.message : `signing key ${r.kid}: ${err}`, {
          cause: err,
        });
      }
      continue;
    }
    let key: KeyObject;
    try {
      key = createPrivateKey(r.private_key_sealed);
    } catch (err) {
      throw new KeyRingError(`signing key ${r.kid}: stored private key is neither sealed nor a PEM key`, {
        cause: err,
      });
    }
    if (keyIdOf(createPublicKey(key)) !== r.kid)
      throw new KeyRingError(`signing key ${r.kid}: the stored private key belongs to another key`);
    const pem = key.export({ type: 'pkcs8', format: 'pem' }) as string;
    // Compare-and-set: a concurrent start sealing the same row makes this a no-op.
    const res = await db
      .updateTable('signing_keys')
      .set({ private_key_sealed: vault.seal(pem, r.kid) })
      .where('kid', '=', r.kid)
      .where('private_key_sealed', '=', r.private_key_sealed)
      .executeTakeFirst();
    sealed += Number(res.numUpdatedRows);
  }
  if (sealed > 0) await purgeOldVersions(db, dialect);
  return sealed;
}

/**
 * After plain keys were overwritten: make the database drop the old row versions, so the plain
 * PEM does not linger in it. SQLite runs with `secure_delete` (freed space is zeroed, see
 * db/open.ts); a checkpoint moves the new pages into the database file and empties the WAL.
 * PostgreSQL keeps dead row versions until vacuumed; VACUUM FULL rewrites the (tiny) table.
 * Backups and archived WAL taken before still hold them: rotate the keys (README).
 */
async function purgeOldVersions(db: CloudDb, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
  else await sql`vacuum full signing_keys`.execute(db);
}

/** `sealSigningKeys`, then `ensureSigningKey`: what every start does before signing. */
export async function prepareKeyRing(
  db: CloudDb,
  vault: SigningKeyVault,
  dialect: Dialect,
): Promise<{ currentKid: string; sealed: number }> {
  const sealed = await sealSigningKeys(db, vault, dialect);
  return { currentKid: await ensureSigningKey(db, vault), sealed };
}

/** Generates the first key at first start; later starts keep the stored one. Returns the current kid. */
export async function ensureSigningKey(
  db: CloudDb,
  vault: SigningKeyVault,
  now = Date.now(),
): Promise<string> {
  const cur = await db
    .selectFrom('signing_keys')
    .select('kid')
    .where('status', '=', 'current')
    .executeTakeFirst();
  if (cur) return cur.kid;
  try {
    return await insertNewKey(db, vault, 'current', now);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // Another instance created it first.
    const row = await db
      .selectFrom('signing_keys')
      .select('kid')
      .where('status', '=', 'current')
      .executeTakeFirstOrThrow();
    return row.kid;
  }
}

/** Adds a new key, published but not yet signing. */
export function addKey(db: CloudDb, vault: SigningKeyVault, now = Date.now()): Promise<string> {
  return insertNewKey(db, vault, 'published', now);
}

export class KeyRingError extends Error {
  override readonly name = 'KeyRingError';
}

/** Makes a published key the signing key; the previous one stays published until retired. */
export async function activateKey(db: CloudDb, kid: string, now = Date.now()): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('signing_keys')
      .select('status')
      .where('kid', '=', kid)
      .executeTakeFirst();
    if (!row) throw new KeyRingError(`no key ${kid}`);
    if (row.status === 'current') return;
    if (row.status !== 'published')
      throw new KeyRingError(`key ${kid} is ${row.status}; only a published key can be activated`);
    await tx
      .updateTable('signing_keys')
      .set({ status: 'published' })
      .where('status', '=', 'current')
      .execute();
    await tx
      .updateTable('signing_keys')
      .set({ status: 'current', activated_at: now })
      .where('kid', '=', kid)
      .execute();
  });
}

/** Retires a published (non-current) key: no longer announced, private key erased. */
export async function retireKey(db: CloudDb, kid: string, now = Date.now()): Promise<void> {
  const row = await db.selectFrom('signing_keys').select('status').where('kid', '=', kid).executeTakeFirst();
  if (!row) throw new KeyRingError(`no key ${kid}`);
  if (row.status === 'current') throw new KeyRingError(`key ${kid} is current; activate another key first`);
  if (row.status === 'retired') return;
  await db
    .updateTable('signing_keys')
    .set({ status: 'retired', retired_at: now, private_key_sealed: '' })
    .where('kid', '=', kid)
    .execute();
}

/** The keys receivers should accept: current first, then the other published ones. */
export async function publishedKeys(db: CloudDb): Promise<PublishedKey[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'status', 'public_pem', 'created_at', 'activated_at'])
    .where('status', 'in', ['current', 'published'])
    .orderBy('created_at')
    .execute();
  const keys = rows.map((r) => ({
    keyId: r.kid,
    status: r.status as PublishedKey['status'],
    pem: r.public_pem,
    createdAt: new Date(bigintNumber(r.created_at)).toISOString(),
    activatedAt: r.activated_at === null ? null : new Date(bigintNumber(r.activated_at)).toISOString(),
  }));
  return [...keys.filter((k) => k.status === 'current'), ...keys.filter((k) => k.status !== 'current')];
}

export async function listKeys(db: CloudDb) {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'status', 'created_at', 'activated_at', 'retired_at'])
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    keyId: r.kid,
    status: r.status,
    createdAt: new Date(bigintNumber(r.created_at)).toISOString(),
    activatedAt: r.activated_at === null ? null : new Date(bigintNumber(r.activated_at)).toISOString(),
    retiredAt: r.retired_at === null ? null : new Date(bigintNumber(r.retired_at)).toISOString(),
  }));
}

/** Caches the parsed current private key; re-reads the kid at most every `ttlMs`. */
export class SignerCache {
  private cached: Signer | undefined;
  private checkedAt = 0;
  private readonly db: CloudDb;
  private readonly vault: SigningKeyVault;
  private readonly ttlMs: number;

  constructor(db: CloudDb, vault: SigningKeyVault, ttlMs = 1_000) {
    this.db = db;
    this.vault = vault;
    this.ttlMs = ttlMs;
  }

  async current(now = Date.now()): Promise<Signer> {
    if (this.cached && now - this.checkedAt < this.ttlMs) return this.cached;
    const row = await this.db
      .selectFrom('signing_keys')
      .select(['kid', 'private_key_sealed'])
      .where('status', '=', 'current')
      .executeTakeFirst();
    if (!row) throw new KeyRingError('no current signing key');
    if (this.cached?.keyId !== row.kid)
      this.cached = {
        keyId: row.kid,
        privateKey: openPrivateKey(this.vault, row.kid, row.private_key_sealed),
      };
    this.checkedAt = now;
    return this.cached;
  }
}
