/**
 * The webhook payload of the cloud hosting service (`NODE_STATUS_UPDATED`) and its strict parser.
 * The parser runs only after the signature has been checked: it never sees unauthenticated bytes.
 */

/** Node status values carried by webhook events. */
export const NODE_STATUSES = ['RUNNING', 'STARTING', 'PAUSED', 'FAILED', 'IN_PROGRESS'] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

export const NODE_STATUS_UPDATED = 'NODE_STATUS_UPDATED';

/** `{eventType, eventTimestamp, details:{nodeId, status}, nodeId}` as the cloud sends it. */
export interface NodeStatusEvent {
  eventType: typeof NODE_STATUS_UPDATED;
  /** ISO 8601 UTC time at which the status changed (kept across retries). */
  eventTimestamp: string;
  details: { nodeId: string; status: NodeStatus };
  nodeId: string;
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parses and checks a payload. Returns a reason string instead of throwing, so callers can answer
 * 403 without a stack trace.
 */
export function parseNodeStatusEvent(text: string): { event: NodeStatusEvent } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'payload is not JSON' };
  }
  if (!isRecord(v)) return { error: 'payload is not an object' };
  if (v.eventType !== NODE_STATUS_UPDATED) return { error: 'unknown eventType' };
  if (typeof v.eventTimestamp !== 'string' || !ISO_UTC.test(v.eventTimestamp)) {
    return { error: 'eventTimestamp must be an ISO 8601 UTC timestamp' };
  }
  if (typeof v.nodeId !== 'string' || v.nodeId.length === 0) return { error: 'nodeId missing' };
  const d = v.details;
  if (!isRecord(d) || typeof d.nodeId !== 'string') return { error: 'details.nodeId missing' };
  if (d.nodeId !== v.nodeId) return { error: 'details.nodeId differs from nodeId' };
  if (typeof d.status !== 'string' || !(NODE_STATUSES as readonly string[]).includes(d.status)) {
    return { error: 'details.status is not a node status' };
  }
  return {
    event: {
      eventType: NODE_STATUS_UPDATED,
      eventTimestamp: v.eventTimestamp,
      details: { nodeId: d.nodeId, status: d.status as NodeStatus },
      nodeId: v.nodeId,
    },
  };
}
