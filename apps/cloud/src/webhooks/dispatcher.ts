/**
 * The webhook dispatcher: takes due events from the outbox and POSTs them, at least once and in
 * order per node (only the oldest pending event of a node is ever eligible, and it is leased
 * while in flight), with up to `concurrency` nodes served at once. Every attempt is logged before
 * it is sent, so an attempt interrupted by a crash shows up as `interrupted` and is retried.
 * Database work is batched (`pump`): one commit holds the results of the deliveries finished
 * since the last one and the lease of the next due events; signatures are computed in worker
 * threads (sign-pool.ts).
 */
import { retryAfterMs } from '@rgbx/codecs/http';
import type { Logger } from '@rgbx/service-kit';
import {
  type AddressPolicy,
  BlockedDestinationError,
  DeliveryTimeoutError,
  givenUp,
  type PostResult,
  type Resolver,
  type RetryPolicy,
  retryDelay,
  systemResolver,
  WebhookHttpClient,
  webhookHeaders,
} from '@rgbx/service-kit/webhooks';
import { bigintNumber } from '@rgbx/store';
import { PostgresAdapter, sql, type Updateable } from 'kysely';
import type { AttemptOutcome, CloudDb, WebhookAttemptsTable, WebhookEventsTable } from '../db/schema.ts';
import type { DeliveryObservation } from '../metrics.ts';
import { pruneStatusChanges } from './deliveries.ts';
import type { Signer, SignerCache } from './keys.ts';
import { pruneDelivered } from './outbox.ts';
import { SignPool, signInline } from './sign-pool.ts';

export const USER_AGENT = 'rgbx-cloud-webhooks/0.1';

/** Longest a finished delivery's result waits for others to share its commit. */
export const RESULT_WAIT_MS = 20;

export interface DispatcherOptions {
  db: CloudDb;
  signer: SignerCache;
  policy: AddressPolicy;
  resolver?: Resolver;
  retry: RetryPolicy;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  responseSnippetBytes: number;
  concurrency: number;
  pollIntervalMs: number;
  /** Worker threads that sign (0: sign on the event loop); default 1. */
  signThreads?: number;
  /** Delivered events older than this many ms are pruned (hourly). */
  retentionMs?: number;
  extraCa?: string;
  logger: Logger;
  /** Called after every finished attempt (tests and the console's live view). */
  onAttempt?: (a: { eventId: string; nodeId: string; attempt: number; outcome: AttemptOutcome }) => void;
  /** Called once an attempt's result is committed (metrics). */
  onDelivery?: (d: DeliveryObservation) => void;
  /** Attempts found `in_flight` from a dead process, now logged `interrupted` (metrics). */
  onInterrupted?: (n: number) => void;
}

interface Claimed {
  seq: number;
  eventId: string;
  nodeId: string;
  url: string;
  body: string;
  eventType: string;
  attempt: number;
  firstAttemptAt: number;
  /** The event's creation (the status change), ms. */
  createdAt: number;
  /** Delivered before (a manual redelivery of a delivered event). */
  deliveredBefore: boolean;
  attemptId: number | string;
  signer: Signer;
}

type Tx = Parameters<Parameters<ReturnType<CloudDb['transaction']>['execute']>[0]>[0];

export class Dispatcher {
  private readonly client: WebhookHttpClient;
  private readonly inflight = new Map<number, Promise<void>>();
  private running = false;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;

  private readonly o: DispatcherOptions;
  private readonly signPool: SignPool;
  private readonly postgres: boolean;

  constructor(o: DispatcherOptions) {
    this.o = o;
    this.client = new WebhookHttpClient(o.policy, o.resolver ?? systemResolver, o.extraCa);
    this.signPool = new SignPool(o.signThreads ?? 1);
    this.postgres = o.db.getExecutor().adapter instanceof PostgresAdapter;
  }

  private get leaseMs(): number {
    return this.o.connectTimeoutMs + this.o.requestTimeoutMs + 5_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** New events are due: look now instead of at the next poll. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Stops taking events and waits for the deliveries in flight. */
  async stop(): Promise<void> {
    if (!this.running) {
      // Never started (a start that failed later, e.g. on the metrics port): its signing threads
      // would keep the process alive.
      if (!this.loopDone) await this.signPool.close();
      return;
    }
    this.running = false;
    this.wake();
    await this.loopDone;
    await Promise.allSettled([...this.inflight.values()]);
    this.client.close();
    await this.signPool.close();
  }

  private lastPrune = 0;
  /** Attempts the last claim marked `interrupted`, reported once it commits. */
  private claimInterrupted = 0;

  /** Hourly: delete delivered events past the retention period. */
  private async prune(): Promise<void> {
    const now = Date.now();
    if (this.o.retentionMs === undefined || now - this.lastPrune < 3_600_000) return;
    this.lastPrune = now;
    const n = await pruneDelivered(this.o.db, now - this.o.retentionMs);
    if (n > 0) this.o.logger.info({ pruned: n }, 'pruned delivered webhook events');
    // The status history (console chart) is kept as long, but each node's current status.
    const s = await pruneStatusChanges(this.o.db, now - this.o.retentionMs);
    if (s > 0) this.o.logger.info({ pruned: s }, 'pruned node status history');
  }

  private async loop(): Promise<void> {
    // After `stop()` the loop keeps committing the results of deliveries still in flight.
    while (this.running || this.inflight.size > 0) {
      this.woken = false;
      if (this.running)
        await this.prune().catch((err: unknown) => this.o.logger.error({ err }, 'webhook prune failed'));
      try {
        await this.pump(this.running);
      } catch (err) {
        this.o.logger.error({ err }, 'webhook dispatcher: claim failed');
      }
      if (!this.running && this.inflight.size === 0) break;
      if (this.woken) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.o.pollIntervalMs);
        this.wakeUp = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }

  /**
   * One transaction (one commit): the results of the deliveries finished since the last pump, then
   * the lease of up to `free` due events with their attempts logged as in flight. A node whose
   * event was just delivered has its next event claimed in the same commit. Each claimed event is
   * sent only after this commit (an attempt is always logged before it is sent). If the
   * transaction fails, each result is retried alone, so one bad result does not hold up the others.
   */
  private async pump(claim: boolean): Promise<void> {
    clearTimeout(this.resultTimer);
    this.resultTimer = undefined;
    const batch = this.results.splice(0);
    // Slots of the deliveries whose results commit here are free once it commits.
    const free = claim ? this.o.concurrency - (this.inflight.size - batch.length) : 0;
    if (batch.length === 0 && free <= 0) return;
    let signer: Signer | undefined;
    if (free > 0) {
      try {
        signer = await this.o.signer.current();
      } catch (err) {
        // The results are committed all the same; claiming waits for a readable key.
        this.o.logger.error({ err }, 'webhook dispatcher: no signing key; not claiming');
      }
    }
    let claimed: Claimed[] = [];
    this.claimInterrupted = 0;
    try {
      claimed = await this.o.db.transaction().execute(async (tx) => {
        await applyResults(tx, batch);
        return signer ? this.claimIn(tx, free, signer) : [];
      });
    } catch (err) {
      if (batch.length === 0) throw err;
      for (const r of batch) {
        try {
          await this.o.db.transaction().execute((tx) => applyResults(tx, [r]));
          r.done();
        } catch (e) {
          r.done(e);
        }
      }
      throw err;
    }
    for (const r of batch) r.done();
    if (this.claimInterrupted > 0) this.o.onInterrupted?.(this.claimInterrupted);
    this.claimInterrupted = 0;
    if (claimed.length === 0 || !signer) return;
    const signatures = this.signPool.signMany(
      signer,
      claimed.map((c) => c.body),
    );
    for (const [i, c] of claimed.entries()) this.launch(c, signatures[i]!);
  }

  private launch(c: Claimed, signature: Promise<string>): void {
    const p = this.deliver(c, signature)
      .catch((err: unknown) =>
        this.o.logger.error({ err, eventId: c.eventId }, 'webhook delivery bookkeeping failed'),
      )
      .finally(() => {
        this.inflight.delete(c.seq);
        // The pump that committed this result already claimed into the freed slot; a failed
        // result leaves it to the next pump. Stopping, the loop waits for the last one.
        if (!this.running) this.wake();
      });
    this.inflight.set(c.seq, p);
  }

  /**
   * Leases up to `max` due events, each the oldest pending event of its node, in one statement:
   * `update … where seq in (select … order by seq limit max)` — on PostgreSQL the candidates are
   * locked `for update skip locked`, so two dispatchers never lease one event, and a claim never
   * waits on a row a settings change holds (that change holds its node row; waiting on it from
   * here would invert the lock order). On SQLite the statement is the write that opens the
   * transaction, so no other writer slips in between reading the candidates and leasing them.
   */
  private async claimIn(tx: Tx, max: number, signer: Signer): Promise<Claimed[]> {
    const now = Date.now();
    let interrupted = 0;
    const mine = [...this.inflight.keys()];
    let candidates = tx
      .selectFrom('webhook_events as e')
      .select('e.seq')
      .where('e.state', '=', 'pending')
      // SQLite (no statistics) would otherwise range-scan `state_due` and sort every pending event
      // on each claim (~2 ms with a 2,000-event backlog); `+x` is not indexable, so it walks
      // `webhook_events_state_seq` in order and stops after `max` hits.
      .where((eb) =>
        eb(
          this.postgres ? eb.ref('e.next_attempt_at') : sql<number>`+${sql.ref('e.next_attempt_at')}`,
          '<=',
          now,
        ),
      )
      .where((eb) => eb.or([eb('e.lease_until', 'is', null), eb('e.lease_until', '<', now)]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_events as p')
              .select(sql.lit(1).as('one'))
              .whereRef('p.node_id', '=', 'e.node_id')
              .where('p.state', '=', 'pending')
              .whereRef('p.seq', '<', 'e.seq'),
          ),
        ),
      )
      .orderBy('e.seq')
      .limit(max);
    // Our own deliveries are leased; this only matters if one outlived its lease.
    if (mine.length > 0) candidates = candidates.where('e.seq', 'not in', mine);
    if (this.postgres) candidates = candidates.forUpdate().skipLocked();
    const rows = await tx
      .updateTable('webhook_events')
      .set((eb) => ({
        lease_until: now + this.leaseMs,
        attempts: eb('attempts', '+', 1),
        first_attempt_at: eb.fn.coalesce('first_attempt_at', sql.lit(now)),
      }))
      .where('seq', 'in', candidates)
      .where('state', '=', 'pending')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .returning([
        'seq',
        'event_id',
        'node_id',
        'url',
        'body',
        'event_type',
        'attempts',
        'first_attempt_at',
        'created_at',
        'delivered_at',
      ])
      .execute();
    if (rows.length === 0) return [];
    rows.sort((a, b) => bigintNumber(a.seq) - bigintNumber(b.seq));
    // An attempt still "in flight" here belonged to a process that died mid-delivery (only an
    // event attempted before can have one).
    const again = rows.filter((r) => r.attempts > 1).map((r) => r.seq);
    if (again.length > 0) {
      const r = await tx
        .updateTable('webhook_attempts')
        .set({
          outcome: 'interrupted',
          finished_at: now,
          error: 'the delivering process stopped before an answer',
        })
        .where('event_seq', 'in', again)
        .where('outcome', '=', 'in_flight')
        .executeTakeFirst();
      interrupted = Number(r.numUpdatedRows);
    }
    const ids = await tx
      .insertInto('webhook_attempts')
      .values(
        rows.map((e) => ({
          event_seq: e.seq,
          attempt: e.attempts,
          key_id: signer.keyId,
          started_at: now,
          finished_at: null,
          duration_ms: null,
          outcome: 'in_flight' as const,
          status_code: null,
          error: null,
          response_snippet: null,
        })),
      )
      .returning(['id', 'event_seq'])
      .execute();
    const idOf = new Map(ids.map((a) => [bigintNumber(a.event_seq), a.id]));
    // Counted once the claim commits (a rolled-back claim interrupted nothing): see pump.
    this.claimInterrupted = interrupted;
    return rows.map((e) => {
      const seq = bigintNumber(e.seq);
      const attemptId = idOf.get(seq);
      if (attemptId === undefined) throw new Error(`webhook event ${seq}: attempt not logged`);
      return {
        seq,
        eventId: e.event_id,
        nodeId: e.node_id,
        url: e.url,
        body: e.body,
        eventType: e.event_type,
        attempt: e.attempts,
        firstAttemptAt: bigintNumber(e.first_attempt_at ?? now),
        createdAt: bigintNumber(e.created_at),
        deliveredBefore: e.delivered_at !== null,
        attemptId,
        signer,
      };
    });
  }

  /** Finished deliveries waiting for the next pump to commit their results. */
  private readonly results: Result[] = [];

  private commit(r: Omit<Result, 'done'>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.results.push({ ...r, done: (err) => (err === undefined ? resolve() : reject(err)) });
      this.resultReady();
    });
  }

  private resultTimer: NodeJS.Timeout | undefined;

  /**
   * Group commit: a result alone does not start a pump. The pump runs once results fill half of
   * the `concurrency` slots, or RESULT_WAIT_MS after the first waiting result, or at once
   * on a new event (`wake`), which then commits the waiting results with its claim. SQLite's
   * commit (an fsync with `synchronous = FULL`, several ms on a busy disk) blocks the event loop:
   * one commit per delivery was the throughput limit, and a commit per result at a steady rate
   * the latency tail. A waiting result delays only the next event of its own node, never the
   * receipt of this one.
   */
  private resultReady(): void {
    if (!this.running || this.results.length * 2 >= this.o.concurrency) {
      this.wake();
      return;
    }
    this.resultTimer ??= setTimeout(() => {
      this.resultTimer = undefined;
      this.wake();
    }, RESULT_WAIT_MS);
  }

  private async deliver(c: Claimed, signing: Promise<string>): Promise<void> {
    const signer = c.signer;
    const bytes = Buffer.from(c.body, 'utf8');
    let signature: string;
    try {
      signature = await signing;
    } catch (err) {
      // A failed signing thread: sign here instead (the pool replaces the thread).
      this.o.logger.warn({ err }, 'webhook signing thread failed; signing inline');
      signature = signInline(signer, bytes);
    }
    const started = Date.now();
    const headers = webhookHeaders({
      signature,
      keyId: signer.keyId,
      eventId: c.eventId,
      eventType: c.eventType,
      attempt: c.attempt,
      sequence: c.seq,
      userAgent: USER_AGENT,
      timestamp: Math.floor(started / 1000),
    });
    let result: PostResult | undefined;
    let outcome: Exclude<AttemptOutcome, 'in_flight'>;
    let error: string | null = null;
    try {
      result = await this.client.post(c.url, bytes, headers, {
        connectTimeoutMs: this.o.connectTimeoutMs,
        requestTimeoutMs: this.o.requestTimeoutMs,
        snippetBytes: this.o.responseSnippetBytes,
      });
      outcome = result.statusCode >= 200 && result.statusCode < 300 ? 'success' : 'http_error';
      if (outcome === 'http_error') error = `HTTP ${result.statusCode}`;
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      outcome =
        err instanceof BlockedDestinationError
          ? 'blocked'
          : err instanceof DeliveryTimeoutError
            ? 'timeout'
            : 'network_error';
      error = `${e.code ? `${e.code}: ` : ''}${e.message}`.slice(0, 500);
    }
    const now = Date.now();
    const success = outcome === 'success';
    const gone = result?.statusCode === 410;
    const abandon = !success && (gone || givenUp(this.o.retry, c.firstAttemptAt, now));
    let next = now;
    if (!success && !abandon) {
      next = now + retryDelay(this.o.retry, c.attempt);
      const status = result?.statusCode;
      if (status === 429 || status === 503) {
        const ra = retryAfterMs(result?.headers['retry-after'] as string | undefined, now);
        const cap = Math.max(...this.o.retry.scheduleMs);
        if (ra !== undefined) next = Math.max(next, now + Math.min(ra, cap));
      }
    }
    await this.commit({
      seq: c.seq,
      nodeId: c.nodeId,
      attemptId: c.attemptId,
      node: success ? 'clear_failing' : abandon ? 'mark_failing' : null,
      at: now,
      attempt: {
        finished_at: now,
        duration_ms: now - started,
        outcome,
        status_code: result?.statusCode ?? null,
        error,
        response_snippet: result?.snippet ?? null,
      },
      event: {
        state: success ? 'delivered' : abandon ? 'abandoned' : 'pending',
        lease_until: null,
        next_attempt_at: next,
        delivered_at: success ? now : null,
        last_error: error,
        last_status_code: result?.statusCode ?? null,
      },
    });
    if (abandon)
      this.o.logger.warn(
        { eventId: c.eventId, nodeId: c.nodeId, attempts: c.attempt },
        'webhook event abandoned; endpoint marked failing',
      );
    this.o.onDelivery?.({
      outcome,
      createdAt: c.createdAt,
      at: now,
      firstReceipt: !c.deliveredBefore,
      abandoned: abandon,
    });
    this.o.onAttempt?.({ eventId: c.eventId, nodeId: c.nodeId, attempt: c.attempt, outcome });
  }
}

/** A finished delivery's bookkeeping, committed by the next pump. */
interface Result {
  seq: number;
  nodeId: string;
  attemptId: number | string;
  /** Success clears the node's failing mark, giving up sets it. */
  node: 'clear_failing' | 'mark_failing' | null;
  at: number;
  attempt: Updateable<WebhookAttemptsTable>;
  event: Updateable<WebhookEventsTable>;
  done: (err?: unknown) => void;
}

/** `case <key> when k1 then v1 … end`, each value cast to `type` (PostgreSQL types the parameters). */
function caseOf(
  key: string,
  rows: readonly Result[],
  keyOf: (r: Result) => unknown,
  pick: (r: Result) => unknown,
  type: 'bigint' | 'integer' | 'text',
) {
  const t = sql.raw(type);
  return sql<never>`case ${sql.ref(key)} ${sql.join(
    rows.map((r) => sql`when ${keyOf(r)} then cast(${pick(r)} as ${t})`),
    sql` `,
  )} end`;
}

/**
 * Writes results inside `tx`: a handful of statements for the whole batch (each statement costs
 * a prepare and, on PostgreSQL, a round trip). Lock order: node rows BEFORE event rows, as
 * `changeNode` does (it locks the node, then re-targets the node's pending events on a settings
 * change). The other way round, a delivery committing during a settings change deadlocks on
 * PostgreSQL and one of the two is aborted (the API answered 500). So the node rows of the batch
 * are written first, then the attempts and events (the batch's events are leased by this
 * dispatcher; its nodes are not another batch's, as a node has one event in flight at a time).
 * On success the node row is only touched (locked) when it was marked failing.
 */
async function applyResults(tx: Tx, batch: readonly Result[]): Promise<void> {
  if (batch.length === 0) return;
  const clear = batch.filter((r) => r.node === 'clear_failing').map((r) => r.nodeId);
  if (clear.length > 0)
    await tx
      .updateTable('nodes')
      .set({ webhook_failing_since: null })
      .where('id', 'in', clear.sort())
      .where('webhook_failing_since', 'is not', null)
      .execute();
  for (const r of batch.filter((x) => x.node === 'mark_failing'))
    await tx
      .updateTable('nodes')
      .set({ webhook_failing_since: r.at })
      .where('id', '=', r.nodeId)
      .where('webhook_failing_since', 'is', null)
      .execute();
  const byAttempt = (r: Result) => r.attemptId;
  await tx
    .updateTable('webhook_attempts')
    .set({
      finished_at: caseOf('id', batch, byAttempt, (r) => r.attempt.finished_at, 'bigint'),
      duration_ms: caseOf('id', batch, byAttempt, (r) => r.attempt.duration_ms, 'integer'),
      outcome: caseOf('id', batch, byAttempt, (r) => r.attempt.outcome, 'text'),
      status_code: caseOf('id', batch, byAttempt, (r) => r.attempt.status_code, 'integer'),
      error: caseOf('id', batch, byAttempt, (r) => r.attempt.error, 'text'),
      response_snippet: caseOf('id', batch, byAttempt, (r) => r.attempt.response_snippet, 'text'),
    })
    .where(
      'id',
      'in',
      batch.map((r) => r.attemptId),
    )
    .execute();
  const bySeq = (r: Result) => r.seq;
  await tx
    .updateTable('webhook_events')
    .set({
      state: caseOf('seq', batch, bySeq, (r) => r.event.state, 'text'),
      lease_until: null,
      next_attempt_at: caseOf('seq', batch, bySeq, (r) => r.event.next_attempt_at, 'bigint'),
      delivered_at: caseOf('seq', batch, bySeq, (r) => r.event.delivered_at, 'bigint'),
      last_error: caseOf('seq', batch, bySeq, (r) => r.event.last_error, 'text'),
      last_status_code: caseOf('seq', batch, bySeq, (r) => r.event.last_status_code, 'integer'),
    })
    .where(
      'seq',
      'in',
      batch.map((r) => r.seq),
    )
    .execute();
}
