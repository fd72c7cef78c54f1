/**
 * The cloud's Prometheus metrics as an operator scrapes them: the built service as a process
 * (`dist/main.js`, stand-in wallet nodes), `GET /metrics` on the listener of `[metrics]` (port 0 here,
 * announced as `metrics_url`), never on the public API. After a scripted workload — two nodes, a
 * requested restart, a pause, a killed node process restarted by the policy, deliveries to a receiver
 * that answers 200 and to one that answers 410 (abandoned at once), a manual redelivery — the counters
 * are exactly what happened, the gauges read the database, and `promtool check metrics` passes.
 * Two instances on one PostgreSQL: the counters of both add up to what happened; the database gauges
 * are the same on both.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestPgDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CloudProcess,
  cloudCli,
  killGroups,
  pidsWithArg,
  startCloudProcess,
} from './process-helpers.ts';
import { selfSignedCert, TestReceiver, testConfigText, until } from './test-support.ts';

const PROMTOOL = '/usr/bin/promtool';
const root = mkdtempSync(join(tmpdir(), 'cloud-metrics-'));
const tls = selfSignedCert(join(root, 'tls'));

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The value of one series (`name{labels}` exactly as exposed), or undefined. */
function sampleOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every series of a metric name: labels text → value. */
function seriesOf(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(l);
    if (m && m[1] === name) out[m[2] ?? ''] = Number(m[3]);
  }
  return out;
}

describe('cloud metrics (built service, stand-in wallet nodes)', () => {
  const dir = join(root, 'c');
  const conf = join(root, 'cloud.toml');
  let receiver: TestReceiver;
  let cloud: CloudProcess | undefined;
  let token = '';
  const nodePids: number[] = [];

  beforeAll(async () => {
    receiver = await new TestReceiver(tls).start();
    // `/gone` answers 410: the event is abandoned at its first attempt (one http_error each, no retries).
    receiver.respond = (r) =>
      r.path.startsWith('/gone') ? { status: 410, body: 'gone' } : { status: 200, body: '{"message":"ok"}' };
    writeFileSync(
      conf,
      testConfigText({ dir, databaseUrl: `sqlite:${join(dir, 'cloud.db')}`, caFile: tls.certFile }),
    );
    token = JSON.parse(await cloudCli(conf, 'tokens', 'create', '--account', 'ops')).token;
    cloud = await startCloudProcess(conf);
  }, 60_000);

  afterAll(async () => {
    cloud?.child.kill('SIGKILL');
    killGroups(nodePids);
    await receiver?.stop();
  });

  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${cloud!.url}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const node = async (id: string) =>
    (await (await api('GET', `/nodes/${id}`)).json()).data as {
      status: string;
      webhook: { pending: number; delivered: number; abandoned: number };
    };
  const scrape = async () => {
    const res = await fetch(cloud!.metricsUrl!);
    expect(res.status).toBe(200);
    return res.text();
  };

  it('serves /metrics on its own listener only, announced as metrics_url', async () => {
    expect(cloud!.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(cloud!.metricsUrl!).port).not.toBe(new URL(cloud!.url).port);
    // The public API has no /metrics, with or without a token.
    expect((await fetch(`${cloud!.url}/metrics`)).status).toBe(404);
    expect(
      (await fetch(`${cloud!.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(404);
    expect(
      (await fetch(`${cloud!.url}/api/metrics`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(404);
    // And the metrics listener serves nothing else.
    expect((await fetch(new URL('/api/nodes', cloud!.metricsUrl).toString())).status).toBe(404);
  });

  it('counts exactly what a scripted workload did; gauges read the database; promtool passes', async () => {
    const create = async (name: string, path: string) => {
      const r = await api('POST', '/nodes', {
        name,
        network: 'regtest',
        settings: { webhookUrl: receiver.url(path) },
      });
      expect(r.status).toBe(201);
      return (await r.json()).data.nodeId as string;
    };
    const a = await create('ok-node', '/ok');
    const b = await create('gone-node', '/gone');
    await until(
      'both RUNNING',
      async () => (await node(a)).status === 'RUNNING' && (await node(b)).status === 'RUNNING',
    );
    const settled = async (id: string, events: number) =>
      until(`${events} events of ${id} settled`, async () => {
        const w = (await node(id)).webhook;
        return w.pending === 0 && w.delivered + w.abandoned === events;
      });
    await settled(a, 2);
    await settled(b, 2);

    // A requested restart of A: IN_PROGRESS → STARTING → RUNNING.
    expect((await api('POST', `/nodes/${a}/restart`)).status).toBe(202);
    await until(
      'A RUNNING again',
      async () => (await node(a)).status === 'RUNNING' && (await node(a)).webhook.delivered === 5,
    );
    // A pause of A: IN_PROGRESS → PAUSED.
    expect((await api('POST', `/nodes/${a}/stop`)).status).toBe(202);
    await until('A PAUSED', async () => (await node(a)).status === 'PAUSED');
    await settled(a, 7);

    // B's process dies: FAILED (exited), restarted by the policy (300 ms): STARTING → RUNNING.
    const pids = pidsWithArg(join(dir, 'nodes', b, 'node.toml'));
    expect(pids).toHaveLength(1);
    nodePids.push(...pids);
    process.kill(pids[0]!, 'SIGKILL');
    await until('B FAILED then RUNNING', async () => {
      const n = await node(b);
      return n.status === 'RUNNING' && n.webhook.abandoned === 5;
    });
    await settled(b, 5);
    nodePids.push(...pidsWithArg(join(dir, 'nodes', b, 'node.toml')));

    // A manual redelivery of A's first event: one more success, not a new first receipt.
    const events = (await (await api('GET', `/nodes/${a}/webhooks/events?limit=100`)).json()).data as {
      eventId: string;
    }[];
    expect(events).toHaveLength(7);
    const okBefore = receiver.requests.filter((r) => r.path === '/ok').length;
    expect(
      (await api('POST', `/nodes/${a}/webhooks/events/${events.at(-1)!.eventId}/redeliver`)).status,
    ).toBe(202);
    await until(
      'redelivered',
      () => receiver.requests.filter((r) => r.path === '/ok').length === okBefore + 1,
    );
    await until('redelivery committed', async () => (await node(a)).webhook.pending === 0);

    let text = '';
    await until('the redelivery counted', async () => {
      text = await scrape();
      return sampleOf(text, 'rgbx_cloud_webhook_deliveries_total{outcome="success"}') === 8;
    });
    expect(seriesOf(text, 'rgbx_cloud_webhook_deliveries_total')).toEqual({
      '{outcome="success"}': 8, // A: 7 status events + 1 redelivery
      '{outcome="http_error"}': 5, // B: 5 status events, each answered 410 once
      '{outcome="network_error"}': 0,
      '{outcome="timeout"}': 0,
      '{outcome="blocked"}': 0,
      '{outcome="interrupted"}': 0,
    });
    expect(sampleOf(text, 'rgbx_cloud_webhook_events_abandoned_total')).toBe(5);
    expect(seriesOf(text, 'rgbx_cloud_node_restarts_total')).toEqual({
      '{reason="failure"}': 1,
      '{reason="requested"}': 1,
    });
    expect(seriesOf(text, 'rgbx_cloud_node_failures_total')).toEqual({
      '{reason="exited"}': 1,
      '{reason="exited_while_starting"}': 0,
      '{reason="start_timeout"}': 0,
      '{reason="unhealthy"}': 0,
      '{reason="start_error"}': 0,
    });
    // First receipts only: A's 7 events; the redelivery is not one.
    expect(sampleOf(text, 'rgbx_cloud_webhook_status_to_receipt_seconds_count')).toBe(7);
    const sum = sampleOf(text, 'rgbx_cloud_webhook_status_to_receipt_seconds_sum')!;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(7 * 10);
    expect(sampleOf(text, 'rgbx_cloud_webhook_status_to_receipt_seconds_bucket{le="+Inf"}')).toBe(7);
    // Gauges from the database.
    expect(seriesOf(text, 'rgbx_cloud_nodes')).toEqual({
      '{status="STARTING"}': 0,
      '{status="RUNNING"}': 1,
      '{status="PAUSED"}': 1,
      '{status="FAILED"}': 0,
      '{status="IN_PROGRESS"}': 0,
    });
    expect(seriesOf(text, 'rgbx_cloud_webhook_pending_events')).toEqual({});
    expect(seriesOf(text, 'rgbx_cloud_webhook_oldest_pending_event_age_seconds')).toEqual({});
    expect(sampleOf(text, 'rgbx_cloud_webhook_nodes_with_pending_events')).toBe(0);
    const keyAge = sampleOf(text, 'rgbx_cloud_signing_key_age_seconds')!;
    expect(keyAge).toBeGreaterThan(0);
    expect(keyAge).toBeLessThan(600);
    // Per route template (the node id is not a label value).
    expect(
      sampleOf(text, 'rgbx_cloud_http_requests_total{method="POST",route="/api/nodes",status_code="201"}'),
    ).toBe(2);
    expect(
      sampleOf(
        text,
        'rgbx_cloud_http_requests_total{method="POST",route="/api/nodes/:nodeId/restart",status_code="202"}',
      ),
    ).toBe(1);
    expect(text).not.toContain(a);
    expect(text).toContain('process_cpu_seconds_total');

    const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: r.status, out: `${r.stdout}${r.stderr}` }).toEqual({ status: 0, out: '' });

    // A backlog: C's receiver is down (nothing listens), so its events stay pending and age.
    const dead = new TestReceiver(tls);
    await dead.start();
    const deadUrl = dead.url('/down');
    await dead.stop();
    const r2 = await api('POST', '/nodes', {
      name: 'down-node',
      network: 'regtest',
      settings: { webhookUrl: deadUrl },
    });
    const c = (await r2.json()).data.nodeId as string;
    await until('C RUNNING', async () => (await node(c)).status === 'RUNNING');
    nodePids.push(...pidsWithArg(join(dir, 'nodes', c, 'node.toml')));
    await new Promise((res) => setTimeout(res, 300));
    text = await scrape();
    expect(seriesOf(text, 'rgbx_cloud_webhook_pending_events')).toEqual({ [`{node_id="${c}"}`]: 2 });
    const age = seriesOf(text, 'rgbx_cloud_webhook_oldest_pending_event_age_seconds')[`{node_id="${c}"}`]!;
    expect(age).toBeGreaterThanOrEqual(0.3);
    expect(age).toBeLessThan(60);
    expect(sampleOf(text, 'rgbx_cloud_webhook_nodes_with_pending_events')).toBe(1);
    expect(sampleOf(text, 'rgbx_cloud_webhook_deliveries_total{outcome="network_error"}')).toBeGreaterThan(0);
    expect(spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' }).status).toBe(0);
  }, 120_000);

  it('a taken metrics port stops the start (exit 2, naming [metrics])', async () => {
    const port = new URL(cloud!.metricsUrl!).port;
    const other = join(root, 'other');
    const conf2 = join(root, 'other.toml');
    writeFileSync(
      conf2,
      testConfigText({ dir: other, databaseUrl: `sqlite:${join(other, 'cloud.db')}` }).replace(
        '[metrics]\nport = 0',
        `[metrics]\nport = ${port}`,
      ),
    );
    await expect(startCloudProcess(conf2)).rejects.toThrow(
      new RegExp(
        `exited with 2: rgbx-cloud: \\[metrics\\] cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\)`,
      ),
    );
  }, 60_000);
});

describe('cloud metrics with two instances on one PostgreSQL', () => {
  const dir = join(root, 'pg');
  const conf = join(root, 'pg.toml');
  let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
  let receiver: TestReceiver;
  const procs: CloudProcess[] = [];
  const nodeIds: string[] = [];

  beforeAll(async () => {
    pg = await createTestPgDatabase('cloud_metrics');
    receiver = await new TestReceiver(tls).start();
    writeFileSync(conf, testConfigText({ dir, databaseUrl: pg.url, caFile: tls.certFile }));
  }, 60_000);
  afterAll(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    killGroups(nodeIds.flatMap((id) => pidsWithArg(join(dir, 'nodes', id, 'node.toml'))));
    await receiver?.stop();
    await pg?.drop();
  });

  it('each instance counts what it did (the sum is everything); database gauges are the same on both', async () => {
    const token = JSON.parse(await cloudCli(conf, 'tokens', 'create', '--account', 'ops')).token as string;
    const a = await startCloudProcess(conf);
    procs.push(a);
    const b = await startCloudProcess(conf);
    procs.push(b);
    const api = async (method: string, path: string, body?: unknown) =>
      (
        await fetch(`${a.url}/api${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          ...(body ? { body: JSON.stringify(body) } : {}),
        })
      ).json();
    for (const name of ['p1', 'p2', 'p3', 'p4']) {
      const r = await api('POST', '/nodes', {
        name,
        network: 'regtest',
        settings: { webhookUrl: receiver.url(`/${name}`) },
      });
      nodeIds.push(r.data.nodeId);
    }
    await until(
      'every node RUNNING, 8 events delivered',
      async () => {
        const nodes = (await api('GET', '/nodes')).data as {
          status: string;
          webhook: { delivered: number; pending: number };
        }[];
        return (
          nodes.every((n) => n.status === 'RUNNING' && n.webhook.pending === 0) &&
          nodes.reduce((t, n) => t + n.webhook.delivered, 0) === 8
        );
      },
      30_000,
    );
    const scrapeOf = async (p: CloudProcess) => (await fetch(p.metricsUrl!)).text();
    let ta = '';
    let tb = '';
    await until('both instances committed every delivery', async () => {
      ta = await scrapeOf(a);
      tb = await scrapeOf(b);
      const ok = (t: string) => sampleOf(t, 'rgbx_cloud_webhook_deliveries_total{outcome="success"}')!;
      return ok(ta) + ok(tb) === 8;
    });
    // Per instance: what it did (which instance delivered which event depends on who claimed it first).
    const success = [ta, tb].map(
      (t) => sampleOf(t, 'rgbx_cloud_webhook_deliveries_total{outcome="success"}')!,
    );
    expect(success[0]! + success[1]!).toBe(8);
    const created = 'rgbx_cloud_http_requests_total{method="POST",route="/api/nodes",status_code="201"}';
    expect([sampleOf(ta, created), sampleOf(tb, created)]).toEqual([4, undefined]);
    const receipts = [ta, tb].map((t) => sampleOf(t, 'rgbx_cloud_webhook_status_to_receipt_seconds_count')!);
    expect(receipts[0]! + receipts[1]!).toBe(8);
    // From the shared database: the same on both.
    for (const t of [ta, tb]) {
      expect(seriesOf(t, 'rgbx_cloud_nodes')).toEqual({
        '{status="STARTING"}': 0,
        '{status="RUNNING"}': 4,
        '{status="PAUSED"}': 0,
        '{status="FAILED"}': 0,
        '{status="IN_PROGRESS"}': 0,
      });
      expect(sampleOf(t, 'rgbx_cloud_webhook_nodes_with_pending_events')).toBe(0);
      expect(spawnSync(PROMTOOL, ['check', 'metrics'], { input: t, encoding: 'utf8' }).status).toBe(0);
    }
  }, 120_000);
});
