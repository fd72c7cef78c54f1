/**
 * The webhook outbox. A status change and its `NODE_STATUS_UPDATED` event are written in the same
 * transaction (`enqueueStatusEvent` takes the caller's transaction), so an event exists exactly
 * when the change committed. The body is serialized once, here, and those bytes are what every
 * attempt sends and signs.
 */
import { randomUUID } from 'node:crypto';
import { bigintNumber } from '@rgbx/store';
import type { Transaction } from 'kysely';
import type { CloudDatabase, CloudDb, NodeStatus } from '../db/schema.ts';

export const NODE_STATUS_UPDATED = 'NODE_STATUS_UPDATED';

/** The spec's payload, field order fixed: eventType, eventTimestamp, details{nodeId,status}, nodeId. */
export function statusPayload(nodeId: string, status: NodeStatus, at: number): string {
  return JSON.stringify({
    eventType: NODE_STATUS_UPDATED,
    eventTimestamp: new Date(at).toISOString(),
    details: { nodeId, status },
    nodeId,
  });
}

export interface EnqueueInput {
  accountId: string;
  nodeId: string;
  url: string;
  status: NodeStatus;
}

/** Inserts the event inside `tx`; returns its event id. */
export async function enqueueStatusEvent(
  tx: Transaction<CloudDatabase>,
  e: EnqueueInput,
  now: number,
  maxPayloadBytes: number,
): Promise<string> {
  const body = statusPayload(e.nodeId, e.status, now);
  if (Buffer.byteLength(body) > maxPayloadBytes) {
    throw new Error(`webhook payload of ${Buffer.byteLength(body)} bytes exceeds max_payload_bytes`);
  }
  const eventId = randomUUID();
  await tx
    .insertInto('webhook_events')
    .values({
      event_id: eventId,
      account_id: e.accountId,
      node_id: e.nodeId,
      event_type: NODE_STATUS_UPDATED,
      node_status: e.status,
      url: e.url,
      body,
      state: 'pending',
      attempts: 0,
      next_attempt_at: now,
      lease_until: null,
      first_attempt_at: null,
      delivered_at: null,
      last_error: null,
      last_status_code: null,
      created_at: now,
    })
    .execute();
  return eventId;
}

export interface AttemptView {
  attempt: number;
  keyId: string;
  startedAt: string;
  durationMs: number | null;
  outcome: string;
  statusCode: number | null;
  error: string | null;
  responseSnippet: string | null;
}

export interface EventView {
  eventId: string;
  sequence: number;
  eventType: string;
  status: string;
  url: string;
  payload: string;
  state: string;
  attempts: number;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastError: string | null;
  lastStatusCode: number | null;
  createdAt: string;
  attemptLog?: AttemptView[];
}

const iso = (v: number | string | null) => (v === null ? null : new Date(bigintNumber(v)).toISOString());

type EventRow = Awaited<ReturnType<typeof selectEvents>>[number];

function selectEvents(db: CloudDb, nodeId: string) {
  return db
    .selectFrom('webhook_events')
    .selectAll()
    .where('node_id', '=', nodeId)
    .orderBy('seq', 'desc')
    .execute();
}

function toView(r: EventRow): EventView {
  return {
    eventId: r.event_id,
    sequence: bigintNumber(r.seq),
    eventType: r.event_type,
    status: r.node_status,
    url: r.url,
    payload: r.body,
    state: r.state,
    attempts: r.attempts,
    nextAttemptAt: r.state === 'pending' ? iso(r.next_attempt_at) : null,
    deliveredAt: iso(r.delivered_at),
    lastError: r.last_error,
    lastStatusCode: r.last_status_code,
    createdAt: iso(r.created_at)!,
  };
}

async function attemptsOf(db: CloudDb, seqs: (number | string)[]): Promise<Map<number, AttemptView[]>> {
  const out = new Map<number, AttemptView[]>();
  if (seqs.length === 0) return out;
  const rows = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('event_seq', 'in', seqs)
    .orderBy('event_seq')
    .orderBy('attempt')
    .execute();
  for (const a of rows) {
    const k = bigintNumber(a.event_seq);
    const list = out.get(k) ?? [];
    list.push({
      attempt: a.attempt,
      keyId: a.key_id,
      startedAt: iso(a.started_at)!,
      durationMs: a.duration_ms,
      outcome: a.outcome,
      statusCode: a.status_code,
      error: a.error,
      responseSnippet: a.response_snippet,
    });
    out.set(k, list);
  }
  return out;
}

/** The node's events, newest first, each with its attempts. */
export async function listNodeEvents(db: CloudDb, nodeId: string, limit: number): Promise<EventView[]> {
  const rows = await db
    .selectFrom('webhook_events')
    .selectAll()
    .where('node_id', '=', nodeId)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
  const attempts = await attemptsOf(
    db,
    rows.map((r) => r.seq),
  );
  return rows.map((r) => ({ ...toView(r), attemptLog: attempts.get(bigintNumber(r.seq)) ?? [] }));
}

export async function getNodeEvent(
  db: CloudDb,
  nodeId: string,
  eventId: string,
): Promise<EventView | undefined> {
  const r = await db
    .selectFrom('webhook_events')
    .selectAll()
    .where('node_id', '=', nodeId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
  if (!r) return undefined;
  const attempts = await attemptsOf(db, [r.seq]);
  return { ...toView(r), attemptLog: attempts.get(bigintNumber(r.seq)) ?? [] };
}

/**
 * Manual redelivery: puts the event back in the queue, due now, with a fresh give-up window.
 * Within its node it is sent in sequence order, so an old event goes before newer pending ones.
 */
export async function redeliverEvent(
  db: CloudDb,
  nodeId: string,
  eventId: string,
  now = Date.now(),
): Promise<boolean> {
  const r = await db
    .updateTable('webhook_events')
    .set({ state: 'pending', next_attempt_at: now, first_attempt_at: null, lease_until: null })
    .where('node_id', '=', nodeId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Counts per state, for the node view. */
export async function eventCounts(db: CloudDb, nodeId: string) {
  const rows = await db
    .selectFrom('webhook_events')
    .select(['state', db.fn.countAll<number | string>().as('n')])
    .where('node_id', '=', nodeId)
    .groupBy('state')
    .execute();
  const out = { pending: 0, delivered: 0, abandoned: 0 };
  for (const r of rows) out[r.state as keyof typeof out] = Number(r.n);
  return out;
}

/** Deletes delivered events older than `before` (ms) with their attempts; returns how many. */
export async function pruneDelivered(db: CloudDb, before: number, limit = 1000): Promise<number> {
  const old = await db
    .selectFrom('webhook_events')
    .select('seq')
    .where('state', '=', 'delivered')
    .where('delivered_at', '<', before)
    .orderBy('seq')
    .limit(limit)
    .execute();
  if (old.length === 0) return 0;
  const seqs = old.map((r) => r.seq);
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('webhook_attempts').where('event_seq', 'in', seqs).execute();
    await tx.deleteFrom('webhook_events').where('seq', 'in', seqs).execute();
  });
  return old.length;
}
