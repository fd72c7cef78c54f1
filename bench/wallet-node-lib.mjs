// Shared by the wallet-node benchmarks (bench/wallet-node.mjs, bench/wallet-node-isolation.mjs): the built node
// as a process, and an SDK client for a wallet's keys.
import { fileURLToPath } from 'node:url';
import { spawnService } from '@rgbx/devnet';
import { WalletNodeClient } from '@rgbx/sdk';

export const WALLET_NODE_MAIN = fileURLToPath(new URL('../apps/wallet-node/dist/main.js', import.meta.url));

/** Starts `node apps/wallet-node/dist/main.js -c file`; resolves once it listens. */
export async function startNode(file) {
  const s = await spawnService('wallet node', [WALLET_NODE_MAIN, '-c', file]);
  return { url: s.value, pid: s.proc.pid, stop: () => s.stop() };
}

/** The SDK client of the wallet whose keys are `k` (rgb-lib's `Keys` shape). */
export const clientFor = (url, k) =>
  new WalletNodeClient(url, {
    xpubVanilla: k.accountXpubVanilla,
    xpubColored: k.accountXpubColored,
    fingerprint: k.masterFingerprint,
  });
