import { type ChildProcess, spawn } from 'node:child_process';
import { writeToml } from '@rgbx/service-kit';
import type { DevnetInfo } from './devnet.ts';

export interface ServiceProcess<T> {
  /** What `pick` took from the service's first matching stdout line. */
  value: T;
  proc: ChildProcess;
  /** The last 16 KiB of stderr. */
  stderr(): string;
  /** SIGTERM (or `signal`) and wait for the exit code; no-op when it already exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface SpawnServiceOptions<T> {
  env?: NodeJS.ProcessEnv;
  /** Picks the ready value from a stdout JSON line; default: `url` of `{"event":"listening","url"}`. */
  pick?: (line: Record<string, unknown>) => T | undefined | false | '';
  timeoutMs?: number;
  /** Called if the process exits after it became ready. */
  onExit?: (code: number | null, stderr: string) => void;
}

const listeningUrl = (j: Record<string, unknown>) =>
  j.event === 'listening' && typeof j.url === 'string' ? j.url : undefined;

/**
 * Starts `node <args>` and resolves once it prints its ready line on stdout (every service of ours prints
 * `{"event":"listening","url"}`); rejects with its stderr if it exits or times out first.
 *
 * @example
 * const node = await spawnService('wallet node', ['apps/wallet-node/dist/main.js', '-c', file]);
 * await fetch(`${node.value}/healthcheck`);
 * await node.stop();
 */
export function spawnService<T = string>(
  name: string,
  args: string[],
  opts: SpawnServiceOptions<T> = {},
): Promise<ServiceProcess<T>> {
  const pick = (opts.pick ?? listeningUrl) as (j: Record<string, unknown>) => T | undefined | false | '';
  const proc = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  let out = '';
  let err = '';
  let ready = false;
  proc.stderr!.on('data', (d) => {
    err = (err + d).slice(-16_384);
  });
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${opts.timeoutMs ?? 60_000} ms:\n${err}`));
    }, opts.timeoutMs ?? 60_000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`${name} exited with ${code}:\n${err}`));
      else opts.onExit?.(code, err);
    });
    proc.stdout!.on('data', (d) => {
      if (ready) return;
      out += d;
      const lines = out.split('\n');
      out = lines.pop() ?? '';
      for (const line of lines) {
        let value: T | undefined | false | '';
        try {
          value = pick(JSON.parse(line) as Record<string, unknown>);
        } catch {
          continue;
        }
        if (!value) continue;
        ready = true;
        clearTimeout(timer);
        resolve({
          value,
          proc,
          stderr: () => err,
          async stop(signal = 'SIGTERM') {
            if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
            proc.kill(signal);
            return exited;
          },
        });
        return;
      }
    });
  });
}

type TomlValue = string | number | boolean | string[];

/**
 * A wallet-node config (wallet-node-service.md TOML) pointing at this devnet: bitcoind RPC, Electrum and the
 * RGB proxy. `api`, `wallet` and `metrics` add or override keys of those sections; `[metrics]` listens on any
 * free loopback port unless told otherwise (the default 9401 would be taken by the second node on a host).
 */
export function walletNodeToml(
  info: DevnetInfo,
  opts: {
    dataDir: string;
    port?: number;
    api?: Record<string, TomlValue>;
    wallet?: Record<string, TomlValue>;
    metrics?: Record<string, TomlValue>;
  },
): string {
  const api: Record<string, TomlValue> = { listen_address: '127.0.0.1', port: opts.port ?? 0, ...opts.api };
  const metrics: Record<string, TomlValue> = { listen_address: '127.0.0.1', port: 0, ...opts.metrics };
  const wallet: Record<string, TomlValue> = {
    data_dir: opts.dataDir,
    network: 'regtest',
    btc_rpc_address: new URL(info.bitcoind.rpc_url).host,
    btc_rpc_user: info.bitcoind.rpc_user,
    btc_rpc_password: info.bitcoind.rpc_password,
    indexer_address: info.electrum,
    proxy_address: [info.proxy],
    ...opts.wallet,
  };
  return writeToml({ api, wallet, metrics });
}
