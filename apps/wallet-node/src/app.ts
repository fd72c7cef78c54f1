import { join } from 'node:path';
import cors from '@fastify/cors';
import { SCHEMA_KEYWORDS, WALLET_NODE_SCHEMAS } from '@rgbx/contracts/wallet-node';
import { createServer, type HttpTimeouts, type Logger, type ServiceApp } from '@rgbx/service-kit';
import { AddressPolicy, systemResolver } from '@rgbx/service-kit/webhooks';
import type { WalletNodeConfig } from './config.ts';
import { envelope } from './errors.ts';
import { WalletEvents } from './events/hub.ts';
import { registerEventRoutes } from './events/routes.ts';
import { registerWebhookRoutes } from './events/webhook-routes.ts';
import { retryCappedAt, WalletWebhooks } from './events/webhooks.ts';
import { IdentityCache, MISSING_HEADERS_TEXT } from './identity.ts';
import { installLosslessJson, normalizeBodyAliases } from './json.ts';
import { WalletNodeMetrics } from './metrics.ts';
import { ChildPool } from './pool.ts';
import { registerRoutes } from './routes/index.ts';
import { WalletRegistry } from './wallets.ts';

export const APP_NAME = 'rgbx-wallet-node';
export const APP_VERSION = '0.1.0';

export interface WalletNode {
  app: ServiceApp;
  pool: ChildPool;
  registry: WalletRegistry;
  /** Its metrics when `[metrics] enabled` (served by main.ts); undefined: nothing hooked or counted. */
  metrics: WalletNodeMetrics | undefined;
  /** Starts the rgb-lib children and background timers (call before listening). */
  start(): Promise<void>;
  /** Drops every wallet and stops the children. */
  close(): Promise<void>;
}

/** `[api] *_timeout_secs` as the kit's timeouts (ms); keys not set keep the kit's defaults. */
function httpTimeouts(api: WalletNodeConfig['api']): Partial<HttpTimeouts> {
  const ms = (secs: number | undefined) => (secs === undefined ? undefined : secs * 1000);
  return {
    requestTimeout: ms(api.request_timeout_secs),
    headersTimeout: ms(api.headers_timeout_secs),
    connectionTimeout: ms(api.connection_timeout_secs),
    keepAliveTimeout: ms(api.keep_alive_timeout_secs),
  };
}

/** Request headers a browser may send when CORS is on: the reference's defaults plus the wallet identity. */
export const CORS_DEFAULT_HEADERS = [
  'authorization',
  'accept',
  'content-type',
  'sentry-trace',
  'baggage',
  'x-api-key',
  'xpub-van',
  'xpub-col',
  'master-fingerprint',
  // The SDK's events() in a browser resumes GET /wallet/events with this header (EventSource needs no preflight).
  'last-event-id',
];

const WALLET_PATH = /^\/(wallet\/|blindreceive(\?|$))/;

/**
 * Builds the wallet node: the HTTP app (never loads rgb-lib) and its pool of rgb-lib children.
 *
 * @example
 * const node = buildWalletNode(config, logger);
 * await node.start();
 * await node.app.listen({ port: 3000 });
 */
export function buildWalletNode(cfg: WalletNodeConfig, logger: Logger): WalletNode {
  const app = createServer({
    name: APP_NAME,
    version: APP_VERSION,
    logger,
    bodyLimit: cfg.api.body_limit_bytes,
    timeouts: httpTimeouts(cfg.api),
    envelope,
    strictTypes: true,
    schemaKeywords: SCHEMA_KEYWORDS,
    // One access-log line per request (method, url, status, time): short calls at hundreds per second.
    requestLog: 'completed',
    swagger: {
      title: 'rgbx wallet node',
      description:
        'Watch-only RGB wallets on rgb-lib. Wallet endpoints need the xpub-van, xpub-col and master-fingerprint headers. ' +
        'Errors: {error:{code,status,message,details}}; see the README for the code table.',
      routePrefix: '/_swagger',
    },
  });
  for (const s of WALLET_NODE_SCHEMAS) app.addSchema(s);
  // Metrics off (or a configuration built in code without [metrics]): no hook, no timed host, nothing counted.
  const metrics = cfg.metrics?.enabled ? new WalletNodeMetrics() : undefined;
  metrics?.instrument(app);
  if (cfg.api.enable_cors) {
    // As the reference: "" or "*" allows any origin (no credentials); one named origin gets credentials.
    const any = cfg.api.cors_domain === '' || cfg.api.cors_domain === '*';
    app.register(cors, {
      origin: any ? '*' : cfg.api.cors_domain,
      credentials: !any,
      methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      allowedHeaders: [
        ...new Set([...CORS_DEFAULT_HEADERS, ...cfg.api.allowed_headers.map((h) => h.toLowerCase())]),
      ],
      exposedHeaders: ['x-request-id', 'deprecation', 'link', 'content-disposition'],
      maxAge: 3600,
    });
  }
  installLosslessJson(app, cfg.api.body_limit_bytes);

  const pool = ChildPool.forConfig(
    cfg.wallet,
    metrics ? (call, secs, ok) => metrics.rgbCall(call, secs, ok) : undefined,
  );
  const registry = new WalletRegistry(cfg.wallet, pool, logger);
  if (metrics) {
    registry.metrics = metrics;
    metrics.watch(pool, registry, cfg.wallet.data_dir);
  }
  const events = new WalletEvents({
    retentionMs: (cfg.wallet.events_retention_secs ?? 7 * 86_400) * 1000,
    log: logger,
  });
  events.attach(registry);
  // Each wallet's webhook (POST /wallet/webhook): its event log is the outbox.
  const webhooks = new WalletWebhooks({
    dataDir: cfg.wallet.data_dir,
    ...(cfg.wallet.webhook_url === undefined ? {} : { defaultUrl: cfg.wallet.webhook_url }),
    keyFile: cfg.wallet.webhook_signing_key_file ?? join(cfg.wallet.data_dir, '.webhook-key.pem'),
    policy: new AddressPolicy({
      allowCidrs: cfg.wallet.webhook_allow_cidrs ?? [],
      allowHttp: cfg.wallet.webhook_allow_http ?? false,
    }),
    resolver: systemResolver,
    timeoutMs: (cfg.wallet.webhook_timeout_secs ?? 10) * 1000,
    maxPendingEvents: cfg.wallet.webhook_max_pending_events ?? 10_000,
    retry: retryCappedAt((cfg.wallet.webhook_max_retry_secs ?? 300) * 1000),
    events,
    log: logger,
    ...(metrics ? { onAttempt: (ok: boolean) => metrics.webhookAttempt(ok) } : {}),
  });

  // Headers before body, as the reference: a missing header is a 401 even when the body is bad. Callback hooks
  // (no promise per request); the validated identities of recent header triples are cached (IdentityCache).
  const identities = new IdentityCache(cfg.wallet.network);
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('cache-control', 'no-store');
    // The matched route pattern, not the raw URL: `/%77allet/…` or an absolute-form URL cannot dodge the check.
    const route = req.routeOptions.url;
    // Decoding an invoice and generating keys read no wallet: the BTCPay plugin calls them without the identity
    // headers.
    // GET /wallet/events reads its identity itself (headers, or query parameters for a browser's EventSource).
    if (
      route === undefined ||
      req.method !== 'POST' ||
      !WALLET_PATH.test(route) ||
      route === '/wallet/decodergbinvoice' ||
      route === '/wallet/generate_keys'
    ) {
      done();
      return;
    }
    const id = identities.read(req.headers); // throws INVALID_HEADER (400) for malformed values
    if (!id) {
      reply.code(401).type('text/plain; charset=utf-8').send(MISSING_HEADERS_TEXT);
      return;
    }
    req.walletIdentity = id;
    done();
  });

  // A body route posted with an empty body (no content type, or an empty one of any type) gets `{}`: its
  // required fields then fail by name, optional ones take their defaults.
  // Then the legacy spellings each body schema lists become its snake_case names (one field map: the schema).
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.body === undefined && req.routeOptions.schema?.body !== undefined) req.body = {};
    try {
      normalizeBodyAliases(req);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });

  registerRoutes(app, {
    cfg,
    registry,
    version: {
      app: APP_NAME,
      version: APP_VERSION,
      build: process.env.GIT_VERSION ?? 'n/a',
      commit: process.env.GIT_COMMIT ?? 'n/a',
    },
  });
  const streams = registerEventRoutes(app, {
    registry,
    events,
    identities,
    heartbeatMs: (cfg.wallet.events_heartbeat_secs ?? 15) * 1000,
    maxStreamsPerWallet: cfg.wallet.events_max_streams_per_wallet ?? 8,
  });
  registerWebhookRoutes(app, { registry, webhooks, identities });
  metrics?.watchEvents(webhooks, streams);
  // Open event streams end before the server waits for its connections.
  app.addHook('preClose', async () => streams.close());
  // The spec's document path, next to the kit's /_swagger/json and /_swagger/yaml.
  const swaggerOf = app as unknown as { swagger(o: { yaml: true }): string };
  app.get('/_swagger/swagger.yaml', { schema: { hide: true } as object }, async (_req, reply) =>
    reply.type('application/yaml; charset=utf-8').send(swaggerOf.swagger({ yaml: true })),
  );

  return {
    app,
    pool,
    registry,
    metrics,
    async start() {
      await pool.start();
      await webhooks.start();
      registry.startBackground();
    },
    async close() {
      await webhooks.close();
      await registry.close();
      await pool.close();
    },
  };
}
