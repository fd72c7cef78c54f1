/**
 * Metrics counted in plain numbers, exported at scrape time, for the hot paths (a request, an rgb-lib call), and
 * Node's process metrics without a callback per garbage collection.
 *
 * prom-client's `inc(labels)` / `observe(labels, v)` validate the labels and hash them into a key on every call; a
 * series here is made once per label set, kept by the caller, and is a number (`value++`) or a bucket array. The
 * registry reads them through the part of prom-client's metric interface it uses (`get`, `reset`), so the
 * exposition is prom-client's own (`_bucket{le}`, `_sum`, `_count`).
 */
import { createRequire } from 'node:module';
import type client from 'prom-client';

type Labels = Record<string, string>;

/** The part of prom-client's metric interface its registry reads (`get`), and `reset`. */
export interface ExportedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): { name: string; help: string; type: string; aggregator: string; values: ExportedValue[] };
  reset(): void;
}
interface ExportedValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** Registers a plain metric in a prom-client registry (typed there for its own classes only). */
export function registerPlain<T extends ExportedMetric>(registry: client.Registry, metric: T): T {
  registry.registerMetric(metric as unknown as Parameters<client.Registry['registerMetric']>[0]);
  return metric;
}

/** One counter series: a plain number, read at scrape time. */
export class CounterSeries {
  value = 0;
  readonly labels: Labels;
  constructor(labels: Labels) {
    this.labels = labels;
  }
}

/** A counter whose series are plain numbers (no per-increment work beyond `series.value++`). */
export class PlainCounter implements ExportedMetric {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly #series: CounterSeries[] = [];
  constructor(name: string, help: string) {
    this.name = name;
    this.help = help;
  }
  /** A new series (call once per label set and keep it). */
  series(labels: Labels): CounterSeries {
    const s = new CounterSeries(labels);
    this.#series.push(s);
    return s;
  }
  get() {
    const values = this.#series.map((s) => ({ labels: s.labels, value: s.value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
  reset(): void {
    for (const s of this.#series) s.value = 0;
  }
}

/** One histogram series: per-bucket counts (non-cumulative), sum and count. */
export class HistogramSeries {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last one above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    const b = this.#bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

/** A histogram whose series are plain arrays, exported as prom-client's (`_bucket{le}`, `_sum`, `_count`). */
export class PlainHistogram implements ExportedMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly bounds: readonly number[];
  readonly #series: HistogramSeries[] = [];
  constructor(name: string, help: string, bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.bounds = bounds;
  }
  series(labels: Labels): HistogramSeries {
    const s = new HistogramSeries(labels, this.bounds);
    this.#series.push(s);
    return s;
  }
  get() {
    const values: ExportedValue[] = [];
    for (const s of this.#series) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i]!;
        values.push({
          labels: { ...s.labels, le: this.bounds[i]! },
          value: acc,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
  reset(): void {
    for (const s of this.#series) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}

/**
 * prom-client's default metrics (`collectDefaultMetrics`: its modules, in its order) but for the GC one. Each is
 * read at scrape time (CPU, memory, handles, heap, version) or sampled by a libuv timer in C++ (the event loop
 * delay); the GC one (`nodejs_gc_duration_seconds`) is a `PerformanceObserver` on `gc` entries, which has Node
 * build a performance entry and run a JS callback on every collection, minor ones included: ~50–100 µs each
 * here, ~2 % of a swap approval's CPU (bench/README.md, "Metrics on vs off").
 */
const PROCESS_MODULES = [
  'processCpuTotal',
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
] as const;

type DefaultMetric = (registry: client.Registry, config: Record<string, unknown>) => void;
const requireCjs = createRequire(import.meta.url);

/**
 * Node's process metrics into `registry` (the standard `process_*` / `nodejs_*` names of prom-client 15), the GC
 * durations only when `gc` is true. `eventLoopMonitoringPrecision`: ms between event loop delay samples.
 */
export function collectProcessMetrics(
  registry: client.Registry,
  opts: { gc: boolean; eventLoopMonitoringPrecision: number },
): void {
  const config = { register: registry, eventLoopMonitoringPrecision: opts.eventLoopMonitoringPrecision };
  const modules: string[] = [...PROCESS_MODULES];
  // prom-client adds processResources only where Node has getActiveResourcesInfo (Node ≥ 17).
  if (typeof process.getActiveResourcesInfo !== 'function')
    modules.splice(modules.indexOf('processResources'), 1);
  if (opts.gc) modules.push('gc');
  for (const m of modules) (requireCjs(`prom-client/lib/metrics/${m}.js`) as DefaultMetric)(registry, config);
  // Gauges named `_total` break the convention (`promtool check metrics` refuses them) and are not kept; the same
  // figures are there per type as nodejs_active_handles / _requests / _resources.
  for (const n of [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ])
    registry.removeSingleMetric(n);
}
