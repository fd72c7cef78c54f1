/**
 * Health: 200 with an empty body while the service accepts requests; 503 with the error envelope
 * (`{code, type, message}`, so `code` and `message` as the spec says) when the database cannot be
 * reached or the service is shutting down.
 */
import type { FastifyReply } from '@rgbx/service-kit';
import { ping } from '@rgbx/store';
import type { SwapContext } from './context.ts';
import { E } from './errors.ts';

export interface HealthCheck {
  /** Throws SERVICE_UNAVAILABLE when the service cannot accept requests. */
  check(): Promise<void>;
  /** Called at shutdown: from then on the check fails. */
  markStopping(): void;
}

export function createHealthCheck(ctx: SwapContext): HealthCheck {
  let stopping = false;
  return {
    async check() {
      if (stopping) throw E.SERVICE_UNAVAILABLE.create('shutting down');
      try {
        await ping(ctx.db);
      } catch (err) {
        throw E.SERVICE_UNAVAILABLE.createWith({ cause: err }, 'database unreachable');
      }
    },
    markStopping() {
      stopping = true;
    },
  };
}

export async function healthReply(health: HealthCheck, reply: FastifyReply): Promise<FastifyReply> {
  await health.check();
  return reply.code(200).send();
}
