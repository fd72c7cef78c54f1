/**
 * Cluster membership on PostgreSQL, in-process: nodes are claimed in even shares, the nodes of an
 * instance on another machine are taken over only once its lease has run out (database clock),
 * an instance whose renewal is overdue is fenced, and instances that cannot share the database
 * (another driver; the local driver on another machine) are refused. The process-level behaviour
 * (two services, kill -9) is in multi-instance.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@rgbx/service-kit';
import { createTestPgDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCloudDatabase } from '../db/open.ts';
import type { CloudDb } from '../db/schema.ts';
import { Cluster, ClusterError } from './cluster.ts';

const tmp = mkdtempSync(join(tmpdir(), 'cloud-cluster-'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
let db: CloudDb;
let close: () => Promise<void>;
const logger = createLogger({ name: 'cluster-test', level: 'silent' });

beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_cluster');
  ({ db, close } = await openCloudDatabase(pg.url, tmp));
  await db.insertInto('accounts').values({ id: 'acct', name: 'acct', created_at: 1 }).execute();
});
afterAll(async () => {
  await close?.();
  await pg?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

async function addNodes(prefix: string, n: number, owner: string | null): Promise<void> {
  for (let i = 0; i < n; i++)
    await db
      .insertInto('nodes')
      .values({
        id: `${prefix}-${i}`,
        account_id: 'acct',
        name: `${prefix}-${i}`,
        network: 'regtest',
        webhook_url: null,
        status: 'RUNNING',
        desired: 'running',
        pending_op: null,
        port: null,
        pid: null,
        started_at: null,
        data_dir: join(tmp, prefix, String(i)),
        restart_count: 0,
        restart_window_start: null,
        next_restart_at: null,
        last_error: null,
        webhook_failing_since: null,
        created_at: 1,
        updated_at: 1,
        deleted_at: null,
        owner_id: owner,
      })
      .execute();
}

/** A live instance on another machine (its pid means nothing here). */
async function remoteInstance(id: string, driver: string, leaseFromNowMs: number): Promise<void> {
  const now = Date.now();
  await db
    .insertInto('cloud_instances')
    .values({
      id,
      name: `elsewhere:${id}`,
      host_key: 'another-machine',
      pid: 1,
      pid_start: '1',
      driver,
      started_at: now - 60_000,
      heartbeat_at: now,
      lease_until: now + leaseFromNowMs,
    })
    .execute();
}

const owned = async (id: string) =>
  (
    await db
      .selectFrom('nodes')
      .select('id')
      .where('owner_id', '=', id)
      .where('deleted_at', 'is', null)
      .execute()
  ).length;

describe('cluster (postgres)', () => {
  it('takes over a remote instance’s nodes only after its lease, in even shares', async () => {
    await remoteInstance('remote-1', 'kubernetes', 60_000);
    await addNodes('r', 6, 'remote-1');
    const c1 = new Cluster({ db, dialect: 'postgres', logger, leaseMs: 1000, driver: 'kubernetes' });
    const c2 = new Cluster({ db, dialect: 'postgres', logger, leaseMs: 1000, driver: 'kubernetes' });
    await c1.join();
    await c2.join();
    await c1.beat();
    await c2.beat();
    // The remote instance is live: nothing is taken from it.
    expect(await owned('remote-1')).toBe(6);
    // Its lease runs out (it stopped renewing): the two live instances split its nodes.
    await db
      .updateTable('cloud_instances')
      .set({ lease_until: Date.now() - 1 })
      .where('id', '=', 'remote-1')
      .execute();
    await c1.beat();
    await c2.beat();
    expect([await owned(c1.id), await owned(c2.id), await owned('remote-1')]).toEqual([3, 3, 0]);
    // A new node goes to the least loaded live instance.
    const moved = await db
      .selectFrom('nodes')
      .select('id')
      .where('owner_id', '=', c2.id)
      .executeTakeFirstOrThrow();
    await db.updateTable('nodes').set({ owner_id: c1.id }).where('id', '=', moved.id).execute();
    expect(await c1.ownerForNewNode()).toBe(c2.id);
    // Leaving hands the nodes over at once (no lease to wait for).
    await c1.leave();
    await c2.beat();
    expect(await owned(c2.id)).toBe(6);
    // An instance whose renewal is overdue is fenced: no node work until it renews.
    expect(c2.fenced).toBe(false);
    await new Promise((r) => setTimeout(r, 900));
    expect(c2.fenced).toBe(true);
    await c2.beat();
    expect(c2.fenced).toBe(false);
    await c2.leave();
    await db.deleteFrom('nodes').execute();
  });

  it('refuses an instance with another driver, and local-driver instances on two machines', async () => {
    await remoteInstance('remote-k8s', 'kubernetes', 60_000);
    const local = new Cluster({ db, dialect: 'postgres', logger, leaseMs: 1000, driver: 'local' });
    const err = await local.join().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(ClusterError);
    expect(err?.message).toContain('runs nodes with another driver than this one (local)');
    await db.deleteFrom('cloud_instances').execute();

    await remoteInstance('remote-local', 'local', 60_000);
    const err2 = await new Cluster({ db, dialect: 'postgres', logger, leaseMs: 1000, driver: 'local' })
      .join()
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(err2?.message).toContain('runs the local driver on another machine');
    // The refused instance left no registration behind.
    expect((await db.selectFrom('cloud_instances').select('id').execute()).map((r) => r.id)).toEqual([
      'remote-local',
    ]);
    // Once that one's lease has run out, the start goes ahead.
    await db.updateTable('cloud_instances').set({ lease_until: 0 }).execute();
    const ok = new Cluster({ db, dialect: 'postgres', logger, leaseMs: 1000, driver: 'local' });
    await ok.join();
    await ok.leave();
  });
});
