/**
 * `buildSwapApp`: the swap service as a Fastify app (not listening), for `main.ts`, tests, the
 * OpenAPI generator and benchmarks. Both surfaces, the resolver API and `/_swagger` share one store,
 * one lifecycle and one error envelope.
 */
import { createLogger, createServer, type Logger, type ServiceApp } from '@rgbx/service-kit';
import type { Dialect } from '@rgbx/store';
import { type ChainGateway, createChainGateway } from './chains/chain-gateway.ts';
import { createVerifier, type SignatureVerifier } from './chains/verify-pool.ts';
import type { SwapConfig } from './config.ts';
import type { SwapContext } from './context.ts';
import { Catalog } from './domain/catalog.ts';
import type { EventFeed } from './domain/event-feed.ts';
import { transitionTableMarkdown } from './domain/lifecycle.ts';
import { PreimageVault } from './domain/preimage-vault.ts';
import { buildResolvers, type Resolver, rfqStatsOf } from './domain/resolvers.ts';
import { RfqStats } from './domain/rfq-client.ts';
import { ErrorEnvelopeSchema, errorTable, swapEnvelope } from './errors.ts';
import { registerEventFeeds } from './http/events.ts';
import { createHealthCheck, type HealthCheck } from './http/health.ts';
import { registerResolverApi } from './http/resolver-api.ts';
import { registerSurfaces } from './http/routes.ts';
import { SwapMetrics } from './metrics.ts';
import type { SwapDb } from './store/database.ts';

export const SERVICE_VERSION = '0.1.0';

export interface BuildSwapAppOptions {
  config: SwapConfig;
  db: SwapDb;
  dialect: Dialect;
  logger?: Logger;
  /** Default: Electrum + JSON-RPC from the configuration. */
  gateway?: ChainGateway;
  /** Default: `swap.verify_threads` worker threads (inline for 0). */
  verifier?: SignatureVerifier;
  /** Default: `Date.now`. */
  now?: () => number;
  /** Default: the reference resolvers of the configuration. */
  resolvers?: Resolver[];
  /**
   * Default: a new registry with Node's process metrics, or, with `[metrics] enabled = false`, a disabled
   * one (no hook, nothing recorded).
   */
  metrics?: SwapMetrics;
}

export interface SwapApp {
  app: ServiceApp;
  ctx: SwapContext;
  health: HealthCheck;
  /** The SSE event feeds' poller and streams. */
  events: EventFeed;
}

function description(): string {
  const codes = errorTable()
    .map((r) => `| ${r.code} | ${r.type} | ${r.status} | ${r.description} |`)
    .join('\n');
  return [
    'Intent-based swap service. Surface A: root paths, camelCase. Surface B: `/affiliate/v1`, snake_case (Hotpot affiliate API).',
    'Resolver API: `/resolver/v1`. Every route needs `X-API-Key`.',
    'Event feeds (Server-Sent Events): `GET /events`, `GET /affiliate/v1/events`, `GET /resolver/v1/events`.',
    '',
    'Errors: `{code, type, message, details?}`.',
    '',
    '| code | type | HTTP | meaning |',
    '|---|---|---|---|',
    codes,
    '',
    'Lifecycle:',
    '',
    transitionTableMarkdown(),
  ].join('\n');
}

export function buildSwapApp(opts: BuildSwapAppOptions): SwapApp {
  const logger = opts.logger ?? createLogger({ name: 'swap', level: 'silent' });
  const config = opts.config;
  const resolvers = opts.resolvers ?? buildResolvers(config.resolvers, { stats: new RfqStats() });
  const metrics = opts.metrics ?? new SwapMetrics({ enabled: config.metrics.enabled });
  const ctx: SwapContext = {
    db: opts.db,
    dialect: opts.dialect,
    config,
    catalog: new Catalog(config.networks, config.tokens),
    resolvers,
    rfqStats: rfqStatsOf(resolvers),
    vault: new PreimageVault(config.preimageKey),
    gateway:
      opts.gateway ??
      createChainGateway({
        ...(config.bitcoin.electrum_url ? { electrumUrl: config.bitcoin.electrum_url } : {}),
        electrumTimeoutMs: config.bitcoin.electrum_timeout_ms,
      }),
    verifier: opts.verifier ?? createVerifier(config.swap.verify_threads),
    now: opts.now ?? Date.now,
    logger,
    metrics,
  };
  if (metrics.enabled) ctx.rfqStats.listener = metrics.onRfqOutcome;
  metrics.watchIntents(ctx.db, logger);
  const app = createServer({
    name: 'swap',
    version: SERVICE_VERSION,
    logger,
    bodyLimit: config.body_limit_bytes,
    // A JSON body is taken as typed: `"0x10"` is not a number and `true` not a network id.
    strictBody: true,
    envelope: swapEnvelope,
    swagger: {
      title: 'rgbx swap service',
      description: description(),
      // Every route of every surface takes an API key in X-API-Key (tenant keys; resolver keys on /resolver/v1).
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      security: [{ ApiKey: [] }],
    },
  });
  app.addSchema(ErrorEnvelopeSchema);
  metrics.instrument(app);
  const health = createHealthCheck(ctx);
  registerSurfaces(app, ctx, health);
  registerResolverApi(app, ctx);
  const events = registerEventFeeds(app, ctx);
  app.addHook('onClose', async () => {
    health.markStopping();
    ctx.gateway.close();
    await ctx.verifier.close();
  });
  return { app, ctx, health, events };
}
