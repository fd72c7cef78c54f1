/**
 * Blocks produced by themselves, as on a real chain: every `intervalMs` one Bitcoin block (to the
 * miner wallet) and, when given, one EVM devnode block (`evm_mine`), so confirmations accrue while
 * nothing else happens (`npm start`; `devnet start --block-interval`). The Solana devnode needs none:
 * each transaction lands in its own slot, finalized at once. A tick never overlaps the previous one;
 * a failure is reported once per kind of error, and the next tick tries again.
 */
import type { Devnet } from './devnet.ts';

export interface BlockProducer {
  /** Blocks mined so far (per chain). */
  readonly mined: { bitcoin: number; evm: number };
  stop(): Promise<void>;
}

export function produceBlocks(o: {
  devnet: Pick<Devnet, 'mine'>;
  intervalMs: number;
  /** The EVM devnode's JSON-RPC URL. */
  evmRpcUrl?: string;
  onError?: (err: Error) => void;
}): BlockProducer {
  if (!Number.isFinite(o.intervalMs) || o.intervalMs < 100)
    throw new RangeError(`produceBlocks: intervalMs must be at least 100, got ${o.intervalMs}`);
  const mined = { bitcoin: 0, evm: 0 };
  const reported = new Set<string>();
  const report = (err: Error) => {
    if (reported.has(err.message)) return;
    reported.add(err.message);
    o.onError?.(err);
  };
  let running: Promise<void> | undefined;
  const tick = async () => {
    await o.devnet.mine(1).then(
      () => void mined.bitcoin++,
      (err: Error) => report(err),
    );
    if (o.evmRpcUrl) {
      await fetch(o.evmRpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_mine', params: [] }),
        signal: AbortSignal.timeout(o.intervalMs * 4),
      })
        .then(
          async (res) => {
            const body = (await res.json()) as { error?: { message: string } };
            if (body.error) throw new Error(`evm_mine: ${body.error.message}`);
            mined.evm++;
          },
          (err: Error) => report(err),
        )
        .catch((err: Error) => report(err));
    }
  };
  const timer = setInterval(() => {
    running ??= tick().finally(() => {
      running = undefined;
    });
  }, o.intervalMs);
  timer.unref();
  return {
    mined,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
