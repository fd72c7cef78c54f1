/**
 * Surface A of the swap service: root paths, camelCase. These schemas are the canonical wire shapes;
 * Surface B's are derived from them (`surface-b.ts`), and the SDK's swap types are their `Static<>`.
 */
import { type Static, Type } from 'typebox';
import {
  ActiveFilter,
  Address,
  AFFILIATE_NAME_PATTERN,
  BpsInput,
  DepositType,
  HumanAmount,
  JsonObject,
  Limit,
  Lots,
  LotsInput,
  MechanismA,
  NetworkId,
  NetworkType,
  Offset,
  Opt,
  OptEnum,
  Pagination,
  QueryList,
  SettlementLeg,
  Status,
  SwapType,
  Trigger,
  TxHash,
  Uuid,
} from './common.ts';

export const Network = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  type: NetworkType,
  iconUrl: Type.String(),
  features: Type.Object({ supportsCustomTokens: Type.Boolean(), supportsOptimizedSwap: Type.Boolean() }),
});
export type Network = Static<typeof Network>;

export const NetworksQuery = Type.Object({
  token: Type.Optional(Type.String({ maxLength: 128, description: 'Token contract address filter' })),
});
export const NetworkList = Type.Object({ networks: Type.Array(Network) });

export const Token = Type.Object({
  networkId: Type.Integer(),
  name: Type.String(),
  contractAddress: Type.String(),
  symbol: Type.String(),
  decimals: Type.Integer(),
  iconUrl: Type.String(),
  wrappedTokenAddress: Type.Optional(
    Type.String({ description: 'Set for native coins that must be wrapped first' }),
  ),
});
export type Token = Static<typeof Token>;

export const TokensQuery = Type.Object({
  limit: Type.Optional(Limit),
  offset: Type.Optional(Offset),
  q: Type.Optional(Type.String({ maxLength: 128, description: 'Symbol, name or contract address' })),
  'network-id': Type.Optional(NetworkId),
});
export const TokenPage = Type.Object({ tokens: Type.Array(Token), pagination: Pagination });

export const QuoteRequest = Type.Object(
  {
    sourceChain: NetworkId,
    sourceToken: Address,
    destChain: NetworkId,
    destToken: Address,
    amount: Opt(HumanAmount),
    amountLots: Opt(LotsInput),
    slippageBps: Opt(BpsInput),
    swapType: OptEnum(SwapType),
    depositType: OptEnum(DepositType),
    retailUserId: Opt(Type.String({ minLength: 1, maxLength: 128 })),
    affiliateFees: Opt(
      Type.Record(
        Type.String(),
        Type.Object(
          { feeBps: BpsInput, networkId: Type.Optional(NetworkId), token: Type.Optional(Address) },
          { additionalProperties: false },
        ),
        // Names outside the pattern (control characters, over 64) are refused, not looked up.
        { propertyNames: Type.String({ pattern: AFFILIATE_NAME_PATTERN }) },
      ),
    ),
  },
  {
    additionalProperties: false,
    description: 'Exactly one of amount (human units) and amountLots (integer lots)',
  },
);
export type QuoteRequest = Static<typeof QuoteRequest>;

export const Quote = Type.Object({
  quoteId: Uuid,
  sourceChain: Type.Integer(),
  sourceToken: Type.String(),
  destChain: Type.Integer(),
  destToken: Type.String(),
  sourceAmountLots: Lots,
  sourceAmountDecimals: Type.Integer(),
  minDestAmountLots: Lots,
  maxDestAmountLots: Lots,
  destAmountDecimals: Type.Integer(),
  slippageBps: Type.Integer(),
  expiry: Type.Integer({ description: 'Unix seconds after which the quote cannot make an intent' }),
  swapType: SwapType,
  depositType: DepositType,
  approvalMechanism: MechanismA,
  affiliateFees: Type.Record(
    Type.String(),
    Type.Object({
      feeBps: Type.Integer(),
      networkId: Type.Integer(),
      token: Type.String(),
      feeAmountLots: Lots,
      feeAmountDecimals: Type.Integer(),
    }),
  ),
});
export type Quote = Static<typeof Quote>;

export const IntentRequest = Type.Object(
  {
    quoteId: Uuid,
    refundAddress: Address,
    destinationAddress: Address,
    sourceAddress: Address,
    sourcePublicKey: Type.Optional(
      Type.Union([Type.Null(), Type.String({ maxLength: 132 })], {
        description:
          'Bitcoin: the x-only (P2TR) or compressed (P2WPKH) key of sourceAddress; Solana: the address',
      }),
    ),
    retailUserId: Opt(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);
export type IntentRequest = Static<typeof IntentRequest>;

/** An EIP-712 struct's field list. */
export const TypedDataFields = Type.Array(Type.Object({ name: Type.String(), type: Type.String() }));
export type TypedDataFields = Static<typeof TypedDataFields>;
const TypedDataTypes = Type.Record(Type.String(), TypedDataFields);

/** EIP-712/TIP-712 typed data as JSON (what `eth_signTypedData_v4` takes). */
export const TypedData = Type.Object({
  domain: Type.Object(
    {
      name: Type.Optional(Type.String()),
      version: Type.Optional(Type.String()),
      chainId: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
      verifyingContract: Type.Optional(Type.String()),
    },
    { additionalProperties: true },
  ),
  types: TypedDataTypes,
  primaryType: Type.String(),
  message: JsonObject,
});
export type TypedData = Static<typeof TypedData>;

export const Permit2Approval = Type.Object(
  {
    escrowContractAddress: Type.String(),
    permit2ContractAddress: Type.String(),
    resolverDepositAddress: Type.String(),
    nonce: Type.Integer(),
    additionalData: Type.Object({
      domain: JsonObject,
      types: TypedDataTypes,
      witness: JsonObject,
      witnessTypeString: Type.String(),
      witnessHash: Type.String(),
      secretHash: Type.String(),
    }),
    typedData: TypedData,
  },
  { description: 'EIP-712/TIP-712 PermitWitnessTransferFrom to sign (primaryType in typedData)' },
);
export type Permit2Approval = Static<typeof Permit2Approval>;

export const HtlcApproval = Type.Object({
  psbt: Type.String({ description: 'Base64 PSBT funding the HTLC' }),
  inputs: Type.Array(Type.Integer(), { description: 'Input indexes the user must sign' }),
  htlcAddress: Type.String(),
  locktime: Type.Integer({
    description: 'CLTV of the refund leaf: the intent deadline + swap.refund_safety_margin_secs (Unix time)',
  }),
  resolverPubkey: Type.String(),
  userPubkey: Type.String(),
  claimScript: Type.String(),
  refundScript: Type.String(),
  claimControlBlock: Type.String(),
  refundControlBlock: Type.String(),
  fundingTxid: Type.String(),
  htlcVout: Type.Integer(),
  fee: Lots,
});
export type HtlcApproval = Static<typeof HtlcApproval>;

export const CosignApproval = Type.Object({
  transaction: Type.String({ description: 'Hex-encoded v0 transaction; sign at position 1' }),
  nonce: Type.Optional(Type.Integer({ description: 'Last block height at which the transaction can land' })),
});
export type CosignApproval = Static<typeof CosignApproval>;

export const IntentCreated = Type.Object(
  {
    intentId: Uuid,
    deadlineSecs: Type.Integer(),
    secretHash: Type.String(),
    approvalMechanism: MechanismA,
    permit2: Type.Optional(Permit2Approval),
    htlc: Type.Optional(HtlcApproval),
    cosign: Type.Optional(CosignApproval),
  },
  { description: 'Exactly one of permit2, htlc, cosign is present' },
);
export type IntentCreated = Static<typeof IntentCreated>;

export const ApprovalRequest = Type.Object(
  {
    permit2: Type.Optional(Type.String({ maxLength: 200, description: 'Permit2 signature, 0x hex' })),
    psbt: Type.Optional(Type.String({ maxLength: 200_000, description: 'Signed PSBT, Base64' })),
    cosign: Type.Optional(
      Type.Object(
        { transaction: Type.String({ maxLength: 4000 }), userAddress: Address },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: 'Exactly one payload' },
);
export type ApprovalRequest = Static<typeof ApprovalRequest>;

export const IntentStatusChange = Type.Object({ intentId: Uuid, status: Status });
/**
 * One status change of an intent, as `GET /events` streams it (`event: status`, the SSE `id:` the
 * event's id, increasing over the whole database).
 */
export const IntentEvent = Type.Object({
  intentId: Uuid,
  from: Type.Union([Status, Type.Null()], { description: 'null for the creation' }),
  to: Status,
  trigger: Trigger,
  at: Type.String({ format: 'date-time' }),
});
export type IntentEvent = Static<typeof IntentEvent>;
export const IntentStatusOnly = Type.Object({ status: Status });
export const RefundTxRequest = Type.Object({ txHash: TxHash }, { additionalProperties: false });

export const SwapRecord = Type.Object({
  intentId: Uuid,
  status: Status,
  swapMetadata: Type.Object({
    id: Type.String(),
    proxyAddress: Type.String(),
    userDepositTx: Type.Union([Type.String(), Type.Null()]),
    fulfillTx: Type.Union([Type.String(), Type.Null()]),
    swapTx: Type.Union([Type.String(), Type.Null()]),
    refundTx: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
    userDepositedAt: Type.Union([Type.String(), Type.Null()]),
    fulfilledAt: Type.Union([Type.String(), Type.Null()]),
    swappedAt: Type.Union([Type.String(), Type.Null()]),
    refundedAt: Type.Union([Type.String(), Type.Null()]),
    refundRequestedAt: Type.Union([Type.String(), Type.Null()]),
  }),
  sourceAmountDecimals: Type.Integer(),
  sourceAmountLots: Lots,
  sourceChain: Type.Integer(),
  sourceToken: Type.String(),
  destAmountDecimals: Type.Integer(),
  destChain: Type.Integer(),
  destToken: Type.String(),
  minDestAmountLots: Lots,
  maxDestAmountLots: Lots,
  userSourceAddress: Type.String(),
  userDestAddress: Type.String(),
  refundAddress: Type.String(),
  approvalMechanism: MechanismA,
  deadlineSecs: Type.Integer(),
  secretHash: Type.String(),
  retailUserId: Type.Union([Type.String(), Type.Null()]),
  settlement: Type.Array(SettlementLeg, { description: 'Verified legs, in the order they were proven' }),
});
export type SwapRecord = Static<typeof SwapRecord>;

export const SwapsQuery = Type.Object({
  limit: Type.Optional(Limit),
  offset: Type.Optional(Offset),
  status: Type.Optional(Status),
  active: ActiveFilter,
  wallet: QueryList('Source or destination addresses (repeated or comma-separated)'),
  retailUserId: QueryList('Retail user ids (repeated or comma-separated)'),
});
export type SwapsQuery = Static<typeof SwapsQuery>;
export const SwapPage = Type.Object({ swaps: Type.Array(SwapRecord), pagination: Pagination });

export const AffiliateRequest = Type.Object(
  {
    affiliateName: Type.String({ pattern: AFFILIATE_NAME_PATTERN }),
    payoutAddress: Address,
    payoutNetworkId: NetworkId,
    payoutTokenAddress: Address,
  },
  { additionalProperties: false },
);
export type AffiliateRequest = Static<typeof AffiliateRequest>;

export const Affiliate = Type.Object({
  affiliateName: Type.String(),
  apiKeyName: Type.Optional(Type.String({ description: 'Only in list responses' })),
  payoutAddress: Type.String(),
  payoutNetworkId: Type.Integer(),
  payoutTokenAddress: Type.String(),
});
export type Affiliate = Static<typeof Affiliate>;
export const AffiliateList = Type.Object({ affiliates: Type.Array(Affiliate) });
