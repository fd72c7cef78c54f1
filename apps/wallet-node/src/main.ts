#!/usr/bin/env node
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { killLeftoverChildren } from '@rgbx/rgb';
import {
  announceListening,
  createLogger,
  loadTomlConfig,
  runMain,
  runService,
  serveMetrics,
} from '@rgbx/service-kit';
import { buildWalletNode } from './app.ts';
import { ineffectiveKeys, prepareConfig, WalletNodeConfig, walletBudgetOf } from './config.ts';
import { lockDataDir } from './lock.ts';
import { childPidDir } from './pool.ts';
import { checkIndexer } from './preflight.ts';
import { WalletRegistry } from './wallets.ts';

const USAGE = 'usage: rgbx-wallet-node -c config.toml   (see apps/wallet-node/README.md)';

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } },
  });
  if (v.help) {
    console.info(USAGE);
    return;
  }
  const file = v.config ?? 'config.toml';
  const cfg = loadTomlConfig(WalletNodeConfig, { file }, { prepare: prepareConfig });
  // The reference's `alias` is a subdirectory of data_dir holding that node's wallets.
  cfg.wallet.data_dir = resolve(
    cfg.wallet.alias ? join(cfg.wallet.data_dir, cfg.wallet.alias) : cfg.wallet.data_dir,
  );
  // A budget that cannot hold (more online wallets than indexer connections allow) is a configuration error.
  const budget = walletBudgetOf(cfg.wallet);
  const logger = createLogger({ name: 'wallet-node', destination: 2 });
  logger.info(
    {
      max_online_wallets: budget.maxOnline,
      max_open_wallets: budget.maxOpen,
      indexer_max_connections: budget.indexerMaxConnections,
      indexer_connections_at_most: budget.connections,
    },
    'wallet budget',
  );
  const fds = openFilesLimit();
  // Each open wallet holds ~3 descriptors in its child and an online one 2 sockets more; one child may own them all.
  const needFds = budget.maxOpen * 3 + budget.maxOnline * 2 + 256;
  if (fds !== undefined && fds < needFds)
    logger.warn(
      { open_files_limit: fds, needed_at_most: needFds },
      'the open files limit (ulimit -n) may be too low for wallet.max_open_wallets: raise it or lower the budget',
    );
  const ignored = ineffectiveKeys(cfg);
  if (ignored.length > 0) logger.warn({ keys: ignored }, 'configuration keys accepted but without effect');
  try {
    mkdirSync(cfg.wallet.data_dir, { recursive: true, mode: 0o700 });
    // Wallet data is for this service's user only (a data_dir made by an older version, or by hand, too).
    chmodSync(cfg.wallet.data_dir, 0o700);
  } catch (err) {
    throw new Error(
      `wallet.data_dir: cannot create ${cfg.wallet.data_dir}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
  const release = lockDataDir(cfg.wallet.data_dir);
  process.once('exit', release);
  // Before anything opens a wallet: rgb-lib children of a predecessor killed with SIGKILL normally die with
  // it (their watchdog), but one that could not (stopped, starved) would still hold its wallets open.
  const pidDir = childPidDir(cfg.wallet.data_dir);
  const killed = await killLeftoverChildren(pidDir);
  if (killed > 0) logger.warn({ killed, pidDir }, 'killed leftover rgb-lib children of a previous instance');
  const cleared = WalletRegistry.clearStaleLocks(cfg.wallet.data_dir);
  if (cleared > 0) logger.warn({ cleared }, 'removed stale rgb_runtime.lock files left by a crash');
  if (cfg.wallet.check_indexer_at_start) {
    const indexer = await checkIndexer(cfg.wallet.indexer_address);
    logger.info({ indexer }, 'indexer answers');
  }
  const node = buildWalletNode(cfg, logger);
  // Its own listener, before the children start: a taken port fails the start (naming [metrics]).
  const metricsServer = node.metrics ? await serveMetrics(node.metrics, cfg.metrics) : undefined;
  await node.start();
  const running = await runService({
    app: node.app,
    host: cfg.api.listen_address,
    port: cfg.api.port,
    logger,
    onShutdown: async () => {
      await metricsServer?.close();
      await node.close();
      release();
    },
  });
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');
  announceListening(running.address.url, metricsServer ? { metrics_url: metricsServer.url } : {});
}

/** This process's soft RLIMIT_NOFILE (its rgb-lib children inherit it), from /proc; undefined if unknown. */
function openFilesLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

// A bad configuration exits with status 1, as this service has always documented.
runMain('rgbx-wallet-node', main, { badInputExitCode: 1 });
