/**
 * The Electrum server's Prometheus metrics (`rgbx_electrum_…`), listed with their meaning in the README
 * ("Metrics"). Electrum speaks JSON-RPC over TCP, so requests are counted by protocol method (the known
 * methods; anything else is `unknown`) and outcome. The per-method series are created once per method
 * and reused: counting a request allocates nothing.
 */
import { ServiceMetrics } from '@rgbx/service-kit';
import { ErrorCode } from './errors.ts';
import { handlers } from './protocol.ts';

const OUTCOMES: Record<number, string> = {
  [ErrorCode.PARSE_ERROR]: 'parse_error',
  [ErrorCode.INVALID_REQUEST]: 'invalid_request',
  [ErrorCode.METHOD_NOT_FOUND]: 'method_not_found',
  [ErrorCode.INVALID_PARAMS]: 'invalid_params',
  [ErrorCode.INTERNAL]: 'internal',
  [ErrorCode.BAD_REQUEST]: 'bad_request',
  [ErrorCode.DAEMON_ERROR]: 'daemon_error',
};

/** What the server reports at scrape time. */
export interface ElectrumGauges {
  height(): number;
  /** bitcoind's block count (a cheap RPC); rejects when unreachable. */
  bitcoindHeight(): Promise<number>;
  bitcoindReachable(): boolean;
  sessions(): number;
  subscriptions(): { headers: number; scripthash: number };
}

export class ElectrumMetrics {
  readonly kit: ServiceMetrics;
  readonly requests;
  readonly latency;
  readonly syncs;
  readonly reorgs;
  readonly #ok = new Map<string, { ok: { inc(): void }; latency: { observe(v: number): void } }>();
  #lag = 0;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const m = new ServiceMetrics('electrum', opts);
    this.kit = m;
    this.requests = m.counter(
      'requests_total',
      'JSON-RPC requests answered, by method (unknown methods: unknown) and outcome (ok or the error)',
      ['method', 'outcome'],
    );
    this.latency = m.histogram(
      'request_duration_seconds',
      'Request latency from the line read to the answer (queueing and index sync included), by method',
      ['method'],
    );
    this.syncs = m.counter('index_syncs_total', 'Index syncs with bitcoind, by result (ok, error)', [
      'result',
    ]);
    this.reorgs = m.counter('reorgs_total', 'Chain reorganizations seen by the index');
  }

  /** Counts one answered request (`code` undefined: ok). */
  request(method: string, seconds: number, code?: number): void {
    const name = Object.hasOwn(handlers, method) ? method : 'unknown';
    if (code === undefined) {
      let c = this.#ok.get(name);
      if (!c) {
        c = {
          ok: this.requests.labels({ method: name, outcome: 'ok' }),
          latency: this.latency.labels({ method: name }),
        };
        this.#ok.set(name, c);
      }
      c.ok.inc();
      c.latency.observe(seconds);
      return;
    }
    this.requests.inc({ method: name, outcome: OUTCOMES[code] ?? 'bitcoind_error' });
    this.latency.observe({ method: name }, seconds);
  }

  /** The gauges read from the server at each scrape; bitcoind's height waits at most 1 s. */
  watch(g: ElectrumGauges): void {
    this.kit.gauge('tip_height', 'Height of the indexed tip', [], (m) => {
      m.set(g.height());
    });
    this.kit.gauge(
      'tip_lag_blocks',
      'Blocks bitcoind is ahead of the index (read at scrape time; the last value while bitcoind does not answer within 1 s)',
      [],
      async (m) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          const tip = await Promise.race([
            g.bitcoindHeight(),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error('timeout')), 1000);
            }),
          ]);
          this.#lag = Math.max(0, tip - g.height());
        } catch {
          // Keep the last value; bitcoind_reachable says why.
        } finally {
          clearTimeout(timer);
        }
        m.set(this.#lag);
      },
    );
    this.kit.gauge(
      'bitcoind_reachable',
      '1 when the latest index sync with bitcoind succeeded, else 0',
      [],
      (m) => {
        m.set(g.bitcoindReachable() ? 1 : 0);
      },
    );
    this.kit.gauge('sessions', 'Client connections open', [], (m) => {
      m.set(g.sessions());
    });
    this.kit.gauge(
      'subscriptions',
      'Subscriptions held by open connections, by kind (headers: connections subscribed; scripthash: scripthashes)',
      ['kind'],
      (m) => {
        const s = g.subscriptions();
        m.set({ kind: 'headers' }, s.headers);
        m.set({ kind: 'scripthash' }, s.scripthash);
      },
    );
  }
}
