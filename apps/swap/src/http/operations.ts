/**
 * Every tenant operation of the swap service, declared once: its handler, its Surface A contract
 * (the canonical camelCase schemas of `@rgbx/contracts/swap`) and where each surface serves it.
 * Surface B's binding names its path and the field map that turns its snake_case body, query and
 * reply into Surface A's (`B.*` in the contracts); `routes.ts` turns the list into both surfaces'
 * routes and OpenAPI entries.
 */
import { A, B, PAGE, type Static } from '@rgbx/contracts/swap';
import { type FastifyReply, type FastifyRequest, type TSchema, Type } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { createAffiliate, listAffiliates } from '../domain/affiliates.ts';
import { type ApprovalSubmission, addApproval } from '../domain/approvals.ts';
import { reportLateDeposit, reportRefund, requestRefund } from '../domain/execution.ts';
import { createIntent } from '../domain/intents.ts';
import { TERMINAL } from '../domain/lifecycle.ts';
import { createQuote } from '../domain/quotes.ts';
import { E } from '../errors.ts';
import { errorOutcome } from '../metrics.ts';
import { expireIfDue, listIntents, loadIntent } from '../store/intent-store.ts';
import { type HealthCheck, healthReply } from './health.ts';
import { affiliateA, intentCreatedA, networkA, quoteA, swapRecordA, tokenA } from './views.ts';

/** What a handler gets: the request decoded to Surface A's names. */
export interface Call<Body, Query> {
  ctx: SwapContext;
  health: HealthCheck;
  apiKeyId: string;
  /** The intent id of `/intents/:id…` paths. */
  id: string;
  body: Body;
  query: Query;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** Where Surface B serves an operation, and how its wire maps to Surface A's. */
export interface SurfaceBBinding {
  path: string;
  operationId: string;
  description?: string;
  body?: { schema: TSchema; fromWire(b: never): unknown };
  query?: { schema: TSchema; fromWire(b: never): unknown };
  reply?: { schema: TSchema; toWire(a: never): unknown };
}

export interface Operation {
  method: 'GET' | 'POST';
  summary?: string;
  description?: string;
  /** HTTP statuses of the documented error replies. */
  errors: readonly number[];
  /** Success status (default 200). */
  status?: 200 | 201;
  /** Surface A's shapes; `reply` is what the handler returns. */
  body?: TSchema;
  query?: TSchema;
  reply: TSchema;
  /** Name of the reply in the OpenAPI components, suffixed per surface (`QuoteA`, `QuoteB`). */
  component?: string;
  /** Surface A's binding; a `body.fromWire` decodes its body for the handler (as Surface B's does). */
  a?: SurfaceBBinding;
  b?: SurfaceBBinding;
  handle(call: Call<never, never>): Promise<unknown>;
}

/**
 * Declares an operation with its handler typed by its Surface A schemas. A body both surfaces
 * decode themselves (`a.body.fromWire`, `b.body.fromWire`) reaches the handler as `D`, the domain's
 * input, each surface mapped once.
 */
function op<R extends TSchema, Bd extends TSchema = TSchema, Q extends TSchema = TSchema, D = Static<Bd>>(o: {
  method: 'GET' | 'POST';
  summary?: string;
  description?: string;
  errors: readonly number[];
  status?: 200 | 201;
  body?: Bd;
  query?: Q;
  reply: R;
  component?: string;
  a?: { path: string; operationId: string; body?: { schema: TSchema; fromWire(b: Static<Bd>): D } };
  b?: {
    path: string;
    operationId: string;
    description?: string;
    body?: { schema: TSchema; fromWire(b: never): D };
    query?: { schema: TSchema; fromWire(b: never): Static<Q> };
    reply?: { schema: TSchema; toWire(a: Static<R>): unknown };
  };
  handle(call: Call<D, Static<Q>>): Promise<Static<R> | FastifyReply>;
}): Operation {
  return o as unknown as Operation;
}

/** Surface B's approval body → the domain submission (a `signed_data` of the wrong shape is a validation error). */
function approvalFromB(body: B.ApprovalRequestB): ApprovalSubmission {
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

/** Surface A's approval body → the domain submission (APPROVAL_PAYLOAD_COUNT unless exactly one). */
export function approvalSubmission(body: A.ApprovalRequest): ApprovalSubmission {
  const present = [body.permit2, body.psbt, body.cosign].filter((v) => v !== undefined);
  if (present.length !== 1) throw E.APPROVAL_PAYLOAD_COUNT.create();
  if (body.permit2 !== undefined) return { type: 'permit2', signature: body.permit2 };
  if (body.psbt !== undefined) return { type: 'psbt', psbt: body.psbt };
  return { type: 'cosign', transaction: body.cosign!.transaction, userAddress: body.cosign!.userAddress };
}

/** An intent of this tenant, expired first if its deadline passed. */
async function currentIntent(c: Call<unknown, unknown>) {
  return expireIfDue(c.ctx.db, await loadIntent(c.ctx.db, c.id, { apiKeyId: c.apiKeyId }), c.ctx.now());
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

/** The fields that are set: a domain input takes its defaults from absent keys, not `undefined` or `null`. */
function defined<T extends Record<string, unknown>>(
  o: T,
): { [K in keyof T]?: Exclude<T[K], undefined | null> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as {
    [K in keyof T]?: Exclude<T[K], undefined | null>;
  };
}

const IntentStatusReply = (i: { id: string; status: A.SwapRecord['status'] }) => ({
  intentId: i.id,
  status: i.status,
});

export const OPERATIONS: readonly Operation[] = [
  op({
    method: 'GET',
    summary: 'Health check: 200 with an empty body, or 503 {code, message}',
    errors: [401, 503],
    reply: Type.Null({ description: 'Empty body' }),
    a: { path: '/healthcheck', operationId: 'healthcheck' },
    b: { path: '/system/live', operationId: 'affiliateLive' },
    handle: (c) => healthReply(c.health, c.reply),
  }),
  op({
    method: 'GET',
    errors: [400, 401],
    query: A.NetworksQuery,
    reply: A.NetworkList,
    a: { path: '/networks', operationId: 'listNetworks' },
    b: {
      path: '/networks',
      operationId: 'affiliateListNetworks',
      query: B.NetworksQueryB,
      reply: { schema: B.NetworkListB, toWire: B.networkListB },
    },
    handle: async (c) => ({ networks: c.ctx.catalog.listNetworks(c.query.token).map(networkA) }),
  }),
  op({
    method: 'GET',
    description: `Paginated by limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit}) and offset`,
    errors: [400, 401],
    query: A.TokensQuery,
    reply: A.TokenPage,
    a: { path: '/tokens', operationId: 'listTokens' },
    b: { path: '/tokens', operationId: 'affiliateListTokens', query: B.TokensQueryB, reply: B.TokenPageB },
    handle: async (c) => {
      const page = c.ctx.catalog.listTokens({
        q: c.query.q,
        networkId: c.query['network-id'],
        limit: c.query.limit,
        offset: c.query.offset,
      });
      return {
        tokens: page.items.map(tokenA),
        pagination: { limit: page.limit, offset: page.offset, total: page.total, pages: page.pages },
      };
    },
  }),
  op({
    method: 'POST',
    errors: [400, 401, 404, 422, 503],
    body: A.QuoteRequest,
    reply: A.Quote,
    component: 'Quote',
    a: { path: '/quote', operationId: 'createQuote' },
    b: { path: '/quotes/best', operationId: 'affiliateBestQuote', body: B.QuoteRequestB, reply: B.QuoteB },
    handle: async (c) => {
      const b = c.body;
      const m = c.ctx.metrics;
      let quote: Awaited<ReturnType<typeof createQuote>>;
      try {
        quote = await createQuote({
          db: c.ctx.db,
          catalog: c.ctx.catalog,
          resolvers: c.ctx.resolvers,
          settings: quoteSettings(c.ctx),
          now: c.ctx.now,
          apiKeyId: c.apiKeyId,
          input: {
            sourceChain: b.sourceChain,
            sourceToken: b.sourceToken,
            destChain: b.destChain,
            destToken: b.destToken,
            ...defined({
              amount: b.amount,
              amountLots: b.amountLots,
              slippageBps: b.slippageBps,
              // `""` was dropped as absent before the handler (request.ts); the types cannot know.
              swapType: b.swapType || undefined,
              depositType: b.depositType || undefined,
              retailUserId: b.retailUserId,
              affiliateFees: b.affiliateFees,
            }),
          },
          onResolverError: (id, err) => c.request.log.warn({ resolver: id, err }, 'resolver quote failed'),
          onResolverDone: m.observeRfq,
        });
      } catch (err) {
        m.quotes.inc({ outcome: errorOutcome(err) });
        throw err;
      }
      m.quotes.inc({ outcome: 'ok' });
      return quoteA(quote);
    },
  }),
  op({
    method: 'POST',
    errors: [400, 401, 404, 409, 422, 503],
    body: A.IntentRequest,
    reply: A.IntentCreated,
    component: 'IntentCreated',
    a: { path: '/intents', operationId: 'createIntent' },
    b: {
      path: '/intents',
      operationId: 'affiliateCreateIntent',
      body: B.IntentRequestB,
      reply: B.IntentCreatedB,
    },
    handle: async (c) => {
      const b = c.body;
      const { intent } = await createIntent(c.ctx, c.apiKeyId, {
        quoteId: b.quoteId,
        refundAddress: b.refundAddress,
        destinationAddress: b.destinationAddress,
        sourceAddress: b.sourceAddress,
        sourcePublicKey: b.sourcePublicKey || null,
        retailUserId: b.retailUserId ?? null,
      });
      return intentCreatedA(intent);
    },
  }),
  op({
    method: 'POST',
    errors: [400, 401, 404, 409, 422, 503],
    body: A.ApprovalRequest,
    reply: A.IntentStatusChange,
    // Each surface decodes its own body to the domain's submission (B is not mapped through A).
    a: {
      path: '/intents/:id/approvals',
      operationId: 'addApproval',
      body: { schema: A.ApprovalRequest, fromWire: approvalSubmission },
    },
    b: {
      path: '/intents/:intent_id/approvals',
      operationId: 'affiliateAddApproval',
      description: 'Permit2 without on-chain allowance answers error code 25',
      body: { schema: B.ApprovalRequestB, fromWire: approvalFromB },
      reply: B.IntentStatusChangeB,
    },
    handle: async (c) => IntentStatusReply(await addApproval(c.ctx, c.apiKeyId, c.id, c.body)),
  }),
  op({
    method: 'GET',
    summary: 'The intent as created (the creation response), e.g. to sign again after a reload',
    errors: [400, 401, 404],
    reply: A.IntentCreated,
    component: 'IntentCreated',
    b: { path: '/intents/:intent_id', operationId: 'affiliateGetIntent', reply: B.IntentCreatedB },
    handle: async (c) => intentCreatedA(await loadIntent(c.ctx.db, c.id, { apiKeyId: c.apiKeyId })),
  }),
  op({
    method: 'GET',
    errors: [400, 401, 404],
    reply: A.IntentStatusOnly,
    a: { path: '/intents/:id/status', operationId: 'getIntentStatus' },
    b: { path: '/intents/:intent_id/status', operationId: 'affiliateIntentStatus' },
    handle: async (c) => ({ status: (await currentIntent(c)).status }),
  }),
  op({
    method: 'POST',
    summary: 'Request a refund of an expired intent whose funds were deposited',
    errors: [400, 401, 404, 409],
    reply: A.IntentStatusChange,
    a: { path: '/intents/:id/refund-request', operationId: 'requestRefund' },
    b: {
      path: '/intents/:intent_id/refund-request',
      operationId: 'affiliateRequestRefund',
      reply: B.IntentStatusChangeB,
    },
    handle: async (c) => IntentStatusReply(await requestRefund(c.ctx, c.apiKeyId, c.id)),
  }),
  op({
    method: 'POST',
    summary: "Report the user's refund transaction (Bitcoin: the HTLC refund-leaf spend), checked on chain",
    errors: [400, 401, 404, 409, 422, 503],
    body: A.RefundTxRequest,
    reply: A.IntentStatusChange,
    a: { path: '/intents/:id/refund-tx', operationId: 'reportRefundTx' },
    b: {
      path: '/intents/:intent_id/refund-tx',
      operationId: 'affiliateReportRefundTx',
      body: B.RefundTxRequestB,
      reply: B.IntentStatusChangeB,
    },
    handle: async (c) =>
      IntentStatusReply(await reportRefund(c.ctx, { apiKeyId: c.apiKeyId }, c.id, c.body.txHash)),
  }),
  op({
    method: 'POST',
    summary:
      "Report the user's deposit of an intent that ended without one recorded (Declined, Expired, RefundRequested): the resolver used the approval before accepting or declining, or never reported it. Checked on chain (the approved funding, escrow lock or co-signed transaction); the status does not change, the refund path opens",
    errors: [400, 401, 404, 409, 422, 503],
    body: A.RefundTxRequest,
    reply: A.IntentStatusChange,
    a: { path: '/intents/:id/deposit-tx', operationId: 'reportDepositTx' },
    b: {
      path: '/intents/:intent_id/deposit-tx',
      operationId: 'affiliateReportDepositTx',
      body: B.RefundTxRequestB,
      reply: B.IntentStatusChangeB,
    },
    handle: async (c) => IntentStatusReply(await reportLateDeposit(c.ctx, c.apiKeyId, c.id, c.body.txHash)),
  }),
  op({
    method: 'POST',
    errors: [400, 401, 409, 422],
    status: 201,
    body: A.AffiliateRequest,
    reply: A.Affiliate,
    a: { path: '/affiliates', operationId: 'createAffiliate' },
    handle: async (c) => affiliateA(await createAffiliate(c.ctx, c.apiKeyId, c.body), false),
  }),
  op({
    method: 'GET',
    errors: [401],
    reply: A.AffiliateList,
    a: { path: '/affiliates', operationId: 'listAffiliates' },
    handle: async (c) => ({
      affiliates: (await listAffiliates(c.ctx, c.apiKeyId)).map((a) => affiliateA(a, true)),
    }),
  }),
  op({
    method: 'GET',
    description: `Newest first; limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit}), offset, and filters`,
    errors: [400, 401],
    query: A.SwapsQuery,
    reply: A.SwapPage,
    a: { path: '/swaps', operationId: 'listSwaps' },
    b: {
      path: '/swaps/history',
      operationId: 'affiliateSwapHistory',
      query: B.SwapsQueryB,
      reply: B.SwapPageB,
    },
    handle: async (c) => {
      const q = c.query;
      const limit = q.limit ?? PAGE.defaultLimit;
      const offset = q.offset ?? 0;
      const { items, total } = await listIntents(
        c.ctx.db,
        c.apiKeyId,
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
  }),
  op({
    method: 'GET',
    errors: [400, 401, 404],
    reply: A.SwapRecord,
    component: 'SwapRecord',
    a: { path: '/swaps/:id', operationId: 'getSwap' },
    b: { path: '/swaps/intents/:intent_id', operationId: 'affiliateSwapByIntent', reply: B.SwapRecordB },
    handle: async (c) => swapRecordA(await currentIntent(c)),
  }),
];

/** The values of a list query parameter, comma lists split, empty items dropped, at most 20. */
export function listValues(v: readonly string[] | undefined): string[] | undefined {
  const out = (v ?? [])
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
  if (out.length > 20) return out.slice(0, 20);
  return out.length > 0 ? out : undefined;
}
