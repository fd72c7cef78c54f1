/**
 * Surface A: root paths, camelCase bodies, every route behind `X-API-Key`.
 */
import { type ServiceApp, type Static, Type } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { createAffiliate, listAffiliates } from '../domain/affiliates.ts';
import { type ApprovalSubmission, addApproval } from '../domain/approvals.ts';
import { PAGE } from '../domain/catalog.ts';
import { reportRefund, requestRefund } from '../domain/execution.ts';
import { createIntent } from '../domain/intents.ts';
import { TERMINAL } from '../domain/lifecycle.ts';
import { createQuote } from '../domain/quotes.ts';
import { E, ErrorRef } from '../errors.ts';
import { expireIfDue, listIntents, loadIntent } from '../store/intent-store.ts';
import { apiKeyHook, apiKeyOf } from './auth.ts';
import { type HealthCheck, healthReply } from './health.ts';
import { affiliateA, intentCreatedA, networkA, quoteA, swapRecordA, tokenA } from './presenters.ts';
import {
  ActiveFilter,
  Address,
  AFFILIATE_NAME_PATTERN,
  ApiKeyHeader,
  BpsInput,
  DepositType,
  dropAbsent,
  HumanAmount,
  JsonObject,
  Limit,
  Lots,
  LotsInput,
  listValues,
  MechanismA,
  NetworkId,
  NetworkType,
  Offset,
  Opt,
  OptEnum,
  Pagination,
  QueryList,
  SettlementLegA,
  Status,
  SwapType,
  TxHash,
  Uuid,
} from './schemas-common.ts';

const TAG = 'Surface A';
// Error replies are documented per status; typed as nothing so they do not widen the handlers' return types.
const errors = (...codes: number[]): Record<never, never> =>
  Object.fromEntries(codes.map((c) => [c, ErrorRef]));

export const NetworkSchemaA = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    type: NetworkType,
    iconUrl: Type.String(),
    features: Type.Object({ supportsCustomTokens: Type.Boolean(), supportsOptimizedSwap: Type.Boolean() }),
  },
  { $id: 'NetworkA' },
);

export const TokenSchemaA = Type.Object(
  {
    networkId: Type.Integer(),
    name: Type.String(),
    contractAddress: Type.String(),
    symbol: Type.String(),
    decimals: Type.Integer(),
    iconUrl: Type.String(),
    wrappedTokenAddress: Type.Optional(
      Type.String({ description: 'Set for native coins that must be wrapped first' }),
    ),
  },
  { $id: 'TokenA' },
);

export const QuoteRequestA = Type.Object(
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
    $id: 'QuoteRequestA',
    additionalProperties: false,
    description: 'Exactly one of amount (human units) and amountLots (integer lots)',
  },
);

const AffiliateFeeA = Type.Object({
  feeBps: Type.Integer(),
  networkId: Type.Integer(),
  token: Type.String(),
  feeAmountLots: Lots,
  feeAmountDecimals: Type.Integer(),
});

export const QuoteSchemaA = Type.Object(
  {
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
    affiliateFees: Type.Record(Type.String(), AffiliateFeeA),
  },
  { $id: 'QuoteA' },
);

export const IntentRequestA = Type.Object(
  {
    quoteId: Uuid,
    refundAddress: Address,
    destinationAddress: Address,
    sourceAddress: Address,
    sourcePublicKey: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 132 })])),
    retailUserId: Opt(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { $id: 'IntentRequestA', additionalProperties: false },
);

const TypedDataA = Type.Object({
  domain: JsonObject,
  types: JsonObject,
  primaryType: Type.String(),
  message: JsonObject,
});

export const Permit2SchemaA = Type.Object(
  {
    escrowContractAddress: Type.String(),
    permit2ContractAddress: Type.String(),
    resolverDepositAddress: Type.String(),
    nonce: Type.Integer(),
    additionalData: Type.Object({
      domain: JsonObject,
      types: JsonObject,
      witness: JsonObject,
      witnessTypeString: Type.String(),
      witnessHash: Type.String(),
      secretHash: Type.String(),
    }),
    typedData: TypedDataA,
  },
  {
    $id: 'Permit2ApprovalA',
    description: 'EIP-712/TIP-712 PermitWitnessTransferFrom to sign (primaryType in typedData)',
  },
);

export const HtlcSchemaA = Type.Object(
  {
    psbt: Type.String({ description: 'Base64 PSBT funding the HTLC' }),
    inputs: Type.Array(Type.Integer(), { description: 'Input indexes the user must sign' }),
    htlcAddress: Type.String(),
    locktime: Type.Integer({ description: 'CLTV of the refund leaf (the intent deadline)' }),
    resolverPubkey: Type.String(),
    userPubkey: Type.String(),
    claimScript: Type.String(),
    refundScript: Type.String(),
    claimControlBlock: Type.String(),
    refundControlBlock: Type.String(),
    fundingTxid: Type.String(),
    htlcVout: Type.Integer(),
    fee: Lots,
  },
  { $id: 'HtlcApprovalA' },
);

export const CosignSchemaA = Type.Object(
  {
    transaction: Type.String({ description: 'Hex-encoded v0 transaction; sign at position 1' }),
    nonce: Type.Optional(
      Type.Integer({ description: 'Last block height at which the transaction can land' }),
    ),
  },
  { $id: 'CosignApprovalA' },
);

export const IntentCreatedA = Type.Object(
  {
    intentId: Uuid,
    deadlineSecs: Type.Integer(),
    secretHash: Type.String(),
    approvalMechanism: MechanismA,
    permit2: Type.Optional(Type.Ref('Permit2ApprovalA')),
    htlc: Type.Optional(Type.Ref('HtlcApprovalA')),
    cosign: Type.Optional(Type.Ref('CosignApprovalA')),
  },
  { $id: 'IntentCreatedA', description: 'Exactly one of permit2, htlc, cosign is present' },
);

export const ApprovalRequestA = Type.Object(
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
  { $id: 'ApprovalRequestA', additionalProperties: false, description: 'Exactly one payload' },
);

const IntentStatusA = Type.Object({ intentId: Uuid, status: Status }, { $id: 'IntentStatusChangeA' });

export const SwapRecordSchemaA = Type.Object(
  {
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
    settlement: Type.Array(SettlementLegA, { description: 'Verified legs, in the order they were proven' }),
  },
  { $id: 'SwapRecordA' },
);

export const AffiliateRequestA = Type.Object(
  {
    affiliateName: Type.String({ pattern: AFFILIATE_NAME_PATTERN }),
    payoutAddress: Address,
    payoutNetworkId: NetworkId,
    payoutTokenAddress: Address,
  },
  { $id: 'AffiliateRequestA', additionalProperties: false },
);

export const AffiliateSchemaA = Type.Object(
  {
    affiliateName: Type.String(),
    apiKeyName: Type.Optional(Type.String({ description: 'Only in list responses' })),
    payoutAddress: Type.String(),
    payoutNetworkId: Type.Integer(),
    payoutTokenAddress: Type.String(),
  },
  { $id: 'AffiliateA' },
);

const IdParams = Type.Object({ id: Uuid });

export type ApprovalBodyA = Static<typeof ApprovalRequestA>;

/** Surface A's single approval payload → the domain submission (APPROVAL_PAYLOAD_COUNT unless exactly one). */
export function approvalFromA(body: ApprovalBodyA): ApprovalSubmission {
  const present = [body.permit2, body.psbt, body.cosign].filter((v) => v !== undefined);
  if (present.length !== 1) throw E.APPROVAL_PAYLOAD_COUNT.create();
  if (body.permit2 !== undefined) return { type: 'permit2', signature: body.permit2 };
  if (body.psbt !== undefined) return { type: 'psbt', psbt: body.psbt };
  return { type: 'cosign', transaction: body.cosign!.transaction, userAddress: body.cosign!.userAddress };
}

export function registerSurfaceA(app: ServiceApp, ctx: SwapContext, health: HealthCheck): void {
  for (const s of [
    NetworkSchemaA,
    TokenSchemaA,
    QuoteSchemaA,
    Permit2SchemaA,
    HtlcSchemaA,
    CosignSchemaA,
    SwapRecordSchemaA,
    AffiliateSchemaA,
    IntentCreatedA,
  ]) {
    app.addSchema(s);
  }
  app.register(async (instance) => {
    const scope = instance as unknown as ServiceApp;
    scope.addHook('onRequest', apiKeyHook(ctx));
    scope.addHook('preHandler', dropAbsent);
    const common = { tags: [TAG], headers: ApiKeyHeader };

    scope.get(
      '/healthcheck',
      {
        schema: {
          ...common,
          operationId: 'healthcheck',
          summary: 'Health check: 200 with an empty body, or 503 {code, message}',
          response: { 200: Type.Null({ description: 'Empty body' }), ...errors(401, 503) },
        },
      },
      async (_req, reply) => healthReply(health, reply),
    );

    scope.get(
      '/networks',
      {
        schema: {
          ...common,
          operationId: 'listNetworks',
          querystring: Type.Object({
            token: Type.Optional(
              Type.String({ maxLength: 128, description: 'Token contract address filter' }),
            ),
          }),
          response: { 200: Type.Object({ networks: Type.Array(Type.Ref('NetworkA')) }), ...errors(400, 401) },
        },
      },
      async (req) => ({ networks: ctx.catalog.listNetworks(req.query.token).map(networkA) }),
    );

    scope.get(
      '/tokens',
      {
        schema: {
          ...common,
          operationId: 'listTokens',
          description: `Paginated by limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit}) and offset`,
          querystring: Type.Object({
            limit: Type.Optional(Limit),
            offset: Type.Optional(Offset),
            q: Type.Optional(
              Type.String({ maxLength: 128, description: 'Symbol, name or contract address' }),
            ),
            'network-id': Type.Optional(NetworkId),
          }),
          response: {
            200: Type.Object({ tokens: Type.Array(Type.Ref('TokenA')), pagination: Pagination }),
            ...errors(400, 401),
          },
        },
      },
      async (req) => {
        const page = ctx.catalog.listTokens({
          q: req.query.q,
          networkId: req.query['network-id'],
          limit: req.query.limit,
          offset: req.query.offset,
        });
        return {
          tokens: page.items.map(tokenA),
          pagination: { limit: page.limit, offset: page.offset, total: page.total, pages: page.pages },
        };
      },
    );

    scope.post(
      '/quote',
      {
        schema: {
          ...common,
          operationId: 'createQuote',
          body: QuoteRequestA,
          response: { 200: Type.Ref('QuoteA'), ...errors(400, 401, 404, 422, 503) },
        },
      },
      async (req) => {
        const b = req.body;
        const quote = await createQuote({
          db: ctx.db,
          catalog: ctx.catalog,
          resolvers: ctx.resolvers,
          settings: quoteSettings(ctx),
          now: ctx.now,
          apiKeyId: apiKeyOf(req),
          input: {
            sourceChain: b.sourceChain,
            sourceToken: b.sourceToken,
            destChain: b.destChain,
            destToken: b.destToken,
            ...(b.amount == null ? {} : { amount: b.amount }),
            ...(b.amountLots == null ? {} : { amountLots: b.amountLots }),
            ...(b.slippageBps == null ? {} : { slippageBps: b.slippageBps }),
            ...(!b.swapType ? {} : { swapType: b.swapType }),
            ...(!b.depositType ? {} : { depositType: b.depositType }),
            ...(b.retailUserId == null ? {} : { retailUserId: b.retailUserId }),
            ...(b.affiliateFees == null ? {} : { affiliateFees: b.affiliateFees }),
          },
          onResolverError: (id, err) => req.log.warn({ resolver: id, err }, 'resolver quote failed'),
        });
        return quoteA(quote);
      },
    );

    scope.post(
      '/intents',
      {
        schema: {
          ...common,
          operationId: 'createIntent',
          body: IntentRequestA,
          response: { 200: Type.Ref('IntentCreatedA'), ...errors(400, 401, 404, 409, 422, 503) },
        },
      },
      async (req) => {
        const b = req.body;
        const { intent } = await createIntent(ctx, apiKeyOf(req), {
          quoteId: b.quoteId,
          refundAddress: b.refundAddress,
          destinationAddress: b.destinationAddress,
          sourceAddress: b.sourceAddress,
          sourcePublicKey: b.sourcePublicKey || null,
          retailUserId: b.retailUserId ?? null,
        });
        return intentCreatedA(intent);
      },
    );

    scope.post(
      '/intents/:id/approvals',
      {
        schema: {
          ...common,
          operationId: 'addApproval',
          params: IdParams,
          body: ApprovalRequestA,
          response: { 200: IntentStatusA, ...errors(400, 401, 404, 409, 422, 503) },
        },
      },
      async (req) => {
        const intent = await addApproval(ctx, apiKeyOf(req), req.params.id, approvalFromA(req.body));
        return { intentId: intent.id, status: intent.status };
      },
    );

    scope.get(
      '/intents/:id/status',
      {
        schema: {
          ...common,
          operationId: 'getIntentStatus',
          params: IdParams,
          response: { 200: Type.Object({ status: Status }), ...errors(400, 401, 404) },
        },
      },
      async (req) => {
        const intent = await expireIfDue(
          ctx.db,
          await loadIntent(ctx.db, req.params.id, { apiKeyId: apiKeyOf(req) }),
          ctx.now(),
        );
        return { status: intent.status };
      },
    );

    scope.post(
      '/intents/:id/refund-request',
      {
        schema: {
          ...common,
          operationId: 'requestRefund',
          summary: 'Request a refund of an expired intent whose funds were deposited',
          params: IdParams,
          response: { 200: IntentStatusA, ...errors(400, 401, 404, 409) },
        },
      },
      async (req) => {
        const intent = await requestRefund(ctx, apiKeyOf(req), req.params.id);
        return { intentId: intent.id, status: intent.status };
      },
    );

    scope.post(
      '/intents/:id/refund-tx',
      {
        schema: {
          ...common,
          operationId: 'reportRefundTx',
          summary:
            "Report the user's refund transaction (Bitcoin: the HTLC refund-leaf spend), checked on chain",
          params: IdParams,
          body: Type.Object({ txHash: TxHash }, { additionalProperties: false }),
          response: { 200: IntentStatusA, ...errors(400, 401, 404, 409, 422, 503) },
        },
      },
      async (req) => {
        const intent = await reportRefund(ctx, { apiKeyId: apiKeyOf(req) }, req.params.id, req.body.txHash);
        return { intentId: intent.id, status: intent.status };
      },
    );

    scope.post(
      '/affiliates',
      {
        schema: {
          ...common,
          operationId: 'createAffiliate',
          body: AffiliateRequestA,
          response: { 201: Type.Ref('AffiliateA'), ...errors(400, 401, 409, 422) },
        },
      },
      async (req, reply) => {
        const a = await createAffiliate(ctx, apiKeyOf(req), req.body);
        return reply.code(201).send(affiliateA(a, false));
      },
    );

    scope.get(
      '/affiliates',
      {
        schema: {
          ...common,
          operationId: 'listAffiliates',
          response: { 200: Type.Object({ affiliates: Type.Array(Type.Ref('AffiliateA')) }), ...errors(401) },
        },
      },
      async (req) => ({
        affiliates: (await listAffiliates(ctx, apiKeyOf(req))).map((a) => affiliateA(a, true)),
      }),
    );

    scope.get(
      '/swaps',
      {
        schema: {
          ...common,
          operationId: 'listSwaps',
          description: `Newest first; limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit}), offset, and filters`,
          querystring: Type.Object({
            limit: Type.Optional(Limit),
            offset: Type.Optional(Offset),
            status: Type.Optional(Status),
            active: ActiveFilter,
            wallet: QueryList('Source or destination addresses (repeated or comma-separated)'),
            retailUserId: QueryList('Retail user ids (repeated or comma-separated)'),
          }),
          response: {
            200: Type.Object({ swaps: Type.Array(Type.Ref('SwapRecordA')), pagination: Pagination }),
            ...errors(400, 401),
          },
        },
      },
      async (req) => {
        const q = req.query;
        const limit = q.limit ?? PAGE.defaultLimit;
        const offset = q.offset ?? 0;
        const { items, total } = await listIntents(
          ctx.db,
          apiKeyOf(req),
          {
            limit,
            offset,
            ...(q.status ? { status: q.status } : {}),
            ...(q.active === true ? { active: true } : {}),
            wallets: listValues(q.wallet),
            retailUserIds: listValues(q.retailUserId),
          },
          TERMINAL,
        );
        return {
          swaps: items.map(swapRecordA),
          pagination: { limit, offset, total, pages: Math.ceil(total / limit) },
        };
      },
    );

    scope.get(
      '/swaps/:id',
      {
        schema: {
          ...common,
          operationId: 'getSwap',
          params: IdParams,
          response: { 200: Type.Ref('SwapRecordA'), ...errors(400, 401, 404) },
        },
      },
      async (req) => {
        const intent = await expireIfDue(
          ctx.db,
          await loadIntent(ctx.db, req.params.id, { apiKeyId: apiKeyOf(req) }),
          ctx.now(),
        );
        return swapRecordA(intent);
      },
    );
  });
}

export function quoteSettings(ctx: SwapContext) {
  const s = ctx.config.swap;
  return {
    quoteTtlSecs: s.quote_ttl_secs,
    defaultSlippageBps: s.default_slippage_bps,
    maxSlippageBps: s.max_slippage_bps,
    maxAffiliateFeeBps: s.max_affiliate_fee_bps,
    resolverTimeoutMs: s.resolver_timeout_ms,
  };
}
