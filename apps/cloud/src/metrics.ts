/**
 * The cloud service's Prometheus metrics (`rgbx_cloud_…`), defined once here and carried on the cloud
 * (`cloud.metrics`). Each is listed with its meaning in the README ("Metrics").
 *
 * Two kinds, which matters with several instances on one database:
 * - what THIS instance did (counters and the latency histogram: deliveries it made, restarts and
 *   failures of the nodes it owns, its HTTP requests): sum them over instances;
 * - what the shared database holds (gauges read at scrape time: nodes by status, the webhook backlog,
 *   the signing key's age): every instance reports the same figures; take `max` over instances.
 *
 * Label values are bounded: statuses, outcomes and reasons from fixed lists, route templates, and
 * node ids only for nodes that have undelivered events (at most `PENDING_NODES_MAX` of them, the ones
 * waiting longest), so a fleet of healthy nodes adds no series.
 */
import { type Logger, ServiceMetrics } from '@rgbx/service-kit';
import { bigintNumber } from '@rgbx/store';
import type { AttemptOutcome, CloudDb, NodeStatus } from './db/schema.ts';

export const NODE_STATUSES: readonly NodeStatus[] = [
  'STARTING',
  'RUNNING',
  'PAUSED',
  'FAILED',
  'IN_PROGRESS',
];
/** Why the supervisor launched a node's process again. */
export const RESTART_REASONS = ['failure', 'requested'] as const;
export type RestartReason = (typeof RESTART_REASONS)[number];
/** Why a node became `FAILED`. */
export const FAILURE_REASONS = [
  'exited',
  'exited_while_starting',
  'start_timeout',
  'unhealthy',
  'start_error',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];
/** Finished attempts (`in_flight` is not an outcome; `interrupted` is counted by the instance that finds it). */
export const DELIVERY_OUTCOMES: readonly Exclude<AttemptOutcome, 'in_flight'>[] = [
  'success',
  'http_error',
  'network_error',
  'timeout',
  'blocked',
  'interrupted',
];
/** Nodes exported with their own `node_id` series (those with the oldest undelivered events). */
export const PENDING_NODES_MAX = 100;

/**
 * Seconds from a status change to its receipt: milliseconds when the receiver is up, then the retry
 * schedule's steps (5 s … 8 h) up to the 72 h give-up window.
 */
export const RECEIPT_BUCKETS = [
  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800,
  86400, 259200,
];

/** A query shared by the gauges of one scrape (prom-client collects every metric at once). */
function perScrape<T>(fn: () => Promise<T>, ttlMs = 200): () => Promise<T> {
  let last: { at: number; p: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at > ttlMs) {
      const p = fn();
      last = { at: now, p };
      // A failed read is not kept for the next scrape.
      p.catch(() => {
        if (last?.p === p) last = undefined;
      });
    }
    return last.p;
  };
}

export interface DeliveryObservation {
  outcome: Exclude<AttemptOutcome, 'in_flight'>;
  /** When the event was created (the status change), ms. */
  createdAt: number;
  /** When the answer came, ms. */
  at: number;
  /** The event's first successful delivery (not a redelivery of a delivered event). */
  firstReceipt: boolean;
  abandoned: boolean;
}

export class CloudMetrics {
  readonly kit: ServiceMetrics;
  readonly restarts;
  readonly failures;
  readonly deliveries;
  readonly abandoned;
  readonly receipt;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const m = new ServiceMetrics('cloud', opts);
    this.kit = m;
    this.restarts = m.counter(
      'node_restarts_total',
      'Node processes launched again by this instance, by reason (failure: the restart policy after FAILED; requested: a restart operation)',
      ['reason'],
    );
    this.failures = m.counter('node_failures_total', 'Nodes this instance marked FAILED, by reason', [
      'reason',
    ]);
    this.deliveries = m.counter(
      'webhook_deliveries_total',
      'Webhook delivery attempts finished by this instance, by outcome',
      ['outcome'],
    );
    this.abandoned = m.counter(
      'webhook_events_abandoned_total',
      'Webhook events this instance gave up on (give-up window over, or 410 Gone)',
    );
    this.receipt = m.histogram(
      'webhook_status_to_receipt_seconds',
      "From a status change (the event's creation) to the receiver's 2xx, first receipts delivered by this instance",
      [],
      RECEIPT_BUCKETS,
    );
    for (const reason of RESTART_REASONS) this.restarts.inc({ reason }, 0);
    for (const reason of FAILURE_REASONS) this.failures.inc({ reason }, 0);
    for (const outcome of DELIVERY_OUTCOMES) this.deliveries.inc({ outcome }, 0);
    this.abandoned.inc(0);
  }

  /** Per route: requests by method, route template and status, latency. */
  instrument(...args: Parameters<ServiceMetrics['instrument']>): void {
    this.kit.instrument(...args);
  }

  readonly onRestart = (reason: RestartReason): void => {
    this.restarts.inc({ reason });
  };

  readonly onFailure = (reason: FailureReason): void => {
    this.failures.inc({ reason });
  };

  readonly onDelivery = (d: DeliveryObservation): void => {
    this.deliveries.inc({ outcome: d.outcome });
    if (d.abandoned) this.abandoned.inc();
    if (d.outcome === 'success' && d.firstReceipt)
      this.receipt.observe(Math.max(0, d.at - d.createdAt) / 1000);
  };

  readonly onInterrupted = (n: number): void => {
    if (n > 0) this.deliveries.inc({ outcome: 'interrupted' }, n);
  };

  /** The gauges read from the (shared) database at each scrape. */
  watchDatabase(db: CloudDb, logger: Logger): void {
    const m = this.kit;
    const warn = (what: string) => (err: unknown) => logger.warn({ err }, `metrics: ${what} failed`);

    m.gauge(
      'nodes',
      'Nodes (not deleted), by status (read from the database at scrape time)',
      ['status'],
      async (g) => {
        try {
          const rows = await db
            .selectFrom('nodes')
            .select(['status', db.fn.countAll<number | string>().as('n')])
            .where('deleted_at', 'is', null)
            .groupBy('status')
            .execute();
          g.reset();
          for (const s of NODE_STATUSES) g.set({ status: s }, 0);
          for (const r of rows) g.set({ status: r.status }, Number(r.n));
        } catch (err) {
          // The previous values stay; the scrape still answers.
          warn('node count')(err);
        }
      },
    );

    const backlog = perScrape(async () => {
      const nodes = await db
        .selectFrom('webhook_events')
        .select(['node_id', db.fn.countAll<number | string>().as('n'), db.fn.min('created_at').as('oldest')])
        .where('state', '=', 'pending')
        .groupBy('node_id')
        .orderBy('oldest')
        .execute();
      return { nodes, now: Date.now() };
    });
    m.gauge(
      'webhook_pending_events',
      `Undelivered webhook events per node, only for nodes that have some (the ${PENDING_NODES_MAX} waiting longest)`,
      ['node_id'],
      async (g) => {
        try {
          const { nodes } = await backlog();
          g.reset();
          for (const r of nodes.slice(0, PENDING_NODES_MAX)) g.set({ node_id: r.node_id }, Number(r.n));
        } catch (err) {
          warn('webhook backlog')(err);
        }
      },
    );
    m.gauge(
      'webhook_oldest_pending_event_age_seconds',
      `Age of the oldest undelivered webhook event per node, only for nodes that have some (the ${PENDING_NODES_MAX} waiting longest)`,
      ['node_id'],
      async (g) => {
        try {
          const { nodes, now } = await backlog();
          g.reset();
          for (const r of nodes.slice(0, PENDING_NODES_MAX))
            g.set(
              { node_id: r.node_id },
              Math.max(0, now - bigintNumber(r.oldest as number | string)) / 1000,
            );
        } catch {
          // Logged by the gauge above.
        }
      },
    );
    m.gauge(
      'webhook_nodes_with_pending_events',
      'Nodes that have undelivered webhook events (all of them)',
      [],
      async (g) => {
        try {
          g.set((await backlog()).nodes.length);
        } catch {
          // Logged above.
        }
      },
    );

    m.gauge(
      'signing_key_age_seconds',
      'Age of the current webhook signing key, since it was activated (or created)',
      [],
      async (g) => {
        try {
          const k = await db
            .selectFrom('signing_keys')
            .select(['created_at', 'activated_at'])
            .where('status', '=', 'current')
            .executeTakeFirst();
          if (k) g.set(Math.max(0, Date.now() - bigintNumber(k.activated_at ?? k.created_at)) / 1000);
        } catch (err) {
          warn('signing key age')(err);
        }
      },
    );
  }
}
