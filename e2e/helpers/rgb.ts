/** Helpers for the RGB end-to-end tests. */
import { ElectrumConnection } from '@rgbx/chains/btc';

/** Current tip height reported by an Electrum server (`blockchain.headers.subscribe`). */
export async function electrumHeight(url: string, timeoutMs = 5_000): Promise<number> {
  const c = await ElectrumConnection.connect(url, { timeoutMs, clientName: 'rgbx-e2e' });
  try {
    return (await c.headersSubscribe()).height;
  } finally {
    c.close();
  }
}

/** Poll `check` until it returns true (or throw with `what` after `timeoutMs`). */
export async function eventually(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface MinerLike {
  info: { electrum: string };
  mine(blocks: number, address?: string): Promise<string[]>;
  rpc<T>(method: string, params?: unknown[]): Promise<T>;
}

/**
 * Checks that the Electrum server already serves bitcoind's current tip: it syncs before answering
 * (read-after-write), so no waiting or polling is needed after mining.
 */
export async function waitForIndexer(devnet: MinerLike): Promise<number> {
  const height = await devnet.rpc<number>('getblockcount');
  const served = await electrumHeight(devnet.info.electrum);
  if (served !== height)
    throw new Error(`electrum serves height ${served} right after bitcoind reached ${height}`);
  return height;
}

/** Mine `blocks` blocks and wait until the Electrum server has indexed them. */
export async function mineAndSync(devnet: MinerLike, blocks = 1): Promise<number> {
  await devnet.mine(blocks);
  return waitForIndexer(devnet);
}
