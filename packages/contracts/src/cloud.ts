/**
 * Wire schemas of the cloud hosting service, defined once: the service validates and documents its
 * HTTP API with them (apps/cloud), the SDK takes its webhook types from them and checks received
 * payloads against them. The error envelope is the service kit's shared one, not declared here.
 */
import { type Static, type TSchema, Type } from 'typebox';
import { Value } from 'typebox/value';
import { literalUnion } from './literals.ts';

export type { Static };

/**
 * An object that refuses unknown keys. The kit's Ajv runs with `removeAdditional`, which silently
 * strips keys under `additionalProperties: false`; `propertyNames` makes them a 400 instead.
 */
function strictObject<T extends Record<string, TSchema>>(properties: T) {
  return Type.Object(properties, { propertyNames: { enum: Object.keys(properties) } });
}

// ---------- node status ----------

/** The statuses a hosted node can be in (node views and webhook events). */
export const NODE_STATUSES = ['RUNNING', 'STARTING', 'PAUSED', 'FAILED', 'IN_PROGRESS'] as const;
export const NodeStatus = literalUnion(NODE_STATUSES);
export type NodeStatus = Static<typeof NodeStatus>;

const IsoOrNull = Type.Union([Type.String(), Type.Null()]);

// ---------- HTTP API ----------

/** An empty string is a 400 INVALID_WEBHOOK_URL (checked by the manager, with a clearer message than the schema's). */
export const WebhookUrl = Type.String({
  maxLength: 2048,
  description:
    'HTTPS URL of the receiving endpoint; its host must resolve to public addresses only. `null` turns webhooks off; an empty string is refused (400 INVALID_WEBHOOK_URL)',
});

export const NodeIdParams = Type.Object({ nodeId: Type.String({ format: 'uuid' }) });
export const EventParams = Type.Object({
  nodeId: Type.String({ format: 'uuid' }),
  eventId: Type.String({ format: 'uuid' }),
});

export const CreateNodeBody = strictObject({
  name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9 ._-]*$' }),
  network: Type.String({ minLength: 1, maxLength: 32 }),
  settings: Type.Optional(strictObject({ webhookUrl: Type.Optional(Type.Union([WebhookUrl, Type.Null()])) })),
});
export type CreateNodeBody = Static<typeof CreateNodeBody>;

export const SettingsBody = strictObject({
  webhookUrl: Type.Optional(Type.Union([WebhookUrl, Type.Null()])),
});
export type SettingsBody = Static<typeof SettingsBody>;

export const Node = Type.Object(
  {
    nodeId: Type.String(),
    name: Type.String(),
    network: Type.String(),
    status: NodeStatus,
    settings: Type.Object({ webhookUrl: Type.Union([Type.String(), Type.Null()]) }),
    apiUrl: Type.Union([Type.String(), Type.Null()], {
      description: 'Where the node’s wallet API listens (while it runs)',
    }),
    lastError: Type.Union([Type.String(), Type.Null()]),
    restartCount: Type.Integer(),
    nextRestartAt: IsoOrNull,
    webhook: Type.Object({
      failing: Type.Boolean({
        description: 'An event was abandoned after the give-up window; cleared by the next success',
      }),
      failingSince: IsoOrNull,
      pending: Type.Integer(),
      delivered: Type.Integer(),
      abandoned: Type.Integer(),
    }),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { $id: 'Node' },
);
export type NodeView = Static<typeof Node>;

const Attempt = Type.Object({
  attempt: Type.Integer(),
  keyId: Type.String(),
  startedAt: Type.String(),
  durationMs: Type.Union([Type.Integer(), Type.Null()]),
  outcome: Type.String({
    description: 'in_flight | success | http_error | network_error | timeout | blocked | interrupted',
  }),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  responseSnippet: Type.Union([Type.String(), Type.Null()]),
});

export const WebhookEvent = Type.Object(
  {
    eventId: Type.String(),
    sequence: Type.Integer(),
    eventType: Type.String(),
    status: Type.String(),
    url: Type.String(),
    payload: Type.String({ description: 'The exact body sent on every attempt' }),
    state: Type.String({ description: 'pending | delivered | abandoned' }),
    attempts: Type.Integer(),
    nextAttemptAt: IsoOrNull,
    deliveredAt: IsoOrNull,
    lastError: Type.Union([Type.String(), Type.Null()]),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    createdAt: Type.String(),
    attemptLog: Type.Array(Attempt),
  },
  { $id: 'WebhookEvent' },
);
export type WebhookEventView = Static<typeof WebhookEvent>;

export const PublicKeyResponse = Type.Object({
  data: Type.String({ description: 'PEM (SPKI) of the current signing key' }),
  keyId: Type.String({
    description: 'RFC 7638 thumbprint of the current key; sent as X-Service-Signature-Key-Id',
  }),
  algorithm: Type.Literal('RSA-SHA256'),
  padding: Type.Literal('PKCS1-v1_5'),
  signatureHeader: Type.Literal('X-Service-Signature'),
  signatureEncoding: Type.Literal('base64'),
  keys: Type.Array(
    Type.Object({
      keyId: Type.String(),
      status: Type.String({ description: 'current (signs now) | published (announced, accept it too)' }),
      pem: Type.String(),
      createdAt: Type.String(),
      activatedAt: IsoOrNull,
    }),
  ),
});
export type PublicKeyResponse = Static<typeof PublicKeyResponse>;

export const ListQuery = strictObject({ limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }) });

// ---------- webhook payload ----------

export const NODE_STATUS_UPDATED = 'NODE_STATUS_UPDATED';

/**
 * The body of a `NODE_STATUS_UPDATED` webhook, `{eventType, eventTimestamp, details:{nodeId, status}, nodeId}`
 * in that order on the wire. Unknown keys are tolerated (receivers ignore them), so the cloud can add
 * fields without breaking deployed receivers. `details.nodeId` equals `nodeId`, which a schema cannot say:
 * receivers check it themselves (the SDK's `parseNodeStatusEvent` does).
 */
export const NodeStatusEvent = Type.Object(
  {
    eventType: Type.Literal(NODE_STATUS_UPDATED),
    eventTimestamp: Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$',
      description: 'ISO 8601 UTC time at which the status changed (kept across retries)',
    }),
    details: Type.Object({ nodeId: Type.String(), status: NodeStatus }),
    nodeId: Type.String({ minLength: 1 }),
  },
  { $id: 'NodeStatusEvent' },
);
export type NodeStatusEvent = Static<typeof NodeStatusEvent>;

/**
 * `Value.Check` against one of these schemas, for clients that take the schemas without depending on
 * typebox themselves (the SDK's webhook parser).
 */
export function matchesSchema<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return Value.Check(schema, value);
}
