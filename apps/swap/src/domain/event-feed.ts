/**
 * The event feed behind the SSE routes (`http/events.ts`): every status change of an intent, as
 * `intent_events` records it in the same statement or transaction as the change, pushed to the
 * subscribers whose scope it is in (a tenant's API key, or the resolver that quoted the intent).
 *
 * One poller per service instance reads the new rows by id (`WHERE id > safe`, the primary key) every
 * `swap.event_poll_ms`, whatever the number of subscribers; any instance on the same database sees
 * what any other wrote. Ids are handed out before commit, so on PostgreSQL a transaction can commit
 * id 11 before another commits id 10: the poller delivers only the contiguous prefix, and an id
 * still missing after `GAP_WAIT_MS` is taken as rolled back and skipped (SQLite never leaves one).
 *
 * A subscriber has a cursor: every event of its scope up to it was written to its stream. Behind the
 * poller (a resume with `Last-Event-ID`, or a client too slow to drain its socket), it reads its own
 * scope from the table by id, a page at a time, writing only while the socket takes more; it joins
 * the live stream once it caught up. Nothing is buffered per client beyond the socket's own buffer.
 */
import type { EventsReset } from '@rgbx/contracts/swap';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import {
  eventsAfter,
  firstEventAtAfter,
  lastEventId,
  type StoredEvent,
  scopedEvents,
} from '../store/event-store.ts';
import type { IntentScope } from '../store/intent-store.ts';

export type FeedEvent = StoredEvent;

/** How long an id missing below newer committed ones is waited for before it is taken as rolled back. */
export const GAP_WAIT_MS = 5_000;
/** Rows per poll and per catch-up page. */
const PAGE = 500;

/** A subscriber's stream (the SSE response). */
export interface FeedSink {
  /** Writes one event; false when the client's buffer is full (wait for `drained`). */
  event(ev: FeedEvent): boolean;
  /** Writes the `reset` event with the position the stream goes on from. */
  reset(info: EventsReset, id: number): void;
  /** Writes a heartbeat comment carrying the position (the SSE `id:`). */
  heartbeat(id: number): void;
  /** True while the client's buffer is full. */
  blocked(): boolean;
  /** Resolves true once the buffer drained; false when the stream closed or the client stalled. */
  drained(): Promise<boolean>;
  /** Ends the response. */
  end(): void;
}

export interface FeedOptions {
  pollMs: number;
  heartbeatMs: number;
  retentionMs: number;
  maxStreamsPerKey: number;
}

function scopeKey(scope: IntentScope): string {
  return 'apiKeyId' in scope ? `key:${scope.apiKeyId}` : `resolver:${scope.resolverId}`;
}

function inScope(scope: IntentScope, ev: FeedEvent): boolean {
  return 'apiKeyId' in scope ? ev.apiKeyId === scope.apiKeyId : ev.resolverId === scope.resolverId;
}

/** A stream accepted (limit reserved, position found) but not attached to a response yet. */
export interface PendingStream {
  /** Where the stream starts: events after this id. */
  cursor: number;
  reset: EventsReset | undefined;
  attach(sink: FeedSink): Subscription;
  /** Gives the reserved slot back (the response could not be started). */
  cancel(): void;
}

export class EventFeed {
  readonly #ctx: SwapContext;
  readonly #opts: FeedOptions;
  /** Every event with an id up to here was delivered (or is known never to come). */
  #safe = 0;
  #gap: { id: number; since: number } | undefined;
  #started: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #closed = false;
  readonly #subs = new Set<Subscription>();
  readonly #perKey = new Map<string, number>();

  constructor(ctx: SwapContext, opts: FeedOptions) {
    this.#ctx = ctx;
    this.#opts = opts;
  }

  get safe(): number {
    return this.#safe;
  }

  get db() {
    return this.#ctx.db;
  }

  get log() {
    return this.#ctx.logger;
  }

  get heartbeatMs(): number {
    return this.#opts.heartbeatMs;
  }

  /** Streams open now (all keys). */
  get streams(): number {
    return this.#subs.size;
  }

  /** Starts polling at the first subscriber, from the highest id then committed. */
  #start(): Promise<void> {
    this.#started ??= (async () => {
      this.#safe = await lastEventId(this.#ctx.db);
      this.#schedule();
    })();
    return this.#started;
  }

  #schedule(delay = this.#opts.pollMs): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#polling = this.#poll()
        .catch((err: unknown) => this.#ctx.logger.warn({ err }, 'event feed poll failed'))
        .then((more) => this.#schedule(more === true ? 0 : this.#opts.pollMs));
    }, delay);
    this.#timer.unref();
  }

  /** One poll: delivers the contiguous new events; true when a full page came (poll again at once). */
  async #poll(): Promise<boolean> {
    const rows = await eventsAfter(this.#ctx.db, this.#safe, PAGE);
    if (this.#closed) return false;
    let next = this.#safe;
    const accepted: FeedEvent[] = [];
    for (const r of rows) {
      if (r.id !== next + 1) {
        const now = Date.now();
        if (this.#gap?.id !== next + 1) this.#gap = { id: next + 1, since: now };
        if (now - this.#gap.since < GAP_WAIT_MS) break;
        this.#ctx.logger.warn({ from: next + 1, to: r.id - 1 }, 'event ids never committed; skipped');
      }
      accepted.push(r);
      next = r.id;
    }
    if (next === this.#safe) return false;
    this.#gap = undefined;
    this.#safe = next;
    for (const sub of this.#subs) sub.offer(accepted, next);
    return rows.length === PAGE && accepted.length === rows.length;
  }

  /**
   * Accepts a stream for `scope` resuming after `lastEventId` (undefined: from now): the per-key
   * limit (TOO_MANY_STREAMS), then the retention rule (a `reset` when the resume point is older
   * than the retention or names no event).
   */
  async open(scope: IntentScope, lastId: number | undefined): Promise<PendingStream> {
    if (this.#closed) throw E.SERVICE_UNAVAILABLE.create('shutting down');
    const key = scopeKey(scope);
    const open = this.#perKey.get(key) ?? 0;
    if (open >= this.#opts.maxStreamsPerKey) throw E.TOO_MANY_STREAMS.create(this.#opts.maxStreamsPerKey);
    this.#perKey.set(key, open + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const n = (this.#perKey.get(key) ?? 1) - 1;
      if (n <= 0) this.#perKey.delete(key);
      else this.#perKey.set(key, n);
    };
    try {
      await this.#start();
      let cursor = this.#safe;
      let reset: EventsReset | undefined;
      if (lastId !== undefined) {
        const [max, firstAt] = await Promise.all([
          lastEventId(this.#ctx.db),
          firstEventAtAfter(this.#ctx.db, lastId),
        ]);
        if (lastId > max) {
          reset = { reason: 'unknown', message: `Last-Event-ID ${lastId} names no event of this service` };
        } else if (firstAt !== undefined && firstAt < this.#ctx.now() - this.#opts.retentionMs) {
          reset = {
            reason: 'expired',
            message: `events after ${lastId} are older than the retention (${this.#opts.retentionMs / 1000} s); re-read the intents`,
          };
        } else {
          cursor = lastId;
        }
      }
      return {
        cursor,
        reset,
        attach: (sink) => {
          const sub = new Subscription(this, scope, cursor, sink, () => {
            this.#subs.delete(sub);
            release();
          });
          this.#subs.add(sub);
          if (reset) sink.reset(reset, cursor);
          sub.start();
          return sub;
        },
        cancel: release,
      };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Stops polling and ends every stream (the app's `preClose`: before the server waits for them). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#polling;
    for (const sub of [...this.#subs]) sub.close();
  }
}

export class Subscription {
  #cursor: number;
  #live = false;
  #closed = false;
  #pumping: Promise<void> | undefined;
  readonly #heartbeat: NodeJS.Timeout;

  readonly feed: EventFeed;
  readonly scope: IntentScope;
  readonly sink: FeedSink;
  readonly onClose: () => void;

  constructor(feed: EventFeed, scope: IntentScope, cursor: number, sink: FeedSink, onClose: () => void) {
    this.feed = feed;
    this.scope = scope;
    this.sink = sink;
    this.onClose = onClose;
    this.#cursor = cursor;
    this.#heartbeat = setInterval(() => {
      if (!this.#closed && !this.sink.blocked()) this.sink.heartbeat(this.#cursor);
    }, feed.heartbeatMs);
    this.#heartbeat.unref();
  }

  get cursor(): number {
    return this.#cursor;
  }

  start(): void {
    this.#kick();
  }

  /** New events from the poller (all scopes), every id up to `safe` settled. */
  offer(events: readonly FeedEvent[], safe: number): void {
    if (this.#closed) return;
    if (!this.#live) {
      this.#kick();
      return;
    }
    for (const ev of events) {
      if (ev.id <= this.#cursor || !inScope(this.scope, ev)) continue;
      this.#cursor = ev.id;
      if (!this.sink.event(ev)) {
        // The client is slow: stop pushing; the pump reads the rest from the table once it drained.
        this.#live = false;
        this.#kick();
        return;
      }
    }
    this.#cursor = Math.max(this.#cursor, safe);
  }

  #kick(): void {
    this.#pumping ??= this.#pump()
      .catch((err: unknown) => {
        // A failed read ends the stream; the client reconnects with its Last-Event-ID.
        this.feed.log.warn({ err }, 'event stream catch-up failed; closing it');
        this.close();
      })
      .finally(() => {
        this.#pumping = undefined;
      });
  }

  /** Reads this scope from the table until it reaches the poller, writing while the client takes it. */
  async #pump(): Promise<void> {
    while (!this.#closed) {
      if (this.sink.blocked()) {
        if (!(await this.sink.drained())) {
          this.sink.end();
          this.close();
          return;
        }
        continue;
      }
      const bound = this.feed.safe;
      if (this.#cursor >= bound) {
        this.#live = true;
        return;
      }
      const rows = await scopedEvents(this.feed.db, this.scope, this.#cursor, bound, PAGE);
      if (this.#closed) return;
      let written = 0;
      for (const r of rows) {
        this.#cursor = r.id;
        written++;
        if (!this.sink.event(r)) break;
      }
      if (written === rows.length && rows.length < PAGE) this.#cursor = Math.max(this.#cursor, bound);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    this.sink.end();
    this.onClose();
  }
}
