#!/usr/bin/env node
/**
 * rgbx-rgb-proxy: runs the RGB proxy until SIGTERM/SIGINT.
 * Prints `{"event":"listening","url":"http://HOST:PORT"}` on stdout once it accepts connections
 * (the devnet launcher reads the port from it); everything else is logged to stderr.
 */
import { announceListening, createLogger, runMain, runService, serveMetrics } from '@rgbx/service-kit';
import { buildApp } from './app.ts';
import { parseCli, USAGE } from './config.ts';
import { SERVER_VERSION } from './methods.ts';

async function main(): Promise<number | undefined> {
  const cli = parseCli(process.argv.slice(2));
  if (cli.kind === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (cli.kind === 'version') {
    process.stdout.write(`${SERVER_VERSION}\n`);
    return 0;
  }
  const cfg = cli.config;
  const logger = createLogger({ name: 'rgb-proxy', level: cfg.logLevel, destination: 2 });
  const { app, store, metrics } = buildApp({
    dataDir: cfg.dataDir,
    maxUploadBytes: cfg.maxUploadBytes,
    maxJsonBytes: cfg.maxJsonBytes,
    logger,
  });
  logger.info({ dataDir: cfg.dataDir, maxUploadBytes: cfg.maxUploadBytes, ...store.counts() }, 'starting');
  const metricsServer = await serveMetrics(metrics, cfg.metrics);
  const svc = await runService({
    app,
    host: cfg.host,
    port: cfg.port,
    logger,
    shutdownTimeoutMs: cfg.shutdownTimeoutMs,
    ...(metricsServer ? { onShutdown: () => metricsServer.close() } : {}),
  });
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');
  announceListening(svc.address.url, metricsServer ? { metrics_url: metricsServer.url } : {});
  return undefined;
}

runMain('rgbx-rgb-proxy', main, { usage: USAGE, stack: true });
