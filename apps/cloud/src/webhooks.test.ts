/**
 * Webhook delivery semantics against a real HTTPS receiver, over SQLite and PostgreSQL: retries
 * with identical bytes, order per node, give-up and failing endpoints, redelivery, 410/3xx/timeouts,
 * SSRF refusals after DNS resolution, and key rotation. Node processes are not involved here: the
 * supervisor is not started and statuses are changed through the same `changeNode` it uses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '@rgbx/sdk';
import { createLogger } from '@rgbx/service-kit';
import { type Resolver, systemResolver } from '@rgbx/service-kit/webhooks';
import { createTestPgDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import type { NodeStatus } from './db/schema.ts';
import { changeNode } from './nodes/status.ts';
import { type Received, selfSignedCert, TestReceiver, testConfig, until } from './test-support.ts';
import { activateKey, addKey, KeyRingError, retireKey } from './webhooks/keys.ts';
import { pruneDelivered } from './webhooks/outbox.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-wh-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_wh');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

/**
 * Hostile DNS that rebinds (TTL 0): the first lookup of each of these names answers a public
 * address (so the URL passes the check at creation), every later one (the deliveries) private,
 * link-local, mapped, IPv4-compatible or mixed addresses; with `rebound` set, every lookup does.
 */
const REBOUND: Record<string, string[]> = {
  'evil.test': ['10.0.0.7'],
  'metadata.test': ['169.254.169.254'],
  'mapped.test': ['::ffff:10.0.0.1'],
  'compat.test': ['::7f00:1'],
  'ula.test': ['fd00::1'],
  'mixed.test': ['93.184.216.34', '192.168.1.1'],
};
/** A resolver per cloud under test (each has its own "first lookup"). */
function rebindingDns() {
  const state = { rebound: false, looked: new Set<string>() };
  const resolver: Resolver = async (host) => {
    const addrs = REBOUND[host];
    if (!addrs) return systemResolver(host);
    const first = !state.rebound && !state.looked.has(host);
    state.looked.add(host);
    return (first ? ['93.184.216.34'] : addrs).map((address) => ({
      address,
      family: address.includes(':') ? 6 : 4,
    }));
  };
  return { state, resolver };
}

const bodyOf = (r: Received) =>
  JSON.parse(r.body.toString('utf8')) as { nodeId: string; details: { status: string } };

describe.each([
  ['sqlite', (dir: string) => `sqlite:${join(dir, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('webhooks on %s', (_name, dbUrl) => {
  let cloud: Cloud;
  let receiver: TestReceiver;
  let token: string;
  let accountId: string;
  const dns = rebindingDns();

  beforeAll(async () => {
    const dir = mkdtempSync(join(root, 'c-'));
    receiver = await new TestReceiver(tls).start();
    cloud = await buildCloud(
      testConfig({
        dir,
        databaseUrl: dbUrl(dir),
        caFile: tls.certFile,
        webhooks:
          'retry_schedule_ms = [150, 300]\njitter = 0\nrequest_timeout_ms = 1000\ngive_up_after_ms = 2500',
      }),
      { logger: createLogger({ name: 'wh-test', level: 'silent' }), resolver: dns.resolver },
    );
    cloud.dispatcher.start(); // the supervisor stays off: no processes in this file
    const t = await createToken(cloud.db, 'acme', 'test');
    token = t.token;
    accountId = t.info.accountId;
  });
  afterAll(async () => {
    await cloud?.close();
    await receiver?.stop();
  });

  const api = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    cloud.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload ? { payload: payload as object } : {}),
    });
  const deps = () => ({
    db: cloud.db,
    dialect: cloud.dialect,
    maxPayloadBytes: 16384,
    onEvent: () => cloud.dispatcher.wake(),
  });
  const node = async (name: string, url: string) =>
    (await cloud.manager.create(accountId, { name, network: 'regtest', webhookUrl: url })).id;
  const push = async (id: string, ...statuses: NodeStatus[]) => {
    for (const s of statuses) await changeNode(deps(), id, s, {});
  };
  const events = async (id: string) =>
    (await api('GET', `/api/nodes/${id}/webhooks/events`)).json().data as {
      eventId: string;
      state: string;
      attempts: number;
      payload: string;
      attemptLog: { outcome: string; error: string | null; statusCode: number | null; keyId: string }[];
    }[];
  const settled = (id: string) =>
    until(`${id} settled`, async () => (await events(id)).every((e) => e.state !== 'pending'), 20_000);

  it('retries while the receiver is down, then delivers every event, in order per node', async () => {
    await receiver.stop();
    const a = await node('down-a', receiver.url('/down'));
    const b = await node('down-b', receiver.url('/down'));
    await push(a, 'RUNNING', 'IN_PROGRESS', 'PAUSED', 'STARTING', 'RUNNING');
    await push(b, 'RUNNING', 'FAILED');
    await until('a few failed attempts', async () => ((await events(a)).at(-1)?.attempts ?? 0) >= 2);
    const head = (await events(a)).at(-1)!;
    const finished = head.attemptLog.filter((x) => x.outcome !== 'in_flight');
    expect(finished.length).toBeGreaterThanOrEqual(1);
    expect(finished.every((x) => x.outcome === 'network_error' && /ECONNREFUSED/.test(x.error ?? ''))).toBe(
      true,
    );
    await receiver.start();
    await settled(a);
    await settled(b);
    expect(receiver.statuses(a)).toEqual([
      'STARTING',
      'RUNNING',
      'IN_PROGRESS',
      'PAUSED',
      'STARTING',
      'RUNNING',
    ]);
    expect(receiver.statuses(b)).toEqual(['STARTING', 'RUNNING', 'FAILED']);
    const stored = (await events(a)).reverse().map((e) => e.payload);
    const got = receiver.requests.filter((r) => bodyOf(r).nodeId === a).map((r) => r.body.toString('utf8'));
    expect(got).toEqual(stored);
  });

  it('sends the same bytes and signature on every retry; later events wait their turn', async () => {
    let failures = 2;
    receiver.respond = (r) => {
      if (r.path === '/flaky' && bodyOf(r).details.status === 'STARTING' && failures-- > 0)
        return { status: 500, body: 'boom' };
      return { status: 200, body: '{"message":"ok"}' };
    };
    const id = await node('flaky', receiver.url('/flaky'));
    await push(id, 'RUNNING');
    await settled(id);
    const got = receiver.requests.filter((r) => r.path === '/flaky');
    expect(got.map((r) => bodyOf(r).details.status)).toEqual(['STARTING', 'STARTING', 'STARTING', 'RUNNING']);
    const [x, y, z] = got;
    expect(y!.body.equals(x!.body) && z!.body.equals(x!.body)).toBe(true);
    expect(new Set(got.slice(0, 3).map((r) => r.headers['x-service-signature'])).size).toBe(1);
    expect(new Set(got.slice(0, 3).map((r) => r.headers['x-service-event-id'])).size).toBe(1);
    expect(got.slice(0, 3).map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2', '3']);
    expect(Number(got[3]!.headers['x-service-sequence'])).toBeGreaterThan(
      Number(x!.headers['x-service-sequence']),
    );
    const log = (await events(id)).at(-1)!.attemptLog;
    expect(log.map((l) => [l.outcome, l.statusCode])).toEqual([
      ['http_error', 500],
      ['http_error', 500],
      ['success', 200],
    ]);
    receiver.respond = () => ({ status: 200, body: '{"message":"ok"}' });
  });

  it('gives up after the window, marks the endpoint failing, and manual redelivery clears it', async () => {
    receiver.respond = (r) =>
      r.path === '/broken' ? { status: 503, body: 'down' } : { status: 200, body: '{}' };
    const id = await node('broken', receiver.url('/broken'));
    await until('abandoned', async () => (await events(id))[0]?.state === 'abandoned', 20_000);
    const n = (await api('GET', `/api/nodes/${id}`)).json().data;
    expect(n.webhook).toMatchObject({ failing: true, abandoned: 1, pending: 0 });
    const ev = (await events(id))[0]!;
    expect(ev.attempts).toBeGreaterThanOrEqual(3);
    receiver.respond = () => ({ status: 200, body: '{"message":"ok"}' });
    expect((await api('POST', `/api/nodes/${id}/webhooks/events/${ev.eventId}/redeliver`)).statusCode).toBe(
      202,
    );
    await until('delivered', async () => (await events(id))[0]?.state === 'delivered');
    expect((await api('GET', `/api/nodes/${id}`)).json().data.webhook.failing).toBe(false);
    expect(
      (
        await api('POST', `/api/nodes/${id}/webhooks/events/00000000-0000-4000-8000-000000000000/redeliver`)
      ).json().error.code,
    ).toBe('EVENT_NOT_FOUND');
  });

  it('treats 410 as gone, 3xx as failure (never followed), and slow receivers as timeouts', async () => {
    receiver.respond = (r) =>
      r.path === '/gone'
        ? { status: 410 }
        : r.path === '/redirect'
          ? { status: 302, headers: { location: '/elsewhere' } }
          : r.path === '/slow'
            ? { status: 200, delayMs: 2500 }
            : { status: 200, body: '{}' };
    const gone = await node('gone', receiver.url('/gone'));
    const redirect = await node('redirect', receiver.url('/redirect'));
    const slow = await node('slow', receiver.url('/slow'));
    await until('gone abandoned', async () => (await events(gone))[0]?.state === 'abandoned');
    expect((await events(gone))[0]!.attempts).toBe(1);
    await until('redirect retried', async () => ((await events(redirect))[0]?.attempts ?? 0) >= 2);
    expect((await events(redirect))[0]!.attemptLog[0]).toMatchObject({
      outcome: 'http_error',
      statusCode: 302,
    });
    expect(receiver.requests.some((r) => r.path === '/elsewhere')).toBe(false);
    await until('slow timed out', async () =>
      (await events(slow))[0]?.attemptLog.some((l) => l.outcome === 'timeout'),
    );
    receiver.respond = () => ({ status: 200, body: '{"message":"ok"}' });
  });

  it('refuses private, link-local and mapped destinations resolved at delivery (DNS rebinding after creation)', async () => {
    const ids = await Promise.all(
      Object.keys(REBOUND).map((host) => node(`ssrf-${host}`, `https://${host}:${receiver.port}/hook`)),
    );
    for (const id of ids) {
      await until('blocked attempts', async () => ((await events(id))[0]?.attempts ?? 0) >= 2);
      const log = (await events(id))[0]!.attemptLog.filter((l) => l.outcome !== 'in_flight');
      expect(log.every((l) => l.outcome === 'blocked' && /blocked|not allowed/.test(l.error ?? ''))).toBe(
        true,
      );
    }
    expect(receiver.requests.filter((r) => ids.includes(bodyOf(r).nodeId))).toEqual([]);
    // Resolving to those addresses already, the same names are refused when a URL is set; nothing is written.
    dns.state.rebound = true;
    for (const host of Object.keys(REBOUND)) {
      const r = await api('POST', '/api/nodes', {
        name: `late-${host}`,
        network: 'regtest',
        settings: { webhookUrl: `https://${host}/hook` },
      });
      expect(r.statusCode, host).toBe(400);
      expect(r.json().error.code, host).toBe('INVALID_WEBHOOK_URL');
      expect(r.json().error.message, host).toMatch(
        new RegExp(
          `^invalid webhookUrl: ${host.replace('.', '\\.')} resolves to a refused address: requests to .* are blocked`,
        ),
      );
    }
    const names = (await cloud.db.selectFrom('nodes').select('name').execute()).map((n) => n.name);
    expect(names.filter((n) => n.startsWith('late-'))).toEqual([]);
  });

  it('rotates keys: publish, then sign with the new key, then retire the old one', async () => {
    const k0 = (await api('GET', '/api/webhook-public-key')).json();
    const kid1 = await addKey(cloud.db, cloud.vault);
    const k1 = (await api('GET', '/api/webhook-public-key')).json();
    expect(k1.keyId).toBe(k0.keyId);
    expect(k1.keys.map((k: { keyId: string; status: string }) => [k.keyId, k.status])).toEqual([
      [k0.keyId, 'current'],
      [kid1, 'published'],
    ]);
    await activateKey(cloud.db, kid1);
    await new Promise((r) => setTimeout(r, 1100)); // the dispatcher's key cache lives 1 s
    const k2 = (await api('GET', '/api/webhook-public-key')).json();
    expect(k2.keyId).toBe(kid1);
    expect(k2.keys.map((k: { keyId: string }) => k.keyId)).toEqual([kid1, k0.keyId]);
    const id = await node('rotated', receiver.url('/rotated'));
    await settled(id);
    const req = receiver.requests.find((r) => r.path === '/rotated')!;
    expect(req.headers['x-service-signature-key-id']).toBe(kid1);
    expect(verifyWebhook(req.body, req.headers['x-service-signature'] as string, k2.data, id).ok).toBe(true);
    expect(verifyWebhook(req.body, req.headers['x-service-signature'] as string, k0.data, id).ok).toBe(false);
    // Receivers holding both published keys accept deliveries across the switch.
    expect(
      verifyWebhook(req.body, req.headers['x-service-signature'] as string, [k0.data, k2.data], id).ok,
    ).toBe(true);
    await expect(retireKey(cloud.db, kid1)).rejects.toThrow(KeyRingError);
    await retireKey(cloud.db, k0.keyId);
    const k3 = (await api('GET', '/api/webhook-public-key')).json();
    expect(k3.keys.map((k: { keyId: string }) => k.keyId)).toEqual([kid1]);
    const row = await cloud.db
      .selectFrom('signing_keys')
      .selectAll()
      .where('kid', '=', k0.keyId)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'retired', private_key_sealed: '' });
  });

  it('prunes delivered events past the retention period, keeping abandoned and pending ones', async () => {
    // The dispatcher stops first: a retry that delivers or gives up between the counts below would move them
    // (CI saw 3 abandoned become 6). The last test of this cloud.
    await cloud.dispatcher.stop();
    const count = async (state: 'delivered' | 'abandoned') =>
      Number(
        (
          await cloud.db
            .selectFrom('webhook_events')
            .select(cloud.db.fn.countAll().as('n'))
            .where('state', '=', state)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const delivered = await count('delivered');
    const abandoned = await count('abandoned');
    expect(delivered).toBeGreaterThan(0);
    expect(await pruneDelivered(cloud.db, Date.now() - 3_600_000)).toBe(0);
    expect(await pruneDelivered(cloud.db, Date.now() + 1, 100_000)).toBe(delivered);
    expect(await count('delivered')).toBe(0);
    expect(await count('abandoned')).toBe(abandoned);
    const orphans = await cloud.db
      .selectFrom('webhook_attempts')
      .leftJoin('webhook_events', 'webhook_events.seq', 'webhook_attempts.event_seq')
      .select('webhook_attempts.id')
      .where('webhook_events.seq', 'is', null)
      .execute();
    expect(orphans).toEqual([]);
  });
});

describe('without a dev allowlist', () => {
  it('refuses loopback, even when it is where a name resolves, and plain http', async () => {
    const dir = mkdtempSync(join(root, 'strict-'));
    const receiver = await new TestReceiver(tls).start();
    const base = testConfig({ dir, databaseUrl: `sqlite:${join(dir, 'c.db')}`, caFile: tls.certFile });
    // `rebind.test` answers a public address to its first lookup (the check at creation), loopback
    // afterwards; `nx.test` does not exist.
    let lookups = 0;
    const rebinding: Resolver = async (host) =>
      host === 'rebind.test'
        ? [{ address: lookups++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }]
        : host === 'nx.test'
          ? Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nx.test'), { code: 'ENOTFOUND' }))
          : systemResolver(host); // localhost: the machine's own resolver
    const cloud = await buildCloud(
      { ...base, webhooks: { ...base.webhooks, allow_cidrs: [], retry_schedule_ms: [100], jitter: 0 } },
      { logger: createLogger({ name: 'strict', level: 'silent' }), resolver: rebinding },
    );
    cloud.dispatcher.start();
    try {
      const { token, info } = await createToken(cloud.db, 'strict', 't');
      const create = (webhookUrl: string) =>
        cloud.app.inject({
          method: 'POST',
          url: '/api/nodes',
          headers: { authorization: `Bearer ${token}` },
          payload: {
            name: `n${Math.random().toString(36).slice(2, 8)}`,
            network: 'regtest',
            settings: { webhookUrl },
          },
        });
      for (const [url, message] of [
        [
          `https://127.0.0.1:${receiver.port}/`,
          'requests to 127.0.0.1 are blocked (non-public address: loopback)',
        ],
        [`https://[::1]:${receiver.port}/`, 'requests to ::1 are blocked (non-public address: loopback)'],
        [
          'https://169.254.169.254/latest/meta-data',
          'requests to 169.254.169.254 are blocked (non-public address: link-local, cloud metadata)',
        ],
        [`http://localhost:${receiver.port}/`, 'the scheme must be https'],
        // A name that resolves to loopback is refused when it is set, not only at delivery.
        [
          `https://localhost:${receiver.port}/`,
          /^localhost resolves to a refused address: requests to (127\.0\.0\.1|::1) are blocked \(non-public address: loopback\)$/,
        ],
        ['https://nx.test/', 'nx.test does not resolve (ENOTFOUND)'],
      ] as const) {
        const r = await create(url);
        expect(r.statusCode, url).toBe(400);
        expect(r.json().error.code).toBe('INVALID_WEBHOOK_URL');
        const m = r.json().error.message as string;
        if (typeof message === 'string') expect(m).toBe(`invalid webhookUrl: ${message}`);
        else expect(m.replace('invalid webhookUrl: ', '')).toMatch(message);
      }
      expect(await cloud.db.selectFrom('nodes').selectAll().execute()).toEqual([]);
      // A name that passed the check and then rebinds to loopback is refused at connect time.
      const n = await cloud.manager.create(info.accountId, {
        name: 'loop',
        network: 'regtest',
        webhookUrl: `https://rebind.test:${receiver.port}/`,
      });
      await until('blocked', async () => {
        const a = await cloud.db.selectFrom('webhook_attempts').selectAll().execute();
        return a.length >= 2 && a.every((x) => x.outcome === 'blocked');
      });
      const ev = await cloud.db
        .selectFrom('webhook_events')
        .selectAll()
        .where('node_id', '=', n.id)
        .executeTakeFirstOrThrow();
      expect(ev.last_error).toBe(
        'EBLOCKED: rebind.test: requests to 127.0.0.1 are blocked (non-public address: loopback)',
      );
      expect(receiver.requests).toEqual([]);
    } finally {
      await cloud.close();
      await receiver.stop();
    }
  });
});
