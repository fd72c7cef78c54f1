/**
 * The two tenant surfaces, generated from the one list of operations (`operations.ts`): Surface A
 * at the root in camelCase, Surface B under `/affiliate/v1` in Hotpot's snake_case. A surface
 * differs only in its paths, its intent id parameter and its field maps; both share the handlers,
 * the API-key hook, the error replies and the absent-value rule.
 */
import { ApiKeyHeader, Uuid } from '@rgbx/contracts/swap';
import {
  type FastifyReply,
  type FastifyRequest,
  type ServiceApp,
  type TSchema,
  Type,
} from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { errorReplies } from '../errors.ts';
import { apiKeyHook, apiKeyOf } from './auth.ts';
import type { HealthCheck } from './health.ts';
import { OPERATIONS, type Operation, type SurfaceBBinding } from './operations.ts';
import { dropAbsent } from './request.ts';

interface Surface {
  tag: string;
  /** Suffix of this surface's OpenAPI component names. */
  suffix: string;
  prefix: string;
  /** The path parameter naming the intent. */
  idParam: string;
  binding(op: Operation): SurfaceBBinding | undefined;
}

const SURFACES: readonly Surface[] = [
  { tag: 'Surface A', suffix: 'A', prefix: '', idParam: 'id', binding: (op) => op.a },
  {
    tag: 'Surface B (affiliate v1)',
    suffix: 'B',
    prefix: '/affiliate/v1',
    idParam: 'intent_id',
    binding: (op) => op.b,
  },
];

type Convert = (v: never) => unknown;

export function registerSurfaces(app: ServiceApp, ctx: SwapContext, health: HealthCheck): void {
  for (const surface of SURFACES) {
    // A named reply is an OpenAPI component, shared by the routes that return it.
    const components = new Set<string>();
    for (const op of OPERATIONS) {
      const b = surface.binding(op);
      if (!b || !op.component) continue;
      const id = op.component + surface.suffix;
      if (components.has(id)) continue;
      components.add(id);
      app.addSchema({ ...(b.reply?.schema ?? op.reply), $id: id });
    }
    app.register(
      async (instance) => {
        const scope = instance as unknown as ServiceApp;
        scope.addHook('onRequest', apiKeyHook(ctx));
        scope.addHook('preHandler', dropAbsent);
        for (const op of OPERATIONS) {
          const b = surface.binding(op);
          if (b) route(scope, surface, op, b, ctx, health);
        }
      },
      { prefix: surface.prefix },
    );
  }
}

function route(
  scope: ServiceApp,
  surface: Surface,
  op: Operation,
  b: SurfaceBBinding,
  ctx: SwapContext,
  health: HealthCheck,
): void {
  const body = b.body?.schema ?? op.body;
  const query = b.query?.schema ?? op.query;
  const reply = op.component ? Type.Ref(op.component + surface.suffix) : (b.reply?.schema ?? op.reply);
  const decodeBody = (b.body?.fromWire ?? null) as Convert | null;
  const decodeQuery = (b.query?.fromWire ?? null) as Convert | null;
  const encode = (b.reply?.toWire ?? null) as Convert | null;
  const hasId = b.path.includes(`:${surface.idParam}`);
  const status = op.status ?? 200;
  const schema: Record<string, unknown> = {
    tags: [surface.tag],
    headers: ApiKeyHeader,
    operationId: b.operationId,
    ...(op.summary ? { summary: op.summary } : {}),
    ...((b.description ?? op.description) ? { description: b.description ?? op.description } : {}),
    ...(hasId ? { params: Type.Object({ [surface.idParam]: Uuid }) } : {}),
    ...(body ? { body } : {}),
    ...(query ? { querystring: query } : {}),
    response: { [status]: reply as TSchema, ...errorReplies(...op.errors) },
  };
  scope.route({
    method: op.method,
    url: b.path,
    schema,
    handler: async (request: FastifyRequest, res: FastifyReply) => {
      const params = request.params as Record<string, string>;
      const out = await op.handle({
        ctx,
        health,
        apiKeyId: apiKeyOf(request),
        id: hasId ? params[surface.idParam]! : '',
        body: (decodeBody && request.body ? decodeBody(request.body as never) : request.body) as never,
        query: (decodeQuery ? decodeQuery((request.query ?? {}) as never) : request.query) as never,
        request,
        reply: res,
      });
      if (out === res || res.sent) return res;
      res.code(status);
      return encode ? encode(out as never) : out;
    },
  });
}
