#!/usr/bin/env node
/**
 * rgbx-rgb-proxy: runs the RGB proxy until SIGTERM/SIGINT.
 * Prints `{"event":"listening","url":"http://HOST:PORT"}` on stdout once it accepts connections
 * (the devnet launcher reads the port from it); everything else is logged to stderr.
 */
import { ConfigError, createLogger, formatConfigError, runService } from '@rgbx/service-kit';
import { buildApp } from './app.ts';
import { parseCli, USAGE, UsageError } from './config.ts';
import { SERVER_VERSION } from './methods.ts';

async function main(): Promise<number | undefined> {
  let cli: ReturnType<typeof parseCli>;
  try {
    cli = parseCli(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`rgbx-rgb-proxy: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`rgbx-rgb-proxy: ${formatConfigError(err)}\n`);
      return 2;
    }
    throw err;
  }
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
  const { app, store } = buildApp({
    dataDir: cfg.dataDir,
    maxUploadBytes: cfg.maxUploadBytes,
    maxJsonBytes: cfg.maxJsonBytes,
    logger,
  });
  logger.info({ dataDir: cfg.dataDir, maxUploadBytes: cfg.maxUploadBytes, ...store.counts() }, 'starting');
  const svc = await runService({
    app,
    host: cfg.host,
    port: cfg.port,
    logger,
    shutdownTimeoutMs: cfg.shutdownTimeoutMs,
  });
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: svc.address.url })}\n`);
  return undefined;
}

main().then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(
      `rgbx-rgb-proxy: fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
