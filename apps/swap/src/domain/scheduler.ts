/**
 * The expiry scheduler: every `swap.scheduler_interval_ms` it expires intents past their deadline
 * (the same `expire` transition requests apply lazily). One pass at a time; errors are logged and
 * the next tick tries again.
 */
import type { SwapContext } from '../context.ts';
import { expireDue } from '../store/intent-store.ts';

export interface Scheduler {
  /** Runs one pass now (tests, shutdown). */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

export function startScheduler(ctx: SwapContext, intervalMs: number): Scheduler {
  let running: Promise<number> | undefined;
  let stopped = false;
  const tick = (): Promise<number> => {
    running ??= expireDue(ctx.db, ctx.now())
      .then((n) => {
        if (n > 0) ctx.logger.info({ expired: n }, 'expired intents past their deadline');
        return n;
      })
      .catch((err: unknown) => {
        ctx.logger.error({ err }, 'expiry pass failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void tick();
  }, intervalMs);
  timer.unref();
  return {
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
