/**
 * Reads of `intent_events` for the event feeds (`domain/event-feed.ts`). The rows are written by
 * `applyTransition` and `insertIntent` with the status change itself; here they are only read, by
 * id (the primary key), with the scope columns of their intent.
 */
import { bigintNumber } from '@rgbx/store';
import type { SwapDb } from './database.ts';
import type { IntentScope } from './intent-store.ts';

export interface StoredEvent {
  id: number;
  intentId: string;
  from: string | null;
  to: string;
  trigger: string;
  /** Milliseconds since the epoch. */
  at: number;
  resolverId: string;
  apiKeyId: string;
  /** The intent deadline, Unix seconds. */
  deadline: number;
}

function base(db: SwapDb) {
  return db
    .selectFrom('intent_events as e')
    .innerJoin('intents as i', 'i.id', 'e.intent_id')
    .select([
      'e.id',
      'e.intent_id',
      'e.from_status',
      'e.to_status',
      'e.trigger',
      'e.at',
      'i.resolver_id',
      'i.api_key_id',
      'i.deadline',
    ]);
}

type Row = {
  id: number | string;
  intent_id: string;
  from_status: string | null;
  to_status: string;
  trigger: string;
  at: number | string;
  resolver_id: string;
  api_key_id: string;
  deadline: number | string;
};

function toEvent(r: Row): StoredEvent {
  return {
    id: Number(r.id),
    intentId: r.intent_id,
    from: r.from_status,
    to: r.to_status,
    trigger: r.trigger,
    at: bigintNumber(r.at),
    resolverId: r.resolver_id,
    apiKeyId: r.api_key_id,
    deadline: bigintNumber(r.deadline),
  };
}

/** Events with an id above `afterId`, every scope, oldest first (the feed's poll). */
export async function eventsAfter(db: SwapDb, afterId: number, limit: number): Promise<StoredEvent[]> {
  const rows = await base(db).where('e.id', '>', afterId).orderBy('e.id').limit(limit).execute();
  return rows.map((r) => toEvent(r as Row));
}

/** A scope's events with `afterId < id <= upToId`, oldest first (a subscriber catching up). */
export async function scopedEvents(
  db: SwapDb,
  scope: IntentScope,
  afterId: number,
  upToId: number,
  limit: number,
): Promise<StoredEvent[]> {
  let q = base(db).where('e.id', '>', afterId).where('e.id', '<=', upToId);
  q =
    'apiKeyId' in scope
      ? q.where('i.api_key_id', '=', scope.apiKeyId)
      : q.where('i.resolver_id', '=', scope.resolverId);
  const rows = await q.orderBy('e.id').limit(limit).execute();
  return rows.map((r) => toEvent(r as Row));
}

/** The highest event id (0 for none). */
export async function lastEventId(db: SwapDb): Promise<number> {
  const r = await db
    .selectFrom('intent_events')
    .select((eb) => eb.fn.max('id').as('m'))
    .executeTakeFirst();
  return r?.m === null || r?.m === undefined ? 0 : Number(r.m);
}

/** When the first event after `afterId` happened (ms), or undefined when there is none. */
export async function firstEventAtAfter(db: SwapDb, afterId: number): Promise<number | undefined> {
  const r = await db
    .selectFrom('intent_events')
    .select('at')
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return r ? bigintNumber(r.at) : undefined;
}
