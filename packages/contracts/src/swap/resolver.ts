/** The resolver-facing API of the swap service, `/resolver/v1` (snake_case, like Surface B). */
import { type Static, Type } from 'typebox';
import { JsonObject, Limit, MechanismB, Offset, Pagination, Status, Trigger, Uuid } from './common.ts';
import { IntentStatusChangeB, RefundTxRequestB, SwapRecordB } from './surface-b.ts';

export const ResolverIntent = Type.Object({
  intent: SwapRecordB.schema,
  approval_mechanism: MechanismB,
  deadline_secs: Type.Integer(),
  secret_hash: Type.String(),
  refund_address: Type.String(),
  execution: Type.Union([JsonObject, Type.Null()], {
    description:
      'After approval: htlc → funding tx and HTLC scripts; permit2 → signature and typed data; cosign → user-signed transaction',
  }),
  fulfil_commitment: Type.Union([Type.String({ pattern: '^6a20[0-9a-f]{64}$' }), Type.Null()], {
    description:
      'Bitcoin destinations: the output script (hex) the fulfilment transaction must include, OP_RETURN of SHA-256("rgbx:fulfil:" + intent id) (value 0); a payment without it is refused (Bitcoin shows no sender). null for other destinations',
  }),
});
/** One intent with what the resolver needs to execute it. */
export type ResolverIntent = Omit<Static<typeof ResolverIntent>, 'intent'> & { intent: SwapRecordB };

export const ResolverIntentsQuery = Type.Object({
  status: Type.Optional(Status),
  limit: Type.Optional(Limit),
  offset: Type.Optional(Offset),
});
export const ResolverIntentPage = Type.Object({ data: Type.Array(ResolverIntent), pagination: Pagination });

export const ResolverStatusChange = IntentStatusChangeB.schema;
export const ResolverTxRequest = RefundTxRequestB.schema;
export const ResolverDeclineRequest = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 500 })) },
  { additionalProperties: false },
);
export const ResolverSecret = Type.Object({
  intent_id: Uuid,
  secret_hash: Type.String(),
  preimage: Type.String(),
});

/**
 * `GET /resolver/v1/events` (`event: status`): a status change of an intent this resolver quoted,
 * with what it needs to decide whether to act; the details come from `GET /resolver/v1/intents/{id}`.
 */
export const ResolverEvent = Type.Object({
  intent_id: Uuid,
  from: Type.Union([Status, Type.Null()], { description: 'null for the creation' }),
  to: Status,
  trigger: Trigger,
  at: Type.String({ format: 'date-time' }),
  deadline_secs: Type.Integer({ description: 'The intent deadline, Unix seconds' }),
});
export type ResolverEvent = Static<typeof ResolverEvent>;
