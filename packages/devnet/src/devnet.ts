import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BitcoindRpc, BitcoindRpcError } from '@rgbx/chains/btc';
import { freePort, isListening, takePidLock, waitFor, writeToml } from '@rgbx/service-kit';
import { bitcoindArgs, verifiedBitcoind } from './bitcoind.ts';
import { isAlive, isOurs, startProcess, stopProcess } from './processes.ts';

/** What `devnet status --json` prints; the contract other tools read. */
export interface DevnetInfo {
  bitcoind: { rpc_url: string; rpc_user: string; rpc_password: string; network: 'regtest' };
  /** `tcp://127.0.0.1:P` */
  electrum: string;
  /** `rpc://127.0.0.1:P/json-rpc` (the form RGB invoices carry) */
  proxy: string;
  /** Where the Electrum server and the RGB proxy serve `GET /metrics` (Prometheus), on loopback. */
  metrics: { electrum: string; proxy: string };
}

export interface DevnetOptions {
  /** Directory holding all state: bitcoind datadir, proxy store, logs, devnet.json. */
  dir: string;
  /** Fixed ports; any left out reuse the previous run's port or a free one. */
  ports?: {
    rpc?: number;
    electrum?: number;
    proxy?: number;
    electrumMetrics?: number;
    proxyMetrics?: number;
  };
  /** Processes outlive the caller (CLI `up`); tests leave this false and call stop(). */
  detached?: boolean;
  /** Blocks mined at first start so the miner wallet has mature coins (≥101). */
  initialBlocks?: number;
}

interface State {
  version: 1;
  rpc: { port: number; user: string; password: string };
  electrumPort: number;
  proxyPort: number;
  /** Absent in state files written before the services had metrics (then chosen at the next `up`). */
  metricsPorts?: { electrum: number; proxy: number };
  pids: { bitcoind?: number; electrum?: number; proxy?: number };
  minerAddress?: string;
}

export interface Devnet {
  readonly dir: string;
  readonly info: DevnetInfo;
  /** RPC client for bitcoind (node-level). */
  readonly bitcoind: BitcoindRpc;
  /** RPC client for the funded `miner` wallet. */
  readonly wallet: BitcoindRpc;
  /** Mines `blocks` blocks to the miner (or `address`); returns the block hashes. */
  mine(blocks: number, address?: string): Promise<string[]>;
  /**
   * Sends `btc` (decimal string) from the miner wallet; with `confirm`, mines one block after; with
   * `data` (hex), the transaction also carries an `OP_RETURN <data>` output (e.g. a swap fulfilment's
   * commitment). Returns the txid.
   */
  fund(address: string, btc: string, opts?: { confirm?: boolean; data?: string }): Promise<string>;
  /** bitcoind node RPC call (`scantxoutset start` calls wait for each other: bitcoind runs one at a time). */
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Stops every process this devnet started (bitcoind, electrum, proxy). State stays in `dir`. */
  stop(): Promise<void>;
}

const STATE_FILE = 'devnet.json';
const here = fileURLToPath(new URL('.', import.meta.url));
/** The services are started as processes from their build output, never imported (one-way dependencies). */
export const ELECTRUM_MAIN = resolve(here, '../../../apps/electrum/dist/main.js');
export const PROXY_MAIN = resolve(here, '../../../apps/rgb-proxy/dist/main.js');

function readState(dir: string): State | undefined {
  const p = join(dir, STATE_FILE);
  if (!existsSync(p)) return undefined;
  try {
    const s = JSON.parse(readFileSync(p, 'utf8')) as State;
    return s.version === 1 ? s : undefined;
  } catch {
    return undefined;
  }
}

function writeState(dir: string, s: State): void {
  const tmp = join(dir, `${STATE_FILE}.tmp`);
  writeFileSync(tmp, JSON.stringify(s, null, 2), { mode: 0o600 });
  renameSync(tmp, join(dir, STATE_FILE)); // atomic: a reader never sees a half-written state
}

function infoOf(s: State): DevnetInfo {
  return {
    bitcoind: {
      rpc_url: `http://127.0.0.1:${s.rpc.port}`,
      rpc_user: s.rpc.user,
      rpc_password: s.rpc.password,
      network: 'regtest',
    },
    electrum: `tcp://127.0.0.1:${s.electrumPort}`,
    proxy: `rpc://127.0.0.1:${s.proxyPort}/json-rpc`,
    metrics: {
      electrum: s.metricsPorts ? `http://127.0.0.1:${s.metricsPorts.electrum}/metrics` : '',
      proxy: s.metricsPorts ? `http://127.0.0.1:${s.metricsPorts.proxy}/metrics` : '',
    },
  };
}

/** Serializes `up`/`down` on one directory across processes (the kit's pid lock file, waited for). */
async function withDirLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 120_000;
  let lock = takePidLock(join(dir, '.lock'));
  while (!lock.taken) {
    if (Date.now() > deadline)
      throw new Error(
        `devnet: ${dir} is locked by pid ${Number.isNaN(lock.holder) ? '? (.lock holds no pid)' : lock.holder}`,
      );
    await new Promise((r) => setTimeout(r, 100));
    lock = takePidLock(join(dir, '.lock'));
  }
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

/**
 * Starts (or re-attaches to) a regtest devnet: bitcoind 30.2 (SHA-256 verified), our Electrum server and
 * our RGB proxy, all on loopback. Idempotent: processes already running for `dir` are reused.
 *
 * @example
 * const devnet = await startDevnet({ dir: '/tmp/devnet' });
 * await devnet.fund(address, '1.5', { confirm: true });
 * await devnet.stop();
 */
export async function startDevnet(opts: DevnetOptions): Promise<Devnet> {
  const dir = resolve(opts.dir);
  const mine = (pid: number | undefined) => (isOurs(pid, dir) ? pid : undefined);
  mkdirSync(join(dir, 'logs'), { recursive: true });
  mkdirSync(join(dir, 'bitcoind'), { recursive: true });
  mkdirSync(join(dir, 'proxy'), { recursive: true });
  const detached = opts.detached ?? false;
  const state = await withDirLock(dir, async () => {
    const prev = readState(dir);
    const s: State = {
      version: 1,
      rpc: {
        port: opts.ports?.rpc ?? prev?.rpc.port ?? (await freePort()),
        user: prev?.rpc.user ?? 'devnet',
        password: prev?.rpc.password ?? randomBytes(18).toString('base64url'),
      },
      electrumPort: opts.ports?.electrum ?? prev?.electrumPort ?? (await freePort()),
      proxyPort: opts.ports?.proxy ?? prev?.proxyPort ?? (await freePort()),
      metricsPorts: {
        electrum: opts.ports?.electrumMetrics ?? prev?.metricsPorts?.electrum ?? (await freePort()),
        proxy: opts.ports?.proxyMetrics ?? prev?.metricsPorts?.proxy ?? (await freePort()),
      },
      pids: { ...prev?.pids },
      ...(prev?.minerAddress ? { minerAddress: prev.minerAddress } : {}),
    };
    try {
      const rpc = new BitcoindRpc({
        url: `http://127.0.0.1:${s.rpc.port}`,
        user: s.rpc.user,
        password: s.rpc.password,
      });

      // bitcoind
      const bitcoindUp =
        isOurs(s.pids.bitcoind, dir) &&
        (await rpc.call('getblockcount').then(
          () => true,
          () => false,
        ));
      if (!bitcoindUp) {
        await stopProcess(mine(s.pids.bitcoind));
        const bin = await verifiedBitcoind();
        // Credentials in a 0600 bitcoin.conf, never on the command line (visible in ps and /proc).
        writeFileSync(
          join(dir, 'bitcoind', 'bitcoin.conf'),
          `rpcuser=${s.rpc.user}\nrpcpassword=${s.rpc.password}\n`,
          {
            mode: 0o600,
          },
        );
        const p = startProcess(
          bin,
          bitcoindArgs({
            datadir: join(dir, 'bitcoind'),
            rpcPort: s.rpc.port,
          }),
          { logFile: join(dir, 'logs', 'bitcoind.log'), detached },
        );
        s.pids.bitcoind = p.pid;
        writeState(dir, s);
        await waitFor('bitcoind RPC', () => rpc.call('getblockchaininfo').then(() => true), {
          timeoutMs: 60_000,
          isAlive: () => isAlive(p.pid),
        });
      }
      const wallets = await rpc.call<string[]>('listwallets');
      if (!wallets.includes('miner')) {
        try {
          await rpc.call('loadwallet', ['miner']);
        } catch (err) {
          if (!(err instanceof BitcoindRpcError)) throw err;
          await rpc.call('createwallet', ['miner']);
        }
      }
      const wallet = rpc.withPath('/wallet/miner');
      s.minerAddress ??= await wallet.call<string>('getnewaddress', ['miner', 'bech32']);
      const height = await rpc.call<number>('getblockcount');
      const want = opts.initialBlocks ?? 101;
      if (height < want) await rpc.call('generatetoaddress', [want - height, s.minerAddress]);
      writeState(dir, s);

      // Electrum server (configured by a 0600 TOML file so the RPC password never shows in `ps`)
      if (!(isOurs(s.pids.electrum, dir) && (await isListening(s.electrumPort)))) {
        await stopProcess(mine(s.pids.electrum));
        const electrumLog = join(dir, 'logs', 'electrum.log');
        await retryOnTakenPort(
          'electrum server',
          electrumLog,
          async () => {
            if (!opts.ports?.electrum) s.electrumPort = await freePort();
            if (!opts.ports?.electrumMetrics) s.metricsPorts!.electrum = await freePort();
          },
          async (since) => {
            const conf = join(dir, 'electrum.toml');
            writeFileSync(
              conf,
              writeToml(
                {
                  server: { host: '127.0.0.1', port: s.electrumPort },
                  bitcoind: {
                    rpc_url: `http://127.0.0.1:${s.rpc.port}`,
                    rpc_user: s.rpc.user,
                    rpc_password: s.rpc.password,
                  },
                  fees: { fallback_btc_per_kvb: '0.00001' },
                  metrics: { listen_address: '127.0.0.1', port: s.metricsPorts!.electrum },
                },
                [
                  'written by the devnet; [fees]: regtest has no fee estimates, answer 1 sat/vB so clients can build transactions',
                ],
              ),
              { mode: 0o600 },
            );
            const p = startProcess(process.execPath, [ELECTRUM_MAIN, '-c', conf], {
              logFile: electrumLog,
              detached,
            });
            s.pids.electrum = p.pid;
            writeState(dir, s);
            // Ready when it says so (its listening line, printed once every listener is bound): a port that
            // answers is not enough, the server binds its metrics port after its main one and may still exit.
            await waitFor(
              'electrum server',
              async () => (await isListening(s.electrumPort)) && announced(electrumLog, since),
              {
                timeoutMs: 120_000,
                isAlive: () => isAlive(p.pid),
              },
            );
          },
        );
      }

      // RGB proxy
      if (!(isOurs(s.pids.proxy, dir) && (await isListening(s.proxyPort)))) {
        await stopProcess(mine(s.pids.proxy));
        const proxyLog = join(dir, 'logs', 'rgb-proxy.log');
        await retryOnTakenPort(
          'rgb proxy',
          proxyLog,
          async () => {
            if (!opts.ports?.proxy) s.proxyPort = await freePort();
            if (!opts.ports?.proxyMetrics) s.metricsPorts!.proxy = await freePort();
          },
          async (since) => {
            const p = startProcess(
              process.execPath,
              [
                PROXY_MAIN,
                '--host',
                '127.0.0.1',
                '--port',
                String(s.proxyPort),
                '--data-dir',
                join(dir, 'proxy'),
                '--metrics-port',
                String(s.metricsPorts!.proxy),
              ],
              { logFile: proxyLog, detached },
            );
            s.pids.proxy = p.pid;
            writeState(dir, s);
            await waitFor(
              'rgb proxy',
              async () => (await isListening(s.proxyPort)) && announced(proxyLog, since),
              {
                timeoutMs: 60_000,
                isAlive: () => isAlive(p.pid),
              },
            );
          },
        );
      }
    } catch (err) {
      // A failed start must not leave half a devnet running behind a caller that has no handle to stop it.
      if (!detached) {
        await Promise.all([stopProcess(mine(s.pids.electrum)), stopProcess(mine(s.pids.proxy))]);
        await stopProcess(mine(s.pids.bitcoind), 30_000);
        s.pids = {};
        writeState(dir, s);
      }
      throw err;
    }
    writeState(dir, s);
    return s;
  });
  return attach(dir, state);
}

/**
 * Free ports are chosen when the state is written and bound seconds later, so on a busy machine another
 * process (a parallel test's server on port 0) can take one in between. A start that died on a taken
 * port (EADDRINUSE in what it logged) is retried on fresh ports; ports the caller fixed are kept.
 */
async function retryOnTakenPort(
  what: string,
  logFile: string,
  repick: () => Promise<void>,
  start: (since: number) => Promise<void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const logged = existsSync(logFile) ? statSync(logFile).size : 0;
    try {
      return await start(logged);
    } catch (err) {
      const log = existsSync(logFile) ? readFileSync(logFile).subarray(logged).toString('utf8') : '';
      if (attempt >= 3 || !/EADDRINUSE/.test(log)) throw err;
      await repick();
      process.stderr.write(`devnet: ${what} found a port taken; retrying on fresh ports\n`);
    }
  }
}

/** Whether the log has a `{"event":"listening"…}` line after byte `since` (what our services print when ready). */
function announced(logFile: string, since: number): boolean {
  try {
    return readFileSync(logFile).subarray(since).includes('"event":"listening"');
  } catch {
    return false;
  }
}

function attach(dir: string, s: State): Devnet {
  const bitcoind = new BitcoindRpc({
    url: `http://127.0.0.1:${s.rpc.port}`,
    user: s.rpc.user,
    password: s.rpc.password,
  });
  const wallet = bitcoind.withPath('/wallet/miner');
  const mine = (blocks: number, address?: string) =>
    bitcoind.call<string[]>('generatetoaddress', [blocks, address ?? s.minerAddress]);
  // bitcoind runs one `scantxoutset` at a time and refuses another meanwhile ("Scan already in progress"; CI saw
  // it with several markets on one devnet): this process's scans go one after another, and one refused because
  // another process scans is tried again (every 100 ms, up to 30 s).
  let scans: Promise<unknown> = Promise.resolve();
  const scan = <T>(params: unknown[]): Promise<T> => {
    const run = scans.then(async () => {
      for (let i = 0; ; i++) {
        try {
          return await bitcoind.call<T>('scantxoutset', params);
        } catch (err) {
          if (i >= 300 || !/Scan already in progress/.test((err as Error).message)) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    });
    scans = run.catch(() => undefined);
    return run;
  };
  return {
    dir,
    info: infoOf(s),
    bitcoind,
    wallet,
    mine,
    async fund(address, btc, o) {
      if (!/^\d+(\.\d{1,8})?$/.test(btc))
        throw new Error(`fund: amount must be a BTC decimal like "0.5", got ${JSON.stringify(btc)}`);
      // Passed as a JSON string: bitcoind parses amounts from strings exactly (no float on our side).
      let txid: string;
      if (o?.data !== undefined) {
        if (!/^([0-9a-f]{2}){1,80}$/i.test(o.data))
          throw new Error(`fund: data must be 1 to 80 bytes of hex, got ${JSON.stringify(o.data)}`);
        const sent = await wallet.call<{ txid: string; complete: boolean }>('send', [
          [{ [address]: btc }, { data: o.data }],
        ]);
        if (!sent.complete) throw new Error('fund: the miner wallet could not sign the transaction');
        txid = sent.txid;
      } else {
        txid = await wallet.call<string>('sendtoaddress', [address, btc]);
      }
      if (o?.confirm) await mine(1);
      return txid;
    },
    rpc: <T>(method: string, params?: unknown[]) =>
      method === 'scantxoutset' && params?.[0] === 'start'
        ? scan<T>(params)
        : bitcoind.call<T>(method, params),
    stop: () => stopDevnet(dir),
  };
}

/** Attaches to a running devnet without starting anything; undefined if it is not running. */
export function openDevnet(dirArg: string): Devnet | undefined {
  const dir = resolve(dirArg);
  const s = readState(dir);
  if (!s || !isOurs(s.pids.bitcoind, dir)) return undefined;
  return attach(dir, s);
}

export interface DevnetStatus {
  running: boolean;
  processes: { bitcoind: boolean; electrum: boolean; proxy: boolean };
  info?: DevnetInfo;
}

export function devnetStatus(dirArg: string): DevnetStatus {
  const dir = resolve(dirArg);
  const s = readState(dir);
  const processes = {
    bitcoind: isOurs(s?.pids.bitcoind, dir),
    electrum: isOurs(s?.pids.electrum, dir),
    proxy: isOurs(s?.pids.proxy, dir),
  };
  return {
    running: processes.bitcoind && processes.electrum && processes.proxy,
    processes,
    ...(s ? { info: infoOf(s) } : {}),
  };
}

/** Stops every process recorded for `dir` (services first, bitcoind last); the data stays. */
export async function stopDevnet(dirArg: string): Promise<void> {
  const dir = resolve(dirArg);
  if (!existsSync(dir)) return;
  await withDirLock(dir, async () => {
    const s = readState(dir);
    if (!s) return;
    const mine = (pid: number | undefined) => (isOurs(pid, dir) ? pid : undefined);
    await Promise.all([stopProcess(mine(s.pids.electrum)), stopProcess(mine(s.pids.proxy))]);
    await stopProcess(mine(s.pids.bitcoind), 30_000);
    s.pids = {};
    writeState(dir, s);
  });
}
