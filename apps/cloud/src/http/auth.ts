/** Bearer-token authentication for `/api/*`: the request's account comes from its token only. */
import type { FastifyReply, FastifyRequest } from '@rgbx/service-kit';
import { authenticate, type Principal } from '../auth/tokens.ts';
import type { CloudDb } from '../db/schema.ts';
import { CloudErrors } from '../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const BEARER = /^Bearer ([^\s]+)$/i;

export function bearerAuth(db: CloudDb) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization;
    const m = typeof header === 'string' ? BEARER.exec(header.trim()) : null;
    const principal = m ? await authenticate(db, m[1]!) : undefined;
    if (!principal) {
      reply.header('www-authenticate', 'Bearer realm="rgbx-cloud"');
      throw CloudErrors.UNAUTHORIZED.create();
    }
    request.principal = principal;
  };
}

/** The authenticated account (routes behind `bearerAuth` only). */
export function accountOf(request: FastifyRequest): string {
  if (!request.principal) throw CloudErrors.UNAUTHORIZED.create();
  return request.principal.accountId;
}
