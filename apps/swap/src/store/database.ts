/**
 * The swap store: table types and ONE migration set for SQLite and PostgreSQL (`@rgbx/store`).
 *
 * Conventions: amounts are TEXT (decimal integers), JSON is TEXT (serialized by us, so both dialects
 * read back the same string), times are BIGINT milliseconds (PostgreSQL returns them as strings:
 * read them through `@rgbx/store`'s `bigintNumber()`), deadlines are BIGINT Unix seconds.
 */
import { columns, type Dialect, type MigrationSet, openMigratedDatabase } from '@rgbx/store';
import { type Generated, type Kysely, PostgresAdapter, sql } from 'kysely';

/** A BIGINT column as the drivers return it (better-sqlite3: number; pg: string). */
export type BigIntColumn = number | string;

export interface ApiKeyTable {
  id: string;
  name: string;
  /** SHA-256 (hex) of the whole key. */
  key_hash: string;
  created_at: BigIntColumn;
  revoked_at: BigIntColumn | null;
}

export interface AffiliateTable {
  id: Generated<number>;
  api_key_id: string;
  affiliate_name: string;
  payout_address: string;
  payout_network_id: number;
  payout_token_address: string;
  created_at: BigIntColumn;
}

export interface QuoteTable {
  id: string;
  api_key_id: string;
  resolver_id: string;
  source_chain: number;
  source_token: string;
  dest_chain: number;
  dest_token: string;
  source_amount_lots: string;
  source_decimals: number;
  dest_decimals: number;
  min_dest_lots: string;
  max_dest_lots: string;
  slippage_bps: number;
  swap_type: string;
  deposit_type: string;
  approval_mechanism: string;
  /** JSON: `{ [affiliateName]: { fee_bps, network_id, token, fee_amount_lots, fee_amount_decimals } }`. */
  affiliate_fees: string;
  retail_user_id: string | null;
  expires_at: BigIntColumn;
  created_at: BigIntColumn;
}

export interface IntentTable {
  id: string;
  api_key_id: string;
  quote_id: string;
  resolver_id: string;
  status: string;
  mechanism: string;
  source_chain: number;
  source_token: string;
  dest_chain: number;
  dest_token: string;
  source_amount_lots: string;
  source_decimals: number;
  dest_decimals: number;
  min_dest_lots: string;
  max_dest_lots: string;
  user_source_address: string;
  user_source_public_key: string | null;
  user_dest_address: string;
  refund_address: string;
  retail_user_id: string | null;
  /** Unix seconds. */
  deadline: BigIntColumn;
  /** 0x-prefixed SHA-256 of the preimage. */
  secret_hash: string;
  /** AES-256-GCM sealed preimage (see preimage-vault.ts). */
  secret_sealed: string;
  /** JSON: the approval data handed to the user (mechanism-specific). */
  params_to_sign: string;
  /** JSON: what verification needs and must never take from the client (prevouts, unsigned txid…). */
  verify_context: string;
  /** JSON: the accepted approval, normalized. */
  approval: string | null;
  /** SHA-256 of the normalized approval: idempotent re-posts compare this. */
  approval_digest: string | null;
  /** JSON: what the resolver needs after approval (finalized funding tx, permit2 signature…). */
  execution: string | null;
  user_deposit_tx: string | null;
  fulfill_tx: string | null;
  swap_tx: string | null;
  refund_tx: string | null;
  decline_reason: string | null;
  created_at: BigIntColumn;
  updated_at: BigIntColumn;
  approved_at: BigIntColumn | null;
  accepted_at: BigIntColumn | null;
  declined_at: BigIntColumn | null;
  user_deposited_at: BigIntColumn | null;
  fulfilled_at: BigIntColumn | null;
  swapped_at: BigIntColumn | null;
  expired_at: BigIntColumn | null;
  refund_requested_at: BigIntColumn | null;
  refunded_at: BigIntColumn | null;
  secret_released_at: BigIntColumn | null;
  /** JSON `{ [networkId]: "<tip height/block/slot>" }` read when the resolver accepted (migration 0002). */
  accepted_tips: string | null;
  /** JSON array of the verified settlement legs (a read copy of `settlement_legs`, migration 0002). */
  settlement: string | null;
}

export interface IntentEventTable {
  id: Generated<number>;
  intent_id: string;
  from_status: string | null;
  to_status: string;
  trigger: string;
  actor: string;
  /** JSON or null. */
  details: string | null;
  at: BigIntColumn;
}

export interface Permit2NonceTable {
  network_id: number;
  /** Lower-case 0x address (Tron: the 20-byte hex of the owner). */
  owner: string;
  nonce: string;
  intent_id: string;
}

export interface ReservedOutpointTable {
  /** `txid:vout`. */
  outpoint: string;
  intent_id: string;
}

/**
 * One verified leg of a swap (deposit, fulfil, claim, refund): the proof a user or auditor can
 * re-check. `(network_id, tx_hash)` is unique: one transaction settles at most one leg of one intent.
 */
export interface SettlementLegTable {
  intent_id: string;
  leg: string;
  network_id: number;
  tx_hash: string;
  /** Output (Bitcoin), log (EVM/Tron) or instruction (Solana) index that satisfied the leg. */
  idx: number;
  /** Block height / number / slot as a decimal string; null in the mempool (0-confirmation devnets). */
  block_height: string | null;
  block_hash: string | null;
  /** Unix seconds of the block, when the chain tells. */
  block_time: BigIntColumn | null;
  confirmations: number;
  recipient: string;
  token: string;
  amount: string;
  sender: string | null;
  verified_at: BigIntColumn;
}

export interface SwapDatabase {
  api_keys: ApiKeyTable;
  affiliates: AffiliateTable;
  quotes: QuoteTable;
  intents: IntentTable;
  intent_events: IntentEventTable;
  permit2_nonces: Permit2NonceTable;
  reserved_outpoints: ReservedOutpointTable;
  settlement_legs: SettlementLegTable;
}

export type SwapDb = Kysely<SwapDatabase>;

export const migrations: MigrationSet = (dialect: Dialect) => {
  const ts = sql.raw(columns.timestamp(dialect));
  const serial = sql.raw(columns.serial(dialect));
  return {
    '0001_swap': {
      async up(db) {
        await db.schema
          .createTable('api_keys')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('key_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', ts, (c) => c.notNull())
          .addColumn('revoked_at', ts)
          .execute();

        await db.schema
          .createTable('affiliates')
          .addColumn('id', serial, (c) => c.primaryKey())
          .addColumn('api_key_id', 'text', (c) => c.notNull().references('api_keys.id'))
          .addColumn('affiliate_name', 'text', (c) => c.notNull())
          .addColumn('payout_address', 'text', (c) => c.notNull())
          .addColumn('payout_network_id', 'integer', (c) => c.notNull())
          .addColumn('payout_token_address', 'text', (c) => c.notNull())
          .addColumn('created_at', ts, (c) => c.notNull())
          .addUniqueConstraint('affiliates_key_name', ['api_key_id', 'affiliate_name'])
          .execute();

        await db.schema
          .createTable('quotes')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('api_key_id', 'text', (c) => c.notNull().references('api_keys.id'))
          .addColumn('resolver_id', 'text', (c) => c.notNull())
          .addColumn('source_chain', 'integer', (c) => c.notNull())
          .addColumn('source_token', 'text', (c) => c.notNull())
          .addColumn('dest_chain', 'integer', (c) => c.notNull())
          .addColumn('dest_token', 'text', (c) => c.notNull())
          .addColumn('source_amount_lots', 'text', (c) => c.notNull())
          .addColumn('source_decimals', 'integer', (c) => c.notNull())
          .addColumn('dest_decimals', 'integer', (c) => c.notNull())
          .addColumn('min_dest_lots', 'text', (c) => c.notNull())
          .addColumn('max_dest_lots', 'text', (c) => c.notNull())
          .addColumn('slippage_bps', 'integer', (c) => c.notNull())
          .addColumn('swap_type', 'text', (c) => c.notNull())
          .addColumn('deposit_type', 'text', (c) => c.notNull())
          .addColumn('approval_mechanism', 'text', (c) => c.notNull())
          .addColumn('affiliate_fees', 'text', (c) => c.notNull())
          .addColumn('retail_user_id', 'text')
          .addColumn('expires_at', ts, (c) => c.notNull())
          .addColumn('created_at', ts, (c) => c.notNull())
          .execute();

        let intents = db.schema
          .createTable('intents')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('api_key_id', 'text', (c) => c.notNull().references('api_keys.id'))
          .addColumn('quote_id', 'text', (c) => c.notNull().unique().references('quotes.id'))
          .addColumn('resolver_id', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('mechanism', 'text', (c) => c.notNull())
          .addColumn('source_chain', 'integer', (c) => c.notNull())
          .addColumn('source_token', 'text', (c) => c.notNull())
          .addColumn('dest_chain', 'integer', (c) => c.notNull())
          .addColumn('dest_token', 'text', (c) => c.notNull())
          .addColumn('source_amount_lots', 'text', (c) => c.notNull())
          .addColumn('source_decimals', 'integer', (c) => c.notNull())
          .addColumn('dest_decimals', 'integer', (c) => c.notNull())
          .addColumn('min_dest_lots', 'text', (c) => c.notNull())
          .addColumn('max_dest_lots', 'text', (c) => c.notNull())
          .addColumn('user_source_address', 'text', (c) => c.notNull())
          .addColumn('user_source_public_key', 'text')
          .addColumn('user_dest_address', 'text', (c) => c.notNull())
          .addColumn('refund_address', 'text', (c) => c.notNull())
          .addColumn('retail_user_id', 'text')
          .addColumn('deadline', ts, (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('secret_sealed', 'text', (c) => c.notNull())
          .addColumn('params_to_sign', 'text', (c) => c.notNull())
          .addColumn('verify_context', 'text', (c) => c.notNull())
          .addColumn('approval', 'text')
          .addColumn('approval_digest', 'text')
          .addColumn('execution', 'text');
        for (const col of ['user_deposit_tx', 'fulfill_tx', 'swap_tx', 'refund_tx', 'decline_reason']) {
          intents = intents.addColumn(col, 'text');
        }
        intents = intents
          .addColumn('created_at', ts, (c) => c.notNull())
          .addColumn('updated_at', ts, (c) => c.notNull());
        for (const col of [
          'approved_at',
          'accepted_at',
          'declined_at',
          'user_deposited_at',
          'fulfilled_at',
          'swapped_at',
          'expired_at',
          'refund_requested_at',
          'refunded_at',
          'secret_released_at',
        ]) {
          intents = intents.addColumn(col, ts);
        }
        await intents.execute();
        await db.schema
          .createIndex('intents_by_key')
          .on('intents')
          .columns(['api_key_id', 'created_at'])
          .execute();
        await db.schema
          .createIndex('intents_by_status_deadline')
          .on('intents')
          .columns(['status', 'deadline'])
          .execute();
        await db.schema
          .createIndex('intents_by_resolver')
          .on('intents')
          .columns(['resolver_id', 'status'])
          .execute();

        await db.schema
          .createTable('intent_events')
          .addColumn('id', serial, (c) => c.primaryKey())
          .addColumn('intent_id', 'text', (c) => c.notNull().references('intents.id'))
          .addColumn('from_status', 'text')
          .addColumn('to_status', 'text', (c) => c.notNull())
          .addColumn('trigger', 'text', (c) => c.notNull())
          .addColumn('actor', 'text', (c) => c.notNull())
          .addColumn('details', 'text')
          .addColumn('at', ts, (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('intent_events_by_intent')
          .on('intent_events')
          .column('intent_id')
          .execute();

        await db.schema
          .createTable('permit2_nonces')
          .addColumn('network_id', 'integer', (c) => c.notNull())
          .addColumn('owner', 'text', (c) => c.notNull())
          .addColumn('nonce', 'text', (c) => c.notNull())
          .addColumn('intent_id', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('permit2_nonces_pk', ['network_id', 'owner', 'nonce'])
          .execute();

        await db.schema
          .createTable('reserved_outpoints')
          .addColumn('outpoint', 'text', (c) => c.notNull())
          .addColumn('intent_id', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('reserved_outpoints_pk', ['outpoint', 'intent_id'])
          .execute();
      },
    },
    '0002_settlement_legs': {
      async up(db) {
        await db.schema.alterTable('intents').addColumn('accepted_tips', 'text').execute();
        await db.schema.alterTable('intents').addColumn('settlement', 'text').execute();
        await db.schema
          .createTable('settlement_legs')
          .addColumn('intent_id', 'text', (c) => c.notNull().references('intents.id'))
          .addColumn('leg', 'text', (c) => c.notNull())
          .addColumn('network_id', 'integer', (c) => c.notNull())
          .addColumn('tx_hash', 'text', (c) => c.notNull())
          .addColumn('idx', 'integer', (c) => c.notNull())
          .addColumn('block_height', 'text')
          .addColumn('block_hash', 'text')
          .addColumn('block_time', ts)
          .addColumn('confirmations', 'integer', (c) => c.notNull())
          .addColumn('recipient', 'text', (c) => c.notNull())
          .addColumn('token', 'text', (c) => c.notNull())
          .addColumn('amount', 'text', (c) => c.notNull())
          .addColumn('sender', 'text')
          .addColumn('verified_at', ts, (c) => c.notNull())
          .addPrimaryKeyConstraint('settlement_legs_pk', ['intent_id', 'leg'])
          // The binding rule: a transaction settles one leg of one intent, never two.
          .addUniqueConstraint('settlement_legs_tx', ['network_id', 'tx_hash'])
          .execute();
      },
    },
  };
};

export interface OpenedSwapDb {
  db: SwapDb;
  dialect: Dialect;
  close(): Promise<void>;
}

/** Opens the database and applies pending migrations. */
export function openSwapDatabase(url: string): Promise<OpenedSwapDb> {
  return openMigratedDatabase<SwapDatabase>(url, migrations);
}

/** What a quote fixes of a swap: the pair and its amounts (a quote and its intents share them). */
export interface SwapPair {
  sourceChain: number;
  sourceToken: string;
  destChain: number;
  destToken: string;
  sourceAmountLots: bigint;
  sourceAmountDecimals: number;
  destAmountDecimals: number;
  minDestAmountLots: bigint;
  maxDestAmountLots: bigint;
}

/** A {@link SwapPair} as `quotes` and `intents` store it. */
export function pairColumns(q: SwapPair) {
  return {
    source_chain: q.sourceChain,
    source_token: q.sourceToken,
    dest_chain: q.destChain,
    dest_token: q.destToken,
    source_amount_lots: q.sourceAmountLots.toString(),
    source_decimals: q.sourceAmountDecimals,
    dest_decimals: q.destAmountDecimals,
    min_dest_lots: q.minDestAmountLots.toString(),
    max_dest_lots: q.maxDestAmountLots.toString(),
  };
}

/** The {@link SwapPair} of a `quotes` or `intents` row (the inverse of {@link pairColumns}). */
export function pairOf(r: ReturnType<typeof pairColumns>): SwapPair {
  return {
    sourceChain: r.source_chain,
    sourceToken: r.source_token,
    destChain: r.dest_chain,
    destToken: r.dest_token,
    sourceAmountLots: BigInt(r.source_amount_lots),
    sourceAmountDecimals: r.source_decimals,
    destAmountDecimals: r.dest_decimals,
    minDestAmountLots: BigInt(r.min_dest_lots),
    maxDestAmountLots: BigInt(r.max_dest_lots),
  };
}

/** PostgreSQL runs data-modifying CTEs (one round trip for several writes); SQLite does not. */
export function isPostgres(db: Kysely<SwapDatabase>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
