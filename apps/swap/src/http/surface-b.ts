/**
 * Surface B: `/affiliate/v1`, snake_case, field names of the Hotpot affiliate API (see the README
 * for the traps: `htlc` intents take a `psbt` approval, `slippage_bps` is a string, Permit2's spender
 * is the escrow). Every route behind `X-API-Key`.
 */
import { type ServiceApp, type Static, Type } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { type ApprovalSubmission, addApproval } from '../domain/approvals.ts';
import { PAGE } from '../domain/catalog.ts';
import { reportRefund, requestRefund } from '../domain/execution.ts';
import { createIntent } from '../domain/intents.ts';
import { TERMINAL } from '../domain/lifecycle.ts';
import { createQuote } from '../domain/quotes.ts';
import { ErrorRef } from '../errors.ts';
import { expireIfDue, listIntents, loadIntent } from '../store/intent-store.ts';
import { apiKeyHook, apiKeyOf } from './auth.ts';
import { type HealthCheck, healthReply } from './health.ts';
import { intentCreatedB, networkB, quoteB, swapRecordB, tokenB } from './presenters.ts';
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
  MechanismB,
  NetworkId,
  NetworkType,
  Offset,
  Opt,
  OptEnum,
  Pagination,
  QueryList,
  SettlementLegB,
  Status,
  SwapType,
  TxHash,
  Uuid,
} from './schemas-common.ts';
import { quoteSettings } from './surface-a.ts';

const TAG = 'Surface B (affiliate v1)';
// Error replies are documented per status; typed as nothing so they do not widen the handlers' return types.
const errors = (...codes: number[]): Record<never, never> =>
  Object.fromEntries(codes.map((c) => [c, ErrorRef]));
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const NetworkSchemaB = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    type: NetworkType,
    icon_url: Type.String(),
    supports_optimized_swap: Type.Boolean(),
    supports_custom_tokens: Type.Boolean(),
  },
  { $id: 'NetworkB' },
);

export const TokenSchemaB = Type.Object(
  {
    network_id: Type.Integer(),
    name: Type.String(),
    contract_address: Type.String(),
    symbol: Type.String(),
    decimals: Type.Integer(),
    icon_url: Type.String(),
    wrapped_token_address: Type.Optional(Type.String()),
  },
  { $id: 'TokenB' },
);

export const QuoteRequestB = Type.Object(
  {
    source_chain: NetworkId,
    source_token: Address,
    dest_chain: NetworkId,
    dest_token: Address,
    amount: Opt(HumanAmount),
    amount_lots: Opt(LotsInput),
    slippage_bps: Opt(BpsInput),
    swap_type: OptEnum(SwapType),
    deposit_type: OptEnum(DepositType),
    retail_user_id: Opt(Type.String({ minLength: 1, maxLength: 128 })),
    affiliate_fees: Opt(
      Type.Record(
        Type.String(),
        Type.Object(
          { fee_bps: BpsInput, network_id: Type.Optional(NetworkId), token: Type.Optional(Address) },
          { additionalProperties: false },
        ),
        // Names outside the pattern (control characters, over 64) are refused, not looked up.
        { propertyNames: Type.String({ pattern: AFFILIATE_NAME_PATTERN }) },
      ),
    ),
  },
  {
    $id: 'QuoteRequestB',
    additionalProperties: false,
    description: 'Exactly one of amount (human units, string or number) and amount_lots',
  },
);

export const QuoteSchemaB = Type.Object(
  {
    quote_id: Uuid,
    id: Uuid,
    source_chain: Type.Integer(),
    source_token: Type.String(),
    dest_chain: Type.Integer(),
    dest_token: Type.String(),
    source_amount_lots: Lots,
    source_amount_decimals: Type.Integer(),
    min_dest_amount_lots: Lots,
    max_dest_amount_lots: Lots,
    dest_amount_decimals: Type.Integer(),
    slippage_bps: Type.String(),
    expiry: Type.Integer({ description: 'Unix seconds' }),
    swap_type: SwapType,
    deposit_type: DepositType,
    approval_mechanism: MechanismB,
    affiliate_fees: Type.Record(
      Type.String(),
      Type.Object({
        fee_bps: Type.Integer(),
        network_id: Type.Integer(),
        token: Type.String(),
        fee_amount_lots: Lots,
        fee_amount_decimals: Type.Integer(),
      }),
    ),
  },
  { $id: 'QuoteB', description: '`id` repeats `quote_id` for Hotpot SDK clients' },
);

export const IntentRequestB = Type.Object(
  {
    quote_id: Uuid,
    refund_address: Address,
    user_destination_address: Address,
    user_source_address: Address,
    user_source_public_key: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 132 })])),
    retail_user_id: Opt(Type.String({ minLength: 1, maxLength: 128 })),
    referrer_id: Opt(Type.String({ maxLength: 128, description: 'Accepted and ignored' })),
  },
  { $id: 'IntentRequestB', additionalProperties: false },
);

const Permit2ParamsB = Type.Object({
  escrow_contract_address: Type.String(),
  permit2_contract_address: Type.String(),
  resolver_deposit_address: Type.String(),
  nonce: Type.Integer(),
  additional_data: Type.Object({
    domain: JsonObject,
    types: JsonObject,
    witness: JsonObject,
    witness_type_string: Type.String(),
    witness_hash: Type.String(),
    secretHash: Type.String(),
  }),
});

const HtlcParamsB = Type.Object({
  psbt: Type.String(),
  inputs: Type.Array(Type.Integer()),
  htlc_address: Type.String(),
  locktime: Type.Integer(),
  resolver_pubkey: Type.String(),
  user_pubkey: Type.String(),
  claim_script: Type.String(),
  refund_script: Type.String(),
  claim_control_block: Type.String(),
  refund_control_block: Type.String(),
  funding_txid: Type.String(),
  htlc_vout: Type.Integer(),
  fee: Lots,
});

const CosignParamsB = Type.Object({
  transaction: Type.String(),
  nonce: Type.Optional(
    Type.Integer({ description: 'Last block height at which the transaction can land (Hotpot SDK field)' }),
  ),
});

export const IntentCreatedB = Type.Object(
  {
    intent_id: Uuid,
    deadline_secs: Type.Integer(),
    secret_hash: Type.String(),
    approval_mechanism: MechanismB,
    params_to_sign: Type.Union([Permit2ParamsB, HtlcParamsB, CosignParamsB], {
      description: 'Shape chosen by approval_mechanism',
    }),
  },
  { $id: 'IntentCreatedB' },
);

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
  { $id: 'ApprovalRequestB', additionalProperties: false },
);

/** The quote's fields of a swap record (flat, as the spec lists them, and in Hotpot's `additional_info`). */
const QUOTE_FIELDS_B = {
  source_amount_decimals: Type.Integer(),
  source_amount_lots: Lots,
  source_chain: Type.Integer(),
  source_token: Type.String(),
  dest_amount_decimals: Type.Integer(),
  dest_chain: Type.Integer(),
  dest_token: Type.String(),
  min_dest_amount_lots: Lots,
  max_dest_amount_lots: Lots,
};

export const SwapRecordSchemaB = Type.Object(
  {
    intent_id: Uuid,
    status: Status,
    swap_metadata: Type.Object({
      id: Type.String(),
      proxy_address: Type.String(),
      user_deposit_tx: Nullable(Type.String()),
      fulfill_tx: Nullable(Type.String()),
      swap_tx: Nullable(Type.String()),
      refund_tx: Nullable(Type.String()),
      created_at: Type.String({ format: 'date-time' }),
      user_deposited_at: Nullable(Type.String()),
      fulfilled_at: Nullable(Type.String()),
      swapped_at: Nullable(Type.String()),
      refunded_at: Nullable(Type.String()),
      refund_requested_at: Nullable(Type.String()),
    }),
    ...QUOTE_FIELDS_B,
    user_source_address: Type.String(),
    user_dest_address: Type.String(),
    additional_info: Type.Object(QUOTE_FIELDS_B, {
      description: "The quote's fields again, where the Hotpot Go SDK (types.Swap) reads them",
    }),
    settlement: Type.Array(SettlementLegB, {
      description: 'Verified legs, in the order they were proven (an addition to the Hotpot record)',
    }),
  },
  { $id: 'SwapRecordB' },
);

const IntentStatusChangeB = Type.Object({ intent_id: Uuid, status: Status });
const IntentParams = Type.Object({ intent_id: Uuid });

export type ApprovalBodyB = Static<typeof ApprovalRequestB>;

/** Surface B approval body → the domain submission (a mismatched `signed_data` shape is a validation error). */
export function approvalFromB(body: ApprovalBodyB): ApprovalSubmission {
  const d = body.signed_data;
  if (body.type === 'cosign') {
    if (typeof d !== 'object') throw invalidSignedData('an object {transaction, user_address}');
    return { type: 'cosign', transaction: d.transaction, userAddress: d.user_address };
  }
  if (typeof d !== 'string') throw invalidSignedData('a string');
  return body.type === 'permit2' ? { type: 'permit2', signature: d } : { type: 'psbt', psbt: d };
}

function invalidSignedData(expected: string) {
  return Object.assign(new Error(`body/signed_data must be ${expected} for this type`), {
    validation: [
      { instancePath: '/signed_data', message: `must be ${expected} for this type`, keyword: 'type' },
    ],
    validationContext: 'body',
  });
}

export function registerSurfaceB(app: ServiceApp, ctx: SwapContext, health: HealthCheck): void {
  for (const s of [NetworkSchemaB, TokenSchemaB, QuoteSchemaB, IntentCreatedB, SwapRecordSchemaB])
    app.addSchema(s);
  app.register(
    async (instance) => {
      const scope = instance as unknown as ServiceApp;
      scope.addHook('onRequest', apiKeyHook(ctx));
      scope.addHook('preHandler', dropAbsent);
      const common = { tags: [TAG], headers: ApiKeyHeader };

      scope.get(
        '/system/live',
        {
          schema: {
            ...common,
            operationId: 'affiliateLive',
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
            operationId: 'affiliateListNetworks',
            querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }),
            response: { 200: Type.Array(Type.Ref('NetworkB')), ...errors(400, 401) },
          },
        },
        async (req) => ctx.catalog.listNetworks(req.query.token).map(networkB),
      );

      scope.get(
        '/tokens',
        {
          schema: {
            ...common,
            operationId: 'affiliateListTokens',
            description: `limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit}), offset, q, network_id`,
            querystring: Type.Object({
              limit: Type.Optional(Limit),
              offset: Type.Optional(Offset),
              q: Type.Optional(Type.String({ maxLength: 128 })),
              network_id: Type.Optional(NetworkId),
            }),
            response: {
              200: Type.Object({ data: Type.Array(Type.Ref('TokenB')), pagination: Pagination }),
              ...errors(400, 401),
            },
          },
        },
        async (req) => {
          const page = ctx.catalog.listTokens({
            q: req.query.q,
            networkId: req.query.network_id,
            limit: req.query.limit,
            offset: req.query.offset,
          });
          return {
            data: page.items.map(tokenB),
            pagination: { limit: page.limit, offset: page.offset, total: page.total, pages: page.pages },
          };
        },
      );

      scope.post(
        '/quotes/best',
        {
          schema: {
            ...common,
            operationId: 'affiliateBestQuote',
            body: QuoteRequestB,
            response: { 200: Type.Ref('QuoteB'), ...errors(400, 401, 404, 422, 503) },
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
              sourceChain: b.source_chain,
              sourceToken: b.source_token,
              destChain: b.dest_chain,
              destToken: b.dest_token,
              ...(b.amount == null ? {} : { amount: b.amount }),
              ...(b.amount_lots == null ? {} : { amountLots: b.amount_lots }),
              ...(b.slippage_bps == null ? {} : { slippageBps: b.slippage_bps }),
              ...(!b.swap_type ? {} : { swapType: b.swap_type }),
              ...(!b.deposit_type ? {} : { depositType: b.deposit_type }),
              ...(b.retail_user_id == null ? {} : { retailUserId: b.retail_user_id }),
              ...(b.affiliate_fees == null
                ? {}
                : {
                    affiliateFees: Object.fromEntries(
                      Object.entries(b.affiliate_fees).map(([k, f]) => [
                        k,
                        {
                          feeBps: f.fee_bps,
                          ...(f.network_id === undefined ? {} : { networkId: f.network_id }),
                          ...(f.token === undefined ? {} : { token: f.token }),
                        },
                      ]),
                    ),
                  }),
            },
            onResolverError: (id, err) => req.log.warn({ resolver: id, err }, 'resolver quote failed'),
          });
          return quoteB(quote);
        },
      );

      scope.post(
        '/intents',
        {
          schema: {
            ...common,
            operationId: 'affiliateCreateIntent',
            body: IntentRequestB,
            response: { 200: Type.Ref('IntentCreatedB'), ...errors(400, 401, 404, 409, 422, 503) },
          },
        },
        async (req) => {
          const b = req.body;
          const { intent } = await createIntent(ctx, apiKeyOf(req), {
            quoteId: b.quote_id,
            refundAddress: b.refund_address,
            destinationAddress: b.user_destination_address,
            sourceAddress: b.user_source_address,
            sourcePublicKey: b.user_source_public_key || null,
            retailUserId: b.retail_user_id ?? null,
          });
          return intentCreatedB(intent);
        },
      );

      scope.post(
        '/intents/:intent_id/approvals',
        {
          schema: {
            ...common,
            operationId: 'affiliateAddApproval',
            description: 'Permit2 without on-chain allowance answers error code 25',
            params: IntentParams,
            body: ApprovalRequestB,
            response: { 200: IntentStatusChangeB, ...errors(400, 401, 404, 409, 422, 503) },
          },
        },
        async (req) => {
          const intent = await addApproval(ctx, apiKeyOf(req), req.params.intent_id, approvalFromB(req.body));
          return { intent_id: intent.id, status: intent.status };
        },
      );

      scope.get(
        '/intents/:intent_id',
        {
          schema: {
            ...common,
            operationId: 'affiliateGetIntent',
            summary: 'The intent as created (the creation response), e.g. to sign again after a reload',
            params: IntentParams,
            response: { 200: Type.Ref('IntentCreatedB'), ...errors(400, 401, 404) },
          },
        },
        async (req) =>
          intentCreatedB(await loadIntent(ctx.db, req.params.intent_id, { apiKeyId: apiKeyOf(req) })),
      );

      scope.get(
        '/intents/:intent_id/status',
        {
          schema: {
            ...common,
            operationId: 'affiliateIntentStatus',
            params: IntentParams,
            response: { 200: Type.Object({ status: Status }), ...errors(400, 401, 404) },
          },
        },
        async (req) => {
          const i = await expireIfDue(
            ctx.db,
            await loadIntent(ctx.db, req.params.intent_id, { apiKeyId: apiKeyOf(req) }),
            ctx.now(),
          );
          return { status: i.status };
        },
      );

      scope.post(
        '/intents/:intent_id/refund-request',
        {
          schema: {
            ...common,
            operationId: 'affiliateRequestRefund',
            params: IntentParams,
            response: { 200: IntentStatusChangeB, ...errors(400, 401, 404, 409) },
          },
        },
        async (req) => {
          const i = await requestRefund(ctx, apiKeyOf(req), req.params.intent_id);
          return { intent_id: i.id, status: i.status };
        },
      );

      scope.post(
        '/intents/:intent_id/refund-tx',
        {
          schema: {
            ...common,
            operationId: 'affiliateReportRefundTx',
            params: IntentParams,
            body: Type.Object({ tx_hash: TxHash }, { additionalProperties: false }),
            response: { 200: IntentStatusChangeB, ...errors(400, 401, 404, 409, 422, 503) },
          },
        },
        async (req) => {
          const i = await reportRefund(
            ctx,
            { apiKeyId: apiKeyOf(req) },
            req.params.intent_id,
            req.body.tx_hash,
          );
          return { intent_id: i.id, status: i.status };
        },
      );

      scope.get(
        '/swaps/intents/:intent_id',
        {
          schema: {
            ...common,
            operationId: 'affiliateSwapByIntent',
            params: IntentParams,
            response: { 200: Type.Ref('SwapRecordB'), ...errors(400, 401, 404) },
          },
        },
        async (req) => {
          const i = await expireIfDue(
            ctx.db,
            await loadIntent(ctx.db, req.params.intent_id, { apiKeyId: apiKeyOf(req) }),
            ctx.now(),
          );
          return swapRecordB(i);
        },
      );

      scope.get(
        '/swaps/history',
        {
          schema: {
            ...common,
            operationId: 'affiliateSwapHistory',
            description: `Newest first; limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit}), offset, active, wallet, retail_id, status`,
            querystring: Type.Object({
              limit: Type.Optional(Limit),
              offset: Type.Optional(Offset),
              active: ActiveFilter,
              wallet: QueryList('Source or destination addresses (repeated or comma-separated)'),
              retail_id: QueryList('Retail user ids (repeated or comma-separated)'),
              status: Type.Optional(Status),
            }),
            response: {
              200: Type.Object({ data: Type.Array(Type.Ref('SwapRecordB')), pagination: Pagination }),
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
              retailUserIds: listValues(q.retail_id),
            },
            TERMINAL,
          );
          return {
            data: items.map(swapRecordB),
            pagination: { limit, offset, total, pages: Math.ceil(total / limit) },
          };
        },
      );
    },
    { prefix: '/affiliate/v1' },
  );
}
