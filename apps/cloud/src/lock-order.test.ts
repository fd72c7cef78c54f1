/**
 * Row-lock order on PostgreSQL. A settings change (`changeNode` with `retargetPending`) locks the
 * node row, then its pending events; the dispatcher's result commit must take those rows in the
 * same order (node, then event). Taken the other way round (event, then node), a delivery that
 * commits while a settings change runs is a deadlock, and PostgreSQL aborts one of them: the API
 * answered 500 (`deadlock detected`) right after a node came back RUNNING.
 *
 * The test pauses the dispatcher's result commit right after it wrote the event row, lets a
 * settings change run until it waits on a row lock, then lets the commit finish: both must go
 * through, and the change must answer 200.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@rgbx/service-kit';
import { AddressPolicy } from '@rgbx/service-kit/webhooks';
import { createTestPgDatabase } from '@rgbx/store';
import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  sql,
  type UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import { selfSignedCert, TestReceiver, testConfig, until } from './test-support.ts';
import { Dispatcher } from './webhooks/dispatcher.ts';
import { SignerCache } from './webhooks/keys.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-locks-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_locks');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

type Named = { kind: string; name?: string; table?: Named; identifier?: Named; column?: Named };

/**
 * Holds the dispatcher's result commit (the `update webhook_events set state = …` of a finished
 * delivery) inside its transaction, after the statement ran, until `release()`.
 */
class CommitGate implements KyselyPlugin {
  private readonly held = new Set<string>();
  private armed = true;
  private open!: () => void;
  private readonly opened = new Promise<void>((r) => {
    this.open = r;
  });
  private hit!: () => void;
  readonly reached = new Promise<void>((r) => {
    this.hit = r;
  });

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const n = args.node as unknown as Named & { updates?: { column: Named }[] };
    if (
      this.armed &&
      n.kind === 'UpdateQueryNode' &&
      n.table?.table?.identifier?.name === 'webhook_events' &&
      n.updates?.some((u) => u.column.column?.name === 'state')
    ) {
      this.armed = false;
      this.held.add(args.queryId.queryId);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.held.delete(args.queryId.queryId)) {
      this.hit();
      await this.opened;
    }
    return args.result;
  }

  release(): void {
    this.open();
  }
}

describe('settings change racing a delivery commit (postgres)', () => {
  let cloud: Cloud;
  let receiver: TestReceiver;
  let token: string;
  let accountId: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(root, 'c-'));
    receiver = await new TestReceiver(tls).start();
    cloud = await buildCloud(testConfig({ dir, databaseUrl: pg.url, caFile: tls.certFile }), {
      logger: createLogger({ name: 'locks-test', level: 'silent' }),
    });
    // No workers: the only dispatcher is the instrumented one below, and no supervisor.
    const t = await createToken(cloud.db, 'acme', 'test');
    token = t.token;
    accountId = t.info.accountId;
  });
  afterAll(async () => {
    await cloud?.close();
    await receiver?.stop();
  });

  // Marked failing, the delivery's commit also writes (locks) the node row when it succeeds.
  it.each([
    ['a healthy endpoint', null],
    ['an endpoint marked failing', 1],
  ])(
    'answers 200 and delivers everything when a delivery to %s commits during the change',
    async (what, failingSince) => {
      // Only this node's events are delivered here (whatever an earlier case left behind).
      await cloud.db
        .updateTable('webhook_events')
        .set({ state: 'abandoned' })
        .where('state', '=', 'pending')
        .execute();
      const n = await cloud.manager.create(accountId, {
        name: `racer-${failingSince ?? 0}`,
        network: 'regtest',
        webhookUrl: receiver.url('/a'),
      });
      await cloud.db
        .updateTable('nodes')
        .set({ webhook_failing_since: failingSince })
        .where('id', '=', n.id)
        .execute();

      const gate = new CommitGate();
      const dispatcher = new Dispatcher({
        db: cloud.db.withPlugin(gate),
        signer: new SignerCache(cloud.db, cloud.vault),
        policy: new AddressPolicy({ allowCidrs: ['127.0.0.0/8'] }),
        retry: { scheduleMs: [200], jitter: 0, giveUpAfterMs: 60_000 },
        connectTimeoutMs: 3000,
        requestTimeoutMs: 3000,
        responseSnippetBytes: 256,
        concurrency: 4,
        pollIntervalMs: 50,
        extraCa: readFileSync(tls.certFile, 'utf8'),
        logger: createLogger({ name: 'locks-test', level: 'silent' }),
      });
      dispatcher.start();
      try {
        // STARTING was delivered; its result commit has written the event row and is held open. The
        // change (IN_PROGRESS) now locks the node and re-targets the node's pending events.
        await gate.reached;
        const moved = cloud.app.inject({
          method: 'POST',
          url: `/api/nodes/${n.id}/settings`,
          headers: { authorization: `Bearer ${token}` },
          payload: { webhookUrl: receiver.url('/b') },
        });
        await until(`${what}: the settings change waits on a row lock`, async () => {
          const r = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`.execute(cloud.db);
          return Number(r.rows[0]?.n) > 0;
        });
        gate.release();
        const res = await moved;
        expect(res.statusCode).toBe(200);
        expect(res.json().data).toMatchObject({
          status: 'IN_PROGRESS',
          settings: { webhookUrl: receiver.url('/b') },
        });
        await until('none pending', async () => {
          const p = await cloud.db
            .selectFrom('webhook_events')
            .select('seq')
            .where('node_id', '=', n.id)
            .where('state', '=', 'pending')
            .execute();
          return p.length === 0;
        });
      } finally {
        gate.release();
        await dispatcher.stop();
      }
      expect(receiver.statuses(n.id)).toEqual(['STARTING', 'IN_PROGRESS']);
      const paths = receiver.requests.filter((r) => r.body.toString().includes(n.id)).map((r) => r.path);
      expect(paths).toEqual(['/a', '/b']);
      const attempts = await cloud.db
        .selectFrom('webhook_attempts as a')
        .innerJoin('webhook_events as e', 'e.seq', 'a.event_seq')
        .select(['a.outcome'])
        .where('e.node_id', '=', n.id)
        .execute();
      expect(attempts.map((a) => a.outcome)).toEqual(['success', 'success']);
      const row = await cloud.db
        .selectFrom('nodes')
        .select('webhook_failing_since')
        .where('id', '=', n.id)
        .executeTakeFirstOrThrow();
      expect(row.webhook_failing_since).toBeNull();
    },
  );
});
