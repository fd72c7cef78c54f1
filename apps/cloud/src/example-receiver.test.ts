/**
 * examples/webhook-receiver/server.mjs as a real HTTPS process receiving a real cloud's webhooks,
 * with the public key fetched from the cloud API; forged requests get 403.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@rgbx/service-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import { selfSignedCert, testConfig, until } from './test-support.ts';

const EXAMPLE = fileURLToPath(new URL('../../../examples/webhook-receiver/server.mjs', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'cloud-example-'));
const tls = selfSignedCert(join(root, 'tls'));
let cloud: Cloud;
let child: ChildProcess;
let port = 0;
let token = '';
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  cloud = await buildCloud(
    testConfig({ dir: root, databaseUrl: `sqlite:${join(root, 'c.db')}`, caFile: tls.certFile }),
    {
      logger: createLogger({ name: 'example', level: 'silent' }),
    },
  );
  await cloud.app.listen({ host: '127.0.0.1', port: 0 });
  cloud.startWorkers();
  token = (await createToken(cloud.db, 'example', 't')).token;
  child = spawn(process.execPath, [EXAMPLE], {
    env: {
      PATH: process.env.PATH,
      TLS_KEY: join(root, 'tls', 'receiver.key'),
      TLS_CERT: tls.certFile,
      PORT: '0',
      CLOUD_API_URL: `http://127.0.0.1:${(cloud.app.server.address() as AddressInfo).port}`,
      CLOUD_API_TOKEN: token,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buf = '';
  child.stdout!.on('data', (c: Buffer) => {
    buf += c.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      lines.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  port = (await until('example listening', () => lines.find((l) => l.event === 'listening')))!.port as number;
});
afterAll(async () => {
  child?.kill('SIGTERM');
  await cloud?.close({ stopNodes: true });
  rmSync(root, { recursive: true, force: true });
});

const post = (body: string, headers: Record<string, string>) =>
  new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhook',
        method: 'POST',
        ca: tls.cert,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let s = '';
        res.on('data', (c) => {
          s += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(s) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });

it('receives STARTING and RUNNING from a real cloud and refuses forgeries', async () => {
  const account = await cloud.db
    .selectFrom('accounts')
    .select('id')
    .where('name', '=', 'example')
    .executeTakeFirstOrThrow();
  const node = await cloud.manager.create(account.id, {
    name: 'ex',
    network: 'regtest',
    webhookUrl: `https://127.0.0.1:${port}/webhook`,
  });
  await until('two events', () => lines.filter((l) => l.nodeId === node.id).length >= 2);
  expect(
    lines.filter((l) => l.nodeId === node.id).map((l) => (l.details as { status: string }).status),
  ).toEqual(['STARTING', 'RUNNING']);
  // A result is committed with the dispatcher's next group commit (≤ 20 ms after the answer).
  const events = await until('both marked delivered', async () => {
    const rows = await cloud.db
      .selectFrom('webhook_events')
      .selectAll()
      .where('node_id', '=', node.id)
      .execute();
    return rows.length === 2 && rows.every((e) => e.state === 'delivered') ? rows : undefined;
  });
  if (!events) throw new Error('until() resolves only with a truthy value');
  expect(events.every((e) => e.state === 'delivered')).toBe(true);

  const forged = events[0]!.body.replace('STARTING', 'FAILED');
  expect(await post(forged, { 'x-service-signature': Buffer.alloc(384, 1).toString('base64') })).toEqual({
    status: 403,
    body: { message: 'Forbidden - Invalid Signature' },
  });
  expect(await post(events[0]!.body, {})).toEqual({
    status: 403,
    body: { message: 'Forbidden - Invalid Signature' },
  });
  expect(lines.filter((l) => l.nodeId === node.id)).toHaveLength(2);
});
