/**
 * `buildCloud`: wires the database, key ring, webhook dispatcher, node supervisor and the HTTP
 * app. `main.ts` runs it as a service; tests build it in-process.
 */
import { readFileSync } from 'node:fs';
import { createServer, ErrorEnvelope, type Logger, type ServiceApp } from '@rgbx/service-kit';
import type { Dialect } from '@rgbx/store';
import { type CloudConfig, requireEncryptionKey } from './config.ts';
import { openCloudDatabase } from './db/open.ts';
import type { CloudDb } from './db/schema.ts';
import { cloudEnvelope } from './errors.ts';
import { registerConsole } from './http/console.ts';
import { requestLogSerializer, scrubLogFields } from './http/log-redaction.ts';
import { registerRoutes } from './http/routes.ts';
import { backendResolver } from './nodes/backend.ts';
import type { NodeDriver } from './nodes/driver.ts';
import { LocalProcessDriver } from './nodes/local-driver.ts';
import { NodeLocks } from './nodes/locks.ts';
import { NodeManager } from './nodes/manager.ts';
import type { StatusDeps } from './nodes/status.ts';
import { Supervisor } from './nodes/supervisor.ts';
import { Dispatcher, type DispatcherOptions } from './webhooks/dispatcher.ts';
import { SigningKeyVault } from './webhooks/key-vault.ts';
import { prepareKeyRing, SignerCache } from './webhooks/keys.ts';
import { AddressPolicy, type Resolver, systemResolver } from './webhooks/ssrf.ts';

export const CLOUD_VERSION = '0.1.0';

export interface BuildCloudOptions {
  logger: Logger;
  /** Replace the local process driver (e.g. a Kubernetes driver). */
  driver?: NodeDriver;
  /** DNS for webhook destinations (tests inject one to simulate hostile DNS). */
  resolver?: Resolver;
  onAttempt?: DispatcherOptions['onAttempt'];
}

export interface Cloud {
  app: ServiceApp;
  db: CloudDb;
  dialect: Dialect;
  manager: NodeManager;
  supervisor: Supervisor;
  dispatcher: Dispatcher;
  /** Seals and opens the signing keys' private parts (the configured encryption key). */
  vault: SigningKeyVault;
  /** Starts the supervisor and the dispatcher (the HTTP app is listened on by the caller). */
  startWorkers(): void;
  /** Stops workers (and node processes with `stopNodes`), then closes the database. */
  close(opts?: { stopNodes?: boolean }): Promise<void>;
}

export async function buildCloud(cfg: CloudConfig, opts: BuildCloudOptions): Promise<Cloud> {
  // Before anything is opened: no encryption key, no start (a ConfigError naming the key).
  const vault = new SigningKeyVault(requireEncryptionKey(cfg));
  const logger = opts.logger;
  const n = cfg.nodes;
  // Where nodes point, before anything is opened: a configured plug-in that does not load is a
  // ConfigError naming `backend.plugin`.
  const driver =
    opts.driver ??
    new LocalProcessDriver({
      walletNodeMain: cfg.walletNodeMain,
      backend: await backendResolver(cfg),
      healthTimeoutMs: n.health_timeout_ms,
    });
  const opened = await openCloudDatabase(
    cfg.databaseUrl,
    cfg.dataDir,
    logger.child({ component: 'database' }),
  );
  const { db, dialect, close: closeDb } = opened;
  try {
    const { sealed } = await prepareKeyRing(db, vault, dialect);
    if (sealed > 0)
      logger.warn({ sealed }, 'signing keys stored as plain PEM were encrypted with the configured key');
  } catch (err) {
    await closeDb();
    throw err;
  }
  const w = cfg.webhooks;
  const policy = new AddressPolicy({ allowCidrs: w.allow_cidrs, allowHttp: w.allow_http });
  const resolver = opts.resolver ?? systemResolver;
  const dispatcher = new Dispatcher({
    db,
    signer: new SignerCache(db, vault),
    policy,
    resolver,
    retry: { scheduleMs: w.retry_schedule_ms, jitter: w.jitter, giveUpAfterMs: w.give_up_after_ms },
    connectTimeoutMs: w.connect_timeout_ms,
    requestTimeoutMs: w.request_timeout_ms,
    responseSnippetBytes: w.response_snippet_bytes,
    concurrency: w.concurrency,
    pollIntervalMs: w.poll_interval_ms,
    signThreads: w.sign_threads,
    retentionMs: w.retention_days * 86_400_000,
    ...(w.extra_ca_file ? { extraCa: readFileSync(w.extra_ca_file, 'utf8') } : {}),
    logger: logger.child({ component: 'webhooks' }),
    ...(opts.onAttempt ? { onAttempt: opts.onAttempt } : {}),
  });
  const deps: StatusDeps = {
    db,
    dialect,
    maxPayloadBytes: w.max_payload_bytes,
    onEvent: () => dispatcher.wake(),
  };
  const locks = new NodeLocks();
  const supervisor = new Supervisor({
    deps,
    driver,
    locks,
    logger: logger.child({ component: 'supervisor' }),
    startTimeoutMs: n.start_timeout_ms,
    healthIntervalMs: n.health_interval_ms,
    unhealthyThreshold: n.unhealthy_threshold,
    stopGraceMs: n.stop_grace_ms,
    restartBackoffMs: n.restart_backoff_ms,
    maxRestarts: n.max_restarts,
    restartWindowMs: n.restart_window_ms,
  });
  const manager = new NodeManager({
    deps,
    locks,
    supervisor,
    policy,
    resolver,
    resolveTimeoutMs: w.connect_timeout_ms,
    dataDir: cfg.dataDir,
    networks: n.networks,
    maxPerAccount: n.max_per_account,
  });

  const app = createServer({
    name: 'cloud',
    version: CLOUD_VERSION,
    // Request lines log the URL with query values (a pasted `?token=…`) and token-shaped parts
    // redacted; other fields (a 404's reason names the path) are scrubbed of tokens.
    logger: logger.child(
      {},
      {
        serializers: { req: requestLogSerializer as (v: unknown) => unknown },
        formatters: { log: scrubLogFields },
      },
    ),
    bodyLimit: cfg.api.body_limit_bytes,
    timeouts: {
      requestTimeout: cfg.api.request_timeout_ms,
      headersTimeout: cfg.api.headers_timeout_ms,
      connectionTimeout: cfg.api.connection_timeout_ms,
      keepAliveTimeout: cfg.api.keep_alive_timeout_ms,
    },
    // A JSON body is taken as typed: `true` is not a name, `["regtest"]` not a network.
    strictBody: true,
    envelope: cloudEnvelope,
    swagger: { title: 'rgbx cloud API', description: 'Hosted wallet nodes with signed status webhooks' },
  });
  app.addSchema(ErrorEnvelope.schema);
  app.get('/healthcheck', { schema: { hide: true } }, async (_req, reply) => reply.code(200).send());
  registerRoutes(app, { db, manager, wakeDispatcher: () => dispatcher.wake() });
  registerConsole(app);

  let closed = false;
  return {
    app,
    db,
    dialect,
    manager,
    supervisor,
    dispatcher,
    vault,
    startWorkers() {
      supervisor.start();
      dispatcher.start();
    },
    async close(o = {}) {
      if (closed) return;
      closed = true;
      await supervisor.stop();
      await dispatcher.stop();
      if (o.stopNodes ?? n.stop_on_shutdown) await supervisor.stopAllProcesses();
      await app.close();
      await closeDb();
    },
  };
}
