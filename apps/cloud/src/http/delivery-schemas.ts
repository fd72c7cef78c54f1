/** TypeBox schemas of the deliveries and status-history routes (the console's node page). */
import { Type } from '@rgbx/service-kit';

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const NULLABLE_INT = Type.Union([Type.Integer(), Type.Null()]);

export const Delivery = Type.Object(
  {
    deliveryId: Type.String({
      description: 'The attempt id (digits); POST …/deliveries/{deliveryId}/redeliver',
    }),
    eventId: Type.String({ format: 'uuid', description: 'X-Service-Event-Id: the same on every attempt' }),
    sequence: Type.Integer(),
    eventStatus: Type.String({ description: 'The node status the event announces' }),
    eventState: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('abandoned')]),
    url: Type.String(),
    attempt: Type.Integer({ minimum: 1 }),
    keyId: Type.String({ description: 'The signing key of this attempt' }),
    startedAt: Type.String({ format: 'date-time' }),
    durationMs: Type.Union([Type.Integer(), Type.Null()], { description: 'Latency; null while in flight' }),
    statusCode: NULLABLE_INT,
    outcome: Type.Union(
      ['in_flight', 'success', 'http_error', 'network_error', 'timeout', 'blocked', 'interrupted'].map((o) =>
        Type.Literal(o),
      ),
    ),
    error: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'Delivery' },
);

export const StatusChange = Type.Object(
  {
    status: Type.Union(
      ['STARTING', 'RUNNING', 'PAUSED', 'FAILED', 'IN_PROGRESS'].map((s) => Type.Literal(s)),
    ),
    at: Type.String({ format: 'date-time' }),
  },
  { $id: 'StatusChange' },
);

export const DeliveriesQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
    before: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'Only attempts with a smaller deliveryId (the nextBefore of a page)',
      }),
    ),
  },
  { propertyNames: { enum: ['limit', 'before'] } },
);

export const HistoryQuery = Type.Object(
  { limit: Type.Integer({ minimum: 1, maximum: 1000, default: 200 }) },
  { propertyNames: { enum: ['limit'] } },
);

export const DeliveryParams = Type.Object({
  nodeId: Type.String({ format: 'uuid' }),
  deliveryId: Type.String({
    pattern: `^(?:[0-9]{1,15}|${UUID})$`,
    description: 'An attempt id (deliveryId) or an event id (eventId)',
  }),
});
