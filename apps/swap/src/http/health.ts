/**
 * Health: 200 with an empty body while the service accepts requests; 503 with the error envelope
 * (`{code, type, message}`, so `code` and `message` as the spec says) when the database, the
 * Bitcoin indexer or any configured network's node cannot be reached (settlement cannot be verified
 * without them), or the service is shutting down. Chain reads are bounded (3 s) and their result is
 * reused for 2 s, so a polling load balancer does not turn into load on the nodes.
 */
import type { FastifyReply } from '@rgbx/service-kit';
import { ping } from '@rgbx/store';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { networkTip } from '../settlement/verify.ts';

const CHAIN_TIMEOUT_MS = 3000;
const CHAIN_CACHE_MS = 2000;

/** Reads every configured network's tip; resolves with the networks that failed (empty when all answer). */
async function unreachableNetworks(ctx: SwapContext): Promise<{ network: number; reason: string }[]> {
  const failed: { network: number; reason: string }[] = [];
  await Promise.all(
    ctx.config.networks.map(async (n) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          networkTip(ctx, n),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no answer within ${CHAIN_TIMEOUT_MS} ms`)),
              CHAIN_TIMEOUT_MS,
            );
          }),
        ]);
      } catch (err) {
        const d = (err as { details?: { reason?: string } }).details;
        failed.push({ network: n.id, reason: d?.reason ?? (err as Error).message });
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return failed.sort((a, b) => a.network - b.network);
}

export interface HealthCheck {
  /** Throws SERVICE_UNAVAILABLE when the service cannot accept requests. */
  check(): Promise<void>;
  /** Called at shutdown: from then on the check fails. */
  markStopping(): void;
}

export function createHealthCheck(ctx: SwapContext): HealthCheck {
  let stopping = false;
  let chains: { at: number; result: Promise<{ network: number; reason: string }[]> } | undefined;
  return {
    async check() {
      if (stopping) throw E.SERVICE_UNAVAILABLE.create('shutting down');
      try {
        await ping(ctx.db);
      } catch (err) {
        throw E.SERVICE_UNAVAILABLE.createWith({ cause: err }, 'database unreachable');
      }
      const now = Date.now();
      if (!chains || now - chains.at > CHAIN_CACHE_MS) chains = { at: now, result: unreachableNetworks(ctx) };
      const failed = await chains.result;
      if (failed.length > 0) {
        throw E.SERVICE_UNAVAILABLE.createWith(
          { details: { unreachable: failed } },
          `cannot read network${failed.length > 1 ? 's' : ''} ${failed.map((f) => f.network).join(', ')}`,
        );
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
