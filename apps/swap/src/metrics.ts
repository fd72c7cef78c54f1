/**
 * The swap service's Prometheus metrics (`rgbx_swap_…`), defined once here and carried on the context
 * (`ctx.metrics`). Each is listed with its meaning in the README ("Metrics"). Label values are bounded:
 * route templates, resolver ids and network ids of the configuration, error codes of the error table,
 * statuses of the lifecycle — never addresses, transaction ids or raw paths.
 *
 * Served by the kit's `serveMetrics` on `[metrics]`'s own listen address (main.ts), never on the API's.
 *
 * With `[metrics] enabled = false` (`new SwapMetrics({ enabled: false })`) nothing is recorded: every metric
 * is a no-op, the HTTP hooks are not installed, no gauge is registered, and Node's process metrics (an
 * event-loop delay monitor) are not started. The registry stays, empty. On, Node's process metrics are the kit's:
 * no GC observer unless `gcDurations` (`nodejs_gc_duration_seconds` costs a JS callback per collection, ~2 % of an
 * approval's CPU: bench/README.md).
 */
import { type Logger, ServiceError, ServiceMetrics } from '@rgbx/service-kit';
import { STATUSES } from './domain/lifecycle.ts';
import type { RfqOutcome } from './domain/rfq-client.ts';
import type { SwapDb } from './store/database.ts';
import { countIntentsByStatus } from './store/intent-store.ts';

/** Seconds: a tick on time is a few ms late; a blocked event loop or a slow pass shows in seconds. */
const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60];

/** The label of an outcome that is an error: its code in lower case (`no_route`), else `internal_error`. */
export function errorOutcome(err: unknown): string {
  return err instanceof ServiceError ? err.code.toLowerCase() : 'internal_error';
}

type Labels<L extends string> = Partial<Record<L, string | number>>;
/** What the service calls on a counter: the prom-client counter, or a no-op when metrics are off. */
export interface CounterOf<L extends string> {
  inc(labels: Labels<L>, value?: number): void;
  inc(value?: number): void;
}
/** What the service calls on a histogram: the prom-client histogram, or a no-op when metrics are off. */
export interface HistogramOf<L extends string> {
  observe(labels: Labels<L>, value: number): void;
  observe(value: number): void;
}
/** Every metric of a disabled `SwapMetrics`. */
const OFF: CounterOf<never> & HistogramOf<never> = { inc() {}, observe() {} };

export class SwapMetrics {
  readonly kit: ServiceMetrics;
  /** `false`: `[metrics] enabled = false`, nothing is recorded (see the module's comment). */
  readonly enabled: boolean;
  /** `POST /quote` and `/affiliate/v1/quotes/best`: `ok` or the error code. */
  readonly quotes: CounterOf<'outcome'>;
  /** Remote resolvers' RFQ exchanges (RfqStats counts the same, per resolver and outcome). */
  readonly rfqAnswers: CounterOf<'resolver' | 'outcome'>;
  /** Per enabled resolver: from the question to its answer, its error or the RFQ timeout. */
  readonly rfqLatency: HistogramOf<'resolver'>;
  readonly approvals: CounterOf<'mechanism' | 'result'>;
  readonly settlements: CounterOf<'network' | 'leg' | 'result'>;
  readonly settlementLatency: HistogramOf<'network'>;
  readonly schedulerLag: HistogramOf<never>;
  readonly schedulerPasses: CounterOf<'result'>;
  readonly schedulerExpired: CounterOf<never>;

  /**
   * `eventLoopMonitoringPrecisionMs` defaults to 100: prom-client's 10 ms wakes the process 100 times a second
   * (~5 ms of CPU per second idle, measured in `bench/swap.mjs --metrics`).
   */
  constructor(
    opts: {
      processMetrics?: boolean;
      enabled?: boolean;
      eventLoopMonitoringPrecisionMs?: number;
      gcDurations?: boolean;
    } = {},
  ) {
    this.enabled = opts.enabled !== false;
    const { enabled: _, ...kitOpts } = opts;
    const m = new ServiceMetrics(
      'swap',
      this.enabled ? { eventLoopMonitoringPrecisionMs: 100, ...kitOpts } : { processMetrics: false },
    );
    this.kit = m;
    if (!this.enabled) {
      this.quotes = this.rfqAnswers = this.approvals = this.settlements = OFF;
      this.schedulerPasses = this.schedulerExpired = OFF;
      this.rfqLatency = this.settlementLatency = this.schedulerLag = OFF;
      return;
    }
    this.quotes = m.counter('quotes_total', 'Quote requests answered, by outcome (ok or the error code)', [
      'outcome',
    ]);
    this.rfqAnswers = m.counter(
      'rfq_answers_total',
      'Remote resolvers RFQ exchanges, by resolver id and outcome',
      ['resolver', 'outcome'],
    );
    this.rfqLatency = m.histogram(
      'rfq_duration_seconds',
      'Time a resolver took to answer an RFQ (an answer, an error, or the RFQ timeout), by resolver id',
      ['resolver'],
    );
    this.approvals = m.counter(
      'approvals_total',
      'Approval submissions, by mechanism and result (approved, unchanged, or the error code)',
      ['mechanism', 'result'],
    );
    this.settlements = m.counter(
      'settlement_verifications_total',
      'Settlement reports verified on chain, by network id, leg and result (accepted or the refusal code)',
      ['network', 'leg', 'result'],
    );
    this.settlementLatency = m.histogram(
      'settlement_verification_duration_seconds',
      'Time to verify a reported settlement transaction on chain, by network id',
      ['network'],
    );
    this.schedulerLag = m.histogram(
      'scheduler_lag_seconds',
      'How late each expiry scheduler tick ran after its due time',
      [],
      LAG_BUCKETS,
    );
    this.schedulerPasses = m.counter('scheduler_passes_total', 'Expiry passes run, by result (ok, error)', [
      'result',
    ]);
    this.schedulerExpired = m.counter(
      'scheduler_expired_intents_total',
      'Intents the expiry scheduler expired past their deadline',
    );
  }

  /** Per route: requests by method, route template and status, latency. Off: no hook is added. */
  instrument(...args: Parameters<ServiceMetrics['instrument']>): void {
    if (this.enabled) this.kit.instrument(...args);
  }

  /** `rgbx_swap_intents{status}`: read from the database at each scrape (one grouped count). Off: nothing. */
  watchIntents(db: SwapDb, logger: Logger): void {
    if (!this.enabled) return;
    this.kit.gauge('intents', 'Intents stored, by status (read at scrape time)', ['status'], async (g) => {
      try {
        const rows = await countIntentsByStatus(db);
        g.reset();
        for (const s of STATUSES) g.set({ status: s }, 0);
        for (const r of rows) g.set({ status: r.status }, r.n);
      } catch (err) {
        // The previous values stay; the scrape still answers.
        logger.warn({ err }, 'metrics: intent count failed');
      }
    });
  }

  /** `requestForQuote`'s `onResolverDone`. */
  readonly observeRfq = (resolverId: string, seconds: number): void => {
    this.rfqLatency.observe({ resolver: resolverId }, seconds);
  };

  /** The listener for `RfqStats` (counted where the outcome is decided). */
  readonly onRfqOutcome = (resolverId: string, outcome: RfqOutcome): void => {
    this.rfqAnswers.inc({ resolver: resolverId, outcome });
  };
}
