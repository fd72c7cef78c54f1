/**
 * Node status changes. `changeNode` updates a node row and, when its status changes and it has a
 * webhook URL, writes the `NODE_STATUS_UPDATED` event into the outbox in the SAME transaction.
 * Nothing else in the cloud writes `nodes.status`.
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
}

/**
 * Applies `patch` (and `status`, if given) to a live node atomically. Returns the updated row, or
 * undefined when the node is gone or `ifStatus` did not match.
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
  let emitted = false;
  let changed = false;
  const row = await deps.db.transaction().execute(async (tx) => {
    let q = tx.selectFrom('nodes').selectAll().where('id', '=', nodeId).where('deleted_at', 'is', null);
    // PostgreSQL: lock the row; SQLite serializes writers anyway.
    if (deps.dialect === 'postgres') q = q.forUpdate();
    const cur = await q.executeTakeFirst();
    if (!cur) return undefined;
    if (opts.ifStatus && !opts.ifStatus.includes(cur.status)) return undefined;
    const next: NodeRow = { ...cur, ...(patch as Partial<NodeRow>), updated_at: now };
    if (status !== undefined) next.status = status;
    changed = next.status !== cur.status;
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
    if (changed && next.webhook_url) {
      await enqueueStatusEvent(
        tx,
        { accountId: cur.account_id, nodeId, url: next.webhook_url, status: next.status },
        now,
        deps.maxPayloadBytes,
      );
      emitted = true;
    }
    return next;
  });
  if (emitted) deps.onEvent();
  if (row && changed) deps.onChange?.(nodeId, row.status);
  return row;
}
