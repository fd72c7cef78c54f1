/**
 * Real processes end to end: a regtest devnet (bitcoind, our Electrum server, our RGB proxy), the
 * cloud (in-process, on SQLite and on PostgreSQL) running REAL wallet-node processes
 * (`apps/wallet-node/dist/main.js`) pointed at that devnet, and an HTTPS receiver verifying every
 * webhook with the public key fetched from the API.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { verifyWebhook } from '@rgbx/sdk';
import { createLogger } from '@rgbx/service-kit';
import { createTestPgDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import { installedWalletNodeMain } from './config.ts';
import { selfSignedCert, TestReceiver, testConfig, until } from './test-support.ts';

/** The hosted nodes run the installed @rgbx/wallet-node package's bin, as the cloud's default. */
const WALLET_NODE_MAIN = installedWalletNodeMain();
const root = mkdtempSync(join(tmpdir(), 'cloud-e2e-'));
const tls = selfSignedCert(join(root, 'tls'));
let devnet: Devnet;
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
let receiver: TestReceiver;

beforeAll(async () => {
  if (!existsSync(WALLET_NODE_MAIN))
    throw new Error(`${WALLET_NODE_MAIN} is missing: run \`npx tsc -b\` first`);
  [devnet, pg, receiver] = await Promise.all([
    startDevnet({ dir: join(root, 'devnet') }),
    createTestPgDatabase('cloud_e2e'),
    new TestReceiver(tls).start(),
  ]);
}, 180_000);
afterAll(async () => {
  await receiver?.stop();
  await devnet?.stop();
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe.each([
  ['sqlite', (dir: string) => `sqlite:${join(dir, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('real wallet nodes, cloud on %s', (_name, dbUrl) => {
  let cloud: Cloud;
  let token: string;
  let cloudDir = '';
  beforeAll(async () => {
    const dir = mkdtempSync(join(root, 'cloud-'));
    cloudDir = dir;
    cloud = await buildCloud(
      testConfig({
        dir,
        databaseUrl: dbUrl(dir),
        caFile: tls.certFile,
        walletNodeMain: WALLET_NODE_MAIN,
        // The devnet follow-mode plug-in (development only): the running devnet, looked up at every node start.
        backend: `plugin = "@rgbx/devnet/cloud-backend"\nplugin_options = { dir = ${JSON.stringify(devnet.dir)} }`,
        nodes:
          'health_interval_ms = 500\nstart_timeout_ms = 60000\nrestart_backoff_ms = [500]\nmax_restarts = 2\nstop_grace_ms = 10000',
      }),
      { logger: createLogger({ name: 'e2e', level: 'silent' }) },
    );
    cloud.startWorkers();
    token = (await createToken(cloud.db, 'e2e', 'test')).token;
  });
  afterAll(async () => {
    await cloud?.close({ stopNodes: true });
  }, 60_000);

  const api = async (method: string, url: string, payload?: unknown) => {
    const r = await cloud.app.inject({
      method: method as 'GET',
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload ? { payload: payload as object } : {}),
    });
    return { status: r.statusCode, body: r.json() };
  };
  const status = async (id: string) => (await api('GET', `/api/nodes/${id}`)).body.data.status as string;

  it('hosts a real wallet node: STARTING → RUNNING webhooks, pause/resume, crash → FAILED, delete', async () => {
    const pem = (await api('GET', '/api/webhook-public-key')).body.data as string;
    const created = await api('POST', '/api/nodes', {
      name: 'wallet',
      network: 'regtest',
      settings: { webhookUrl: receiver.url(`/${_name}`) },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.nodeId as string;
    await until('RUNNING', async () => (await status(id)) === 'RUNNING', 90_000, 200);
    await until('two webhooks', () => receiver.statuses(id).length >= 2, 20_000);
    expect(receiver.statuses(id).slice(0, 2)).toEqual(['STARTING', 'RUNNING']);
    for (const r of receiver.requests.filter((x) => x.path === `/${_name}`)) {
      expect(verifyWebhook(r.body, r.headers['x-service-signature'] as string, pem, id).ok).toBe(true);
    }
    // It really is the wallet node, on the devnet.
    const apiUrl = (await api('GET', `/api/nodes/${id}`)).body.data.apiUrl as string;
    expect((await fetch(`${apiUrl}/healthcheck`)).status).toBe(200);
    const version = await fetch(`${apiUrl}/version`);
    expect(version.status).toBe(200);
    // ...running without the devnet's bitcoind RPC password, which its config does not carry.
    const nodeToml = readFileSync(join(cloudDir, 'nodes', id, 'node.toml'), 'utf8');
    expect(nodeToml).toContain(`btc_rpc_user = ${JSON.stringify(devnet.info.bitcoind.rpc_user)}`);
    expect(nodeToml).toMatch(/^btc_rpc_password = ""$/m);
    expect(nodeToml).not.toContain(devnet.info.bitcoind.rpc_password);

    await api('POST', `/api/nodes/${id}/stop`);
    await until('PAUSED', async () => (await status(id)) === 'PAUSED', 30_000, 200);
    await expect(fetch(`${apiUrl}/healthcheck`)).rejects.toThrow();
    await api('POST', `/api/nodes/${id}/start`);
    await until('RUNNING again', async () => (await status(id)) === 'RUNNING', 90_000, 200);

    const pid = (
      await cloud.db.selectFrom('nodes').select('pid').where('id', '=', id).executeTakeFirstOrThrow()
    ).pid!;
    process.kill(pid, 'SIGKILL');
    await until('FAILED', () => receiver.statuses(id).includes('FAILED'), 20_000);
    await until('restarted', async () => (await status(id)) === 'RUNNING', 90_000, 200);
    await until(
      'all delivered',
      async () => (await api('GET', `/api/nodes/${id}`)).body.data.webhook.pending === 0,
    );
    expect(receiver.statuses(id)).toEqual([
      'STARTING',
      'RUNNING',
      'IN_PROGRESS',
      'PAUSED',
      'STARTING',
      'RUNNING',
      'FAILED',
      'STARTING',
      'RUNNING',
    ]);

    await api('DELETE', `/api/nodes/${id}`);
    await until('deleted', async () => (await api('GET', `/api/nodes/${id}`)).status === 404, 30_000, 200);
  });
});

describe('a node whose indexer is unreachable', () => {
  it('never becomes healthy: FAILED, restarted per policy, then left FAILED', async () => {
    const dir = mkdtempSync(join(root, 'bad-'));
    const rpc = new URL(devnet.info.bitcoind.rpc_url);
    const cloud = await buildCloud(
      testConfig({
        dir,
        databaseUrl: `sqlite:${join(dir, 'c.db')}`,
        caFile: tls.certFile,
        walletNodeMain: WALLET_NODE_MAIN,
        backend: [
          `btc_rpc_address = "127.0.0.1:${rpc.port}"`,
          `btc_rpc_user = ${JSON.stringify(devnet.info.bitcoind.rpc_user)}`,
          `btc_rpc_password = ${JSON.stringify(devnet.info.bitcoind.rpc_password)}`,
          'indexer_address = "tcp://127.0.0.1:1"',
          `proxy_address = [${JSON.stringify(devnet.info.proxy)}]`,
        ].join('\n'),
        nodes:
          'health_interval_ms = 300\nstart_timeout_ms = 30000\nrestart_backoff_ms = [300]\nmax_restarts = 1',
      }),
      { logger: createLogger({ name: 'bad', level: 'silent' }) },
    );
    cloud.startWorkers();
    try {
      const { info } = await createToken(cloud.db, 'bad', 't');
      const n = await cloud.manager.create(info.accountId, {
        name: 'no-indexer',
        network: 'regtest',
        webhookUrl: receiver.url('/bad'),
      });
      await until(
        'FAILED for good',
        async () => {
          const row = await cloud.db
            .selectFrom('nodes')
            .selectAll()
            .where('id', '=', n.id)
            .executeTakeFirstOrThrow();
          return row.status === 'FAILED' && row.next_restart_at === null && row.restart_count === 1;
        },
        60_000,
        200,
      );
      await until('delivered', () => receiver.statuses(n.id).length === 4);
      expect(receiver.statuses(n.id)).toEqual(['STARTING', 'FAILED', 'STARTING', 'FAILED']);
      const row = await cloud.db
        .selectFrom('nodes')
        .selectAll()
        .where('id', '=', n.id)
        .executeTakeFirstOrThrow();
      expect(row.last_error).toMatch(/exited while starting/);
    } finally {
      await cloud.close({ stopNodes: true });
    }
  }, 90_000);
});
