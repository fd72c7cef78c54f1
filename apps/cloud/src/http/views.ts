/** Database rows → API views. */

import type { NodeView } from '@rgbx/contracts/cloud';
import { bigintNumber } from '@rgbx/store';
import type { CloudDb } from '../db/schema.ts';
import type { NodeRow } from '../nodes/status.ts';
import { eventCounts } from '../webhooks/outbox.ts';

const iso = (v: number | string | null) => (v === null ? null : new Date(bigintNumber(v)).toISOString());

/** Where a node's wallet API is, given its row (the driver decides; the local one: loopback). */
export type ApiUrlOf = (n: NodeRow) => string;

const loopback: ApiUrlOf = (n) => `http://127.0.0.1:${n.port}`;

export async function nodeView(db: CloudDb, n: NodeRow, apiUrlOf: ApiUrlOf = loopback): Promise<NodeView> {
  const counts = await eventCounts(db, n.id);
  return {
    nodeId: n.id,
    name: n.name,
    network: n.network,
    status: n.status,
    settings: { webhookUrl: n.webhook_url },
    apiUrl: n.pid !== null && n.port !== null ? apiUrlOf(n) : null,
    lastError: n.last_error,
    restartCount: n.restart_count,
    nextRestartAt: n.status === 'FAILED' ? iso(n.next_restart_at) : null,
    webhook: {
      failing: n.webhook_failing_since !== null,
      failingSince: iso(n.webhook_failing_since),
      ...counts,
    },
    createdAt: iso(n.created_at)!,
    updatedAt: iso(n.updated_at)!,
  };
}
