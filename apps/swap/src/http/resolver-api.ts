/**
 * The resolver-facing API, `/resolver/v1`, snake_case, behind the resolver's own key (`X-API-Key`
 * checked against `resolvers[].api_key_sha256`). A resolver sees only the intents it quoted.
 */
import { type ServiceApp, Type } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { PAGE } from '../domain/catalog.ts';
import {
  acceptIntent,
  declineIntent,
  releaseSecret,
  reportLeg,
  reportRefund,
  resolverExecutionData,
} from '../domain/execution.ts';
import { type IntentStatus, isStatus } from '../domain/lifecycle.ts';
import { ErrorRef } from '../errors.ts';
import { expireIfDue, type Intent, loadIntent, toIntent } from '../store/intent-store.ts';
import { resolverKeyHook, resolverOf } from './auth.ts';
import { swapRecordB } from './presenters.ts';
import {
  ApiKeyHeader,
  JsonObject,
  Limit,
  MechanismB,
  Offset,
  Pagination,
  Status,
  TxHash,
  Uuid,
} from './schemas-common.ts';

const TAG = 'Resolver API';
// Error replies are documented per status; typed as nothing so they do not widen the handlers' return types.
const errors = (...codes: number[]): Record<never, never> =>
  Object.fromEntries(codes.map((c) => [c, ErrorRef]));

export const ResolverIntentSchema = Type.Object(
  {
    intent: Type.Ref('SwapRecordB'),
    approval_mechanism: MechanismB,
    deadline_secs: Type.Integer(),
    secret_hash: Type.String(),
    refund_address: Type.String(),
    execution: Type.Union([JsonObject, Type.Null()], {
      description:
        'After approval: htlc → funding tx and HTLC scripts; permit2 → signature and typed data; cosign → user-signed transaction',
    }),
  },
  { $id: 'ResolverIntent' },
);

const IntentParams = Type.Object({ intent_id: Uuid });
const TxBody = Type.Object({ tx_hash: TxHash }, { additionalProperties: false });
const StatusChange = Type.Object({ intent_id: Uuid, status: Status });

function resolverView(i: Intent) {
  return {
    intent: swapRecordB(i),
    approval_mechanism: i.mechanism,
    deadline_secs: i.deadline,
    secret_hash: i.secretHash,
    refund_address: i.refundAddress,
    execution: resolverExecutionData(i),
  };
}

export function registerResolverApi(app: ServiceApp, ctx: SwapContext): void {
  app.addSchema(ResolverIntentSchema);
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
        body: typeof TxBody | ReturnType<typeof Type.Object> = Type.Object(
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
            querystring: Type.Object({
              status: Type.Optional(Status),
              limit: Type.Optional(Limit),
              offset: Type.Optional(Offset),
            }),
            response: {
              200: Type.Object({ data: Type.Array(Type.Ref('ResolverIntent')), pagination: Pagination }),
              ...errors(400, 401),
            },
          },
        },
        async (req) => {
          const resolverId = resolverOf(req);
          const limit = req.query.limit ?? PAGE.defaultLimit;
          const offset = req.query.offset ?? 0;
          let q = ctx.db.selectFrom('intents').where('resolver_id', '=', resolverId);
          const status = req.query.status;
          if (status && isStatus(status)) q = q.where('status', '=', status as IntentStatus);
          const [rows, count] = await Promise.all([
            q.selectAll().orderBy('deadline').orderBy('id').limit(limit).offset(offset).execute(),
            q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
          ]);
          const total = Number(count.n);
          return {
            data: rows.map((r) => resolverView(toIntent(r))),
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
            response: { 200: Type.Ref('ResolverIntent'), ...errors(400, 401, 404) },
          },
        },
        async (req) => {
          const i = await expireIfDue(
            ctx.db,
            await loadIntent(ctx.db, req.params.intent_id, { resolverId: resolverOf(req) }),
            ctx.now(),
          );
          return resolverView(i);
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
        'ApprovalAdded/Accepted → Declined',
        (r, id, b) => declineIntent(ctx, r, id, b.reason),
        Type.Object(
          { reason: Type.Optional(Type.String({ maxLength: 500 })) },
          { additionalProperties: false },
        ),
      );
      action(
        '/intents/:intent_id/deposit',
        'resolverDeposit',
        'Accepted → UserDeposited (checked on chain)',
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
              200: Type.Object({ intent_id: Uuid, secret_hash: Type.String(), preimage: Type.String() }),
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
