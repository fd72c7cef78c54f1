/**
 * Prometheus metrics for a service (`prom-client`): one registry per service, names by the Prometheus
 * conventions (`rgbx_<service>_<what>_<unit>`, counters end in `_total`, durations are histograms in
 * seconds), the per-route HTTP figures every service has, Node's process metrics, and `GET /metrics` on
 * a listen address of its own (default loopback), so it is never served with the public API by accident.
 *
 * @example
 * const metrics = new ServiceMetrics('swap');
 * metrics.instrument(app); // requests by method, route, status; latency
 * const quotes = metrics.counter('quotes_total', 'Quotes answered, by outcome', ['outcome']);
 * quotes.inc({ outcome: 'ok' });
 * const server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 9402 });
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import { type Static, Type } from 'typebox';
import {
  type CounterSeries,
  collectProcessMetrics,
  type HistogramSeries,
  PlainCounter,
  PlainHistogram,
  registerPlain,
} from './plain-metrics.ts';
import type { ServiceApp } from './server.ts';

/** Latency buckets (seconds) for HTTP routes and chain reads: 5 ms … 60 s. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** `[metrics]` of a service's TOML: where `GET /metrics` listens. */
export const MetricsConfigSchema = (defaultPort: number) =>
  Type.Object(
    {
      /** Serve `/metrics` at all. */
      enabled: Type.Boolean({ default: true }),
      /** Its own address (default loopback): never the public API's listener. */
      listen_address: Type.String({ minLength: 1, default: '127.0.0.1' }),
      /** 0: any free port (tests). */
      port: Type.Integer({ minimum: 0, maximum: 65_535, default: defaultPort }),
    },
    { additionalProperties: false, default: {} },
  );
export type MetricsConfig = Static<ReturnType<typeof MetricsConfigSchema>>;

const NAME = /^[a-z_][a-z0-9_]*$/;

/** Per route and method: the latency series and the request counters by status. */
interface RouteSeries {
  latency: HistogramSeries;
  byStatus: Map<number, CounterSeries>;
}

export class ServiceMetrics {
  readonly registry: client.Registry;
  /** `rgbx_<service>_`. */
  readonly prefix: string;

  /**
   * `processMetrics` (default true): Node's own (CPU, memory, event loop delay, handles, heap; the standard
   * `process_*` / `nodejs_*` names), read at scrape time. `eventLoopMonitoringPrecisionMs` (default 100): how often
   * the event loop delay is sampled (prom-client's 10 ms wakes an idle process 100 times a second, ~5 ms of CPU per
   * second on this machine; 100 ms a tenth of that). `gcDurations` (default false): also
   * `nodejs_gc_duration_seconds`, which costs a performance entry and a JS callback per garbage collection (~2 %
   * of a swap approval's CPU, bench/README.md): opt-in.
   */
  constructor(
    service: string,
    opts: { processMetrics?: boolean; eventLoopMonitoringPrecisionMs?: number; gcDurations?: boolean } = {},
  ) {
    if (!NAME.test(service)) throw new Error(`metrics: service name must match ${NAME}, got ${service}`);
    this.prefix = `rgbx_${service}_`;
    this.registry = new client.Registry();
    if (opts.processMetrics !== false)
      collectProcessMetrics(this.registry, {
        gc: opts.gcDurations === true,
        eventLoopMonitoringPrecision: opts.eventLoopMonitoringPrecisionMs ?? 100,
      });
  }

  #name(name: string, suffix?: string): string {
    if (!NAME.test(name)) throw new Error(`metrics: name must match ${NAME}, got ${name}`);
    if (suffix && !name.endsWith(suffix)) throw new Error(`metrics: ${name} must end with ${suffix}`);
    return `${this.prefix}${name}`;
  }

  /** A counter; `name` without the prefix, ending in `_total`. */
  counter<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) {
    return new client.Counter<L>({
      name: this.#name(name, '_total'),
      help,
      labelNames: [...labelNames],
      registers: [this.registry],
    });
  }

  /** A gauge; `collect` runs at each scrape (read a current value there). */
  gauge<L extends string = string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: (g: client.Gauge<L>) => void | Promise<void>,
  ) {
    return new client.Gauge<L>({
      name: this.#name(name),
      help,
      labelNames: [...labelNames],
      registers: [this.registry],
      ...(collect
        ? {
            async collect(this: client.Gauge<L>) {
              await collect(this);
            },
          }
        : {}),
    });
  }

  /** A histogram in seconds; `name` ends in `_seconds` unless `buckets` says otherwise. */
  histogram<L extends string = string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    buckets: number[] = LATENCY_BUCKETS,
  ) {
    return new client.Histogram<L>({
      name: this.#name(name, buckets === LATENCY_BUCKETS ? '_seconds' : undefined),
      help,
      labelNames: [...labelNames],
      buckets,
      registers: [this.registry],
    });
  }

  /**
   * A counter counted in plain numbers (`name` without the prefix, ending in `_total`): for hot paths, keep one
   * `series(labels)` per label set and add to its `value`. Exported at scrape time like a prom-client counter.
   */
  plainCounter(name: string, help: string): PlainCounter {
    return registerPlain(this.registry, new PlainCounter(this.#name(name, '_total'), help));
  }

  /** A histogram counted in plain numbers (see `plainCounter`): keep one `series(labels)` per label set. */
  plainHistogram(name: string, help: string, buckets: readonly number[] = LATENCY_BUCKETS): PlainHistogram {
    return registerPlain(
      this.registry,
      new PlainHistogram(
        this.#name(name, buckets === LATENCY_BUCKETS ? '_seconds' : undefined),
        help,
        buckets,
      ),
    );
  }

  /**
   * Per route: `<prefix>http_requests_total{method,route,status_code}` and
   * `<prefix>http_request_duration_seconds{method,route}`. The route is the matched template
   * (`/wallet/:id`), or `unmatched` (404s of unknown paths do not grow the label set).
   *
   * One callback `onResponse` hook, no per-request state: Fastify stamps every request's start before its
   * onRequest hooks and its end when the response is finished (`reply.elapsedTime`, ms). The series are made once
   * per route, method and status and counted in plain numbers (two map lookups and a few additions per request;
   * no label validation or hashing).
   */
  instrument(app: ServiceApp): void {
    const requests = this.plainCounter(
      'http_requests_total',
      'HTTP requests answered, by method, route and status',
    );
    const latency = this.plainHistogram(
      'http_request_duration_seconds',
      'HTTP request latency, by method and route',
    );
    const byRoute = new Map<string, Map<string, RouteSeries>>();
    app.addHook('onResponse', (req, reply, done) => {
      const route = req.routeOptions.url ?? 'unmatched';
      let methods = byRoute.get(route);
      if (methods === undefined) {
        methods = new Map();
        byRoute.set(route, methods);
      }
      const method = req.method;
      let s = methods.get(method);
      if (s === undefined) {
        s = { latency: latency.series({ method, route }), byStatus: new Map() };
        methods.set(method, s);
      }
      const code = reply.statusCode;
      let c = s.byStatus.get(code);
      if (c === undefined) {
        c = requests.series({ method, route, status_code: String(code) });
        s.byStatus.set(code, c);
      }
      c.value++;
      s.latency.observe(reply.elapsedTime / 1000);
      done();
    });
  }

  /** The exposition (text format 0.0.4). */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** Serves `GET /metrics` (and nothing else) on its own address. */
export async function startMetricsServer(
  metrics: ServiceMetrics,
  at: { host: string; port: number },
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('GET /metrics\n');
      return;
    }
    metrics.text().then(
      (body) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(body);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`metrics collection failed: ${(err as Error).message}\n`);
      },
    );
  });
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}

/**
 * `GET /metrics` where `[metrics]` says, or nothing when it is disabled; `metrics` is the kit or a service's own
 * metrics object that holds it (`kit`). A port that is taken fails the
 * start with a message saying what to change (no silent move: Prometheus scrapes the configured port).
 */
export async function serveMetrics(
  metrics: ServiceMetrics | { readonly kit: ServiceMetrics },
  cfg: MetricsConfig,
): Promise<MetricsServer | undefined> {
  if (!cfg.enabled) return undefined;
  try {
    return await startMetricsServer('kit' in metrics ? metrics.kit : metrics, {
      host: cfg.listen_address,
      port: cfg.port,
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
      throw new Error(
        `[metrics] cannot listen on ${cfg.listen_address}:${cfg.port} (${code}): set [metrics] port to a free one (0 = any) or enabled = false`,
        { cause: err },
      );
    throw err;
  }
}
