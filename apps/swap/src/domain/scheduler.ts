/**
 * The expiry scheduler: every `swap.scheduler_interval_ms` it expires intents past their deadline
 * (the same `expire` transition requests apply lazily). One pass at a time; errors are logged and
 * the next tick tries again. Each tick's lateness is `rgbx_swap_scheduler_lag_seconds`.
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
        ctx.metrics.schedulerPasses.inc({ result: 'ok' });
        if (n > 0) {
          ctx.metrics.schedulerExpired.inc(n);
          ctx.logger.info({ expired: n }, 'expired intents past their deadline');
        }
        return n;
      })
      .catch((err: unknown) => {
        ctx.metrics.schedulerPasses.inc({ result: 'error' });
        ctx.logger.error({ err }, 'expiry pass failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  // Lag: how late each tick fires after its due time (a blocked event loop, an overloaded host).
  let due = performance.now() + intervalMs;
  const timer = setInterval(() => {
    const t = performance.now();
    ctx.metrics.schedulerLag.observe(Math.max(0, t - due) / 1000);
    due += intervalMs;
    if (due <= t) due = t + intervalMs; // more than one interval late: the missed ticks never run
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
