/**
 * Several cloud instances on one database. Every instance registers in `cloud_instances` and renews
 * a lease there (database clock, every `lease_ms / 3`); every live node has one owner
 * (`nodes.owner_id`), the only instance that reconciles it. A node without a live owner (never
 * claimed, or its owner's lease expired: the instance died or lost the database) is claimed by a
 * live instance, up to an even share, so the nodes of a dead instance are taken over within one
 * lease. An instance whose lease may have expired by its own (monotonic) clock is `fenced`: it
 * starts no node work until a renewal succeeds.
 *
 * Ownership says who reconciles; it is not what keeps two instances from working on one node at
 * once: every operation (API writes and reconcile steps) runs under the node's lock (a PostgreSQL
 * advisory lock, `pg-locks.ts`), and the supervisor's status writes are also conditional on still
 * owning the node, so a deposed owner's late write changes nothing.
 *
 * Refused starts (`ClusterError`, exit 2): a second instance on one SQLite database (SQLite
 * deployments are single-instance), instances with different drivers, and local-driver instances
 * on different machines (their node processes must be visible to each other: one machine, one pid
 * namespace, one data dir). The earlier instance keeps running; the later one stops.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from '@rgbx/service-kit';
import { pidAlive } from '@rgbx/service-kit';
import { bigintNumber, type Dialect } from '@rgbx/store';
import { sql } from 'kysely';
import type { CloudDb, CloudInstancesTable } from '../db/schema.ts';

export class ClusterError extends Error {
  override name = 'ClusterError';
}

export interface ClusterOptions {
  db: CloudDb;
  dialect: Dialect;
  logger: Logger;
  /** An instance that has not renewed its lease for this long is dead; its nodes are taken over. */
  leaseMs: number;
  /** `local` or `kubernetes`: every instance on one database runs the same driver. */
  driver: string;
}

/** Where pids are comparable: the machine's boot id and this process's pid namespace. */
export function hostKey(): string {
  const read = (f: () => string) => {
    try {
      return f().trim();
    } catch {
      return '?';
    }
  };
  const boot = read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
  const ns = read(() => readlinkSync('/proc/self/ns/pid'));
  return `${boot}/${ns}/${hostname()}`;
}

/** Start time of a process (clock ticks since boot, `/proc/<pid>/stat` field 22), '' if unknown. */
export function processStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

type Row = CloudInstancesTable;

const earlier = (a: Row, b: Row) =>
  bigintNumber(a.started_at) < bigintNumber(b.started_at) ||
  (bigintNumber(a.started_at) === bigintNumber(b.started_at) && a.id < b.id);

export class Cluster {
  readonly id: string = randomUUID();
  readonly name = `${hostname()}:${process.pid}`;
  private readonly host = hostKey();
  /** performance.now() until which our lease surely holds (renewal sent time + lease − margin). */
  private validUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private stopped = true;
  private joined = false;
  private readonly o: ClusterOptions;
  /** Called after a renewal that claimed nodes (the supervisor looks at them at once). */
  onClaimed: ((nodeIds: string[]) => void) | undefined;

  constructor(o: ClusterOptions) {
    this.o = o;
  }

  get leaseMs(): number {
    return this.o.leaseMs;
  }

  /** True while this instance cannot be sure it still holds its lease: no node work then. */
  get fenced(): boolean {
    return performance.now() >= this.validUntil;
  }

  /** The database's clock (ms): leases are compared on one clock whatever the machines' clocks say. */
  async dbNow(): Promise<number> {
    const q =
      this.o.dialect === 'postgres'
        ? sql<{ now: string }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint as now`
        : sql<{ now: number }>`select cast((julianday('now') - 2440587.5) * 86400000 as integer) as now`;
    const r = await q.execute(this.o.db);
    return bigintNumber(r.rows[0]!.now);
  }

  /** This instance's row in `cloud_instances`, its lease starting at `now` (database clock). */
  private async register(now: number): Promise<void> {
    await this.o.db
      .insertInto('cloud_instances')
      .values({
        id: this.id,
        name: this.name,
        host_key: this.host,
        pid: process.pid,
        pid_start: processStart(process.pid),
        driver: this.o.driver,
        started_at: now,
        heartbeat_at: now,
        lease_until: now + this.o.leaseMs,
      })
      .execute();
  }

  /**
   * Registers this instance, then refuses to run beside an earlier live instance that it cannot
   * share the database with (SQLite; another driver; the local driver on another machine).
   */
  async join(): Promise<void> {
    const sent = performance.now();
    const now = await this.dbNow();
    await this.register(now);
    this.validUntil = sent + this.o.leaseMs * 0.8;
    this.joined = true;
    await this.expireDeadNeighbours();
    const me = (await this.o.db
      .selectFrom('cloud_instances')
      .selectAll()
      .where('id', '=', this.id)
      .executeTakeFirstOrThrow()) as Row;
    const others = (await this.o.db
      .selectFrom('cloud_instances')
      .selectAll()
      .where('id', '!=', this.id)
      .where('lease_until', '>', now)
      .execute()) as Row[];
    const before = others.filter((o) => earlier(o, me));
    const why = (o: Row) => `${o.name} (instance ${o.id}, driver ${o.driver})`;
    let refusal: string | undefined;
    if (this.o.dialect === 'sqlite' && before.length > 0) {
      refusal =
        `another cloud instance, ${why(before[0]!)}, runs on this SQLite database: SQLite deployments run ` +
        'one instance (use PostgreSQL, [database] url = "postgres://…", for several)';
    } else {
      const otherDriver = before.find((o) => o.driver !== this.o.driver);
      const elsewhere = before.find((o) => o.driver === 'local' && o.host_key !== this.host);
      if (otherDriver)
        refusal = `cloud instance ${why(otherDriver)} runs nodes with another driver than this one (${this.o.driver}): every instance on one database uses the same [backend] driver`;
      else if (this.o.driver === 'local' && elsewhere)
        refusal =
          `cloud instance ${why(elsewhere)} runs the local driver on another machine (or pid namespace): ` +
          'local-driver instances must share one machine and data dir (use the kubernetes driver across machines)';
    }
    if (refusal) {
      await this.leave();
      throw new ClusterError(refusal);
    }
    this.o.logger.info({ instance: this.id, name: this.name, leaseMs: this.o.leaseMs }, 'joined the cluster');
  }

  /**
   * Instances on this machine whose process is gone (a `kill -9`, a crash) lose their lease now
   * rather than when it runs out, so a restarted service takes its nodes back at once.
   */
  private async expireDeadNeighbours(): Promise<void> {
    const rows = await this.o.db
      .selectFrom('cloud_instances')
      .select(['id', 'pid', 'pid_start', 'name'])
      .where('host_key', '=', this.host)
      .where('id', '!=', this.id)
      .where('lease_until', '>', 0)
      .execute();
    const dead = rows.filter((r) => !pidAlive(r.pid) || processStart(r.pid) !== r.pid_start).map((r) => r.id);
    if (dead.length === 0) return;
    await this.o.db.updateTable('cloud_instances').set({ lease_until: 0 }).where('id', 'in', dead).execute();
    this.o.logger.warn(
      { instances: dead },
      'cloud instances on this machine are gone: their nodes are taken over',
    );
  }

  /** Renews the lease every `lease_ms / 3` and claims orphaned nodes. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = () => {
      if (this.stopped) return;
      this.beating = this.beat()
        .catch((err: unknown) => this.o.logger.error({ err }, 'cluster lease renewal failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, Math.max(50, Math.floor(this.o.leaseMs / 3)));
        });
    };
    loop();
  }

  /** One renewal (and claim); exposed for tests. */
  async beat(): Promise<void> {
    const sent = performance.now();
    const now = await this.dbNow();
    const renewed = await this.o.db
      .updateTable('cloud_instances')
      .set({ heartbeat_at: now, lease_until: now + this.o.leaseMs })
      .where('id', '=', this.id)
      .returning('id')
      .execute();
    if (renewed.length === 0) {
      // Our row was removed (taken for dead): register again; nodes already claimed stay with their new owner.
      this.o.logger.warn({ instance: this.id }, 'cluster registration lost; registering again');
      await this.register(now);
    }
    this.validUntil = sent + this.o.leaseMs * 0.8;
    await this.expireDeadNeighbours();
    const claimed = await this.claim(now);
    if (claimed.length > 0) {
      this.o.logger.info({ nodes: claimed.length, instance: this.id }, 'claimed nodes without a live owner');
      this.onClaimed?.(claimed);
    }
    // Forget instances dead for long (their nodes were claimed long ago).
    await this.o.db
      .deleteFrom('cloud_instances')
      .where('lease_until', '<', now - 10 * this.o.leaseMs)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('nodes')
              .select(sql.lit(1).as('one'))
              .whereRef('nodes.owner_id', '=', 'cloud_instances.id'),
          ),
        ),
      )
      .execute();
  }

  /**
   * Claims nodes whose owner is not live, up to an even share of the live nodes (rounded up); a
   * node orphaned for longer than a lease is claimed whatever the share, so none is left behind.
   */
  private async claim(now: number): Promise<string[]> {
    if (this.fenced) return [];
    const live = await this.o.db
      .selectFrom('cloud_instances')
      .select('id')
      .where('lease_until', '>', now)
      .execute();
    const liveIds = live.map((l) => l.id);
    if (!liveIds.includes(this.id)) return [];
    const counts = await this.o.db
      .selectFrom('nodes')
      .select(['owner_id', this.o.db.fn.countAll<number | string>().as('n')])
      .where('deleted_at', 'is', null)
      .groupBy('owner_id')
      .execute();
    const total = counts.reduce((s, c) => s + Number(c.n), 0);
    const mine = Number(counts.find((c) => c.owner_id === this.id)?.n ?? 0);
    const share = Math.ceil(total / liveIds.length);
    const orphans = (db: CloudDb, stale: boolean) => {
      let q = db
        .selectFrom('nodes as n')
        .leftJoin('cloud_instances as i', 'i.id', 'n.owner_id')
        .select('n.id')
        .where('n.deleted_at', 'is', null)
        .where((eb) =>
          eb.or([
            eb('n.owner_id', 'is', null),
            eb('i.id', 'is', null),
            eb('i.lease_until', '<=', stale ? now - this.o.leaseMs : now),
          ]),
        )
        .orderBy('n.id');
      if (this.o.dialect === 'postgres') q = q.forUpdate('n').skipLocked();
      return q;
    };
    const take = async (stale: boolean, max: number): Promise<string[]> => {
      if (max <= 0) return [];
      return this.o.db.transaction().execute(async (tx) => {
        const ids = (await orphans(tx, stale).limit(max).execute()).map((r) => r.id);
        if (ids.length === 0) return [];
        await tx.updateTable('nodes').set({ owner_id: this.id }).where('id', 'in', ids).execute();
        return ids;
      });
    };
    const first = await take(false, share - mine);
    const late = await take(true, 1_000);
    return [...first, ...late];
  }

  /** The owner of a new node: the live instance with the fewest nodes (this one on a tie). */
  async ownerForNewNode(): Promise<string> {
    if (!this.joined) return this.id;
    const now = await this.dbNow();
    const live = await this.o.db
      .selectFrom('cloud_instances as i')
      .leftJoin('nodes as n', (j) => j.onRef('n.owner_id', '=', 'i.id').on('n.deleted_at', 'is', null))
      .select(['i.id', sql<number | string>`count(n.id)`.as('n')])
      .where('i.lease_until', '>', now)
      .groupBy('i.id')
      .execute();
    let best: { id: string; n: number } = {
      id: this.id,
      n: Number(live.find((l) => l.id === this.id)?.n ?? Number.POSITIVE_INFINITY),
    };
    for (const l of live) if (Number(l.n) < best.n) best = { id: l.id, n: Number(l.n) };
    return best.id;
  }

  /** Is this node ours (live, owned by this instance)? */
  async owns(nodeId: string): Promise<boolean> {
    const r = await this.o.db
      .selectFrom('nodes')
      .select('owner_id')
      .where('id', '=', nodeId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return r?.owner_id === this.id;
  }

  /** Stops renewing (the lease runs out unless `leave` ends it at once). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
  }

  /**
   * Leaves the cluster: our nodes lose their owner and our registration is deleted, so another
   * live instance claims the nodes at its next renewal instead of after the lease.
   */
  async leave(): Promise<void> {
    await this.stop();
    if (!this.joined) return;
    this.joined = false;
    this.validUntil = 0;
    await this.o.db.transaction().execute(async (tx) => {
      await tx.updateTable('nodes').set({ owner_id: null }).where('owner_id', '=', this.id).execute();
      await tx.deleteFrom('cloud_instances').where('id', '=', this.id).execute();
    });
  }
}
