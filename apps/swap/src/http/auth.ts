/**
 * Authentication hooks. They run at `onRequest`, before the body is read or validated, so a request
 * without a valid key is answered 401 whatever else is wrong with it.
 * - Surfaces A and B: `X-API-Key` → an API key created with `rgbx-swap keys create`.
 * - Resolver API: `X-API-Key` → a resolver whose `api_key_sha256` matches.
 */
import type { FastifyReply, FastifyRequest } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { authenticateApiKey, authenticateResolver } from '../store/api-keys.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API key hook. */
    apiKeyId?: string;
    /** Set by the resolver key hook. */
    resolverId?: string;
  }
}

function header(request: FastifyRequest): string | undefined {
  const v = request.headers['x-api-key'];
  return typeof v === 'string' ? v : undefined;
}

export function apiKeyHook(ctx: SwapContext) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const id = await authenticateApiKey(ctx.db, header(request));
    if (!id) throw E.UNAUTHORIZED.create();
    request.apiKeyId = id;
  };
}

export function resolverKeyHook(ctx: SwapContext) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const id = authenticateResolver(ctx.config.resolvers, header(request));
    if (!id) throw E.UNAUTHORIZED.create();
    request.resolverId = id;
  };
}

/** The authenticated API key id (the hook guarantees it). */
export function apiKeyOf(request: FastifyRequest): string {
  if (!request.apiKeyId) throw E.UNAUTHORIZED.create();
  return request.apiKeyId;
}

export function resolverOf(request: FastifyRequest): string {
  if (!request.resolverId) throw E.UNAUTHORIZED.create();
  return request.resolverId;
}
