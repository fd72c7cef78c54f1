/**
 * The webhook dispatcher: takes due events from the outbox and POSTs them, at least once and in
 * order per node (only the oldest pending event of a node is ever eligible, and it is leased
 * while in flight), with up to `concurrency` nodes served at once. Every attempt is logged before
 * it is sent, so an attempt interrupted by a crash shows up as `interrupted` and is retried.
 */
import { sign } from 'node:crypto';
import type { Logger } from '@rgbx/service-kit';
import { sql } from 'kysely';
import type { AttemptOutcome, CloudDb } from '../db/schema.ts';
import { num } from '../db/schema.ts';
import { DeliveryTimeoutError, type PostResult, WebhookHttpClient } from './http-post.ts';
import type { Signer, SignerCache } from './keys.ts';
import { pruneDelivered } from './outbox.ts';
import { givenUp, parseRetryAfter, type RetryPolicy, retryDelay } from './schedule.ts';
import { type AddressPolicy, BlockedDestinationError, type Resolver, systemResolver } from './ssrf.ts';

export const USER_AGENT = 'rgbx-cloud-webhooks/0.1';

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
  /** Delivered events older than this many ms are pruned (hourly). */
  retentionMs?: number;
  extraCa?: string;
  logger: Logger;
  /** Called after every finished attempt (tests and the console's live view). */
  onAttempt?: (a: { eventId: string; nodeId: string; attempt: number; outcome: AttemptOutcome }) => void;
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

  constructor(o: DispatcherOptions) {
    this.o = o;
    this.client = new WebhookHttpClient(o.policy, o.resolver ?? systemResolver, o.extraCa);
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
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loopDone;
    await Promise.allSettled([...this.inflight.values()]);
    this.client.close();
  }

  private lastPrune = 0;

  /** Hourly: delete delivered events past the retention period. */
  private async prune(): Promise<void> {
    const now = Date.now();
    if (this.o.retentionMs === undefined || now - this.lastPrune < 3_600_000) return;
    this.lastPrune = now;
    const n = await pruneDelivered(this.o.db, now - this.o.retentionMs);
    if (n > 0) this.o.logger.info({ pruned: n }, 'pruned delivered webhook events');
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.woken = false;
      await this.prune().catch((err: unknown) => this.o.logger.error({ err }, 'webhook prune failed'));
      try {
        const free = this.o.concurrency - this.inflight.size;
        if (free > 0) {
          for (const c of await this.claim(free)) {
            const p = this.deliver(c)
              .catch((err: unknown) =>
                this.o.logger.error({ err, eventId: c.eventId }, 'webhook delivery bookkeeping failed'),
              )
              .finally(() => {
                this.inflight.delete(c.seq);
                this.wake();
              });
            this.inflight.set(c.seq, p);
          }
        }
      } catch (err) {
        if (this.running) this.o.logger.error({ err }, 'webhook dispatcher: claim failed');
      }
      if (!this.running) break;
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

  /** Leases up to `max` due events, each the oldest pending event of its node. */
  private async claim(max: number): Promise<Claimed[]> {
    const now = Date.now();
    const busyNodes = new Set<string>();
    const rows = await this.o.db
      .selectFrom('webhook_events as e')
      .select(['e.seq', 'e.node_id'])
      .where('e.state', '=', 'pending')
      .where('e.next_attempt_at', '<=', now)
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
      .limit(max + this.inflight.size)
      .execute();
    if (rows.length === 0) return [];
    const signer = await this.o.signer.current();
    // One transaction (one commit) leases the whole batch and logs its attempts as in flight.
    return this.o.db.transaction().execute(async (tx) => {
      const out: Claimed[] = [];
      for (const r of rows) {
        if (out.length >= max) break;
        const seq = num(r.seq);
        if (this.inflight.has(seq) || busyNodes.has(r.node_id)) continue;
        const u = await tx
          .updateTable('webhook_events')
          .set((eb) => ({
            lease_until: now + this.leaseMs,
            attempts: eb('attempts', '+', 1),
            first_attempt_at: eb.fn.coalesce('first_attempt_at', sql.lit(now)),
          }))
          .where('seq', '=', seq)
          .where('state', '=', 'pending')
          .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
          .executeTakeFirst();
        if (Number(u.numUpdatedRows) !== 1) continue;
        // An attempt still "in flight" here belonged to a process that died mid-delivery.
        await tx
          .updateTable('webhook_attempts')
          .set({
            outcome: 'interrupted',
            finished_at: now,
            error: 'the delivering process stopped before an answer',
          })
          .where('event_seq', '=', seq)
          .where('outcome', '=', 'in_flight')
          .execute();
        const e = await tx
          .selectFrom('webhook_events')
          .selectAll()
          .where('seq', '=', seq)
          .executeTakeFirstOrThrow();
        const a = await tx
          .insertInto('webhook_attempts')
          .values({
            event_seq: seq,
            attempt: e.attempts,
            key_id: signer.keyId,
            started_at: now,
            finished_at: null,
            duration_ms: null,
            outcome: 'in_flight',
            status_code: null,
            error: null,
            response_snippet: null,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        busyNodes.add(r.node_id);
        out.push({
          seq,
          eventId: e.event_id,
          nodeId: e.node_id,
          url: e.url,
          body: e.body,
          eventType: e.event_type,
          attempt: e.attempts,
          firstAttemptAt: num(e.first_attempt_at ?? now),
          attemptId: a.id,
          signer,
        });
      }
      return out;
    });
  }

  /**
   * Group commit: results of deliveries that finish together are written in one transaction
   * (SQLite pays one fsync per commit). A failing batch is retried entry by entry.
   */
  private readonly results: { apply: (tx: Tx) => Promise<void>; done: (err?: unknown) => void }[] = [];
  private flushing = false;

  private commit(apply: (tx: Tx) => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.results.push({ apply, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.results.length > 0) {
        const batch = this.results.splice(0);
        try {
          await this.o.db.transaction().execute(async (tx) => {
            for (const b of batch) await b.apply(tx);
          });
          for (const b of batch) b.done();
        } catch {
          for (const b of batch) {
            try {
              await this.o.db.transaction().execute((tx) => b.apply(tx));
              b.done();
            } catch (err) {
              b.done(err);
            }
          }
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async deliver(c: Claimed): Promise<void> {
    const signer = c.signer;
    const bytes = Buffer.from(c.body, 'utf8');
    const signature = sign('sha256', bytes, signer.privateKey).toString('base64');
    const started = Date.now();
    const headers = {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': USER_AGENT,
      'x-service-signature': signature,
      'x-service-signature-key-id': signer.keyId,
      'x-service-event-id': c.eventId,
      'x-service-event-type': c.eventType,
      'x-service-timestamp': String(Math.floor(started / 1000)),
      'x-service-attempt': String(c.attempt),
      'x-service-sequence': String(c.seq),
    };
    let result: PostResult | undefined;
    let outcome: AttemptOutcome;
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
        const ra = parseRetryAfter(result?.headers['retry-after'] as string | undefined, now);
        const cap = Math.max(...this.o.retry.scheduleMs);
        if (ra !== undefined) next = Math.max(next, now + Math.min(ra, cap));
      }
    }
    await this.commit(async (tx) => {
      // Lock order: the node row BEFORE its event row, as `changeNode` does (it locks the node,
      // then re-targets the node's pending events on a settings change). The other way round, a
      // delivery committing during a settings change deadlocks on PostgreSQL and one of the two
      // is aborted (the API answered 500). On success the row is only touched (locked) when it
      // was marked failing.
      if (success) {
        await tx
          .updateTable('nodes')
          .set({ webhook_failing_since: null })
          .where('id', '=', c.nodeId)
          .where('webhook_failing_since', 'is not', null)
          .execute();
      } else if (abandon) {
        await tx
          .updateTable('nodes')
          .set({ webhook_failing_since: now })
          .where('id', '=', c.nodeId)
          .where('webhook_failing_since', 'is', null)
          .execute();
      }
      await tx
        .updateTable('webhook_attempts')
        .set({
          finished_at: now,
          duration_ms: now - started,
          outcome,
          status_code: result?.statusCode ?? null,
          error,
          response_snippet: result?.snippet ?? null,
        })
        .where('id', '=', c.attemptId)
        .execute();
      await tx
        .updateTable('webhook_events')
        .set({
          state: success ? 'delivered' : abandon ? 'abandoned' : 'pending',
          lease_until: null,
          next_attempt_at: next,
          delivered_at: success ? now : null,
          last_error: error,
          last_status_code: result?.statusCode ?? null,
        })
        .where('seq', '=', c.seq)
        .execute();
    });
    if (abandon)
      this.o.logger.warn(
        { eventId: c.eventId, nodeId: c.nodeId, attempts: c.attempt },
        'webhook event abandoned; endpoint marked failing',
      );
    this.o.onAttempt?.({ eventId: c.eventId, nodeId: c.nodeId, attempt: c.attempt, outcome });
  }
}
