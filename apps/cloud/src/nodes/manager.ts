/**
 * Node operations behind the API. Each one validates, records the new desired state and status
 * (with its webhook event) in one transaction under the node's lock, then lets the supervisor do
 * the slow part (start, stop, delete) in the background.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { type AddressPolicy, checkWebhookUrl, type Resolver } from '@rgbx/service-kit/webhooks';
import { isUniqueViolation } from '@rgbx/store';
import type { CloudDb, NodeStatus } from '../db/schema.ts';
import { CloudErrors } from '../errors.ts';
import type { Cluster } from './cluster.ts';
import type { NodeLockService } from './locks.ts';
import { type ChangeOptions, changeNode, type NodeRow, type StatusDeps } from './status.ts';
import type { Supervisor } from './supervisor.ts';

export interface ManagerOptions {
  deps: StatusDeps;
  locks: NodeLockService;
  supervisor: Supervisor;
  /** Who owns a new node. */
  cluster: Cluster;
  /** Tells the other instances a node changed (PostgreSQL NOTIFY; its owner looks at once). */
  notify?: (nodeId: string) => Promise<void>;
  policy: AddressPolicy;
  /** Resolves webhook host names when a URL is set (the dispatcher's resolver). */
  resolver: Resolver;
  /** Bound on that resolution. */
  resolveTimeoutMs: number;
  dataDir: string;
  networks: readonly string[];
  maxPerAccount: number;
}

/** How long an API call waits for a node's lock before answering NODE_BUSY. */
const LOCK_WAIT_MS = 2_000;

export class NodeManager {
  private readonly o: ManagerOptions;

  constructor(o: ManagerOptions) {
    this.o = o;
  }

  private get db(): CloudDb {
    return this.o.deps.db;
  }

  /**
   * `null` (or leaving the key out) means no webhooks; an empty string is refused rather than read
   * as "off". A host name is resolved and refused if any of its addresses is.
   */
  private async checkUrl(url: string | null | undefined): Promise<void> {
    if (url === undefined || url === null) return;
    if (url.trim() === '')
      throw CloudErrors.INVALID_WEBHOOK_URL.create('empty (send null to turn webhooks off)');
    const why = await checkWebhookUrl(url, this.o.policy, this.o.resolver, this.o.resolveTimeoutMs);
    if (why) throw CloudErrors.INVALID_WEBHOOK_URL.create(why);
  }

  async get(accountId: string, nodeId: string): Promise<NodeRow> {
    const n = await this.db
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', nodeId)
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!n) throw CloudErrors.NODE_NOT_FOUND.create(nodeId);
    return n;
  }

  async list(accountId: string): Promise<NodeRow[]> {
    return this.db
      .selectFrom('nodes')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  async create(
    accountId: string,
    input: { name: string; network: string; webhookUrl?: string | null },
  ): Promise<NodeRow> {
    if (!this.o.networks.includes(input.network)) {
      throw CloudErrors.UNSUPPORTED_NETWORK.create(input.network, this.o.networks.join(', '));
    }
    await this.checkUrl(input.webhookUrl);
    const count = await this.db
      .selectFrom('nodes')
      .select(this.db.fn.countAll<number | string>().as('n'))
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= this.o.maxPerAccount)
      throw CloudErrors.NODE_LIMIT_REACHED.create(this.o.maxPerAccount);
    const id = randomUUID();
    const now = Date.now();
    // The node and its first event (STARTING) are committed together, as every status change is.
    const insert: ChangeOptions['insert'] = {
      id,
      account_id: accountId,
      name: input.name,
      network: input.network,
      webhook_url: input.webhookUrl ?? null,
      desired: 'running',
      pending_op: null,
      port: null,
      pid: null,
      started_at: null,
      data_dir: join(this.o.dataDir, 'nodes', id),
      restart_count: 0,
      restart_window_start: null,
      next_restart_at: null,
      last_error: null,
      webhook_failing_since: null,
      created_at: now,
      deleted_at: null,
      owner_id: await this.o.cluster.ownerForNewNode(),
    };
    const row = await changeNode(this.o.deps, id, 'STARTING', {}, { insert }, now).catch((err: unknown) => {
      throw isUniqueViolation(err) ? CloudErrors.NODE_NAME_TAKEN.create(input.name) : err;
    });
    if (!row) throw new Error(`node ${id}: insert returned no row`); // an insert always returns its row
    await this.wake(id);
    return row;
  }

  /** Runs `fn` under the node's lock, answering NODE_BUSY if another operation holds it too long. */
  private async locked(
    accountId: string,
    nodeId: string,
    fn: (n: NodeRow) => Promise<NodeRow>,
  ): Promise<NodeRow> {
    const n0 = await this.get(accountId, nodeId);
    const r = await this.o.locks.run(nodeId, async () => fn(await this.get(accountId, nodeId)), LOCK_WAIT_MS);
    if (r.busy) throw CloudErrors.NODE_BUSY.create(nodeId, n0.status);
    await this.wake(nodeId);
    return r.value;
  }

  /** The node's owner looks at it now: this instance directly, another one through a notification. */
  private async wake(nodeId: string): Promise<void> {
    this.o.supervisor.kick(nodeId);
    await this.o.notify?.(nodeId).catch(() => undefined); // its next tick looks anyway
  }

  private notBusy(n: NodeRow): void {
    if (n.status === 'IN_PROGRESS') throw CloudErrors.NODE_BUSY.create(n.id, n.status);
  }

  private async set(
    n: NodeRow,
    status: NodeStatus,
    patch: Parameters<typeof changeNode>[3],
    opts: Pick<ChangeOptions, 'retargetPending' | 'through'> = {},
  ) {
    const r = await changeNode(this.o.deps, n.id, status, patch, opts);
    if (!r) throw CloudErrors.NODE_NOT_FOUND.create(n.id);
    return r;
  }

  /** Stop (pause): the process is stopped, its data kept. */
  pause(accountId: string, nodeId: string): Promise<NodeRow> {
    return this.locked(accountId, nodeId, async (n) => {
      if (n.status === 'PAUSED') return n;
      this.notBusy(n);
      return this.set(n, 'IN_PROGRESS', { desired: 'paused', pending_op: null, next_restart_at: null });
    });
  }

  /** Start (resume) a paused or failed node; resets the restart policy's counters. */
  resume(accountId: string, nodeId: string): Promise<NodeRow> {
    return this.locked(accountId, nodeId, async (n) => {
      if (n.status === 'RUNNING' || n.status === 'STARTING') return n;
      this.notBusy(n);
      return this.set(n, 'STARTING', {
        desired: 'running',
        pid: n.status === 'FAILED' ? null : n.pid,
        started_at: null,
        restart_count: 0,
        restart_window_start: null,
        next_restart_at: null,
      });
    });
  }

  restart(accountId: string, nodeId: string): Promise<NodeRow> {
    return this.locked(accountId, nodeId, async (n) => {
      this.notBusy(n);
      if (n.status === 'PAUSED')
        throw CloudErrors.INVALID_STATE.create(n.id, n.status, 'restart (start it instead)');
      return this.set(n, 'IN_PROGRESS', { pending_op: 'restart', next_restart_at: null });
    });
  }

  /** Changes settings; IN_PROGRESS while it applies, then back to what the node really is. */
  async updateSettings(
    accountId: string,
    nodeId: string,
    settings: { webhookUrl?: string | null },
  ): Promise<NodeRow> {
    await this.get(accountId, nodeId); // an unknown node is a 404 before the URL is looked at
    await this.checkUrl(settings.webhookUrl);
    return this.locked(accountId, nodeId, async (n) => {
      this.notBusy(n);
      if (settings.webhookUrl === undefined || settings.webhookUrl === n.webhook_url) return n;
      const back: NodeStatus =
        n.desired === 'paused' ? 'PAUSED' : n.status === 'FAILED' ? 'FAILED' : 'IN_PROGRESS';
      // Nothing runs to be re-checked: announce the operation and its end at once, in one
      // transaction (a crash between the two would leave the node IN_PROGRESS).
      if (back !== 'IN_PROGRESS')
        return this.set(
          n,
          back,
          { webhook_url: settings.webhookUrl },
          { retargetPending: true, through: 'IN_PROGRESS' },
        );
      return this.set(n, 'IN_PROGRESS', { webhook_url: settings.webhookUrl }, { retargetPending: true });
    });
  }

  /** Deletes the node: IN_PROGRESS, then the process is stopped and its data removed. */
  remove(accountId: string, nodeId: string): Promise<NodeRow> {
    return this.locked(accountId, nodeId, async (n) => {
      if (n.desired === 'deleted') return n;
      this.notBusy(n);
      return this.set(n, 'IN_PROGRESS', { desired: 'deleted', pending_op: null, next_restart_at: null });
    });
  }
}
