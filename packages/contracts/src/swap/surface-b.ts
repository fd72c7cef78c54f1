/**
 * Surface B of the swap service: `/affiliate/v1`, the Hotpot affiliate API's snake_case names.
 * Every schema here is Surface A's under a field map (`fieldMap`); only where Hotpot's shape differs
 * (a flat network, `params_to_sign`, `type`+`signed_data` approvals, `additional_info`, the quote's
 * `id` and string `slippage_bps`) is the difference spelled out.
 */
import { type Static, type TObject, Type } from 'typebox';
import { Address, MechanismB, Pagination } from './common.ts';
import { fieldMap } from './field-map.ts';
import * as A from './surface-a.ts';

export const NetworkB = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  type: A.Network.properties.type,
  icon_url: Type.String(),
  supports_optimized_swap: Type.Boolean(),
  supports_custom_tokens: Type.Boolean(),
});
/** Hotpot lists networks as a bare array of flat objects. */
export const NetworkListB = Type.Array(NetworkB);
export function networkListB(a: Static<typeof A.NetworkList>): Static<typeof NetworkListB> {
  return a.networks.map((n) => ({
    id: n.id,
    name: n.name,
    type: n.type,
    icon_url: n.iconUrl,
    supports_optimized_swap: n.features.supportsOptimizedSwap,
    supports_custom_tokens: n.features.supportsCustomTokens,
  }));
}

export const NetworksQueryB = fieldMap(A.NetworksQuery);
export const TokensQueryB = fieldMap(A.TokensQuery, { 'network-id': 'network_id' });
export const TokenPageB = fieldMap(A.TokenPage, { tokens: 'data' });

export const QuoteRequestB = fieldMap(A.QuoteRequest, undefined, {
  options: { description: 'Exactly one of amount (human units, string or number) and amount_lots' },
});

const QuoteBase = fieldMap(A.Quote, undefined, {
  retype: { slippage_bps: Type.String(), approval_mechanism: MechanismB },
  extend: { id: A.Quote.properties.quoteId },
  options: { description: '`id` repeats `quote_id` for Hotpot SDK clients' },
});
export const QuoteB = {
  schema: QuoteBase.schema,
  toWire: (a: A.Quote) => {
    const b = QuoteBase.toWire(a);
    return { ...b, id: b.quote_id, slippage_bps: String(b.slippage_bps) };
  },
};

export const IntentRequestB = fieldMap(
  A.IntentRequest,
  {
    destinationAddress: 'user_destination_address',
    sourceAddress: 'user_source_address',
    sourcePublicKey: 'user_source_public_key',
  },
  {
    extend: {
      referrer_id: Type.Optional(
        Type.Union([Type.String({ maxLength: 128, description: 'Accepted and ignored' }), Type.Null()]),
      ),
    },
  },
);

// Hotpot keeps `secretHash` camelCase inside `additional_data`, and has no `typedData`.
const Permit2ParamsB = fieldMap(A.Permit2Approval, { secretHash: 'secretHash' }, { omit: ['typedData'] });
const HtlcParamsB = fieldMap(A.HtlcApproval);
const CosignParamsB = fieldMap(A.CosignApproval, undefined, {
  options: {
    description: 'nonce: the last block height at which the transaction can land (Hotpot SDK field)',
  },
});

const IntentCreatedBase = fieldMap(A.IntentCreated, undefined, {
  omit: ['permit2', 'htlc', 'cosign'],
  retype: { approval_mechanism: MechanismB },
  extend: {
    params_to_sign: Type.Union([Permit2ParamsB.schema, HtlcParamsB.schema, CosignParamsB.schema], {
      description: 'Shape chosen by approval_mechanism',
    }),
  },
});
export const IntentCreatedB = {
  schema: IntentCreatedBase.schema,
  toWire: (a: A.IntentCreated) => {
    const { permit2, htlc, cosign, ...rest } = a;
    const params = permit2
      ? Permit2ParamsB.toWire(permit2)
      : htlc
        ? HtlcParamsB.toWire(htlc)
        : CosignParamsB.toWire(cosign!);
    return { ...IntentCreatedBase.toWire(rest), params_to_sign: params };
  },
};

/** Hotpot's approval body: `type` names the payload; `htlc` and `rgblock` intents take `psbt`. */
export const ApprovalRequestB = Type.Object(
  {
    type: Type.Union([Type.Literal('permit2'), Type.Literal('psbt'), Type.Literal('cosign')], {
      description: 'htlc and rgblock intents take `psbt`',
    }),
    signed_data: Type.Union([
      Type.String({ maxLength: 200_000 }),
      Type.Object(
        { transaction: Type.String({ maxLength: 4000 }), user_address: Address },
        { additionalProperties: false },
      ),
    ]),
  },
  { additionalProperties: false },
);
export type ApprovalRequestB = Static<typeof ApprovalRequestB>;

export const IntentStatusChangeB = fieldMap(A.IntentStatusChange);
/** `GET /affiliate/v1/events`: Surface A's event in snake_case. */
export const IntentEventB = fieldMap(A.IntentEvent);
export const RefundTxRequestB = fieldMap(A.RefundTxRequest);

/** The quote's fields of a swap record, which Hotpot's Go SDK reads again in `additional_info`. */
const QUOTE_FIELDS = [
  'sourceAmountDecimals',
  'sourceAmountLots',
  'sourceChain',
  'sourceToken',
  'destAmountDecimals',
  'destChain',
  'destToken',
  'minDestAmountLots',
  'maxDestAmountLots',
] as const;
const QuoteFieldsB = fieldMap(Type.Pick(A.SwapRecord, QUOTE_FIELDS));

const SwapRecordBase = fieldMap(A.SwapRecord, undefined, {
  omit: ['refundAddress', 'approvalMechanism', 'deadlineSecs', 'secretHash', 'retailUserId'],
  extend: {
    additional_info: Type.Object((QuoteFieldsB.schema as TObject).properties, {
      description: "The quote's fields again, where the Hotpot Go SDK (types.Swap) reads them",
    }),
  },
});
export const SwapRecordB = {
  schema: SwapRecordBase.schema,
  toWire: (a: A.SwapRecord) => ({
    ...SwapRecordBase.toWire(a),
    additional_info: QuoteFieldsB.toWire(a),
  }),
};
export type SwapRecordB = ReturnType<typeof SwapRecordB.toWire>;

export const SwapsQueryB = fieldMap(A.SwapsQuery, { retailUserId: 'retail_id' });
export const SwapPageB = {
  schema: Type.Object({ data: Type.Array(SwapRecordB.schema), pagination: Pagination }),
  toWire: (a: Static<typeof A.SwapPage>) => ({
    data: a.swaps.map(SwapRecordB.toWire),
    pagination: a.pagination,
  }),
};
