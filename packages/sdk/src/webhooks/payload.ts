/**
 * The webhook payload of the cloud hosting service (`NODE_STATUS_UPDATED`) and its strict parser.
 * The payload's schema is the cloud's own (`@rgbx/contracts/cloud`); the types here are derived from it.
 * The parser runs only after the signature has been checked: it never sees unauthenticated bytes.
 */
import {
  matchesSchema,
  NODE_STATUS_UPDATED,
  NODE_STATUSES,
  type NodeStatus,
  type NodeStatusEvent,
  NodeStatusEvent as NodeStatusEventSchema,
} from '@rgbx/contracts/cloud';

/** `{eventType, eventTimestamp, details:{nodeId, status}, nodeId}` as the cloud sends it. */
export type { NodeStatusEvent };
/** Node status values carried by webhook events, and the `NODE_STATUS_UPDATED` event type. */
export { NODE_STATUS_UPDATED, NODE_STATUSES, type NodeStatus };

const { eventType, eventTimestamp, nodeId, details } = NodeStatusEventSchema.properties;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Why a parsed value is not a `NodeStatusEvent`, checked field by field in a fixed order. */
function reject(v: unknown): string {
  if (!isRecord(v)) return 'payload is not an object';
  if (!matchesSchema(eventType, v.eventType)) return 'unknown eventType';
  if (!matchesSchema(eventTimestamp, v.eventTimestamp)) {
    return 'eventTimestamp must be an ISO 8601 UTC timestamp';
  }
  if (!matchesSchema(nodeId, v.nodeId)) return 'nodeId missing';
  const d = v.details;
  if (!isRecord(d) || !matchesSchema(details.properties.nodeId, d.nodeId)) return 'details.nodeId missing';
  if (d.nodeId !== v.nodeId) return 'details.nodeId differs from nodeId';
  if (!matchesSchema(details.properties.status, d.status)) return 'details.status is not a node status';
  return 'payload does not match the NODE_STATUS_UPDATED schema';
}

/**
 * Parses and checks a payload against the cloud's schema (unknown keys are ignored and left out of the
 * event). Returns a reason string instead of throwing, so callers can answer 403 without a stack trace.
 */
export function parseNodeStatusEvent(text: string): { event: NodeStatusEvent } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'payload is not JSON' };
  }
  if (!matchesSchema(NodeStatusEventSchema, v) || v.details.nodeId !== v.nodeId) return { error: reject(v) };
  return {
    event: {
      eventType: v.eventType,
      eventTimestamp: v.eventTimestamp,
      details: { nodeId: v.details.nodeId, status: v.details.status },
      nodeId: v.nodeId,
    },
  };
}
