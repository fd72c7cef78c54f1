/**
 * The wallet node's Prometheus metrics (`rgbx_wallet_node_…`), listed with their meaning in the README
 * ("Metrics"). Built only when `[metrics] enabled` (else nothing is hooked or counted: see `buildWalletNode`).
 *
 * Cheap by construction, because a wallet call costs the HTTP process only ~0.4 ms of CPU: the per-route HTTP
 * figures (the kit's `instrument`) and the rgb-lib calls are counted in plain numbers on series made once per label
 * set (the kit's `plainCounter` / `plainHistogram`: one callback hook, two map lookups and a few additions per
 * request; no promise, no label hashing) and turned into the exposition only when scraped. Node's process metrics
 * are the kit's: read at scrape time, no GC observer (a JS callback per garbage collection). Label sets are bounded: route templates, HTTP methods and statuses, rgb-lib's function names. Everything
 * that is a state (children, wallets, queues, budget, pending begins) is read at scrape time by the gauges'
 * `collect`, never kept up to date per call.
 */
import {
  type CounterSeries,
  type HistogramSeries,
  type PlainCounter,
  type PlainHistogram,
  type ServiceApp,
  ServiceMetrics,
} from '@rgbx/service-kit';
import { pendingBeginsSummary, trackBegins } from './begins.ts';
import type { ChildPool } from './pool.ts';
import type { WalletRegistry } from './wallets.ts';

/** rgb-lib call latency buckets (seconds): sub-millisecond reads (listassets ~0.7 ms) … full syncs and proxies (60 s). */
export const RGBLIB_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** Why a child process exited (counted as a restart: the next call starts a fresh one). */
export type ChildExitReason = 'isolation' | 'died';

/** Why a wallet changed child: moved off a stuck child (isolation), or a closed one back to a base child. */
export type WalletMoveReason = 'isolation' | 'rehome';

/** The 503 refusals counted by reason (their error codes). */
const REFUSALS: Record<string, string> = {
  WALLETS_BUSY: 'wallets_busy',
  INDEXER_UNAVAILABLE: 'indexer_unavailable',
};

/** Per rgb-lib call name: its latency and its failures. */
interface CallSeries {
  latency: HistogramSeries;
  errors: CounterSeries;
}

export class WalletNodeMetrics {
  readonly kit: ServiceMetrics;
  readonly #rgbCalls: PlainHistogram;
  readonly #rgbErrors: PlainCounter;
  readonly #callSeries = new Map<string, CallSeries>();
  readonly #moves;
  readonly #restarts;
  readonly #closedForRoom;
  readonly #refreshRuns;
  readonly #refreshFailures;
  readonly #refusals;
  readonly #webhookAttempts;

  constructor(opts: { processMetrics?: boolean } = {}) {
    // The kit samples the event loop lag every 100 ms, not prom-client's 10 ms: 100 wake-ups a second cost ~5 ms of
    // CPU per second, idle or not (measured; ~1.5 % of the HTTP process at 770 listassets/s).
    const m = new ServiceMetrics('wallet_node', opts);
    this.kit = m;
    this.#rgbCalls = m.plainHistogram(
      'rgblib_call_duration_seconds',
      'rgb-lib calls as the HTTP process sees them (IPC to the child included), by call',
      RGBLIB_BUCKETS,
    );
    this.#rgbErrors = m.plainCounter(
      'rgblib_call_errors_total',
      'rgb-lib calls that failed (an rgb-lib error, a deadline, a child that died), by call',
    );
    this.#moves = m.counter(
      'wallet_moves_total',
      'Wallets moved to another rgb-lib child, by reason (isolation: off a stuck child; rehome: back to a base child)',
      ['reason'],
    );
    this.#restarts = m.counter(
      'child_restarts_total',
      'rgb-lib child processes that exited while the node runs (a fresh one starts on the next call), by reason (isolation: restarted after wallets moved off it; died: crashed, killed at a deadline or from outside)',
      ['reason'],
    );
    this.#closedForRoom = m.counter(
      'wallets_closed_for_room_total',
      'Idle wallets closed to make room in the budget (max_open_wallets / max_online_wallets)',
    );
    this.#refreshRuns = m.counter(
      'background_refresh_runs_total',
      'Background refreshes of wallets with transfers in flight, started',
    );
    this.#refreshFailures = m.counter(
      'background_refresh_failures_total',
      'Background refreshes that failed (the indexer unavailable included)',
    );
    this.#refusals = m.counter(
      'refusals_total',
      'Requests answered 503 on purpose, by reason (wallets_busy: no budget seat in time; indexer_unavailable)',
      ['reason'],
    );
    this.#webhookAttempts = m.counter(
      'webhook_attempts_total',
      'Wallet webhook delivery attempts, by outcome (delivered: 2xx; failed: no answer, a non-2xx or a timeout, retried)',
      ['outcome'],
    );
    for (const outcome of ['delivered', 'failed']) this.#webhookAttempts.inc({ outcome }, 0);
    // Every reason present from the first scrape (0), so rate() and increase() see the first one.
    for (const reason of ['isolation', 'rehome']) this.#moves.inc({ reason }, 0);
    for (const reason of ['isolation', 'died']) this.#restarts.inc({ reason }, 0);
    for (const reason of Object.values(REFUSALS)) this.#refusals.inc({ reason }, 0);
  }

  /**
   * Per route, the kit's `instrument` (`http_requests_total{method,route,status_code}` and
   * `http_request_duration_seconds{method,route}`, counted in plain numbers); and the 503 refusals (a hook that
   * runs on errors only).
   */
  instrument(app: ServiceApp): void {
    this.kit.instrument(app);
    app.addHook('onError', (_req, _reply, err, done) => {
      const reason = REFUSALS[(err as { code?: unknown }).code as string];
      if (reason !== undefined) this.#refusals.inc({ reason });
      done();
    });
  }

  /** One wallet webhook attempt (events/webhooks.ts). */
  webhookAttempt(delivered: boolean): void {
    this.#webhookAttempts.inc({ outcome: delivered ? 'delivered' : 'failed' });
  }

  /** Wallets waiting to retry a webhook, and event streams open (read at scrape time). */
  watchEvents(webhooks: { readonly retrying: number }, streams: { readonly open: number }): void {
    this.kit.gauge(
      'webhook_wallets_retrying',
      'Wallets whose webhook delivery waits for a retry (the receiver failed the last attempt)',
      [],
      (g) => g.set(webhooks.retrying),
    );
    this.kit.gauge('event_streams', 'GET /wallet/events streams open', [], (g) => g.set(streams.open));
  }

  /** One rgb-lib call of `seconds` (`ok` false: it failed). Series are created once per call name. */
  rgbCall(call: string, seconds: number, ok: boolean): void {
    let s = this.#callSeries.get(call);
    if (s === undefined) {
      s = { latency: this.#rgbCalls.series({ call }), errors: this.#rgbErrors.series({ call }) };
      this.#callSeries.set(call, s);
    }
    s.latency.observe(seconds);
    if (!ok) s.errors.value++;
  }

  walletMoved(reason: WalletMoveReason): void {
    this.#moves.inc({ reason });
  }

  childExited(reason: ChildExitReason): void {
    this.#restarts.inc({ reason });
  }

  closedForRoom(): void {
    this.#closedForRoom.inc();
  }

  refreshStarted(): void {
    this.#refreshRuns.inc();
  }

  refreshFailed(): void {
    this.#refreshFailures.inc();
  }

  /** The gauges, read from the pool, the registry and the begins' records at each scrape. */
  watch(pool: ChildPool, registry: WalletRegistry, dataDir: string): void {
    const m = this.kit;
    // A child that exits while the node runs is replaced by the next call: a restart. Not counted: a spare stopped
    // because it holds no wallet, and the children ending at shutdown.
    pool.onSlot((slot) => {
      slot.host.on('child-exit', () => {
        if (pool.closing || slot.stoppingSpare) return;
        this.childExited(slot.tainted ? 'isolation' : 'died');
      });
    });
    m.gauge(
      'children',
      'rgb-lib child slots by state (idle: nothing to do; busy: running a call; stuck: running one call past the isolation budget; stopped: a spare with no process)',
      ['state'],
      (g) => {
        const now = Date.now();
        let idle = 0;
        let busy = 0;
        let stuck = 0;
        let stopped = 0;
        for (const s of pool.slots) {
          if (pool.isStuck(s, now)) stuck++;
          else if (s.queued > 0) busy++;
          else if (s.host.pid === undefined && s.index >= pool.baseSize) stopped++;
          else idle++;
        }
        g.set({ state: 'idle' }, idle);
        g.set({ state: 'busy' }, busy);
        g.set({ state: 'stuck' }, stuck);
        g.set({ state: 'stopped' }, stopped);
      },
    );
    m.gauge(
      'queued_calls',
      "Calls waiting in the children's queues (not running), by priority (foreground: client calls; background: refreshes, idle closes, begin releases)",
      ['priority'],
      (g) => {
        let fg = 0;
        let bg = 0;
        for (const s of pool.slots) {
          const w = s.waiting;
          fg += w.foreground;
          bg += w.background;
        }
        g.set({ priority: 'foreground' }, fg);
        g.set({ priority: 'background' }, bg);
      },
    );
    // One read of the registry per scrape, shared by the wallet gauges (collected in order, synchronously).
    let stats: ReturnType<WalletRegistry['stats']> | undefined;
    const read = () => {
      stats = registry.stats();
      return stats;
    };
    m.gauge('wallets_known', 'Wallet contexts in memory (open or not)', [], (g) => {
      g.set(read().known);
    });
    m.gauge('wallets_open', 'Wallets open in an rgb-lib child (online or not)', [], (g) => {
      g.set((stats ?? read()).open);
    });
    m.gauge('wallets_online', 'Wallets open and online (each holds its indexer connections)', [], (g) => {
      g.set((stats ?? read()).online);
    });
    m.gauge(
      'budget_seats_used',
      'Budget seats in use, by kind (open, online): open wallets plus closes in progress and handles abandoned in busy children',
      ['kind'],
      (g) => {
        const b = (stats ?? read()).budget;
        g.set({ kind: 'open' }, b.open);
        g.set({ kind: 'online' }, b.online);
      },
    );
    m.gauge(
      'budget_seats_max',
      'The budget, by kind: wallet.max_open_wallets (open), wallet.max_online_wallets (online)',
      ['kind'],
      (g) => {
        const b = (stats ?? read()).budget;
        g.set({ kind: 'open' }, b.max_open);
        g.set({ kind: 'online' }, b.max_online);
      },
    );
    m.gauge('budget_waiting_calls', 'Calls waiting for a budget seat, by priority', ['priority'], (g) => {
      const b = (stats ?? read()).budget;
      g.set({ priority: 'foreground' }, b.waiting);
      g.set({ priority: 'background' }, b.waiting_background);
      stats = undefined; // the last of the registry's gauges: the next scrape reads again
    });
    trackBegins(true);
    m.gauge(
      'pending_begins',
      'Begins served (or found reserved) and neither ended nor released, in the wallets this process has read or written since it started',
      [],
      (g) => {
        g.set(pendingBeginsSummary(dataDir).count);
      },
    );
    m.gauge(
      'oldest_pending_begin_age_seconds',
      'Age of the oldest of those begins (0 when there is none)',
      [],
      (g) => {
        const oldest = pendingBeginsSummary(dataDir).oldestSince;
        g.set(oldest === undefined ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
      },
    );
  }
}
