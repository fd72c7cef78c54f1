import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import client from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorEnvelope } from './errors.ts';
import { createLogger } from './logger.ts';
import { ServiceMetrics, startMetricsServer } from './metrics.ts';
import { createServer } from './server.ts';

const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on an exposition: its findings (empty when it passes). */
function promtoolCheck(text: string): { status: number | null; out: string } {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('ServiceMetrics', () => {
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of closers) await c();
  });

  it('names by the conventions: prefix, counters end in _total, latency histograms in seconds', () => {
    const m = new ServiceMetrics('demo', { processMetrics: false });
    expect(() => m.counter('requests', 'x')).toThrow(/must end with _total/);
    expect(() => m.histogram('latency_ms', 'x')).toThrow(/must end with _seconds/);
    expect(() => m.gauge('Bad-Name', 'x')).toThrow(/must match/);
    expect(() => new ServiceMetrics('no spaces')).toThrow(/service name/);
    const c = m.counter('jobs_total', 'Jobs done', ['outcome']);
    c.inc({ outcome: 'ok' }, 3);
    expect(c).toBeDefined();
  });

  it('counts requests by method, route template and status, times them, and serves /metrics on its own listener', async () => {
    const m = new ServiceMetrics('demo');
    const app = createServer({
      name: 'demo',
      version: '1',
      logger: createLogger({ name: 'demo', level: 'silent' }),
      envelope: ErrorEnvelope.factory,
    });
    app.addSchema(ErrorEnvelope.schema);
    m.instrument(app);
    app.get('/things/:id', async (req) => ({ id: (req.params as { id: string }).id }));
    await app.ready();
    closers.push(() => app.close());
    for (const id of ['1', '2', '3'])
      expect((await app.inject({ url: `/things/${id}` })).statusCode).toBe(200);
    expect((await app.inject({ url: '/nowhere' })).statusCode).toBe(404);

    const server = await startMetricsServer(m, { host: '127.0.0.1', port: 0 });
    closers.push(() => server.close());
    const res = await fetch(server.url);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    // One series per route template, not per id; unknown paths share one label value.
    expect(text).toContain(
      'rgbx_demo_http_requests_total{method="GET",route="/things/:id",status_code="200"} 3',
    );
    expect(text).toContain(
      'rgbx_demo_http_requests_total{method="GET",route="unmatched",status_code="404"} 1',
    );
    expect(text).toMatch(
      /rgbx_demo_http_request_duration_seconds_count\{method="GET",route="\/things\/:id"\} 3/,
    );
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect((await fetch(server.url.replace('/metrics', '/'))).status).toBe(404);
    if (existsSync(PROMTOOL)) expect(promtoolCheck(text)).toEqual({ status: 0, out: '' });
  });

  it("Node's process metrics: prom-client's defaults but the GC observer, which is opt-in", async () => {
    const names = async (r: client.Registry) => (await r.getMetricsAsJSON()).map((x) => x.name).sort();
    const all = new client.Registry();
    client.collectDefaultMetrics({ register: all });
    const expected = (await names(all)).filter(
      (n) => n !== 'nodejs_gc_duration_seconds' && !/^nodejs_active_\w+_total$/.test(n),
    );
    expect(expected).toContain('nodejs_eventloop_lag_p99_seconds');
    expect(await names(new ServiceMetrics('demo').registry)).toEqual(expected);
    expect(await names(new ServiceMetrics('demo', { gcDurations: true }).registry)).toEqual(
      [...expected, 'nodejs_gc_duration_seconds'].sort(),
    );
    expect(await names(new ServiceMetrics('demo', { processMetrics: false }).registry)).toEqual([]);
  });

  it('plain counters and histograms: series made once, exported as prom-client exports its own', async () => {
    const m = new ServiceMetrics('demo', { processMetrics: false });
    expect(() => m.plainCounter('jobs', 'x')).toThrow(/must end with _total/);
    expect(() => m.plainHistogram('wait_ms', 'x')).toThrow(/must end with _seconds/);
    const c = m.plainCounter('jobs_total', 'Jobs done, by outcome');
    const ok = c.series({ outcome: 'ok' });
    c.series({ outcome: 'failed' });
    ok.value += 2;
    ok.value++;
    const h = m.plainHistogram('wait_seconds', 'Waits', [0.1, 1]);
    const w = h.series({ queue: 'a' });
    for (const v of [0.05, 0.1, 0.5, 3]) w.observe(v);
    const ref = new client.Registry();
    const rc = new client.Counter({
      name: 'rgbx_demo_jobs_total',
      help: 'Jobs done, by outcome',
      labelNames: ['outcome'],
      registers: [ref],
    });
    rc.inc({ outcome: 'ok' }, 3);
    rc.inc({ outcome: 'failed' }, 0);
    const rh = new client.Histogram({
      name: 'rgbx_demo_wait_seconds',
      help: 'Waits',
      labelNames: ['queue'],
      buckets: [0.1, 1],
      registers: [ref],
    });
    for (const v of [0.05, 0.1, 0.5, 3]) rh.observe({ queue: 'a' }, v);
    // The same text, but for the order of the labels inside braces (`le` last here, first in prom-client's).
    const sorted = (t: string) =>
      t.replace(/\{([^}]*)\}/g, (_, l: string) => `{${l.split(',').sort().join(',')}}`);
    expect(sorted(await m.text())).toBe(sorted(await ref.metrics()));
    expect(await m.text()).toContain('rgbx_demo_wait_seconds_bucket{queue="a",le="1"} 3');
    if (existsSync(PROMTOOL)) expect(promtoolCheck(await m.text())).toEqual({ status: 0, out: '' });
    m.registry.resetMetrics();
    expect(await m.text()).toContain('rgbx_demo_jobs_total{outcome="ok"} 0');
  });

  it.runIf(existsSync(PROMTOOL))('promtool refuses what the conventions forbid (the check can fail)', () => {
    const bad =
      '# HELP x_total a counter\n# TYPE x_total counter\nx_total 1\n# HELP latency_ms no unit\n# TYPE latency_ms gauge\nlatency_ms 3\n';
    const r = promtoolCheck(bad);
    expect(r.status).not.toBe(0);
  });
});
