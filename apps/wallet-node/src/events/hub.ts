/**
 * The wallet events of the node: observations (a snapshot read after a background refresh, or queued after a
 * client's call that can move transfers) become events in the wallet's log (log.ts), pushed to its open streams
 * (GET /wallet/events) and to `onAppend` (the wallet's webhook, webhooks.ts). Everything here runs in the HTTP process from results the
 * rgb-lib children already answered: the diff is a few object comparisons, the log a small file append.
 */
import type { Logger } from '@rgbx/service-kit';
import type { WalletContext, WalletRegistry } from '../wallets.ts';
import { EventLog } from './log.ts';
import {
  type BeginReleasedEventBody,
  readWalletState,
  snapshotOf,
  type WalletEvent,
  type WalletState,
} from './state.ts';

/** Something that wants a wallet's new events as they are appended (an SSE stream). */
export interface EventListener {
  offer(events: readonly WalletEvent[]): void;
}

export interface WalletEventsOptions {
  retentionMs: number;
  log: Logger;
  /** Logs kept open (their state in memory); others are reopened from disk on use. */
  maxOpenLogs?: number;
}

export class WalletEvents {
  readonly #opts: WalletEventsOptions;
  readonly #logs = new Map<string, EventLog>();
  readonly #listeners = new Map<string, Set<EventListener>>();
  /** Wallets with an observation queued (`true`: asked again while it runs). */
  readonly #queued = new Map<string, boolean>();
  /** Called for every wallet with new events (the webhook dispatcher, webhooks.ts). */
  onAppend: ((wallet: string, dir: string) => void) | undefined;
  /** The highest event id a wallet's retention may drop (its webhook's undelivered events are held). */
  holdOf: ((wallet: string, dir: string) => number | undefined) | undefined;
  #registry: WalletRegistry | undefined;

  constructor(opts: WalletEventsOptions) {
    this.#opts = opts;
  }

  get retentionMs(): number {
    return this.#opts.retentionMs;
  }

  /** Binds the registry the observations are queued on. */
  attach(registry: WalletRegistry): void {
    this.#registry = registry;
    registry.events = this;
  }

  /** The log of the wallet in `dir` (opened once, kept among the most recently used). */
  logOf(wallet: string, dir: string): EventLog {
    let log = this.#logs.get(wallet);
    if (log) {
      this.#logs.delete(wallet);
    } else {
      log = EventLog.open(dir, wallet, this.#opts.retentionMs, () => this.holdOf?.(wallet, dir));
    }
    this.#logs.set(wallet, log);
    const max = this.#opts.maxOpenLogs ?? 1024;
    while (this.#logs.size > max) this.#logs.delete(this.#logs.keys().next().value as string);
    return log;
  }

  listen(wallet: string, l: EventListener): () => void {
    let set = this.#listeners.get(wallet);
    if (!set) {
      set = new Set();
      this.#listeners.set(wallet, set);
    }
    set.add(l);
    return () => {
      set.delete(l);
      if (set.size === 0 && this.#listeners.get(wallet) === set) this.#listeners.delete(wallet);
    };
  }

  #publish(wallet: string, dir: string, events: WalletEvent[]): void {
    if (events.length === 0) return;
    for (const l of [...(this.#listeners.get(wallet) ?? [])]) l.offer(events);
    this.onAppend?.(wallet, dir);
  }

  /**
   * A wallet's state as just read in its child's queue (no other call of it ran since): diffed against its
   * snapshot, the differences appended and pushed. Never throws (a failure to write is logged).
   */
  observed(ctx: WalletContext, dir: string, state: WalletState, source: 'refresh' | 'call'): void {
    const wallet = ctx.id.fingerprint;
    try {
      this.#publish(wallet, dir, this.logOf(wallet, dir).observe(snapshotOf(state), source));
    } catch (err) {
      this.#opts.log.warn({ wallet, err: (err as Error).message }, 'wallet events: observation not recorded');
    }
  }

  /** A new wallet was just created: its snapshot starts empty, so its first transfers are events too. */
  created(ctx: WalletContext, dir: string): void {
    const log = this.logOf(ctx.id.fingerprint, dir);
    if (!log.hasState) log.baseline();
  }

  /** A begin's holds were released (abortbegin, or its TTL): one `begin_released` event. */
  released(ctx: WalletContext, dir: string, body: Omit<BeginReleasedEventBody, 'type'>): void {
    const wallet = ctx.id.fingerprint;
    const source = body.reason === 'aborted' ? 'abortbegin' : 'begin_ttl';
    try {
      const events = this.logOf(wallet, dir).append([{ type: 'begin_released', ...body }], source);
      this.#publish(wallet, dir, events);
    } catch (err) {
      this.#opts.log.warn({ wallet, err: (err as Error).message }, 'wallet events: release not recorded');
    }
  }

  /**
   * After a client's call that may have changed transfers or balances: one read of the wallet (listassets and
   * listtransfers, offline) queued at background priority, at most one queued per wallet (a request while it
   * runs queues one more).
   */
  request(ctx: WalletContext): void {
    const registry = this.#registry;
    if (!registry) return;
    const wallet = ctx.id.fingerprint;
    if (this.#queued.has(wallet)) {
      this.#queued.set(wallet, true);
      return;
    }
    this.#queued.set(wallet, false);
    const dir = registry.walletDir(ctx);
    registry
      .use(ctx, { online: false, priority: 'background' }, async (w) => {
        this.#queued.set(wallet, false);
        this.observed(ctx, dir, await readWalletState(w), 'call');
      })
      .catch((err: Error) =>
        this.#opts.log.warn({ wallet, err: err.message }, 'wallet events: reading the wallet failed'),
      )
      .finally(() => {
        const again = this.#queued.get(wallet) === true;
        this.#queued.delete(wallet);
        if (again) this.request(ctx.dropped ? registry.resolve(ctx.id) : ctx);
      });
  }
}
