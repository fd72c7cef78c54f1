/**
 * A node's webhook deliveries as the console shows them: one row per attempt (newest first, paged by
 * attempt id), the attempt a redelivery names, and the node's status history.
 */
import { bigintNumber } from '@rgbx/store';
import type { CloudDb } from '../db/schema.ts';

export interface DeliveryView {
  /** The attempt's id (a redelivery may name it). */
  deliveryId: string;
  eventId: string;
  sequence: number;
  /** The status the event announces. */
  eventStatus: string;
  /** The event's state now (pending, delivered, abandoned). */
  eventState: string;
  url: string;
  attempt: number;
  keyId: string;
  startedAt: string;
  /** Request to answer (or failure), ms; null while in flight. */
  durationMs: number | null;
  statusCode: number | null;
  outcome: string;
  error: string | null;
}

export interface StatusChangeView {
  status: string;
  at: string;
}

const iso = (v: number | string) => new Date(bigintNumber(v)).toISOString();

/** Attempts of the node's events, newest first: `limit` of them with an id below `before` (if given). */
export async function listDeliveries(
  db: CloudDb,
  nodeId: string,
  limit: number,
  before?: number,
): Promise<{ data: DeliveryView[]; nextBefore: string | null }> {
  let q = db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_events as e', 'e.seq', 'a.event_seq')
    .select([
      'a.id',
      'a.attempt',
      'a.key_id',
      'a.started_at',
      'a.duration_ms',
      'a.status_code',
      'a.outcome',
      'a.error',
      'e.event_id',
      'e.seq',
      'e.node_status',
      'e.state',
      'e.url',
    ])
    .where('e.node_id', '=', nodeId)
    .orderBy('a.id', 'desc')
    .limit(limit + 1);
  if (before !== undefined) q = q.where('a.id', '<', before);
  const rows = await q.execute();
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  return {
    data: page.map((r) => ({
      deliveryId: String(bigintNumber(r.id)),
      eventId: r.event_id,
      sequence: bigintNumber(r.seq),
      eventStatus: r.node_status,
      eventState: r.state,
      url: r.url,
      attempt: r.attempt,
      keyId: r.key_id,
      startedAt: iso(r.started_at),
      durationMs: r.duration_ms,
      statusCode: r.status_code,
      outcome: r.outcome,
      error: r.error,
    })),
    nextBefore: more ? String(bigintNumber(page.at(-1)!.id)) : null,
  };
}

/** The event id a delivery id names: an event id of the node, or the id of one of its attempts. */
export async function eventOfDelivery(
  db: CloudDb,
  nodeId: string,
  deliveryId: string,
): Promise<string | undefined> {
  if (/^\d{1,15}$/.test(deliveryId)) {
    const r = await db
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_events as e', 'e.seq', 'a.event_seq')
      .select('e.event_id')
      .where('a.id', '=', Number(deliveryId))
      .where('e.node_id', '=', nodeId)
      .executeTakeFirst();
    return r?.event_id;
  }
  const r = await db
    .selectFrom('webhook_events')
    .select('event_id')
    .where('node_id', '=', nodeId)
    .where('event_id', '=', deliveryId)
    .executeTakeFirst();
  return r?.event_id;
}

/** The node's last `limit` status changes, oldest first. */
export async function statusHistory(db: CloudDb, nodeId: string, limit: number): Promise<StatusChangeView[]> {
  const rows = await db
    .selectFrom('node_status_changes')
    .select(['id', 'status', 'at'])
    .where('node_id', '=', nodeId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse().map((r) => ({ status: r.status, at: iso(r.at) }));
}

/** Deletes status changes older than `before` (ms) but each node's latest (its current status); returns how many. */
export async function pruneStatusChanges(db: CloudDb, before: number): Promise<number> {
  const r = await db
    .deleteFrom('node_status_changes')
    .where('at', '<', before)
    .where(({ eb, selectFrom }) =>
      eb(
        'id',
        'not in',
        selectFrom('node_status_changes')
          .select((x) => x.fn.max('id').as('id'))
          .groupBy('node_id'),
      ),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
