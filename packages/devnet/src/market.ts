/**
 * The swap market on the devnet: the EVM devnode (USDC, SignatureTransfer, SwapEscrow deployed), the
 * Solana devnode, the swap service configured for the four networks with the reference resolver as a
 * remote RFQ resolver, and the reference resolver itself, funded on every chain. `npm start` runs it;
 * the market tests run it with their own ports, databases and fault injection.
 *
 * Like the devnet (which starts our Electrum server and RGB proxy), it starts services from their build
 * output (`apps/*\/dist/main.js`): `tsc -b` first.
 *
 * @example
 * const devnet = await startDevnet({ dir });
 * const market = await startMarket({ dir: join(dir, 'market'), devnet });
 * // market.swapUrl, market.swapApiKey: the user's side (SDK SwapClient); market.resolver: its process
 * await market.stop();
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tronAddressFromHex } from '@rgbx/chains/tron';
import { freePort } from '@rgbx/service-kit';
import type { Devnet } from './devnet.ts';
import { deploySwapDevnet } from './evm-devnode/escrow.ts';
import { DEVNET_RESOLVER_API_KEY, fundDevnetResolver, writeResolverDevnetFiles } from './resolver-config.ts';
import { type ServiceProcess, spawnService } from './services.ts';
import { swapDevnetToml, type TomlValue } from './swap-config.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
export const SWAP_MAIN = join(root, 'apps/swap/dist/main.js');
export const RESOLVER_MAIN = join(root, 'apps/resolver/dist/main.js');
const EVM_DEVNODE_MAIN = join(root, 'packages/devnet/dist/evm-devnode/main.js');
const SOL_DEVNODE_MAIN = join(root, 'packages/devnet/dist/sol-devnode/main.js');

export interface MarketOptions {
  /** Where the swap's and the resolver's files go (configs, keys, SQLite stores). */
  dir: string;
  devnet: Devnet;
  /** Ports (0 or absent: a free one). */
  swapPort?: number;
  resolverPort?: number;
  /**
   * `GET /metrics` ports of the swap and the resolver (0 or absent: any free one, bound by the service itself and
   * read from its listening line, so no other process can take it between choosing and binding).
   */
  metricsPorts?: { swap?: number; resolver?: number };
  /** Default SQLite in `dir`. */
  swapDatabaseUrl?: string;
  resolverDatabaseUrl?: string;
  /** `[swap]` overrides (quote_ttl_secs, intent_ttl_secs, scheduler_interval_ms, …). */
  swap?: Record<string, TomlValue>;
  /** The resolver's `[fill]` overrides. */
  fill?: Record<string, TomlValue>;
  /** Environment of the resolver's first start (e.g. `RGBX_RESOLVER_CRASH_AT`). */
  resolverEnv?: NodeJS.ProcessEnv;
  /** Do not start the resolver (a test starts it later with {@link Market.startResolver}). */
  noResolver?: boolean;
  logLevel?: string;
  /** Called when a started process exits by itself. */
  onExit?: (name: string, code: number | null, stderr: string) => void;
}

export interface Market {
  swapUrl: string;
  /** An API key for the user's side (`X-API-Key`). */
  swapApiKey: string;
  resolverApiKey: string;
  resolverConfig: string;
  evm: {
    rpcUrl: string;
    chainId: bigint;
    usdc: `0x${string}`;
    permit2: `0x${string}`;
    escrow: `0x${string}`;
    /** Account 0 of the devnode: the deployer, with ETH and all test tokens (funds users in examples). */
    funderKey: `0x${string}`;
  };
  solanaRpcUrl: string;
  /** The refund delay of the escrow and the swap's refund safety margin (seconds). */
  refundMarginSecs: number;
  /** Where the swap and the resolver serve `GET /metrics`. */
  metrics: { swap: string; resolver: string };
  swap: ServiceProcess<string>;
  /** The running resolver process, if started. */
  resolver: ServiceProcess<string> | undefined;
  /** (Re)starts the resolver (after the previous one exited or was killed). */
  startResolver(env?: NodeJS.ProcessEnv): Promise<ServiceProcess<string>>;
  /** Stops the resolver, the swap and the devnodes (not the devnet). */
  stop(): Promise<void>;
}

export async function startMarket(o: MarketOptions): Promise<Market> {
  mkdirSync(o.dir, { recursive: true });
  const procs: ServiceProcess<unknown>[] = [];
  let stopping = false;
  const onExit = (name: string) => (code: number | null, err: string) => {
    if (!stopping) o.onExit?.(name, code, err);
  };
  const stopAll = async () => {
    stopping = true;
    for (const p of procs.reverse()) await p.stop().catch(() => {});
  };
  try {
    const evmNode = await spawnService<{
      rpc_url: string;
      chain_id: string;
      accounts: { private_key: string }[];
    }>('evm devnode', [EVM_DEVNODE_MAIN], {
      pick: (j) => typeof j.rpc_url === 'string' && (j as never),
      onExit: onExit('evm devnode'),
    });
    procs.push(evmNode);
    const evm = evmNode.value;
    const chainId = BigInt(evm.chain_id);
    const funderKey = evm.accounts[0]!.private_key as `0x${string}`;
    const margin = Number(o.swap?.refund_safety_margin_secs ?? 3600);
    // USDC, SignatureTransfer, SwapEscrow from account 0 as the first transactions of this fresh devnode:
    // always the addresses apps/swap/config/devnet.toml falls back to.
    const { usdc, permit2, escrow } = await deploySwapDevnet(evm.rpc_url, chainId, funderKey, {
      refundDelaySecs: BigInt(margin),
    });
    const solNode = await spawnService('solana devnode', [SOL_DEVNODE_MAIN], {
      onExit: onExit('solana devnode'),
    });
    procs.push(solNode);
    const sol = solNode.value;

    const swapPort = o.swapPort || (await freePort());
    const resolverPort = o.resolverPort || (await freePort());
    const swapMetricsPort = o.metricsPorts?.swap ?? 0;
    const resolverMetricsPort = o.metricsPorts?.resolver ?? 0;
    const metricsUrls = { swap: '', resolver: '' };
    /** The service's URL from its listening line, keeping its `metrics_url` under `key`. */
    const listening = (key: 'swap' | 'resolver') => (j: Record<string, unknown>) => {
      if (j.event !== 'listening' || typeof j.url !== 'string') return undefined;
      if (typeof j.metrics_url === 'string') metricsUrls[key] = j.metrics_url;
      return j.url;
    };
    const sw = join(o.dir, 'swap');
    const rs = join(o.dir, 'resolver');
    mkdirSync(sw, { recursive: true });
    // The resolver's store starts empty: the devnodes are new on every start, so transactions it signed
    // on previous ones must never be sent here.
    rmSync(join(rs, 'data'), { recursive: true, force: true });
    const tron = { escrow: tronAddressFromHex(escrow), usdt: tronAddressFromHex(usdc) };
    const resolverConfig = writeResolverDevnetFiles(rs, {
      swapUrl: `http://127.0.0.1:${swapPort}`,
      rfqPort: resolverPort,
      ...(o.resolverDatabaseUrl ? { databaseUrl: o.resolverDatabaseUrl } : {}),
      ...(o.logLevel ? { logLevel: o.logLevel } : {}),
      bitcoin: { electrumUrl: o.devnet.info.electrum },
      evm: { rpcUrl: evm.rpc_url, chainId: evm.chain_id, escrow, usdc },
      tron: { rpcUrl: evm.rpc_url, chainId: evm.chain_id, ...tron },
      solana: { rpcUrl: sol },
      ...(o.fill ? { fill: o.fill } : {}),
      metricsPort: resolverMetricsPort,
    });

    const keyFile = join(sw, 'preimage.key');
    if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    const swapToml = join(sw, 'config.toml');
    writeFileSync(
      swapToml,
      swapDevnetToml(
        {
          service: {
            host: '127.0.0.1',
            port: swapPort,
            data_dir: join(sw, 'data'),
            ...(o.swapDatabaseUrl ? { database_url: o.swapDatabaseUrl } : {}),
            preimage_key_file: keyFile,
            log_level: o.logLevel ?? 'info',
            metrics: { listen_address: '127.0.0.1', port: swapMetricsPort },
          },
          swap: { quote_ttl_secs: 120, intent_ttl_secs: 3600, scheduler_interval_ms: 5000, ...o.swap },
          bitcoin: { electrumUrl: o.devnet.info.electrum },
          evm: {
            rpcUrl: evm.rpc_url,
            chainId: Number(evm.chain_id),
            permit2,
            escrow,
            usdc,
            extra: { min_confirmations: 1 },
          },
          tron: {
            rpcUrl: evm.rpc_url,
            chainId: Number(evm.chain_id),
            permit2: tronAddressFromHex(permit2),
            escrow: tron.escrow,
            usdt: tron.usdt,
            extra: { min_confirmations: 1 },
          },
          solana: { rpcUrl: sol, extra: { min_confirmations: 1 } },
          // The reference resolver (apps/resolver) quotes over RFQ and fills what it wins.
          resolver: {
            quoteUrl: `http://127.0.0.1:${resolverPort}/rfq`,
            rfqSecretFile: join(rs, 'rfq.secret'),
          },
        },
        ['written by startMarket (packages/devnet/src/market.ts)'],
      ),
      { mode: 0o600 },
    );
    const swapKeyFile = join(sw, 'dev-api-key');
    if (!existsSync(swapKeyFile) || o.swapDatabaseUrl) {
      // An API key for the user's side, kept (0600) for the next starts.
      const r = spawnSync(process.execPath, [SWAP_MAIN, '-c', swapToml, 'keys', 'create', '--name', 'dev'], {
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`swap keys create failed: ${r.stderr}`);
      writeFileSync(swapKeyFile, JSON.parse(r.stdout.trim().split('\n').pop()!).key, { mode: 0o600 });
    }
    const swap = await spawnService('swap service', [SWAP_MAIN, '-c', swapToml], {
      pick: listening('swap'),
      onExit: onExit('swap service'),
    });
    procs.push(swap);

    await fundDevnetResolver({
      devnet: o.devnet,
      evm: { rpcUrl: evm.rpc_url, chainId, funderKey, usdc },
      tron: true,
      solanaRpcUrl: sol,
    });

    const market: Market = {
      swapUrl: swap.value,
      swapApiKey: readFileSync(swapKeyFile, 'utf8').trim(),
      resolverApiKey: DEVNET_RESOLVER_API_KEY,
      resolverConfig,
      evm: { rpcUrl: evm.rpc_url, chainId, usdc, permit2, escrow, funderKey },
      solanaRpcUrl: sol,
      refundMarginSecs: margin,
      // The resolver's is known once it runs (startResolver); a restarted resolver may serve it elsewhere.
      metrics: metricsUrls,
      swap,
      resolver: undefined,
      async startResolver(env) {
        const p = await spawnService('resolver', [RESOLVER_MAIN, '-c', resolverConfig], {
          pick: listening('resolver'),
          ...(env ? { env } : {}),
          onExit: onExit('resolver'),
        });
        procs.push(p);
        market.resolver = p;
        return p;
      },
      stop: stopAll,
    };
    if (!o.noResolver) await market.startResolver(o.resolverEnv);
    return market;
  } catch (err) {
    await stopAll();
    throw err;
  }
}
