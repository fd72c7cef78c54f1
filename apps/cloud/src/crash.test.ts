/**
 * The built cloud service as a real process, over SQLite and PostgreSQL: tokens through the CLI,
 * `kill -9` of the service while deliveries are in flight, then a restart: nothing is lost (every
 * event delivered, in order per node), the interrupted attempt is logged, and the node processes
 * are re-adopted (same pids, one process per node), never started twice.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
import { type Received, selfSignedCert, TestReceiver, testConfigText, until } from './test-support.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-crash-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_crash');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

const eventIdOf = (r: Received) => r.headers['x-service-event-id'] as string;

describe.each([
  ['sqlite', (dir: string) => `sqlite:${join(dir, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('cloud process on %s', (_name, dbUrl) => {
  let dir: string;
  let conf: string;
  let receiver: TestReceiver;
  let cloud: CloudProcess | undefined;
  const nodePids: number[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(root, 'c-'));
    conf = join(dir, 'cloud.toml');
    receiver = await new TestReceiver(tls).start();
    writeFileSync(
      conf,
      testConfigText({
        dir,
        databaseUrl: dbUrl(dir),
        caFile: tls.certFile,
        logLevel: 'debug',
        webhooks:
          'retry_schedule_ms = [200]\njitter = 0\nrequest_timeout_ms = 5000\nconnect_timeout_ms = 1000',
      }),
    );
  });
  afterAll(async () => {
    cloud?.child.kill('SIGKILL');
    killGroups(nodePids);
    await receiver?.stop();
  });

  it('keeps every event and every node across kill -9 of the service', async () => {
    const created = JSON.parse(await cloudCli(conf, 'tokens', 'create', '--account', 'ops', '--name', 'ci'));
    const token = created.token as string;
    expect(token).toMatch(/^rgbxc_[0-9a-f]{16}_/);
    const spare = JSON.parse(await cloudCli(conf, 'tokens', 'create', '--account', 'ops'));
    expect(await cloudCli(conf, 'tokens', 'revoke', spare.id)).toContain('revoked');
    const listed = JSON.parse(await cloudCli(conf, 'tokens', 'list', '--json'));
    expect(listed.map((t: { id: string; revokedAt: string | null }) => [t.id, t.revokedAt !== null])).toEqual(
      [
        [created.id, false],
        [spare.id, true],
      ],
    );
    await expect(cloudCli(conf, 'tokens', 'frobnicate')).rejects.toThrow();

    // Slow answers keep deliveries in flight.
    receiver.respond = () => ({ status: 200, body: '{"message":"ok"}', delayMs: 1500 });
    cloud = await startCloudProcess(conf);
    const api = (method: string, path: string, body?: unknown, t = token) =>
      fetch(`${cloud!.url}/api${path}`, {
        method,
        headers: { authorization: `Bearer ${t}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    expect((await api('GET', '/nodes', undefined, spare.token)).status).toBe(401);

    const ids: string[] = [];
    for (const name of ['n1', 'n2', 'n3']) {
      const r = await api('POST', '/nodes', {
        name,
        network: 'regtest',
        settings: { webhookUrl: receiver.url(`/${name}`) },
      });
      expect(r.status).toBe(201);
      ids.push((await r.json()).data.nodeId);
    }
    const nodes = async () =>
      (await (await api('GET', '/nodes')).json()).data as {
        nodeId: string;
        status: string;
        webhook: { pending: number };
      }[];
    await until('all RUNNING', async () => (await nodes()).every((n) => n.status === 'RUNNING'));
    await until('a delivery in flight', () => receiver.requests.length >= 1);
    const pidsBefore = ids.map((id) => pidsWithArg(join(dir, 'nodes', id, 'node.toml')));
    for (const p of pidsBefore) expect(p).toHaveLength(1);
    nodePids.push(...pidsBefore.flat());

    cloud.child.kill('SIGKILL');
    await new Promise((r) => cloud!.child.once('exit', r));
    // The nodes do not depend on the service process.
    for (const [i, id] of ids.entries())
      expect(pidsWithArg(join(dir, 'nodes', id, 'node.toml'))).toEqual(pidsBefore[i]);

    receiver.respond = () => ({ status: 200, body: '{"message":"ok"}' });
    cloud = await startCloudProcess(conf);
    await until('all delivered', async () => (await nodes()).every((n) => n.webhook.pending === 0), 30_000);

    for (const [i, id] of ids.entries()) {
      // Re-adopted, never duplicated.
      expect(pidsWithArg(join(dir, 'nodes', id, 'node.toml'))).toEqual(pidsBefore[i]);
      const events = (await (await api('GET', `/nodes/${id}/webhooks/events`)).json()).data as {
        eventId: string;
        status: string;
        state: string;
        attemptLog: { outcome: string }[];
      }[];
      expect(events.map((e) => [e.status, e.state])).toEqual([
        ['RUNNING', 'delivered'],
        ['STARTING', 'delivered'],
      ]);
      // At least once: each event arrived, possibly twice (the interrupted attempt may have landed); first arrivals in order.
      const arrivals = receiver.requests.filter((r) => r.path === `/n${i + 1}`);
      const firstSeen = [...new Set(arrivals.map(eventIdOf))];
      expect(firstSeen).toEqual(events.map((e) => e.eventId).reverse());
    }
    const all = (
      await Promise.all(
        ids.map(async (id) => (await (await api('GET', `/nodes/${id}/webhooks/events`)).json()).data),
      )
    ).flat() as {
      attemptLog: { outcome: string }[];
    }[];
    expect(all.some((e) => e.attemptLog.some((a) => a.outcome === 'interrupted'))).toBe(true);
    expect((await nodes()).every((n) => n.status === 'RUNNING')).toBe(true);

    // A token pasted into a query string or a path is answered as usual but never logged.
    const secret = token.slice(23);
    const pasted = [
      [`/api/nodes?token=${token}`, 401, '/api/nodes?token=[redacted]'],
      [
        `/api/nodes?limit=5&access_token=${encodeURIComponent(token)}`,
        401,
        '/api/nodes?limit=5&access_token=[redacted]',
      ],
      [`/console/?${token}`, 200, '/console/?[redacted]'],
      [`/api/${token}`, 404, '/api/[redacted]'],
      [`/nope?x=${token.replace('r', '%72')}`, 404, '/nope?x=[redacted]'],
    ] as const;
    for (const [path, status] of pasted)
      expect((await fetch(`${cloud.url}${path}`)).status, path).toBe(status);
    // Logs carry no secrets: no token, no RPC password.
    const logs = cloud.stderr();
    expect(logs).toContain('cloud started');
    for (const [, , logged] of pasted) expect(logs).toContain(`"url":"${logged}"`);
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain(encodeURIComponent(secret));
    expect(logs).not.toContain('test-password');
    // Nor do the hosted nodes' configs: the wallet node never reads the bitcoind RPC password.
    for (const id of ids) {
      const nodeToml = readFileSync(join(dir, 'nodes', id, 'node.toml'), 'utf8');
      expect(nodeToml).toMatch(/^btc_rpc_password = ""$/m);
      expect(nodeToml).not.toContain('test-password');
    }

    // SIGTERM: a clean exit that leaves the nodes running (stop_on_shutdown = false).
    cloud.child.kill('SIGTERM');
    const code = await new Promise((r) => cloud!.child.once('exit', r));
    expect(code).toBe(0);
    cloud = undefined;
    for (const [i, id] of ids.entries())
      expect(pidsWithArg(join(dir, 'nodes', id, 'node.toml'))).toEqual(pidsBefore[i]);
  });
});
