/**
 * Where hosted nodes point (`[backend]`): fixed addresses, or a plug-in module that finds them at
 * every node start. The devnet follow-mode is such a plug-in (`@rgbx/devnet/cloud-backend`, a
 * development dependency): it is loaded only when a config names it, so a production install, which
 * has no devnet kit, never loads it.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '@rgbx/service-kit';
import type { CloudConfig } from '../config.ts';
import type { NodeBackend } from './driver.ts';

/**
 * What a `[backend] plugin` module exports: `createBackendResolver(plugin_options)` returns the
 * function the local driver calls at every node start (it throws to fail that start with its reason).
 */
export interface BackendPlugin {
  createBackendResolver(options: Record<string, unknown>): () => NodeBackend;
}

/** The configured plug-in's resolver; a ConfigError naming `backend.plugin` when it does not load. */
async function loadPlugin(spec: string, options: Record<string, unknown>): Promise<() => NodeBackend> {
  // A path is relative to the working directory (as every path of the config); anything else is a package.
  const path = spec.startsWith('.') || isAbsolute(spec);
  const target = path ? pathToFileURL(resolve(spec)).href : spec;
  const refuse = (why: string, cause?: unknown) =>
    new ConfigError(
      [{ path: 'backend.plugin', message: `"backend.plugin" ${JSON.stringify(spec)}: ${why}` }],
      {
        cause,
      },
    );
  let mod: Partial<BackendPlugin>;
  try {
    mod = (await import(target)) as Partial<BackendPlugin>;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED')
      throw refuse(
        'is not installed (a development plug-in such as the devnet follow-mode is not part of a production install; set [backend] btc_rpc_address, indexer_address and proxy_address instead)',
        err,
      );
    throw err;
  }
  if (typeof mod.createBackendResolver !== 'function') throw refuse('exports no createBackendResolver');
  try {
    return mod.createBackendResolver(options);
  } catch (err) {
    throw refuse(`refused its options: ${(err as Error).message}`, err);
  }
}

/**
 * Where nodes point: the fixed `[backend]` if `btc_rpc_address` is set, else the configured plug-in's
 * resolver. With neither the service still runs (API, tokens, webhooks), and every node start fails
 * naming the missing setting. No bitcoind RPC password: the wallet node does not use bitcoind RPC,
 * so its config never carries one.
 */
export async function backendResolver(cfg: Pick<CloudConfig, 'backend'>): Promise<() => NodeBackend> {
  const b = cfg.backend;
  if (b.btc_rpc_address) {
    if (b.plugin !== undefined)
      throw new ConfigError([
        {
          path: 'backend.plugin',
          message: 'set either "backend.btc_rpc_address" (a fixed backend) or "backend.plugin", not both',
        },
      ]);
    const fixed: NodeBackend = {
      btcRpcAddress: b.btc_rpc_address,
      btcRpcUser: b.btc_rpc_user ?? '',
      indexerAddress: b.indexer_address ?? '',
      proxyAddress: b.proxy_address ?? [],
    };
    return () => fixed;
  }
  if (b.plugin !== undefined) return loadPlugin(b.plugin, b.plugin_options ?? {});
  return () => {
    throw new Error(
      'no [backend] configured: set btc_rpc_address, indexer_address and proxy_address (or, in development, plugin = "@rgbx/devnet/cloud-backend" to follow a devnet)',
    );
  };
}
