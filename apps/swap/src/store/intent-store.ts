/**
 * Intent rows ↔ the `Intent` model, and the only code that changes an intent's status:
 * `applyTransition` asks the lifecycle table for the next status and writes it with a guarded
 * UPDATE (`WHERE status = <current>`) plus an `intent_events` row, in one transaction (on PostgreSQL
 * one statement, when no settlement leg is recorded with it). Two racing
 * writers cannot both move the same intent: the loser sees 0 rows and gets INVALID_TRANSITION.
 */

import { bigintNumber } from '@rgbx/store';
import type { Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { ApprovalMechanism } from '../domain/catalog.ts';
import { EXPIRABLE, type IntentStatus, isStatus, type Trigger, transition } from '../domain/lifecycle.ts';
import { E } from '../errors.ts';
import { insertAtomically } from './atomic.ts';
import {
  type IntentTable,
  isPostgres,
  pairOf,
  type SwapDatabase,
  type SwapDb,
  type SwapPair,
} from './database.ts';
import { insertLeg, type LegProof, type LegRecord, parseSettlement } from './legs.ts';

export type IntentRow = Selectable<IntentTable>;
export type Executor = SwapDb | Transaction<SwapDatabase>;

export interface SwapMetadata {
  id: string;
  proxyAddress: string;
  userDepositTx: string | null;
  fulfillTx: string | null;
  swapTx: string | null;
  refundTx: string | null;
  createdAt: string;
  userDepositedAt: string | null;
  fulfilledAt: string | null;
  swappedAt: string | null;
  refundedAt: string | null;
  refundRequestedAt: string | null;
}

export interface Intent extends SwapPair {
  id: string;
  apiKeyId: string;
  quoteId: string;
  resolverId: string;
  status: IntentStatus;
  mechanism: ApprovalMechanism;
  userSourceAddress: string;
  userSourcePublicKey: string | null;
  userDestAddress: string;
  refundAddress: string;
  retailUserId: string | null;
  /** Unix seconds. */
  deadline: number;
  secretHash: string;
  paramsToSign: unknown;
  metadata: SwapMetadata;
  /** Verified settlement legs, in the order they were proven. */
  settlement: LegRecord[];
  /** The source kind's approval context (`verify_context`, parsed): HTLC, Permit2 or co-sign. */
  context: unknown;
  row: IntentRow;
}

function iso(v: number | string | null): string | null {
  return v === null ? null : new Date(Number(v)).toISOString();
}

export function toIntent(r: IntentRow): Intent {
  if (!isStatus(r.status)) throw new Error(`intent ${r.id}: unknown status ${r.status} in the store`);
  // Parsed once per load: the source kind reads its approval context from here.
  const context = JSON.parse(r.verify_context) as { proxyAddress?: string };
  return {
    id: r.id,
    apiKeyId: r.api_key_id,
    quoteId: r.quote_id,
    resolverId: r.resolver_id,
    status: r.status,
    mechanism: r.mechanism as ApprovalMechanism,
    ...pairOf(r),
    userSourceAddress: r.user_source_address,
    userSourcePublicKey: r.user_source_public_key,
    userDestAddress: r.user_dest_address,
    refundAddress: r.refund_address,
    retailUserId: r.retail_user_id,
    deadline: bigintNumber(r.deadline),
    secretHash: r.secret_hash,
    paramsToSign: JSON.parse(r.params_to_sign),
    context,
    metadata: {
      id: r.id,
      // The escrow or HTLC address the user's funds go to.
      proxyAddress: context.proxyAddress ?? '',
      userDepositTx: r.user_deposit_tx,
      fulfillTx: r.fulfill_tx,
      swapTx: r.swap_tx,
      refundTx: r.refund_tx,
      createdAt: iso(r.created_at)!,
      userDepositedAt: iso(r.user_deposited_at),
      fulfilledAt: iso(r.fulfilled_at),
      swappedAt: iso(r.swapped_at),
      refundedAt: iso(r.refunded_at),
      refundRequestedAt: iso(r.refund_requested_at),
    },
    settlement: parseSettlement(r.settlement),
    row: r,
  };
}

export type IntentScope = { apiKeyId: string } | { resolverId: string };

/** Loads an intent visible to the caller; INTENT_NOT_FOUND (404) for unknown ids and other tenants. */
export async function loadIntent(db: Executor, id: string, scope: IntentScope): Promise<Intent> {
  let q = db.selectFrom('intents').selectAll().where('id', '=', id);
  q =
    'apiKeyId' in scope
      ? q.where('api_key_id', '=', scope.apiKeyId)
      : q.where('resolver_id', '=', scope.resolverId);
  const r = await q.executeTakeFirst();
  if (!r) throw 'apiKeyId' in scope ? E.INTENT_NOT_FOUND.create(id) : E.RESOLVER_NOT_ASSIGNED.create(id);
  return toIntent(r);
}

export type IntentPatch = Omit<Updateable<IntentTable>, 'id' | 'status' | 'updated_at'>;

/**
 * Moves `intent` along `trigger` (lifecycle table) and writes `patch` with it. Returns the updated
 * intent. `unchanged` triggers only write the patch (still guarded by the current status). A
 * settlement `leg` is inserted in the same database transaction: if the transaction id already
 * settles another leg (a concurrent report), nothing of the transition is written.
 */
export async function applyTransition(
  db: SwapDb,
  intent: Intent,
  trigger: Trigger,
  actor: string,
  patch: IntentPatch,
  nowMs: number,
  details?: Record<string, unknown>,
  leg?: LegProof,
): Promise<Intent> {
  const next = transition(intent.status, trigger);
  const event = {
    intent_id: intent.id,
    from_status: intent.status,
    to_status: next,
    trigger,
    actor,
    details: details ? JSON.stringify(details) : null,
    at: nowMs,
  };
  if (!leg && isPostgres(db)) {
    // One statement, so one round trip instead of four (begin, update, insert, commit) and still atomic:
    // the event row is inserted only from the updated row, so a guard that matches nothing writes nothing.
    const row = await db
      .with('u', (q) =>
        q
          .updateTable('intents')
          .set({ ...patch, status: next, updated_at: nowMs })
          .where('id', '=', intent.id)
          .where('status', '=', intent.status)
          .returningAll(),
      )
      .with('e', (q) =>
        q
          .insertInto('intent_events')
          .columns(['intent_id', 'from_status', 'to_status', 'trigger', 'actor', 'details', 'at'])
          .expression((eb) =>
            eb
              .selectFrom('u')
              .select((s) => [
                'u.id',
                s.cast<string>(s.val(event.from_status), 'text').as('from_status'),
                s.cast<string>(s.val(event.to_status), 'text').as('to_status'),
                s.cast<string>(s.val(event.trigger), 'text').as('trigger'),
                s.cast<string>(s.val(event.actor), 'text').as('actor'),
                s.cast<string | null>(s.val(event.details), 'text').as('details'),
                s.cast<number>(s.val(event.at), 'bigint').as('at'),
              ]),
          ),
      )
      .selectFrom('u')
      .selectAll()
      .executeTakeFirst();
    if (!row) throw await invalidTransition(db, intent.id, trigger);
    return toIntent(row);
  }
  return db.transaction().execute(async (trx) => {
    // Guarded on the status read before (a concurrent transition makes it match no row); the changed row comes
    // back with the update instead of a select afterwards.
    let row = await trx
      .updateTable('intents')
      .set({ ...patch, status: next, updated_at: nowMs })
      .where('id', '=', intent.id)
      .where('status', '=', intent.status)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw await invalidTransition(trx, intent.id, trigger);
    if (leg) {
      const settlement = await insertLeg(trx, intent.id, intent.row.settlement, leg);
      row = await trx
        .updateTable('intents')
        .set({ settlement })
        .where('id', '=', intent.id)
        .returningAll()
        .executeTakeFirstOrThrow();
    }
    await trx.insertInto('intent_events').values(event).execute();
    return toIntent(row);
  });
}

/** The error for a guarded transition that matched no row: the intent has moved on (or is gone). */
async function invalidTransition(db: Kysely<SwapDatabase>, id: string, trigger: Trigger) {
  const current = await db.selectFrom('intents').select('status').where('id', '=', id).executeTakeFirst();
  return E.INVALID_TRANSITION.create(trigger.replace('_', ' '), current?.status ?? 'none');
}

/** Deadline check applied before anything else: an expirable intent past its deadline becomes Expired. */
export async function expireIfDue(db: SwapDb, intent: Intent, nowMs: number): Promise<Intent> {
  if (!EXPIRABLE.includes(intent.status) || intent.deadline * 1000 > nowMs) return intent;
  try {
    return await applyTransition(db, intent, 'expire', 'scheduler', { expired_at: nowMs }, nowMs);
  } catch (err) {
    if (!E.INVALID_TRANSITION.is(err)) throw err;
    // Someone else moved it first (another request or the scheduler): read what it is now.
    const r = await db
      .selectFrom('intents')
      .selectAll()
      .where('id', '=', intent.id)
      .executeTakeFirstOrThrow();
    return toIntent(r);
  }
}

/** One scheduler pass: expires up to `limit` intents whose deadline passed; returns how many. */
export async function expireDue(db: SwapDb, nowMs: number, limit = 500): Promise<number> {
  const rows = await db
    .selectFrom('intents')
    .selectAll()
    .where('status', 'in', [...EXPIRABLE])
    .where('deadline', '<=', Math.floor(nowMs / 1000))
    .orderBy('deadline')
    .limit(limit)
    .execute();
  let n = 0;
  for (const r of rows) {
    const after = await expireIfDue(db, toIntent(r), nowMs);
    if (after.status === 'Expired' && r.status !== 'Expired') n++;
  }
  return n;
}

export interface SwapListFilter {
  limit: number;
  offset: number;
  status?: IntentStatus;
  /** true: only intents not in a terminal status (absent: all). */
  active?: true;
  /** Any of these source or destination addresses. */
  wallets?: string[] | undefined;
  /** Any of these retail user ids. */
  retailUserIds?: string[] | undefined;
}

export async function listIntents(
  db: SwapDb,
  apiKeyId: string,
  f: SwapListFilter,
  terminal: readonly IntentStatus[],
): Promise<{ items: Intent[]; total: number }> {
  let q = db.selectFrom('intents').where('api_key_id', '=', apiKeyId);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.active === true) q = q.where('status', 'not in', [...terminal]);
  if (f.wallets) {
    const w = f.wallets;
    q = q.where((eb) => eb.or([eb('user_source_address', 'in', w), eb('user_dest_address', 'in', w)]));
  }
  if (f.retailUserIds) q = q.where('retail_user_id', 'in', f.retailUserIds);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(f.limit).offset(f.offset).execute(),
    q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { items: rows.map(toIntent), total: Number(count.n) };
}

/** The outpoints that intents in `statuses` have reserved for their funding transactions. */
export async function reservedOutpoints(db: SwapDb, statuses: readonly IntentStatus[]): Promise<Set<string>> {
  const rows = await db
    .selectFrom('reserved_outpoints')
    .innerJoin('intents', 'intents.id', 'reserved_outpoints.intent_id')
    .select('reserved_outpoints.outpoint')
    .where('intents.status', 'in', [...statuses])
    .execute();
  return new Set(rows.map((r) => r.outpoint));
}

/** Whether an intent was already created from `quoteId`. */
export async function isQuoteUsed(db: SwapDb, quoteId: string): Promise<boolean> {
  const used = await db.selectFrom('intents').select('id').where('quote_id', '=', quoteId).executeTakeFirst();
  return used !== undefined;
}

/** A new intent with its creation event, its Permit2 nonce and its reserved outpoints, all or nothing. */
export async function insertIntent(
  db: SwapDb,
  rows: {
    intent: Insertable<IntentTable>;
    event: Insertable<SwapDatabase['intent_events']>;
    nonce: Insertable<SwapDatabase['permit2_nonces']> | null;
    outpoints: string[];
  },
): Promise<Intent> {
  const row = await insertAtomically(db, { table: 'intents', values: rows.intent }, [
    { table: 'intent_events', values: rows.event },
    ...(rows.nonce ? [{ table: 'permit2_nonces' as const, values: rows.nonce }] : []),
    {
      table: 'reserved_outpoints',
      values: rows.outpoints.map((outpoint) => ({ outpoint, intent_id: rows.intent.id })),
    },
  ]);
  return toIntent(row);
}

/** Records the first release of the preimage (later releases keep the first time). */
export async function markSecretReleased(db: SwapDb, id: string, nowMs: number): Promise<void> {
  await db
    .updateTable('intents')
    .set({ secret_released_at: nowMs })
    .where('id', '=', id)
    .where('secret_released_at', 'is', null)
    .execute();
}

/** A page of the intents `resolverId` quoted, optionally in one status, by deadline. */
export async function listResolverIntents(
  db: SwapDb,
  resolverId: string,
  page: { status?: IntentStatus; limit: number; offset: number },
): Promise<{ intents: Intent[]; total: number }> {
  let q = db.selectFrom('intents').where('resolver_id', '=', resolverId);
  if (page.status) q = q.where('status', '=', page.status);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('deadline').orderBy('id').limit(page.limit).offset(page.offset).execute(),
    q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { intents: rows.map(toIntent), total: Number(count.n) };
}

/** Intents stored, by status (one grouped count; the metrics read it at each scrape). */
export async function countIntentsByStatus(db: SwapDb): Promise<{ status: string; n: number }[]> {
  const rows = await db
    .selectFrom('intents')
    .select((eb) => ['status', eb.fn.countAll<number | string | bigint>().as('n')])
    .groupBy('status')
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}
