/** Helpers for the RGB end-to-end tests. */
import { connect } from 'node:net';

/** Current tip height reported by an Electrum server (`blockchain.headers.subscribe`). */
export function electrumHeight(url: string, timeoutMs = 5_000): Promise<number> {
  const m = /^tcp:\/\/([^:/]+):(\d+)$/.exec(url);
  if (!m) throw new Error(`not a tcp:// electrum url: ${url}`);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(m[2]), m[1]!);
    let buf = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`electrum ${url} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      socket.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'blockchain.headers.subscribe', params: [] })}\n`,
      );
    });
    socket.on('data', (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      socket.destroy();
      try {
        const msg = JSON.parse(buf.slice(0, nl)) as { result?: { height: number }; error?: unknown };
        if (!msg.result) throw new Error(`electrum error: ${JSON.stringify(msg.error)}`);
        resolve(msg.result.height);
      } catch (err) {
        reject(err);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
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
