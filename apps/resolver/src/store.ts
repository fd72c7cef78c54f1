/**
 * The resolver's own records (SQLite by default, or PostgreSQL; one migration set): the intents it
 * fills, every transaction it signed (stored BEFORE it is broadcast: after a crash the same bytes are
 * sent again, never new ones) and the event feed's resume point.
 */
import { columns, type Dialect, type MigrationSet, openMigratedDatabase } from '@rgbx/store';
import { type Kysely, sql } from 'kysely';
import type { SignedTx } from './wallets/wallet.ts';

type BigIntColumn = number | string;

export type FillState = 'active' | 'done' | 'declined' | 'abandoned';
/** What a stored transaction does for its intent. */
export type TxRole = 'deposit' | 'payment' | 'claim' | 'refund';

export interface FillTable {
  intent_id: string;
  source_network: number;
  dest_network: number;
  state: FillState;
  /** Why it is declined or abandoned, or the last error while active. */
  note: string | null;
  created_at: BigIntColumn;
  updated_at: BigIntColumn;
}

export interface TxTable {
  intent_id: string;
  role: TxRole;
  /** 0 for the first; a new attempt only after the previous one is `dead` on its network. */
  attempt: number;
  network_id: number;
  txid: string;
  raw: string;
  /** JSON of SignedTx.meta. */
  meta: string;
  /** `signed` (stored, maybe not sent), `sent`, `confirmed`, `dead` (can never be included). */
  state: 'signed' | 'sent' | 'confirmed' | 'dead';
  created_at: BigIntColumn;
}

export interface KvTable {
  key: string;
  value: string;
}

export interface ResolverDatabase {
  fills: FillTable;
  txs: TxTable;
  kv: KvTable;
}

export type ResolverDb = Kysely<ResolverDatabase>;

const migrations: MigrationSet = (dialect: Dialect) => {
  const ts = sql.raw(columns.timestamp(dialect));
  return {
    '0001_resolver': {
      async up(db) {
        await db.schema
          .createTable('fills')
          .addColumn('intent_id', 'text', (c) => c.primaryKey())
          .addColumn('source_network', 'integer', (c) => c.notNull())
          .addColumn('dest_network', 'integer', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('note', 'text')
          .addColumn('created_at', ts, (c) => c.notNull())
          .addColumn('updated_at', ts, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('txs')
          .addColumn('intent_id', 'text', (c) => c.notNull())
          .addColumn('role', 'text', (c) => c.notNull())
          .addColumn('attempt', 'integer', (c) => c.notNull())
          .addColumn('network_id', 'integer', (c) => c.notNull())
          .addColumn('txid', 'text', (c) => c.notNull())
          .addColumn('raw', 'text', (c) => c.notNull())
          .addColumn('meta', 'text', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('created_at', ts, (c) => c.notNull())
          .addPrimaryKeyConstraint('txs_pk', ['intent_id', 'role', 'attempt'])
          .execute();
        await db.schema.createIndex('txs_state').on('txs').columns(['state']).execute();
        await db.schema
          .createTable('kv')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('value', 'text', (c) => c.notNull())
          .execute();
      },
    },
  };
};

export interface ResolverStore {
  db: ResolverDb;
  dialect: Dialect;
  close(): Promise<void>;
}

export function openResolverStore(url: string): Promise<ResolverStore> {
  return openMigratedDatabase<ResolverDatabase>(url, migrations);
}

export interface StoredTx extends SignedTx {
  intentId: string;
  role: TxRole;
  attempt: number;
  networkId: number;
  state: TxTable['state'];
}

function toStored(r: TxTable): StoredTx {
  return {
    intentId: r.intent_id,
    role: r.role,
    attempt: Number(r.attempt),
    networkId: Number(r.network_id),
    txid: r.txid,
    raw: r.raw,
    meta: JSON.parse(r.meta) as SignedTx['meta'],
    state: r.state,
  };
}

/** The newest attempt of `role` for the intent, or undefined. */
export async function latestTx(
  db: ResolverDb,
  intentId: string,
  role: TxRole,
): Promise<StoredTx | undefined> {
  const r = await db
    .selectFrom('txs')
    .selectAll()
    .where('intent_id', '=', intentId)
    .where('role', '=', role)
    .orderBy('attempt', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r ? toStored(r) : undefined;
}

/**
 * Stores a signed transaction as attempt `attempt`. The primary key makes a second writer of the same
 * attempt fail (unique violation) instead of storing a second transaction for one payment.
 */
export async function storeTx(
  db: ResolverDb,
  t: { intentId: string; role: TxRole; attempt: number; networkId: number; tx: SignedTx },
  now: number,
): Promise<StoredTx> {
  const row: TxTable = {
    intent_id: t.intentId,
    role: t.role,
    attempt: t.attempt,
    network_id: t.networkId,
    txid: t.tx.txid,
    raw: t.tx.raw,
    meta: JSON.stringify(t.tx.meta),
    state: 'signed',
    created_at: now,
  };
  await db.insertInto('txs').values(row).execute();
  return toStored(row);
}

export async function setTxState(db: ResolverDb, t: StoredTx, state: TxTable['state']): Promise<void> {
  await db
    .updateTable('txs')
    .set({ state })
    .where('intent_id', '=', t.intentId)
    .where('role', '=', t.role)
    .where('attempt', '=', t.attempt)
    .execute();
}

/** Transactions signed but not known confirmed or dead: re-sent first after a start. */
export async function openTxs(db: ResolverDb): Promise<StoredTx[]> {
  const rows = await db.selectFrom('txs').selectAll().where('state', 'in', ['signed', 'sent']).execute();
  return rows.map(toStored);
}

export async function loadFill(db: ResolverDb, intentId: string): Promise<FillTable | undefined> {
  return db.selectFrom('fills').selectAll().where('intent_id', '=', intentId).executeTakeFirst();
}

export async function upsertFill(
  db: ResolverDb,
  f: { intentId: string; sourceNetwork: number; destNetwork: number; state: FillState; note?: string | null },
  now: number,
): Promise<void> {
  await db
    .insertInto('fills')
    .values({
      intent_id: f.intentId,
      source_network: f.sourceNetwork,
      dest_network: f.destNetwork,
      state: f.state,
      note: f.note ?? null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.column('intent_id').doUpdateSet({ state: f.state, note: f.note ?? null, updated_at: now }),
    )
    .execute();
}

export async function activeFills(db: ResolverDb): Promise<string[]> {
  const rows = await db.selectFrom('fills').select('intent_id').where('state', '=', 'active').execute();
  return rows.map((r) => r.intent_id);
}

export async function getKv(db: ResolverDb, key: string): Promise<string | undefined> {
  return (await db.selectFrom('kv').select('value').where('key', '=', key).executeTakeFirst())?.value;
}

export async function setKv(db: ResolverDb, key: string, value: string): Promise<void> {
  await db
    .insertInto('kv')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
    .execute();
}
