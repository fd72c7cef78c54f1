/**
 * `runService`: listen, log where, and shut down cleanly on SIGTERM/SIGINT: stop accepting, let
 * in-flight requests finish, run the service's own cleanup, exit 0. A second signal or the
 * timeout exits 1 at once.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from './logger.ts';

export interface RunServiceOptions {
  /** Any Fastify instance (typically from `createServer`). */
  app: Pick<FastifyInstance, 'listen' | 'close' | 'server'>;
  host: string;
  /** 0 picks a free port. */
  port: number;
  logger: Logger;
  /** Runs after the server closed (close databases, flush queues). */
  onShutdown?: () => Promise<void>;
  /** Longest wait for a graceful stop after a signal. Default 10 000 ms. */
  shutdownTimeoutMs?: number;
  /** Install SIGTERM/SIGINT handlers. Default true. */
  handleSignals?: boolean;
  /** How the process ends after a signal. Default `process.exit`; tests may replace it. */
  exit?: (code: number) => void;
}

export interface ServiceAddress {
  host: string;
  port: number;
  /** e.g. `http://127.0.0.1:3000` (IPv6 hosts in brackets). */
  url: string;
}

export interface RunningService {
  address: ServiceAddress;
  /** Graceful stop without exiting the process (tests). Idempotent. */
  close(): Promise<void>;
}

export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

function toAddress(info: AddressInfo | string | null, fallbackHost: string): ServiceAddress {
  if (info === null || typeof info === 'string') {
    const where = info ?? fallbackHost;
    return { host: where, port: 0, url: `unix:${where}` };
  }
  const host = info.address;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return { host, port: info.port, url: `http://${urlHost}:${info.port}` };
}

export async function runService(opts: RunServiceOptions): Promise<RunningService> {
  const { app, logger } = opts;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const timeoutMs = opts.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;

  await app.listen({ host: opts.host, port: opts.port });
  const address = toAddress(app.server.address(), opts.host);
  logger.info({ url: address.url }, `listening on ${address.url}`);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // `close()` stops accepting and waits for open connections. Keep-alive sockets of requests
      // that were in flight become idle only after their response, so they are closed as they go
      // idle (Node closes idle ones only once, when close starts).
      const sweeper = setInterval(() => app.server.closeIdleConnections?.(), 50);
      sweeper.unref();
      try {
        await app.close();
      } finally {
        clearInterval(sweeper);
      }
      if (opts.onShutdown) await opts.onShutdown();
    })();
    return stopping;
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal during shutdown, exiting now');
      exit(1);
      return;
    }
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'graceful shutdown timed out, exiting');
      exit(1);
    }, timeoutMs);
    stop().then(
      () => {
        clearTimeout(timer);
        logger.info('stopped');
        exit(0);
      },
      (err: unknown) => {
        clearTimeout(timer);
        logger.error({ err }, 'shutdown failed');
        exit(1);
      },
    );
  };

  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  const handleSignals = opts.handleSignals ?? true;
  if (handleSignals) for (const s of signals) process.on(s, onSignal);
  const removeHandlers = (): void => {
    for (const s of signals) process.off(s, onSignal);
  };

  return {
    address,
    close: async () => {
      removeHandlers();
      await stop();
    },
  };
}
