/** Starts the wallet node as a real process (its build output) with a generated config. */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DevnetInfo } from '@rgbx/devnet';

export const WALLET_NODE_MAIN = resolve(import.meta.dirname, '../../apps/wallet-node/dist/main.js');

export interface NodeProcess {
  url: string;
  proc: ChildProcess;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function writeNodeConfig(
  dir: string,
  info: DevnetInfo,
  extra: Record<string, string | number> = {},
): string {
  // `extra` keys go to [wallet]; keys written `api.x` go to [api].
  const fmt = ([k, v]: [string, string | number]) =>
    `${k.replace(/^api\./, '')} = ${typeof v === 'string' ? `"${v}"` : v}`;
  const api = Object.entries(extra).filter(([k]) => k.startsWith('api.'));
  const wallet = Object.entries(extra).filter(([k]) => !k.startsWith('api.'));
  const rpc = new URL(info.bitcoind.rpc_url);
  const lines = [
    '[api]',
    'listen_address = "127.0.0.1"',
    'port = 0',
    ...api.map(fmt),
    '',
    '[wallet]',
    `data_dir = "${join(dir, 'data')}"`,
    'network = "regtest"',
    `btc_rpc_address = "${rpc.host}"`,
    `btc_rpc_user = "${info.bitcoind.rpc_user}"`,
    `btc_rpc_password = "${info.bitcoind.rpc_password}"`,
    `indexer_address = "${info.electrum}"`,
    `proxy_address = ["${info.proxy}"]`,
    ...wallet.map(fmt),
  ];
  const file = join(dir, 'wallet-node.toml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

export function startNode(configFile: string, timeoutMs = 60_000): Promise<NodeProcess> {
  const proc = spawn(process.execPath, [WALLET_NODE_MAIN, '-c', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`wallet node did not start within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    let started = false;
    proc.once('exit', (code) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`wallet node exited with ${code}: ${err}`));
    });
    proc.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (!line) return;
      clearTimeout(timer);
      if (started) return;
      started = true;
      resolvePromise({
        url: (JSON.parse(line) as { url: string }).url,
        proc,
        stderr: () => err,
        async stop(signal = 'SIGTERM') {
          if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
          proc.kill(signal);
          return exited;
        },
      });
    });
  });
}
