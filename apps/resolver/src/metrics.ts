/**
 * The resolver's Prometheus metrics (`rgbx_resolver_…`), listed with their meaning in the README
 * ("Metrics"). Label values are bounded: network ids and token addresses of the configuration, the
 * RFQ server's own paths, fixed reason categories (never a free-text reason, an intent id or an address
 * of a counterparty). Served by the kit's `serveMetrics` on `[metrics]`'s own listen address.
 */
import { type Logger, ServiceMetrics } from '@rgbx/service-kit';
import type { ResolverDb } from './store.ts';
import type { ChainWallet } from './wallets/wallet.ts';

/** How long a read of the wallets' balances serves scrapes before the chains are asked again. */
export const INVENTORY_CACHE_MS = 5_000;

/** The RFQ server's paths as labels (anything else is `other`). */
const PATHS = new Set(['/rfq', '/healthcheck']);
/** The refusal codes of the RFQ handler (`@rgbx/sdk` rfqHandler); anything else is `other`. */
const REFUSALS = new Set([
  'bad_signature',
  'stale',
  'replayed',
  'malformed',
  'request_id_mismatch',
  'too_large',
  'method_not_allowed',
  'internal',
]);

export type FillTransition = 'accepted' | 'declined' | 'paid' | 'claimed' | 'refunded' | 'abandoned';

/** A decline's or abandonment's free-text reason as a bounded category. */
export function reasonCategory(reason: string): string {
  if (reason.startsWith('no wallet for the source')) return 'no_source_wallet';
  if (reason.startsWith('no wallet for the destination')) return 'no_dest_wallet';
  if (reason.startsWith('inventory')) return 'inventory';
  if (reason.startsWith('too little time')) return 'deadline';
  if (/deposit transaction .* failed/.test(reason)) return 'deposit_failed';
  if (reason.includes('deadline too close')) return 'deadline';
  if (reason.includes('payment dead')) return 'payment_dead';
  return 'other';
}

export class ResolverMetrics {
  readonly kit: ServiceMetrics;
  readonly httpRequests;
  readonly httpLatency;
  readonly rfqs;
  readonly fills;
  readonly txs;
  readonly stepFailures;
  readonly feedReconnects;
  #feedConnections = 0;
  #lastEventAt: number;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const m = new ServiceMetrics('resolver', opts);
    this.kit = m;
    this.httpRequests = m.counter(
      'http_requests_total',
      'Requests to the RFQ server, by method, path and status',
      ['method', 'path', 'status_code'],
    );
    this.httpLatency = m.histogram('http_request_duration_seconds', 'RFQ server request latency, by path', [
      'path',
    ]);
    this.rfqs = m.counter(
      'rfqs_total',
      'RFQs answered, by outcome (quoted, no_quote, refused) and reason (ok; the no-quote reason; the refusal code)',
      ['outcome', 'reason'],
    );
    this.fills = m.counter(
      'fills_total',
      'Fill state transitions, by transition and reason (declined and abandoned: a category; others: none)',
      ['transition', 'reason'],
    );
    this.txs = m.counter(
      'transactions_total',
      'Transactions signed (and stored), broadcast, or found dead, by network id and role',
      ['network', 'role', 'event'],
    );
    this.stepFailures = m.counter(
      'fill_step_failures_total',
      'Fill steps that failed and wait for a retry, by intent status and kind (transient, permanent)',
      ['status', 'kind'],
    );
    this.feedReconnects = m.counter(
      'event_feed_reconnects_total',
      "Connections to the swap service's event feed after the first",
    );
    this.#lastEventAt = Date.now();
    m.gauge(
      'event_feed_last_event_age_seconds',
      'Seconds since the last event of the feed (since the start before the first)',
      [],
      (g) => {
        g.set((Date.now() - this.#lastEventAt) / 1000);
      },
    );
  }

  /** A `fetch` for the swap client that counts the event feed's (re)connections. */
  countingFetch(inner: typeof fetch = fetch): typeof fetch {
    return (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.includes('/resolver/v1/events') && this.#feedConnections++ > 0) this.feedReconnects.inc();
      return inner(input, init);
    };
  }

  eventSeen(): void {
    this.#lastEventAt = Date.now();
  }

  fill(transition: FillTransition, reason = 'none'): void {
    this.fills.inc({ transition, reason });
  }

  tx(network: number, role: string, event: 'signed' | 'broadcast' | 'dead'): void {
    this.txs.inc({ network: String(network), role, event });
  }

  /** Counts one RFQ server request when its answer is sent (the refusal code read from the body). */
  observeRequest(method: string, rawPath: string, status: number, seconds: number, body?: string): void {
    const path = PATHS.has(rawPath) ? rawPath : 'other';
    this.httpRequests.inc({
      method: method === 'POST' || method === 'GET' ? method : 'other',
      path,
      status_code: String(status),
    });
    this.httpLatency.observe({ path }, seconds);
    if (path === '/rfq' && status !== 200) {
      let code = 'other';
      try {
        const c = (JSON.parse(body ?? '') as { code?: unknown }).code;
        if (typeof c === 'string' && REFUSALS.has(c)) code = c;
      } catch {}
      this.rfqs.inc({ outcome: 'refused', reason: code });
    }
  }

  /** `rgbx_resolver_open_transactions{network,role}`: signed or sent, not yet confirmed (at scrape time). */
  watchStore(db: ResolverDb, log: Logger): void {
    this.kit.gauge(
      'open_transactions',
      'Stored transactions not yet confirmed or dead (signed or sent), by network id and role',
      ['network', 'role'],
      async (g) => {
        try {
          const rows = await db
            .selectFrom('txs')
            .select((eb) => ['network_id', 'role', eb.fn.countAll<number | string>().as('n')])
            .where('state', 'in', ['signed', 'sent'])
            .groupBy(['network_id', 'role'])
            .execute();
          g.reset();
          for (const r of rows) g.set({ network: String(r.network_id), role: r.role }, Number(r.n));
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'metrics: open transaction count failed');
        }
      },
    );
  }

  /**
   * `rgbx_resolver_inventory_lots{network,token}`: the wallets' balances of the configured destination
   * tokens, read at most every {@link INVENTORY_CACHE_MS} (a scrape in between gets the last read).
   */
  watchInventory(
    wallets: ReadonlyMap<number, ChainWallet>,
    tokens: readonly { network: number; token: string }[],
    log: Logger,
  ): void {
    let readAt = 0;
    let reading: Promise<void> | undefined;
    const values = new Map<string, { network: string; token: string; lots: number }>();
    const refresh = async () => {
      for (const t of tokens) {
        const w = wallets.get(t.network);
        if (!w) continue;
        try {
          const lots = Number(await w.balance(t.token));
          values.set(`${t.network}/${t.token}`, { network: String(t.network), token: t.token, lots });
        } catch (err) {
          log.warn(
            { network: t.network, token: t.token, err: (err as Error).message },
            'metrics: balance read failed',
          );
        }
      }
      readAt = Date.now();
    };
    this.kit.gauge(
      'inventory_lots',
      'Wallet balance per network id and destination token, in lots (read at most every 5 s)',
      ['network', 'token'],
      async (g) => {
        if (Date.now() - readAt >= INVENTORY_CACHE_MS) {
          reading ??= refresh().finally(() => {
            reading = undefined;
          });
          await reading;
        }
        for (const v of values.values()) g.set({ network: v.network, token: v.token }, v.lots);
      },
    );
  }
}
