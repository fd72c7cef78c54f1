/**
 * The resolver-facing API, `/resolver/v1`, snake_case, behind the resolver's own key (`X-API-Key`
 * checked against `resolvers[].api_key_sha256`). A resolver sees only the intents it quoted.
 */
import { ApiKeyHeader, B, PAGE, Resolver, Uuid } from '@rgbx/contracts/swap';
import { type ServiceApp, Type } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import {
  acceptIntent,
  declineIntent,
  fulfilCommitmentOf,
  releaseSecret,
  reportLeg,
  reportRefund,
  resolverExecutionData,
} from '../domain/execution.ts';
import { type IntentStatus, isStatus } from '../domain/lifecycle.ts';
import { errorReplies as errors } from '../errors.ts';
import { expireIfDue, type Intent, listResolverIntents, loadIntent } from '../store/intent-store.ts';
import { resolverKeyHook, resolverOf } from './auth.ts';
import { swapRecordA } from './views.ts';

const TAG = 'Resolver API';

const IntentParams = Type.Object({ intent_id: Uuid });
const TxBody = Resolver.ResolverTxRequest;
const StatusChange = Resolver.ResolverStatusChange;

function resolverView(ctx: SwapContext, i: Intent): Resolver.ResolverIntent {
  return {
    intent: B.SwapRecordB.toWire(swapRecordA(i)),
    approval_mechanism: i.mechanism,
    deadline_secs: i.deadline,
    secret_hash: i.secretHash,
    refund_address: i.refundAddress,
    execution: resolverExecutionData(ctx, i),
    fulfil_commitment: fulfilCommitmentOf(ctx, i),
  };
}

export function registerResolverApi(app: ServiceApp, ctx: SwapContext): void {
  app.register(
    async (instance) => {
      const scope = instance as unknown as ServiceApp;
      scope.addHook('onRequest', resolverKeyHook(ctx));
      const common = { tags: [TAG], headers: ApiKeyHeader };
      const action = (
        path: string,
        operationId: string,
        summary: string,
        run: (resolverId: string, id: string, body: { tx_hash?: string; reason?: string }) => Promise<Intent>,
        body: typeof TxBody | typeof Resolver.ResolverDeclineRequest = Type.Object(
          {},
          { additionalProperties: false },
        ),
      ) =>
        scope.post(
          path,
          {
            schema: {
              ...common,
              operationId,
              summary,
              params: IntentParams,
              body,
              response: { 200: StatusChange, ...errors(400, 401, 404, 409, 422, 503) },
            },
          },
          async (req) => {
            const params = req.params as { intent_id: string };
            const i = await run(
              resolverOf(req),
              params.intent_id,
              (req.body ?? {}) as { tx_hash?: string; reason?: string },
            );
            return { intent_id: i.id, status: i.status };
          },
        );

      scope.get(
        '/intents',
        {
          schema: {
            ...common,
            operationId: 'resolverListIntents',
            description: `Intents this resolver quoted, oldest deadline first; limit (default ${PAGE.defaultLimit}, max ${PAGE.maxLimit})`,
            querystring: Resolver.ResolverIntentsQuery,
            response: {
              200: Resolver.ResolverIntentPage,
              ...errors(400, 401),
            },
          },
        },
        async (req) => {
          const resolverId = resolverOf(req);
          const limit = req.query.limit ?? PAGE.defaultLimit;
          const offset = req.query.offset ?? 0;
          const status = req.query.status;
          const { intents, total } = await listResolverIntents(ctx.db, resolverId, {
            ...(status && isStatus(status) ? { status: status as IntentStatus } : {}),
            limit,
            offset,
          });
          return {
            data: intents.map((i) => resolverView(ctx, i)),
            pagination: { limit, offset, total, pages: Math.ceil(total / limit) },
          };
        },
      );

      scope.get(
        '/intents/:intent_id',
        {
          schema: {
            ...common,
            operationId: 'resolverGetIntent',
            params: IntentParams,
            response: { 200: Resolver.ResolverIntent, ...errors(400, 401, 404) },
          },
        },
        async (req) => {
          const i = await expireIfDue(
            ctx.db,
            await loadIntent(ctx.db, req.params.intent_id, { resolverId: resolverOf(req) }),
            ctx.now(),
          );
          return resolverView(ctx, i);
        },
      );

      action(
        '/intents/:intent_id/accept',
        'resolverAccept',
        'ApprovalAdded → Accepted (htlc: broadcasts the funding tx)',
        (r, id) => acceptIntent(ctx, r, id),
      );
      action(
        '/intents/:intent_id/decline',
        'resolverDecline',
        'ApprovalAdded → Declined (before accepting; an accepted intent not filled expires into the refund path)',
        (r, id, b) => declineIntent(ctx, r, id, b.reason),
        Resolver.ResolverDeclineRequest,
      );
      action(
        '/intents/:intent_id/deposit',
        'resolverDeposit',
        'Accepted → UserDeposited (checked on chain); on an intent that ended without a deposit (Declined, Expired, RefundRequested), records it for the refund path (record_deposit; status unchanged)',
        (r, id, b) => reportLeg(ctx, r, id, 'deposit', b.tx_hash!),
        TxBody,
      );
      action(
        '/intents/:intent_id/fulfil',
        'resolverFulfil',
        'UserDeposited → Fulfilled (destination tx, checked on chain)',
        (r, id, b) => reportLeg(ctx, r, id, 'fulfil', b.tx_hash!),
        TxBody,
      );
      action(
        '/intents/:intent_id/claim',
        'resolverClaim',
        'Fulfilled: records the source claim (Bitcoin: HTLC claim leaf)',
        (r, id, b) => reportLeg(ctx, r, id, 'claim', b.tx_hash!),
        TxBody,
      );
      action(
        '/intents/:intent_id/refund',
        'resolverRefund',
        'Expired/RefundRequested → Refunded (checked on chain)',
        (r, id, b) => reportRefund(ctx, { resolverId: r }, id, b.tx_hash!),
        TxBody,
      );

      scope.get(
        '/intents/:intent_id/secret',
        {
          schema: {
            ...common,
            operationId: 'resolverSecret',
            summary: 'The preimage: only for the accepting resolver, only once the intent is Fulfilled',
            params: IntentParams,
            response: {
              200: Resolver.ResolverSecret,
              ...errors(400, 401, 404, 409),
            },
          },
        },
        async (req) => {
          const { intent, preimage } = await releaseSecret(ctx, resolverOf(req), req.params.intent_id);
          req.log.info({ intent: intent.id }, 'preimage released to the resolver');
          return { intent_id: intent.id, secret_hash: intent.secretHash, preimage };
        },
      );
    },
    { prefix: '/resolver/v1' },
  );
}
