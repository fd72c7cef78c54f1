/**
 * The cloud's devnet follow-mode, a development plug-in: a cloud whose config says
 * `[backend] plugin = "@rgbx/devnet/cloud-backend"` (as `npm start` and `apps/cloud/config/devnet.toml`
 * do) loads this module and points every hosted node, at each start, at the devnet running in
 * `plugin_options.dir`. The cloud never imports the devnet kit otherwise, and a production install has
 * neither it nor bitcoind.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { devnetStatus } from './devnet.ts';

/** Where a hosted wallet node points (the cloud's `NodeBackend`); never a bitcoind RPC password. */
export interface CloudNodeBackend {
  btcRpcAddress: string;
  btcRpcUser: string;
  indexerAddress: string;
  proxyAddress: string[];
}

/** The devnet directory when `plugin_options.dir` is not set: `$RGBX_DEVNET_DIR` or `<repo>/.devnet`, as the CLI. */
export function defaultDevnetDir(): string {
  return (
    process.env.RGBX_DEVNET_DIR ?? resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../.devnet')
  );
}

/**
 * The cloud's backend plug-in entry: returns the resolver the cloud calls at every node start, so a
 * devnet started (or restarted on other ports) after the cloud is picked up. `options.dir`: the
 * devnet directory (relative to the working directory).
 */
export function createBackendResolver(options: Record<string, unknown> = {}): () => CloudNodeBackend {
  const { dir: given, ...unknown } = options;
  const extra = Object.keys(unknown);
  if (extra.length > 0) throw new Error(`unknown option(s) ${extra.join(', ')} (only "dir")`);
  if (given !== undefined && (typeof given !== 'string' || given === ''))
    throw new Error(`"dir" must be a non-empty string, got ${JSON.stringify(given)}`);
  const dir = resolve(given ?? defaultDevnetDir());
  return () => {
    const s = devnetStatus(dir);
    if (!s.running || !s.info) throw new Error(`the devnet in ${dir} is not running (npm run devnet -- up)`);
    const rpc = new URL(s.info.bitcoind.rpc_url);
    return {
      btcRpcAddress: `${rpc.hostname}:${rpc.port}`,
      btcRpcUser: s.info.bitcoind.rpc_user,
      indexerAddress: s.info.electrum,
      proxyAddress: [s.info.proxy],
    };
  };
}
