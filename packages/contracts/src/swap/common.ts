/** Schema pieces of the swap service shared by both surfaces and the resolver API. */
import { type Static, type TSchema, Type } from 'typebox';
import { literalUnion } from '../literals.ts';

/** Page sizes of every paginated list (`/tokens`, `/swaps`, the resolver's `/intents`). */
export const PAGE = {
  defaultLimit: 20,
  maxLimit: 100,
} as const;

export const Lots = Type.String({
  pattern: '^(0|[1-9][0-9]{0,77})$',
  description: 'Integer amount in lots (smallest unit) as a decimal string',
});
export const Uuid = Type.String({ format: 'uuid' });
export const Address = Type.String({ minLength: 1, maxLength: 128 });
export const TxHash = Type.String({
  minLength: 1,
  maxLength: 130,
  description: 'Transaction hash/id on its chain',
});
export const NetworkId = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

/** The intent statuses, in lifecycle order. */
export const STATUSES = [
  'Initiated',
  'ApprovalAdded',
  'Accepted',
  'Declined',
  'UserDeposited',
  'Fulfilled',
  'Expired',
  'RefundRequested',
  'Refunded',
] as const;
export const Status = literalUnion(STATUSES, { description: 'Intent status (see the README status table)' });
/** What moved an intent (the lifecycle table's triggers), as the event feeds name it. */
export const TRIGGERS = [
  'create',
  'approve',
  'accept',
  'decline',
  'deposit',
  'fulfil',
  'claim',
  'expire',
  'request_refund',
  'refund',
  'record_deposit',
] as const;
export const Trigger = literalUnion(TRIGGERS, { description: 'What moved the intent' });
/**
 * The `event: reset` of an event feed: the `Last-Event-ID` a client resumed from is older than the
 * retention (`expired`) or names no event of this database (`unknown`). The stream goes on from now;
 * the client re-reads the state of its intents (the list routes) instead of replaying what it missed.
 */
export const EventsReset = Type.Object({
  reason: Type.Union([Type.Literal('expired'), Type.Literal('unknown')]),
  message: Type.String(),
});
export type EventsReset = Static<typeof EventsReset>;
export const MechanismA = Type.Union([Type.Literal('permit2'), Type.Literal('htlc'), Type.Literal('cosign')]);
export const MechanismB = Type.Union(
  [Type.Literal('permit2'), Type.Literal('htlc'), Type.Literal('rgblock'), Type.Literal('cosign')],
  { description: 'The set of values may change; clients must check it' },
);
/** The network kinds the swap serves: the one list (the service's config and kinds registry derive from it). */
export const NetworkType = Type.Union([
  Type.Literal('EVM'),
  Type.Literal('TRON'),
  Type.Literal('BITCOIN'),
  Type.Literal('SOLANA'),
]);
export type NetworkTypeName = Static<typeof NetworkType>;
export const NETWORK_TYPES: readonly NetworkTypeName[] = NetworkType.anyOf.map((l) => l.const);
export const Limit = Type.Integer({
  minimum: 1,
  maximum: PAGE.maxLimit,
  description: `Page size, default ${PAGE.defaultLimit}, maximum ${PAGE.maxLimit}`,
});
export const Offset = Type.Integer({
  minimum: 0,
  maximum: 1_000_000_000,
  description: 'Results to skip, default 0',
});
export const Pagination = Type.Object({
  limit: Type.Integer(),
  offset: Type.Integer(),
  total: Type.Integer(),
  pages: Type.Integer(),
});
export type Pagination = Static<typeof Pagination>;
export const JsonObject = Type.Record(Type.String(), Type.Unknown());
export const ApiKeyHeader = Type.Object({
  'x-api-key': Type.Optional(Type.String({ description: 'API key' })),
});
export const BpsInput = Type.Union([
  Type.Integer({ minimum: 0, maximum: 10_000 }),
  Type.String({ pattern: '^(0|[1-9][0-9]{0,4})$' }),
]);
/**
 * A human amount: a decimal string (`"12.5"`; no sign, exponent, hex, spaces or leading zeros — else
 * INVALID_AMOUNT, 422) or a JSON number (Hotpot clients send a number).
 */
export const HumanAmount = Type.Union([
  Type.String({ minLength: 1, maxLength: 160, description: 'decimal text, e.g. "12.5"' }),
  Type.Number({ minimum: 0 }),
]);
/** Integer lots in a request: decimal digits only (else INVALID_AMOUNT, 422). */
export const LotsInput = Type.String({
  minLength: 1,
  maxLength: 80,
  description: 'integer lots, e.g. "250000000"',
});
export const SwapType = Type.Union([Type.Literal('standard'), Type.Literal('optimized')]);
export const DepositType = Type.Literal('escrowed');
/** An affiliate name: 1–64 characters, no control characters. */
export const AFFILIATE_NAME_PATTERN = '^[^\\u0000-\\u001f\\u007f]{1,64}$';

/**
 * An optional request field that also takes `null` for "absent" (Go SDKs marshal nil pointers and
 * maps as `null`; the Hotpot widget sends `null`): the default applies.
 */
export function Opt<T extends TSchema>(schema: T) {
  return Type.Optional(Type.Union([schema, Type.Null()]));
}
/** Like `Opt`, and `""` also means absent (the Go SDK's zero value of an enum string). */
export function OptEnum<T extends TSchema>(schema: T) {
  return Type.Optional(Type.Union([schema, Type.Null(), Type.Literal('')]));
}

const NullableString = Type.Union([Type.String(), Type.Null()]);

/** One verified settlement leg (Surface A's names; Surface B and the resolver API snake_case them). */
export const SettlementLeg = Type.Object(
  {
    leg: Type.Union([
      Type.Literal('deposit'),
      Type.Literal('fulfil'),
      Type.Literal('claim'),
      Type.Literal('refund'),
    ]),
    networkId: Type.Integer(),
    txHash: Type.String(),
    index: Type.Integer({
      description:
        'output (Bitcoin), log (EVM/Tron) or instruction (Solana) index; -1 = the transaction itself',
    }),
    blockHeight: NullableString,
    blockHash: NullableString,
    blockTime: Type.Union([Type.Integer(), Type.Null()]),
    confirmations: Type.Integer({ description: 'at verification' }),
    recipient: Type.String(),
    token: Type.String(),
    amount: Type.String({ pattern: '^[0-9]+$' }),
    sender: NullableString,
    verifiedAt: Type.String({ format: 'date-time' }),
  },
  {
    description:
      'A settlement leg proven on chain: the transaction, where it is mined, and what was verified (recipient, token, amount, sender where the chain shows one). Anyone can re-check it against the chain.',
  },
);

export type SettlementLeg = Static<typeof SettlementLeg>;

/**
 * A list filter in a query string: repeated parameters (`wallet=a&wallet=b`, the Hotpot Go SDK) and
 * comma lists (`wallet=a,b`) both work, up to 20 values.
 */
export const QueryList = (description: string) =>
  Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 20, description }));

/** `active`: `true` = swaps still in flight; absent or `false` = all swaps (Hotpot clients always send `false`). */
export const ActiveFilter = Type.Optional(
  Type.Boolean({
    description: 'true: only swaps still in flight (not terminal); false or absent: all swaps',
  }),
);

/** The error envelope of every swap route. */
export const SwapError = Type.Object(
  {
    code: Type.Integer({ description: 'Stable integer code (see the error table; 25 = Permit2 allowance)' }),
    type: Type.String({ description: 'The code as an UPPER_SNAKE name' }),
    message: Type.String({ description: 'Human-readable message' }),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    entity: Type.Optional(
      Type.String({
        description:
          "The kind of thing the error is about, with the Hotpot SDK's EntityKind names (Intent, Quote, Approval, Network, Token, Address, Transaction, Resolver, Affiliate); absent when about none",
      }),
    ),
  },
  { $id: 'SwapError', description: 'Every error reply of the swap service' },
);
