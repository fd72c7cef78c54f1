/**
 * The supervisor reconciles every node's recorded status with reality, through the driver:
 *
 * - `STARTING`: launch the process if none runs; `RUNNING` once `GET /healthcheck` answers 200;
 *   `FAILED` if the process exits first or is not healthy within `start_timeout_ms`.
 * - `RUNNING`: probed every `health_interval_ms`; `FAILED` when the process is gone or
 *   `unhealthy_threshold` checks in a row fail (the process is then stopped).
 * - `FAILED`: restart policy: automatic restarts after `restart_backoff_ms[i]`, at most
 *   `max_restarts` within `restart_window_ms`; after that the node stays FAILED until started.
 * - `IN_PROGRESS`: runs the pending operation (pause → `PAUSED`, delete → removed, restart →
 *   `STARTING`, settings change → back to what the probe finds).
 *
 * After a restart of the cloud service the first pass re-adopts live processes (same pid, still
 * ours, healthy) and only starts a node whose process is gone, so a node never runs twice.
 *
 * With several instances, each reconciles only the nodes it owns (`cluster.ts`), under the node's
 * lock (an advisory lock on PostgreSQL), and writes statuses only while it still owns the node; a
 * fenced instance (its lease possibly expired) does nothing. A node taken over from a dead instance
 * is reconciled like one found after a restart: its process, if still alive, is re-adopted.
 */
import type { Logger } from '@rgbx/service-kit';
import { bigintNumber } from '@rgbx/store';
import type { CloudDb } from '../db/schema.ts';
import type { FailureReason, RestartReason } from '../metrics.ts';
import type { Cluster } from './cluster.ts';
import type { NodeDriver, NodeRuntime, NodeSpec } from './driver.ts';
import type { NodeLockService } from './locks.ts';
import { type ChangeOptions, changeNode, type NodeRow, type StatusDeps } from './status.ts';

export interface SupervisorOptions {
  deps: StatusDeps;
  driver: NodeDriver;
  locks: NodeLockService;
  /** Which nodes are this instance's to reconcile (and whether it may act at all). */
  cluster: Cluster;
  logger: Logger;
  startTimeoutMs: number;
  healthIntervalMs: number;
  unhealthyThreshold: number;
  stopGraceMs: number;
  restartBackoffMs: readonly number[];
  maxRestarts: number;
  restartWindowMs: number;
  /** A node's process launched again (metrics). */
  onRestart?: (reason: RestartReason) => void;
  /** A node marked FAILED (metrics). */
  onFailure?: (reason: FailureReason) => void;
}

/** How often STARTING / IN_PROGRESS / FAILED nodes are looked at. */
const FAST_TICK_MS = 200;
/** How long a reconcile waits for a node lock held elsewhere (an API call) before the next tick retries. */
const RECONCILE_LOCK_WAIT_MS = 1_000;

export function specOf(n: Pick<NodeRow, 'id' | 'account_id' | 'network' | 'data_dir' | 'port'>): NodeSpec {
  return {
    nodeId: n.id,
    accountId: n.account_id,
    network: n.network,
    dataDir: n.data_dir,
    ...(n.port === null ? {} : { preferredPort: n.port }),
  };
}

export function runtimeOf(n: Pick<NodeRow, 'pid' | 'port'>): NodeRuntime | undefined {
  return n.pid !== null && n.port !== null ? { pid: n.pid, port: n.port } : undefined;
}

export class Supervisor {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  // Nothing runs (kicks included) until start().
  private stopped = true;
  private readonly unhealthy = new Map<string, number>();
  private readonly lastProbe = new Map<string, number>();
  private readonly kicked = new Set<string>();
  private readonly running = new Set<Promise<void>>();

  private readonly o: SupervisorOptions;

  constructor(o: SupervisorOptions) {
    this.o = o;
    o.driver.onExit?.((nodeId) => this.kick(nodeId));
  }

  private get db(): CloudDb {
    return this.o.deps.db;
  }

  start(): void {
    this.stopped = false;
    const loop = () => {
      if (this.stopped) return;
      this.ticking = this.tick()
        .catch((err: unknown) => this.o.logger.error({ err }, 'supervisor tick failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, FAST_TICK_MS);
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    await Promise.allSettled([...this.running]);
  }

  private get me(): string {
    return this.o.cluster.id;
  }

  /** Look at this node now (after an API operation, a process exit, a notification), if it is ours. */
  kick(nodeId: string): void {
    this.kicked.add(nodeId);
    if (this.stopped) return;
    const p: Promise<void> = (async () => {
      if (await this.o.cluster.owns(nodeId)) await this.reconcileLocked(nodeId);
    })()
      .catch((err: unknown) => this.o.logger.error({ err, nodeId }, 'reconcile failed'))
      .finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** One pass over every node that needs attention. */
  async tick(): Promise<void> {
    if (this.o.cluster.fenced) return;
    const now = Date.now();
    const rows = await this.db
      .selectFrom('nodes')
      .select(['id', 'status', 'desired'])
      .where('deleted_at', 'is', null)
      .where('owner_id', '=', this.me)
      .execute();
    await Promise.all(
      rows.map(async (r) => {
        if (this.o.locks.isHeld(r.id)) return;
        const steady = r.status === 'RUNNING' || r.status === 'PAUSED';
        const due = now - (this.lastProbe.get(r.id) ?? 0) >= this.o.healthIntervalMs;
        if (steady && !due && !this.kicked.has(r.id)) return;
        if (r.status === 'PAUSED' && r.desired === 'paused') return;
        await this.reconcileLocked(r.id);
      }),
    );
  }

  private async reconcileLocked(nodeId: string): Promise<void> {
    this.kicked.delete(nodeId);
    const r = await this.o.locks.run(nodeId, () => this.reconcile(nodeId), RECONCILE_LOCK_WAIT_MS);
    // Held by an operation elsewhere: the next tick looks again.
    if (r.busy) this.kicked.add(nodeId);
  }

  /** The node, if it is live and ours. */
  private async load(nodeId: string): Promise<NodeRow | undefined> {
    return this.db
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', nodeId)
      .where('deleted_at', 'is', null)
      .where('owner_id', '=', this.me)
      .executeTakeFirst();
  }

  /** A status write, applied only while this instance owns the node. */
  private change(
    nodeId: string,
    status: Parameters<typeof changeNode>[2],
    patch: Parameters<typeof changeNode>[3],
    opts: ChangeOptions = {},
  ): Promise<NodeRow | undefined> {
    return changeNode(this.o.deps, nodeId, status, patch, { ...opts, ifOwner: this.me });
  }

  /** Brings one node one step closer to its desired state. Call with the node's lock held. */
  async reconcile(nodeId: string): Promise<void> {
    if (this.o.cluster.fenced) return;
    const n = await this.load(nodeId);
    if (!n) return;
    const now = Date.now();
    const spec = specOf(n);
    const runtime = runtimeOf(n);

    if (n.desired === 'deleted') {
      await this.o.driver.stop(spec, runtime, this.o.stopGraceMs);
      await this.o.driver.destroy(spec);
      await this.db
        .updateTable('nodes')
        .set({ deleted_at: now, pid: null, updated_at: now })
        .where('id', '=', nodeId)
        .where('owner_id', '=', this.me)
        .execute();
      this.forget(nodeId);
      this.o.logger.info({ nodeId }, 'node deleted');
      return;
    }
    if (n.desired === 'paused') {
      if (n.status !== 'PAUSED' || runtime) {
        await this.o.driver.stop(spec, runtime, this.o.stopGraceMs);
        await this.change(nodeId, 'PAUSED', { pid: null, pending_op: null, started_at: null });
      }
      return;
    }

    // desired: running
    if (n.pending_op === 'restart') {
      await this.o.driver.stop(spec, runtime, this.o.stopGraceMs);
      const r = await this.change(nodeId, 'STARTING', { pid: null, pending_op: null, started_at: null });
      if (r) this.o.onRestart?.('requested');
      await this.launch(nodeId);
      return;
    }
    switch (n.status) {
      case 'PAUSED':
        await this.change(nodeId, 'STARTING', { pid: null, started_at: null });
        await this.launch(nodeId);
        return;
      case 'IN_PROGRESS': {
        const p = runtime ? await this.o.driver.probe(spec, runtime) : 'gone';
        this.lastProbe.set(nodeId, Date.now());
        if (p === 'healthy') await this.change(nodeId, 'RUNNING', {});
        else if (p === 'unhealthy') await this.change(nodeId, 'STARTING', { started_at: now });
        else {
          await this.change(nodeId, 'STARTING', { pid: null, started_at: null });
          await this.launch(nodeId);
        }
        return;
      }
      case 'STARTING': {
        if (!runtime) {
          await this.launch(nodeId);
          return;
        }
        const p = await this.o.driver.probe(spec, runtime);
        this.lastProbe.set(nodeId, Date.now());
        if (p === 'healthy') {
          this.unhealthy.delete(nodeId);
          await this.change(nodeId, 'RUNNING', { last_error: null });
        } else if (p === 'gone') {
          await this.fail(n, 'the node process exited while starting', 'exited_while_starting');
        } else if (now - bigintNumber(n.started_at ?? now) > this.o.startTimeoutMs) {
          await this.fail(n, `not healthy within ${this.o.startTimeoutMs} ms`, 'start_timeout');
        }
        return;
      }
      case 'RUNNING': {
        const p = runtime ? await this.o.driver.probe(spec, runtime) : 'gone';
        this.lastProbe.set(nodeId, Date.now());
        if (p === 'healthy') {
          this.unhealthy.delete(nodeId);
        } else if (p === 'gone') {
          await this.fail(n, 'the node process exited', 'exited');
        } else {
          const count = (this.unhealthy.get(nodeId) ?? 0) + 1;
          this.unhealthy.set(nodeId, count);
          if (count >= this.o.unhealthyThreshold)
            await this.fail(n, `health check failed ${count} times in a row`, 'unhealthy');
        }
        return;
      }
      case 'FAILED': {
        if (n.next_restart_at === null || now < bigintNumber(n.next_restart_at)) return;
        await this.o.driver.stop(spec, runtime, this.o.stopGraceMs);
        const r = await this.change(
          nodeId,
          'STARTING',
          { pid: null, started_at: null, next_restart_at: null, restart_count: n.restart_count + 1 },
          { ifStatus: ['FAILED'] },
        );
        if (r) {
          this.o.onRestart?.('failure');
          this.o.logger.info({ nodeId, restart: n.restart_count + 1 }, 'restarting failed node');
          await this.launch(nodeId);
        }
        return;
      }
    }
  }

  /** Starts the node's process and records where it runs (status stays STARTING). */
  private async launch(nodeId: string): Promise<void> {
    const n = await this.load(nodeId);
    if (n?.status !== 'STARTING') return;
    try {
      const rt = await this.o.driver.start(specOf(n));
      await this.change(nodeId, undefined, {
        pid: rt.pid,
        port: rt.port,
        started_at: Date.now(),
      });
      // `nodePid`: pino's own `pid` field is the cloud's.
      this.o.logger.info({ nodeId, nodePid: rt.pid, port: rt.port }, 'node process started');
    } catch (err) {
      this.o.logger.error({ err, nodeId }, 'node start failed');
      await this.fail(n, `could not start: ${(err as Error).message}`, 'start_error');
    }
  }

  /** FAILED, with the next automatic restart planned by the restart policy. */
  private async fail(n: NodeRow, reason: string, kind: FailureReason): Promise<void> {
    const now = Date.now();
    await this.o.driver.stop(specOf(n), runtimeOf(n), this.o.stopGraceMs);
    const windowStart = n.restart_window_start === null ? null : bigintNumber(n.restart_window_start);
    const fresh = windowStart === null || now - windowStart > this.o.restartWindowMs;
    const count = fresh ? 0 : n.restart_count;
    const backoff = this.o.restartBackoffMs;
    const next =
      count < this.o.maxRestarts && backoff.length > 0
        ? now + backoff[Math.min(count, backoff.length - 1)]!
        : null;
    this.unhealthy.delete(n.id);
    const r = await this.change(n.id, 'FAILED', {
      pid: null,
      started_at: null,
      last_error: reason,
      restart_count: count,
      restart_window_start: fresh ? now : windowStart,
      next_restart_at: next,
    });
    if (r) this.o.onFailure?.(kind);
    this.o.logger.warn({ nodeId: n.id, reason, nextRestartAt: next }, 'node failed');
  }

  private forget(nodeId: string): void {
    this.unhealthy.delete(nodeId);
    this.lastProbe.delete(nodeId);
    this.kicked.delete(nodeId);
  }

  /** Stops every node process (service shutdown with `stop_on_shutdown`, tests). Statuses are kept. */
  async stopAllProcesses(): Promise<void> {
    const rows = await this.db
      .selectFrom('nodes')
      .selectAll()
      .where('deleted_at', 'is', null)
      .where('owner_id', '=', this.me)
      .execute();
    await Promise.all(
      rows.map((n) =>
        this.o.locks.run(n.id, () => this.o.driver.stop(specOf(n), runtimeOf(n), this.o.stopGraceMs)),
      ),
    );
  }
}
