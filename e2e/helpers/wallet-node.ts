/** Starts the wallet node as a real process (its build output) with a generated config. */
import type { ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Devnet, type DevnetInfo, spawnService, walletNodeToml } from '@rgbx/devnet';
import { closeDefaultHost, type Keys } from '@rgbx/rgb';
import { WalletNodeClient } from '@rgbx/sdk';

export const WALLET_NODE_MAIN = resolve(import.meta.dirname, '../../apps/wallet-node/dist/main.js');

export interface NodeProcess {
  url: string;
  proc: ChildProcess;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Writes `<dir>/wallet-node.toml` for the devnet; `extra` keys go to [wallet], keys written `api.x` to [api]. */
export function writeNodeConfig(
  dir: string,
  info: DevnetInfo,
  extra: Record<string, string | number | boolean | string[]> = {},
): string {
  const api = Object.fromEntries(
    Object.entries(extra)
      .filter(([k]) => k.startsWith('api.'))
      .map(([k, v]) => [k.slice(4), v]),
  );
  const wallet = Object.fromEntries(Object.entries(extra).filter(([k]) => !k.startsWith('api.')));
  const file = join(dir, 'wallet-node.toml');
  writeFileSync(file, walletNodeToml(info, { dataDir: join(dir, 'data'), api, wallet }));
  return file;
}

export async function startNode(configFile: string, timeoutMs = 60_000): Promise<NodeProcess> {
  const s = await spawnService('wallet node', [WALLET_NODE_MAIN, '-c', configFile], { timeoutMs });
  return { url: s.value, proc: s.proc, stderr: s.stderr, stop: s.stop };
}

/** The SDK client of wallet `k` on the node at `url`. */
export function walletClient(url: string, k: Keys): WalletNodeClient {
  return new WalletNodeClient(url, {
    xpubVanilla: k.accountXpubVanilla,
    xpubColored: k.accountXpubColored,
    fingerprint: k.masterFingerprint,
  });
}

/**
 * The end of a wallet-node e2e file: the nodes, then what else the test started (`also`), the test's own
 * rgb-lib host, the devnet and the temp dir, each even if an earlier step failed.
 */
export async function stopWalletNodeSuite(parts: {
  nodes: (NodeProcess | undefined)[];
  devnet: Devnet | undefined;
  root: string | undefined;
  also?: () => unknown;
}): Promise<void> {
  try {
    for (const n of parts.nodes) await n?.stop();
  } finally {
    try {
      await parts.also?.();
    } finally {
      await closeDefaultHost();
      await parts.devnet?.stop();
      if (parts.root) rmSync(parts.root, { recursive: true, force: true });
    }
  }
}
