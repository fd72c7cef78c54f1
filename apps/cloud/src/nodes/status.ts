/**
 * Node status changes. `changeNode` updates a node row (or inserts a new one) and, when its status
 * changes and it has a webhook URL, writes the `NODE_STATUS_UPDATED` event into the outbox in the
 * SAME transaction. Nothing else in the cloud writes `nodes.status`: creation (`insert`), API
 * operations and the supervisor all go through it (other writers of `nodes` touch other columns:
 * the supervisor's `deleted_at`, the dispatcher's `webhook_failing_since`).
 */
import type { Dialect } from '@rgbx/store';
import type { Updateable } from 'kysely';
import type { CloudDb, NodeStatus, NodesTable } from '../db/schema.ts';
import { enqueueStatusEvent } from '../webhooks/outbox.ts';

export type NodeRow = NodesTable;

export interface StatusDeps {
  db: CloudDb;
  dialect: Dialect;
  maxPayloadBytes: number;
  /** Runs after a commit that wrote an event (wakes the dispatcher). */
  onEvent: () => void;
  /** Runs after every committed status change (live views). */
  onChange?: (nodeId: string, status: NodeStatus) => void;
}

export interface ChangeOptions {
  /** Apply only if the node's status is one of these (otherwise returns undefined). */
  ifStatus?: readonly NodeStatus[];
  /** Also re-target pending events to the node's (new) webhook URL. */
  retargetPending?: boolean;
  /**
   * Apply only while this cloud instance owns the node (the supervisor's writes): an instance that
   * lost the node to another (its lease ran out) changes nothing.
   */
  ifOwner?: string;
  /**
   * Announce this status first, then `status`, in the same transaction (an operation that starts
   * and ends at once, e.g. a settings change of a paused node): two events, never just the first.
   */
  through?: NodeStatus;
  /**
   * A new node: insert this row (its `status` is the `status` argument, its `id` the node id) instead
   * of updating one. Its status is a change from none, so a node with a webhook URL gets its first
   * event in the same transaction. A duplicate name throws the unique violation from the insert.
   */
  insert?: Omit<NodeRow, 'status' | 'updated_at'>;
}

/**
 * Applies `patch` (and `status`, if given) to a live node atomically, or inserts a new node
 * (`opts.insert`). Returns the updated row, or undefined when the node is gone or `ifStatus` did not
 * match.
 *
 * Lock order (PostgreSQL): the node row first, then its event rows (re-targeted here). Every
 * transaction that writes both takes them in this order (the dispatcher's result commit does), or
 * two of them can deadlock and one is aborted.
 */
export async function changeNode(
  deps: StatusDeps,
  nodeId: string,
  status: NodeStatus | undefined,
  patch: Updateable<NodesTable>,
  opts: ChangeOptions = {},
  now = Date.now(),
): Promise<NodeRow | undefined> {
  if (opts.insert && (status === undefined || opts.insert.id !== nodeId))
    throw new Error('changeNode: inserting a node takes its status and its own id');
  let emitted = false;
  let changed = false;
  const row = await deps.db.transaction().execute(async (tx) => {
    const emit = async (next: NodeRow) => {
      // The status history (console chart), webhooks or not.
      await tx
        .insertInto('node_status_changes')
        .values({ node_id: nodeId, status: next.status, at: now })
        .execute();
      if (!next.webhook_url) return;
      await enqueueStatusEvent(
        tx,
        { accountId: next.account_id, nodeId, url: next.webhook_url, status: next.status },
        now,
        deps.maxPayloadBytes,
      );
      emitted = true;
    };
    if (opts.insert) {
      const created: NodeRow = {
        ...opts.insert,
        ...(patch as Partial<NodeRow>),
        status: status!,
        updated_at: now,
      };
      await tx.insertInto('nodes').values(created).execute();
      changed = true;
      await emit(created);
      return created;
    }
    let q = tx.selectFrom('nodes').selectAll().where('id', '=', nodeId).where('deleted_at', 'is', null);
    // PostgreSQL: lock the row; SQLite serializes writers anyway.
    if (deps.dialect === 'postgres') q = q.forUpdate();
    const cur = await q.executeTakeFirst();
    if (!cur) return undefined;
    if (opts.ifStatus && !opts.ifStatus.includes(cur.status)) return undefined;
    if (opts.ifOwner !== undefined && cur.owner_id !== opts.ifOwner) return undefined;
    const next: NodeRow = { ...cur, ...(patch as Partial<NodeRow>), updated_at: now };
    if (status !== undefined) next.status = status;
    changed = next.status !== cur.status;
    if (opts.through !== undefined && opts.through !== cur.status && opts.through !== next.status) {
      await emit({ ...next, status: opts.through });
      changed = true;
    }
    await tx
      .updateTable('nodes')
      .set({ ...patch, ...(status === undefined ? {} : { status }), updated_at: now })
      .where('id', '=', nodeId)
      .execute();
    if (opts.retargetPending && next.webhook_url) {
      await tx
        .updateTable('webhook_events')
        .set({ url: next.webhook_url })
        .where('node_id', '=', nodeId)
        .where('state', '=', 'pending')
        .execute();
    }
    if (changed) await emit(next);
    return next;
  });
  if (emitted) deps.onEvent();
  if (row && changed) deps.onChange?.(nodeId, row.status);
  return row;
}
