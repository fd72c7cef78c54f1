/**
 * Batched outbox work (dispatcher.ts `pump`): one transaction commits the results of the deliveries
 * finished since the last one and leases the next due events in one statement. On SQLite and
 * PostgreSQL, real databases: two dispatchers never lease one event, a failed delivery in a batch
 * does not hold up or lose the others, and `stop()` commits every result before it returns.
 * Also the signing threads (sign-pool.ts): the same signatures as signing inline.
 */
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@rgbx/service-kit';
import { AddressPolicy } from '@rgbx/service-kit/webhooks';
import { createTestPgDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../auth/tokens.ts';
import { buildCloud, type Cloud } from '../cloud.ts';
import { changeNode } from '../nodes/status.ts';
import { selfSignedCert, TestReceiver, testConfig, until } from '../test-support.ts';
import { Dispatcher } from './dispatcher.ts';
import { SignerCache } from './keys.ts';
import { SignPool, signInline } from './sign-pool.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-batch-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_batch');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

const logger = createLogger({ name: 'batch-test', level: 'silent' });

describe.each([
  ['sqlite', (dir: string) => `sqlite:${join(dir, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('batched outbox on %s', (_name, dbUrl) => {
  let cloud: Cloud;
  let receiver: TestReceiver;

  beforeAll(async () => {
    const dir = mkdtempSync(join(root, 'c-'));
    receiver = await new TestReceiver(tls).start();
    cloud = await buildCloud(testConfig({ dir, databaseUrl: dbUrl(dir), caFile: tls.certFile }), { logger });
  });
  afterAll(async () => {
    await cloud?.close();
    await receiver?.stop();
  });

  const dispatcher = (concurrency: number) =>
    new Dispatcher({
      db: cloud.db,
      signer: new SignerCache(cloud.db, cloud.vault),
      policy: new AddressPolicy({ allowCidrs: ['127.0.0.0/8'] }),
      retry: { scheduleMs: [60_000], jitter: 0, giveUpAfterMs: 3_600_000 },
      connectTimeoutMs: 3000,
      requestTimeoutMs: 3000,
      responseSnippetBytes: 64,
      concurrency,
      pollIntervalMs: 50,
      extraCa: readFileSync(tls.certFile, 'utf8'),
      logger,
    });

  /** `nodes` nodes with webhooks to `path(i)`, each with its creation event and `changes` more. */
  async function queue(prefix: string, nodes: number, changes: number, path: (i: number) => string) {
    const ids: string[] = [];
    // An account per case: accounts hold at most 20 nodes.
    const accountId = (await createToken(cloud.db, `acct-${prefix}`, 'test')).info.accountId;
    for (let i = 0; i < nodes; i++) {
      const n = await cloud.manager.create(accountId, {
        name: `${prefix}${i}`,
        network: 'regtest',
        webhookUrl: receiver.url(path(i)),
      });
      ids.push(n.id);
    }
    const deps = { db: cloud.db, dialect: cloud.dialect, maxPayloadBytes: 16384, onEvent: () => {} };
    for (let k = 0; k < changes; k++)
      for (const id of ids) await changeNode(deps, id, k % 2 === 0 ? 'RUNNING' : 'IN_PROGRESS', {});
    return ids;
  }

  const eventsOf = (ids: string[]) =>
    cloud.db
      .selectFrom('webhook_events')
      .select(['seq', 'event_id', 'node_id', 'state', 'attempts', 'lease_until'])
      .where('node_id', 'in', ids)
      .orderBy('seq')
      .execute();
  const attemptsOf = (ids: string[]) =>
    cloud.db
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_events as e', 'e.seq', 'a.event_seq')
      .select(['e.event_id', 'a.outcome', 'a.finished_at'])
      .where('e.node_id', 'in', ids)
      .execute();

  it('two dispatchers never hand one event to both; every result is committed, in order per node', async () => {
    const ids = await queue('two-', 12, 5, () => '/two');
    const expected = ids.length * 6;
    const a = dispatcher(8);
    const b = dispatcher(8);
    a.start();
    b.start();
    try {
      await until(
        'all received',
        () => receiver.requests.filter((r) => r.path === '/two').length >= expected,
      );
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    const got = receiver.requests
      .filter((r) => r.path === '/two')
      .map((r) => String(r.headers['x-service-event-id']));
    expect(got).toHaveLength(expected);
    expect(new Set(got).size).toBe(expected); // each event sent once: never leased twice
    for (const id of ids)
      expect(receiver.statuses(id)).toEqual([
        'STARTING',
        'RUNNING',
        'IN_PROGRESS',
        'RUNNING',
        'IN_PROGRESS',
        'RUNNING',
      ]);
    const events = await eventsOf(ids);
    expect(events.every((e) => e.state === 'delivered' && e.attempts === 1 && e.lease_until === null)).toBe(
      true,
    );
    const attempts = await attemptsOf(ids);
    expect(attempts).toHaveLength(expected);
    expect(attempts.every((x) => x.outcome === 'success' && x.finished_at !== null)).toBe(true);
  });

  it('a failed delivery in a batch does not hold up or lose the others', async () => {
    receiver.respond = (r) =>
      r.path === '/bad' ? { status: 500, body: 'no' } : { status: 200, body: '{"message":"ok"}' };
    try {
      const ids = await queue('mix-', 9, 2, (i) => (i % 3 === 0 ? '/bad' : '/good'));
      const bad = ids.filter((_, i) => i % 3 === 0);
      const good = ids.filter((_, i) => i % 3 !== 0);
      const d = dispatcher(16);
      d.start();
      try {
        await until('good ones delivered', async () =>
          (await eventsOf(good)).every((e) => e.state === 'delivered'),
        );
        await until(
          'bad ones attempted',
          async () =>
            (await eventsOf(bad)).filter((e) => e.attempts > 0 && e.lease_until === null).length ===
            bad.length,
        );
      } finally {
        await d.stop();
      }
      const goodEvents = await eventsOf(good);
      expect(goodEvents).toHaveLength(good.length * 3);
      const badEvents = await eventsOf(bad);
      // Each bad node: its first event failed once and waits for its retry; the later ones wait behind it.
      for (const id of bad) {
        const mine = badEvents.filter((e) => e.node_id === id);
        expect(mine.map((e) => [e.state, e.attempts])).toEqual([
          ['pending', 1],
          ['pending', 0],
          ['pending', 0],
        ]);
      }
      const attempts = await attemptsOf(ids);
      expect(attempts.filter((x) => x.outcome === 'http_error')).toHaveLength(bad.length);
      expect(attempts.filter((x) => x.outcome === 'success')).toHaveLength(good.length * 3);
      expect(attempts.some((x) => x.outcome === 'in_flight' || x.finished_at === null)).toBe(false);
    } finally {
      receiver.respond = () => ({ status: 200, body: '{"message":"ok"}' });
    }
  });

  it('stop() commits the result of every delivery the receiver answered', async () => {
    receiver.respond = () => ({ status: 200, body: '{"message":"ok"}', delayMs: 20 });
    try {
      const ids = await queue('stop-', 10, 4, () => '/stop');
      const d = dispatcher(10);
      d.start();
      await until('some received', () => receiver.requests.filter((r) => r.path === '/stop').length >= 15);
      await d.stop();
      const answered = new Set(
        receiver.requests
          .filter((r) => r.path === '/stop')
          .map((r) => String(r.headers['x-service-event-id'])),
      );
      const events = await eventsOf(ids);
      const delivered = new Set(events.filter((e) => e.state === 'delivered').map((e) => e.event_id));
      expect(delivered).toEqual(answered);
      expect(events.every((e) => e.lease_until === null)).toBe(true);
      const attempts = await attemptsOf(ids);
      expect(attempts.some((x) => x.outcome === 'in_flight')).toBe(false);
    } finally {
      receiver.respond = () => ({ status: 200, body: '{"message":"ok"}' });
    }
  });
});

describe('signing threads', () => {
  it('sign exactly as inline signing does, with keys switching mid-stream, and inline once closed', async () => {
    const k1 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const k2 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const signers = [
      { keyId: 'k1', privateKey: k1 },
      { keyId: 'k2', privateKey: k2 },
    ];
    const pool = new SignPool(2);
    try {
      const bodies = Array.from({ length: 12 }, (_, i) => JSON.stringify({ i, s: 'é€' }));
      const sigs = await Promise.all(bodies.flatMap((b, i) => pool.signMany(signers[i % 2]!, [b, `${b} `])));
      bodies.forEach((b, i) => {
        const s = signers[i % 2]!;
        expect(sigs[2 * i]).toBe(signInline(s, Buffer.from(b, 'utf8')));
        expect(sigs[2 * i + 1]).toBe(signInline(s, Buffer.from(`${b} `, 'utf8')));
        expect(
          verify(
            'sha256',
            Buffer.from(b, 'utf8'),
            createPublicKey(s.privateKey),
            Buffer.from(sigs[2 * i]!, 'base64'),
          ),
        ).toBe(true);
      });
    } finally {
      await pool.close();
    }
    expect(await pool.sign(signers[0]!, 'x')).toBe(signInline(signers[0]!, Buffer.from('x')));
  });
});
