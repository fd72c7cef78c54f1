/**
 * `buildCloud`: wires the database, key ring, webhook dispatcher, node supervisor and the HTTP
 * app. `main.ts` runs it as a service; tests build it in-process.
 */
import { readFileSync } from 'node:fs';
import { createServer, ErrorEnvelope, type Logger, type ServiceApp } from '@rgbx/service-kit';
import { AddressPolicy, type Resolver, systemResolver } from '@rgbx/service-kit/webhooks';
import type { Dialect } from '@rgbx/store';
import { sql } from 'kysely';
import { type CloudConfig, requireEncryptionKey } from './config.ts';
import { openCloudDatabase } from './db/open.ts';
import type { CloudDb } from './db/schema.ts';
import { cloudEnvelope } from './errors.ts';
import { registerConsole } from './http/console.ts';
import { requestLogSerializer, scrubLogFields } from './http/log-redaction.ts';
import { registerRoutes } from './http/routes.ts';
import { CloudMetrics } from './metrics.ts';
import { backendResolver } from './nodes/backend.ts';
import { Cluster } from './nodes/cluster.ts';
import type { NodeDriver } from './nodes/driver.ts';
import { createKubernetesDriver } from './nodes/k8s/index.ts';
import { LocalProcessDriver } from './nodes/local-driver.ts';
import { type NodeLockService, NodeLocks } from './nodes/locks.ts';
import { NodeManager } from './nodes/manager.ts';
import { NOTIFY_CHANNEL, PgNodeLocks } from './nodes/pg-locks.ts';
import type { StatusDeps } from './nodes/status.ts';
import { Supervisor, specOf } from './nodes/supervisor.ts';
import { Dispatcher, type DispatcherOptions } from './webhooks/dispatcher.ts';
import { SigningKeyVault } from './webhooks/key-vault.ts';
import { prepareKeyRing, SignerCache } from './webhooks/keys.ts';

export const CLOUD_VERSION = '0.1.0';

export interface BuildCloudOptions {
  logger: Logger;
  /** Replace the local process driver (e.g. a Kubernetes driver). */
  driver?: NodeDriver;
  /** The driver's kind, recorded for the other instances (default `local`, or `custom` with `driver`). */
  driverKind?: string;
  /** DNS for webhook destinations (tests inject one to simulate hostile DNS). */
  resolver?: Resolver;
  onAttempt?: DispatcherOptions['onAttempt'];
  /** The Prometheus metrics to fill (default: new ones, with Node's process metrics). */
  metrics?: CloudMetrics;
}

export interface Cloud {
  app: ServiceApp;
  db: CloudDb;
  dialect: Dialect;
  manager: NodeManager;
  supervisor: Supervisor;
  dispatcher: Dispatcher;
  /** This instance among the others on the same database. */
  cluster: Cluster;
  /** Seals and opens the signing keys' private parts (the configured encryption key). */
  vault: SigningKeyVault;
  /** Prometheus metrics (served by main.ts on `[metrics]`'s own listener, never by `app`). */
  metrics: CloudMetrics;
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
  const driverKind = opts.driverKind ?? (opts.driver ? 'custom' : cfg.backend.driver);
  const driver: NodeDriver =
    opts.driver ??
    (cfg.backend.driver === 'kubernetes'
      ? createKubernetesDriver(cfg, await backendResolver(cfg), logger.child({ component: 'kubernetes' }))
      : new LocalProcessDriver({
          walletNodeMain: cfg.walletNodeMain,
          backend: await backendResolver(cfg),
          healthTimeoutMs: n.health_timeout_ms,
        }));
  const opened = await openCloudDatabase(
    cfg.databaseUrl,
    cfg.dataDir,
    logger.child({ component: 'database' }),
  );
  const { db, dialect, close: closeDb } = opened;
  const cluster = new Cluster({
    db,
    dialect,
    logger: logger.child({ component: 'cluster' }),
    leaseMs: cfg.cluster.lease_ms,
    driver: driverKind,
  });
  // Set once the supervisor exists: notifications and claims kick it.
  let kick: (nodeId: string) => void = () => undefined;
  let locks: NodeLockService = new NodeLocks();
  try {
    const { sealed } = await prepareKeyRing(db, vault, dialect);
    if (sealed > 0)
      logger.warn({ sealed }, 'signing keys stored as plain PEM were encrypted with the configured key');
    // A second instance on one SQLite file, or one that cannot share the database, stops here.
    await cluster.join();
    if (dialect === 'postgres') {
      const pgLocks = new PgNodeLocks(cfg.databaseUrl, logger.child({ component: 'locks' }), (id) =>
        kick(id),
      );
      locks = pgLocks;
      await pgLocks.connect().catch(async (err: unknown) => {
        await cluster.leave();
        throw err;
      });
    }
  } catch (err) {
    await closeDb();
    await driver.close?.();
    throw err;
  }
  const metrics = opts.metrics ?? new CloudMetrics();
  metrics.watchDatabase(db, logger.child({ component: 'metrics' }));
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
    onDelivery: metrics.onDelivery,
    onInterrupted: metrics.onInterrupted,
  });
  const deps: StatusDeps = {
    db,
    dialect,
    maxPayloadBytes: w.max_payload_bytes,
    onEvent: () => dispatcher.wake(),
  };
  const supervisor = new Supervisor({
    deps,
    driver,
    locks,
    cluster,
    logger: logger.child({ component: 'supervisor' }),
    startTimeoutMs: n.start_timeout_ms,
    healthIntervalMs: n.health_interval_ms,
    unhealthyThreshold: n.unhealthy_threshold,
    stopGraceMs: n.stop_grace_ms,
    restartBackoffMs: n.restart_backoff_ms,
    maxRestarts: n.max_restarts,
    restartWindowMs: n.restart_window_ms,
    onRestart: metrics.onRestart,
    onFailure: metrics.onFailure,
  });
  kick = (id) => supervisor.kick(id);
  cluster.onClaimed = (ids) => {
    for (const id of ids) supervisor.kick(id);
  };
  const manager = new NodeManager({
    deps,
    locks,
    supervisor,
    cluster,
    ...(dialect === 'postgres'
      ? {
          notify: async (id: string) => {
            await sql`select pg_notify(${NOTIFY_CHANNEL}, ${id})`.execute(db);
          },
        }
      : {}),
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
  metrics.instrument(app);
  app.get('/healthcheck', { schema: { hide: true } }, async (_req, reply) => reply.code(200).send());
  registerRoutes(app, {
    db,
    manager,
    wakeDispatcher: () => dispatcher.wake(),
    ...(driver.apiUrl
      ? {
          apiUrlOf: (row: Parameters<typeof specOf>[0] & { pid: number | null }) =>
            driver.apiUrl!(specOf(row), { pid: row.pid ?? 0, port: row.port ?? 0 }),
        }
      : {}),
  });
  registerConsole(app);

  let closed = false;
  return {
    app,
    db,
    dialect,
    manager,
    supervisor,
    dispatcher,
    cluster,
    vault,
    metrics,
    startWorkers() {
      cluster.start();
      supervisor.start();
      dispatcher.start();
    },
    async close(o = {}) {
      if (closed) return;
      closed = true;
      await supervisor.stop();
      await dispatcher.stop();
      await driver.close?.();
      if (o.stopNodes ?? n.stop_on_shutdown) await supervisor.stopAllProcesses();
      // Our nodes lose their owner now: another live instance claims them at its next renewal.
      await cluster.leave().catch((err: unknown) => logger.error({ err }, 'leaving the cluster failed'));
      await locks.close?.();
      await app.close();
      await closeDb();
    },
  };
}
