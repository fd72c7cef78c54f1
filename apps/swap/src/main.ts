#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
/**
 * rgbx-swap: runs the swap service until SIGTERM/SIGINT, or manages API keys.
 */
import { mkdirSync } from 'node:fs';
import {
  announceListening,
  createLogger,
  runMain,
  runService,
  serveMetrics,
  sha256,
} from '@rgbx/service-kit';
import { redactUrl } from '@rgbx/store';
import { buildSwapApp, SERVICE_VERSION } from './app.ts';
import { parseCli, USAGE } from './cli.ts';
import { loadConfig, type SwapConfig } from './config.ts';
import { startScheduler } from './domain/scheduler.ts';
import { createApiKey, listApiKeys, revokeApiKey } from './store/api-keys.ts';
import { openSwapDatabase } from './store/database.ts';

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function openDb(cfg: SwapConfig) {
  if (cfg.databaseUrl.startsWith('sqlite:') && cfg.databaseUrl !== 'sqlite::memory:') {
    mkdirSync(cfg.dataDir, { recursive: true, mode: 0o700 });
  }
  return openSwapDatabase(cfg.databaseUrl);
}

async function main(): Promise<number | undefined> {
  let cmd: ReturnType<typeof parseCli>;
  let cfg: SwapConfig | undefined;
  cmd = parseCli(process.argv.slice(2));
  if ('config' in cmd) cfg = loadConfig({ file: cmd.config });
  switch (cmd.kind) {
    case 'help':
      out(USAGE);
      return 0;
    case 'version':
      out(SERVICE_VERSION);
      return 0;
    case 'preimage-key':
      out(randomBytes(32).toString('hex'));
      return 0;
    case 'resolver-key': {
      const key = `rgbx_resolver_${randomBytes(32).toString('base64url')}`;
      out(JSON.stringify({ key, api_key_sha256: sha256(key).toString('hex') }));
      return 0;
    }
    default:
      break;
  }
  const config = cfg!;
  const { db, dialect, close } = await openDb(config);
  if (cmd.kind === 'keys-create') {
    try {
      const k = await createApiKey(db, cmd.name);
      out(JSON.stringify({ id: k.id, name: k.name, key: k.key }));
      process.stderr.write('rgbx-swap: the key is shown once; only its SHA-256 is stored\n');
      return 0;
    } finally {
      await close();
    }
  }
  if (cmd.kind === 'keys-list') {
    try {
      const keys = await listApiKeys(db);
      if (cmd.json) out(JSON.stringify(keys));
      else
        for (const k of keys) {
          out(
            `${k.id}  ${new Date(k.createdAt).toISOString()}  ${k.revokedAt === null ? 'active ' : 'revoked'}  ${k.name}`,
          );
        }
      return 0;
    } finally {
      await close();
    }
  }
  if (cmd.kind === 'keys-revoke') {
    try {
      if (!(await revokeApiKey(db, cmd.id))) {
        process.stderr.write(`rgbx-swap: no API key ${cmd.id}\n`);
        return 1;
      }
      out(JSON.stringify({ id: cmd.id, revoked: true }));
      return 0;
    } finally {
      await close();
    }
  }

  const logger = createLogger({ name: 'swap', level: config.log_level, destination: 2 });
  const { app, ctx, health } = buildSwapApp({ config, db, dialect, logger });
  const metricsServer = await serveMetrics(ctx.metrics, config.metrics);
  const scheduler = startScheduler(ctx, config.swap.scheduler_interval_ms);
  logger.info(
    {
      database: redactUrl(config.databaseUrl),
      networks: config.networks.length,
      tokens: config.tokens.length,
      resolvers: config.resolvers.filter((r) => r.enabled).map((r) => r.id),
    },
    'starting',
  );
  const svc = await runService({
    app,
    host: config.host,
    port: config.port,
    logger,
    shutdownTimeoutMs: config.shutdown_timeout_ms,
    onShutdown: async () => {
      health.markStopping();
      await scheduler.stop();
      await metricsServer?.close();
      await close();
    },
  });
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');
  announceListening(svc.address.url, metricsServer ? { metrics_url: metricsServer.url } : {});
  return undefined;
}

runMain('rgbx-swap', main, { usage: USAGE });
