/**
 * The cloud API in-process (app.inject) over SQLite and PostgreSQL, with the supervisor running
 * real node processes (the fake wallet node; the real one is in wallet-node.e2e.test.ts) and the
 * dispatcher delivering to a real HTTPS receiver.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '@rgbx/sdk';
import { createLogger } from '@rgbx/service-kit';
import { createTestPgDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken, listTokens, revokeToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import { changeNode } from './nodes/status.ts';
import { generateOpenApi } from './openapi.ts';
import { selfSignedCert, TestReceiver, testConfig, until } from './test-support.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-api-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_api');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe.each([
  ['sqlite', (dir: string) => `sqlite:${join(dir, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('cloud API on %s', (_name, dbUrl) => {
  let dir: string;
  let cloud: Cloud;
  let receiver: TestReceiver;
  let tokenA: string;
  let tokenB: string;
  const auth = (t: string) => ({ authorization: `Bearer ${t}` });

  beforeAll(async () => {
    dir = mkdtempSync(join(root, 'c-'));
    receiver = await new TestReceiver(tls).start();
    cloud = await buildCloud(testConfig({ dir, databaseUrl: dbUrl(dir), caFile: tls.certFile }), {
      logger: createLogger({ name: 'cloud-test', level: 'silent' }),
    });
    cloud.startWorkers();
    tokenA = (await createToken(cloud.db, 'alice', 'test')).token;
    tokenB = (await createToken(cloud.db, 'bob', 'test')).token;
  });
  afterAll(async () => {
    await cloud?.close({ stopNodes: true });
    await receiver?.stop();
  });

  const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token = tokenA, payload?: unknown) =>
    cloud.app.inject({
      method,
      url,
      headers: auth(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });

  const nodeStatus = async (id: string) =>
    (await api('GET', `/api/nodes/${id}`)).json().data.status as string;

  it('stores only token hashes, lists and revokes tokens', async () => {
    const { token, info } = await createToken(cloud.db, 'carol', 'ci');
    const rows = await cloud.db.selectFrom('api_tokens').selectAll().execute();
    const secret = token.slice('rgbxc_'.length + 17);
    expect(secret).toHaveLength(43);
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect((await listTokens(cloud.db, 'carol')).map((t) => t.id)).toEqual([info.id]);
    expect((await api('GET', '/api/nodes', token)).statusCode).toBe(200);
    expect(await revokeToken(cloud.db, info.id)).toBe(true);
    expect(await revokeToken(cloud.db, info.id)).toBe(false);
    const r = await api('GET', '/api/nodes', token);
    expect(r.statusCode).toBe(401);
    expect(r.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Missing or invalid bearer token' } });
  });

  it('answers 401 envelopes for missing, malformed and wrong tokens', async () => {
    for (const headers of [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer nope' },
      { authorization: `Bearer ${tokenA.slice(0, -3)}abc` },
      { authorization: `Bearer ${tokenA.replace(/_[0-9a-f]{16}_/, '_0000000000000000_')}` },
    ]) {
      const r = await cloud.app.inject({ method: 'GET', url: '/api/webhook-public-key', headers });
      expect(r.statusCode).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer realm="rgbx-cloud"');
      expect(r.json().error.code).toBe('UNAUTHORIZED');
    }
  });

  it('validates every input and answers the envelope', async () => {
    const bad: [unknown, string][] = [
      [{ network: 'regtest' }, 'VALIDATION_ERROR'],
      [{ name: 'x', network: 'regtest', extra: 1 }, 'VALIDATION_ERROR'],
      [{ name: '<script>', network: 'regtest' }, 'VALIDATION_ERROR'],
      [{ name: 'x', network: 'mainnet' }, 'UNSUPPORTED_NETWORK'],
      [
        { name: 'x', network: 'regtest', settings: { webhookUrl: 'http://example.com/h' } },
        'INVALID_WEBHOOK_URL',
      ],
      [
        { name: 'x', network: 'regtest', settings: { webhookUrl: 'https://10.1.2.3/h' } },
        'INVALID_WEBHOOK_URL',
      ],
      [
        { name: 'x', network: 'regtest', settings: { webhookUrl: 'https://[::ffff:169.254.169.254]/h' } },
        'INVALID_WEBHOOK_URL',
      ],
      [
        { name: 'x', network: 'regtest', settings: { webhookUrl: 'https://u:p@example.com/h' } },
        'INVALID_WEBHOOK_URL',
      ],
      [{ name: 'x', network: 'regtest', settings: { webhookUrl: 'not a url' } }, 'INVALID_WEBHOOK_URL'],
    ];
    for (const [body, code] of bad) {
      const r = await api('POST', '/api/nodes', tokenA, body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json().error.code, JSON.stringify(body)).toBe(code);
      expect(r.body).not.toMatch(/at .*\.ts:\d+/);
    }
    const json = await cloud.app.inject({
      method: 'POST',
      url: '/api/nodes',
      headers: { ...auth(tokenA), 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(json.json().error.code).toBe('INVALID_JSON');
    const big = await cloud.app.inject({
      method: 'POST',
      url: '/api/nodes',
      headers: { ...auth(tokenA), 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(200_000), network: 'regtest' }),
    });
    expect(big.statusCode).toBe(413);
    expect(big.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    expect((await api('GET', '/api/nodes/not-a-uuid')).json().error.code).toBe('VALIDATION_ERROR');
    const missing = await api('GET', '/api/nodes/00000000-0000-4000-8000-000000000000');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('NODE_NOT_FOUND');
    expect((await api('GET', '/api/nope')).json().error.code).toBe('NOT_FOUND');
    expect((await cloud.app.inject({ method: 'GET', url: '/nope' })).json().error.code).toBe('NOT_FOUND');
    // Nothing half-written: no node rows after all these refusals.
    expect(await cloud.db.selectFrom('nodes').selectAll().execute()).toEqual([]);
  });

  it('serves its OpenAPI document', async () => {
    const r = await cloud.app.inject({ method: 'GET', url: '/_swagger/json' });
    expect(r.statusCode).toBe(200);
    const doc = r.json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/nodes',
        '/api/nodes/{nodeId}',
        '/api/webhook-public-key',
        '/api/nodes/{nodeId}/webhooks/events',
      ]),
    );
    expect(doc.components.schemas.ErrorEnvelope).toBeDefined();
    // The generator for specs/ gives the same document without a running service.
    const generated = (await generateOpenApi()) as { paths: Record<string, unknown> };
    expect(Object.keys(generated.paths)).toEqual(Object.keys(doc.paths));
  });

  it('publishes the signing key: PEM SPKI, key id, algorithm', async () => {
    const r = await api('GET', '/api/webhook-public-key');
    expect(r.statusCode).toBe(200);
    const k = r.json();
    expect(k.data).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(k.keyId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(k).toMatchObject({
      algorithm: 'RSA-SHA256',
      padding: 'PKCS1-v1_5',
      signatureHeader: 'X-Service-Signature',
    });
    expect(k.keys).toEqual([expect.objectContaining({ keyId: k.keyId, status: 'current', pem: k.data })]);
    const { createPublicKey } = await import('node:crypto');
    expect(createPublicKey(k.data).asymmetricKeyDetails?.modulusLength).toBe(3072);
  });

  it('runs a node through create, pause, resume, settings, crash and delete with signed webhooks', async () => {
    const pem = (await api('GET', '/api/webhook-public-key')).json().data as string;
    const created = await api('POST', '/api/nodes', tokenA, {
      name: 'alpha',
      network: 'regtest',
      settings: { webhookUrl: receiver.url('/a') },
    });
    expect(created.statusCode).toBe(201);
    const node = created.json().data;
    expect(node).toMatchObject({
      name: 'alpha',
      network: 'regtest',
      status: 'STARTING',
      settings: { webhookUrl: receiver.url('/a') },
    });
    const id = node.nodeId as string;

    await until('RUNNING', async () => (await nodeStatus(id)) === 'RUNNING');
    await until('2 webhooks', () => receiver.statuses(id).length >= 2);
    expect(receiver.statuses(id)).toEqual(['STARTING', 'RUNNING']);
    for (const req of receiver.requests) {
      const v = verifyWebhook(req.body, req.headers['x-service-signature'] as string, pem, id);
      expect(v.ok).toBe(true);
      expect(req.headers['x-service-event-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(req.headers['x-service-attempt']).toBe('1');
      expect(req.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(req.headers['x-service-timestamp'])).toBeGreaterThan(Date.now() / 1000 - 60);
    }
    const running = (await api('GET', `/api/nodes/${id}`)).json().data;
    expect(running.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${running.apiUrl}/healthcheck`)).status).toBe(200);

    // Other accounts see nothing of it.
    expect((await api('GET', `/api/nodes/${id}`, tokenB)).statusCode).toBe(404);
    expect((await api('POST', `/api/nodes/${id}/stop`, tokenB)).statusCode).toBe(404);
    expect((await api('GET', '/api/nodes', tokenB)).json().data).toEqual([]);
    expect(
      (await api('POST', '/api/nodes', tokenA, { name: 'alpha', network: 'regtest' })).json().error.code,
    ).toBe('NODE_NAME_TAKEN');

    // Pause: process stopped, data kept.
    const paused = await api('POST', `/api/nodes/${id}/stop`);
    expect(paused.statusCode).toBe(202);
    expect(paused.json().data.status).toBe('IN_PROGRESS');
    await until('PAUSED', async () => (await nodeStatus(id)) === 'PAUSED');
    await expect(fetch(`${running.apiUrl}/healthcheck`)).rejects.toThrow();
    // The node's config (0600) points at the backend without the bitcoind RPC password.
    const nodeToml = join(dir, 'nodes', id, 'node.toml');
    expect(statSync(nodeToml).mode & 0o777).toBe(0o600);
    const conf = readFileSync(nodeToml, 'utf8');
    expect(conf).toContain('btc_rpc_user = "user"');
    expect(conf).toMatch(/^btc_rpc_password = ""$/m);
    expect(conf).not.toContain('test-password');
    expect((await api('POST', `/api/nodes/${id}/restart`)).json().error.code).toBe('INVALID_STATE');

    // Resume.
    expect((await api('POST', `/api/nodes/${id}/start`)).json().data.status).toBe('STARTING');
    await until('RUNNING again', async () => (await nodeStatus(id)) === 'RUNNING');

    // Settings change: IN_PROGRESS then RUNNING, announced at the new URL.
    const moved = await api('POST', `/api/nodes/${id}/settings`, tokenA, { webhookUrl: receiver.url('/b') });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().data).toMatchObject({
      status: 'IN_PROGRESS',
      settings: { webhookUrl: receiver.url('/b') },
    });
    await until('RUNNING after settings', async () => (await nodeStatus(id)) === 'RUNNING');
    expect(
      (await api('PATCH', `/api/nodes/${id}/settings`, tokenA, { webhookUrl: 'http://example.com/' })).json()
        .error.code,
    ).toBe('INVALID_WEBHOOK_URL');

    // Crash: the process is killed → FAILED, then the restart policy brings it back.
    const pid = (
      await cloud.db.selectFrom('nodes').select('pid').where('id', '=', id).executeTakeFirstOrThrow()
    ).pid!;
    process.kill(pid, 'SIGKILL');
    await until('FAILED webhook', () => receiver.statuses(id).includes('FAILED'));
    await until('RUNNING after restart', async () => (await nodeStatus(id)) === 'RUNNING');
    const afterCrash = (await api('GET', `/api/nodes/${id}`)).json().data;
    expect(afterCrash.restartCount).toBe(1);
    expect(afterCrash.lastError).toBeNull();

    await until(
      'all delivered',
      async () => (await api('GET', `/api/nodes/${id}`)).json().data.webhook.pending === 0,
    );
    expect(receiver.statuses(id)).toEqual([
      'STARTING',
      'RUNNING',
      'IN_PROGRESS',
      'PAUSED',
      'STARTING',
      'RUNNING',
      'IN_PROGRESS',
      'RUNNING',
      'FAILED',
      'STARTING',
      'RUNNING',
    ]);
    const paths = receiver.requests
      .filter((r) => JSON.parse(r.body.toString()).nodeId === id)
      .map((r) => r.path);
    expect(paths.slice(0, 6).every((p) => p === '/a')).toBe(true);
    expect(paths.slice(6).every((p) => p === '/b')).toBe(true);

    // Delivery log API.
    const events = (await api('GET', `/api/nodes/${id}/webhooks/events`)).json().data;
    expect(events).toHaveLength(11);
    expect(events[0]).toMatchObject({ status: 'RUNNING', state: 'delivered', attempts: 1 });
    expect(events[0].attemptLog).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'success', statusCode: 200 }),
    ]);
    const one = await api('GET', `/api/nodes/${id}/webhooks/events/${events[3].eventId}`);
    expect(one.json().data.payload).toBe(events[3].payload);
    const before = receiver.requests.length;
    const again = await api('POST', `/api/nodes/${id}/webhooks/events/${events[3].eventId}/redeliver`);
    expect(again.statusCode).toBe(202);
    await until('redelivered', () => receiver.requests.length > before);
    const re = receiver.requests[before]!;
    expect(re.body.toString()).toBe(events[3].payload);
    expect(re.headers['x-service-event-id']).toBe(events[3].eventId);
    expect(re.headers['x-service-attempt']).toBe('2');

    // Delete: IN_PROGRESS, then process and data gone.
    const del = await api('DELETE', `/api/nodes/${id}`);
    expect(del.statusCode).toBe(202);
    expect(del.json().data.status).toBe('IN_PROGRESS');
    await until('deleted', async () => (await api('GET', `/api/nodes/${id}`)).statusCode === 404);
    expect(existsSync(join(dir, 'nodes', id))).toBe(false);
    await expect(fetch(`${afterCrash.apiUrl}/healthcheck`)).rejects.toThrow();
  });

  it('refuses an empty webhookUrl (400, nothing changed) and turns webhooks off only on an explicit null', async () => {
    const emptyMessage = 'invalid webhookUrl: empty (send null to turn webhooks off)';
    for (const webhookUrl of ['', '   ']) {
      const r = await api('POST', '/api/nodes', tokenA, {
        name: 'hooks',
        network: 'regtest',
        settings: { webhookUrl },
      });
      expect(r.statusCode).toBe(400);
      expect(r.json()).toEqual({ error: { code: 'INVALID_WEBHOOK_URL', message: emptyMessage } });
    }
    expect((await api('GET', '/api/nodes')).json().data.map((n: { name: string }) => n.name)).not.toContain(
      'hooks',
    );

    const id = (
      await api('POST', '/api/nodes', tokenA, {
        name: 'hooks',
        network: 'regtest',
        settings: { webhookUrl: receiver.url('/hooks') },
      })
    ).json().data.nodeId as string;
    await until('RUNNING', async () => (await nodeStatus(id)) === 'RUNNING');
    const eventCount = async () =>
      (await cloud.db.selectFrom('webhook_events').select('seq').where('node_id', '=', id).execute()).length;
    await until('2 events delivered', () => receiver.statuses(id).length === 2);
    expect(await eventCount()).toBe(2);

    for (const method of ['POST', 'PATCH'] as const) {
      const r = await api(method, `/api/nodes/${id}/settings`, tokenA, { webhookUrl: '' });
      expect(r.statusCode).toBe(400);
      expect(r.json()).toEqual({ error: { code: 'INVALID_WEBHOOK_URL', message: emptyMessage } });
    }
    // Nothing changed: same URL, same status, no IN_PROGRESS event.
    expect((await api('GET', `/api/nodes/${id}`)).json().data).toMatchObject({
      status: 'RUNNING',
      settings: { webhookUrl: receiver.url('/hooks') },
    });
    expect(await eventCount()).toBe(2);

    // Leaving the key out changes nothing either.
    const same = await api('PATCH', `/api/nodes/${id}/settings`, tokenA, {});
    expect(same.statusCode).toBe(200);
    expect(same.json().data).toMatchObject({
      status: 'RUNNING',
      settings: { webhookUrl: receiver.url('/hooks') },
    });

    // null: webhooks off at once; the settings change itself (IN_PROGRESS → RUNNING) is not sent anywhere.
    const off = await api('PATCH', `/api/nodes/${id}/settings`, tokenA, { webhookUrl: null });
    expect(off.statusCode).toBe(200);
    expect(off.json().data.settings).toEqual({ webhookUrl: null });
    await until('RUNNING after settings', async () => (await nodeStatus(id)) === 'RUNNING');
    expect(await eventCount()).toBe(2);
    expect((await api('POST', `/api/nodes/${id}/stop`)).statusCode).toBe(202);
    await until('PAUSED', async () => (await nodeStatus(id)) === 'PAUSED');
    expect(await eventCount()).toBe(2);
    expect(receiver.statuses(id)).toEqual(['STARTING', 'RUNNING']);

    const del = await api('DELETE', `/api/nodes/${id}`);
    expect(del.statusCode).toBe(202);
    await until('deleted', async () => (await api('GET', `/api/nodes/${id}`)).statusCode === 404);
  });

  it('writes the status change and its event atomically', async () => {
    const created = (
      await api('POST', '/api/nodes', tokenA, {
        name: 'atomic',
        network: 'regtest',
        settings: { webhookUrl: receiver.url() },
      })
    ).json().data;
    await until('RUNNING', async () => (await nodeStatus(created.nodeId)) === 'RUNNING');
    const events = async () =>
      (
        await cloud.db
          .selectFrom('webhook_events')
          .select('seq')
          .where('node_id', '=', created.nodeId)
          .execute()
      ).length;
    const n = await events();
    // An event that cannot be written (payload over the cap) rolls the status change back too.
    const deps = { db: cloud.db, dialect: cloud.dialect, maxPayloadBytes: 10, onEvent: () => {} };
    await expect(changeNode(deps, created.nodeId, 'FAILED', { last_error: 'x' })).rejects.toThrow(
      /max_payload_bytes/,
    );
    const row = await cloud.db
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', created.nodeId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('RUNNING');
    expect(row.last_error).toBeNull();
    expect(await events()).toBe(n);
    // ThunderStack's form of delete.
    const del = await api('DELETE', '/api/nodes', tokenA, { destroyNodeId: created.nodeId });
    expect(del.statusCode).toBe(202);
    expect(del.json().data.status).toBe('IN_PROGRESS');
    await until('deleted', async () => (await api('GET', `/api/nodes/${created.nodeId}`)).statusCode === 404);
  });
});
