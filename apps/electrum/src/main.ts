#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BitcoindRpc } from '@rgbx/chains/btc';
import { announceListening, createLogger, loadTomlConfig, runMain, serveMetrics } from '@rgbx/service-kit';
import { ElectrumConfig } from './config.ts';
import { ElectrumMetrics } from './metrics.ts';
import { ElectrumServer } from './server.ts';

const USAGE = `usage: rgbx-electrum [-c FILE] [--host H] [--port P] [--bitcoind-url URL] [--rpc-user U] [--rpc-password-env VAR]
  -c FILE              TOML config (see apps/electrum/README.md); flags override it
  --rpc-password-env   name of an environment variable holding the RPC password (keeps it out of ps)`;

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: {
      config: { type: 'string', short: 'c' },
      host: { type: 'string' },
      port: { type: 'string' },
      'bitcoind-url': { type: 'string' },
      'rpc-user': { type: 'string' },
      'rpc-password-env': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help) {
    console.info(USAGE);
    return;
  }
  const cfg = loadTomlConfig(ElectrumConfig, v.config ? { file: v.config } : { text: '' });
  if (v.host) cfg.server.host = v.host;
  if (v.port) cfg.server.port = Number(v.port);
  if (v['bitcoind-url']) cfg.bitcoind.rpc_url = v['bitcoind-url'];
  if (v['rpc-user']) cfg.bitcoind.rpc_user = v['rpc-user'];
  if (v['rpc-password-env']) cfg.bitcoind.rpc_password = process.env[v['rpc-password-env']] ?? '';
  if (!Number.isInteger(cfg.server.port) || cfg.server.port < 0 || cfg.server.port > 65535) {
    throw new Error(`--port must be an integer in 0..65535, got ${JSON.stringify(v.port)}`);
  }
  let { rpc_user: user, rpc_password: password } = cfg.bitcoind;
  if (!user && cfg.bitcoind.cookie_file) {
    [user, password] = readFileSync(cfg.bitcoind.cookie_file, 'utf8').trim().split(/:(.*)/s) as [
      string,
      string,
    ];
  }
  const logger = createLogger({ name: 'electrum', level: cfg.log.level, destination: 2 });
  const rpc = new BitcoindRpc({
    url: cfg.bitcoind.rpc_url,
    user,
    password,
    timeoutMs: cfg.bitcoind.timeout_ms,
  });
  const metrics = cfg.metrics.enabled ? new ElectrumMetrics() : undefined;
  const server = new ElectrumServer({
    rpc,
    host: cfg.server.host,
    port: cfg.server.port,
    follow: cfg.index.follow,
    rpcAuth: { user, password },
    longPollMs: cfg.index.long_poll_ms,
    zmq: cfg.index.zmq,
    pollIntervalMs: cfg.index.poll_interval_ms,
    freshnessMs: cfg.index.freshness_ms,
    feeFallback: cfg.fees.fallback_btc_per_kvb === '' ? null : cfg.fees.fallback_btc_per_kvb,
    maxLineBytes: cfg.server.max_line_bytes,
    maxConnections: cfg.server.max_connections,
    banner: cfg.server.banner,
    protocolMax: cfg.server.protocol_max,
    logger,
    ...(metrics ? { metrics } : {}),
  });
  const { host, port, indexMs, height } = await server.start();
  const metricsServer = metrics ? await serveMetrics(metrics, cfg.metrics) : undefined;
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');
  // One machine-readable line on stdout for launchers; logs go through pino.
  announceListening(`tcp://${host}:${port}`, {
    height,
    index_ms: Math.round(indexMs),
    ...(metricsServer ? { metrics_url: metricsServer.url } : {}),
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    Promise.all([server.close(), metricsServer?.close()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

// A bad configuration exits with status 1, as this service has always documented.
runMain('rgbx-electrum', main, { badInputExitCode: 1 });
