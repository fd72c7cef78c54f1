/** What the domain functions share: store, configuration, chains, clock, logger. */
import type { Logger } from '@rgbx/service-kit';
import type { Dialect } from '@rgbx/store';
import type { ChainGateway } from './chains/chain-gateway.ts';
import type { SignatureVerifier } from './chains/verify-pool.ts';
import type { SwapConfig } from './config.ts';
import type { Catalog } from './domain/catalog.ts';
import type { PreimageVault } from './domain/preimage-vault.ts';
import type { Resolver } from './domain/resolvers.ts';
import type { RfqStats } from './domain/rfq-client.ts';
import type { SwapMetrics } from './metrics.ts';
import type { SwapDb } from './store/database.ts';

export interface SwapContext {
  db: SwapDb;
  dialect: Dialect;
  config: SwapConfig;
  catalog: Catalog;
  resolvers: readonly Resolver[];
  /** The remote resolvers' RFQ counters per resolver and outcome (logged; for metrics). */
  rfqStats: RfqStats;
  vault: PreimageVault;
  gateway: ChainGateway;
  /** Permit2 signature checks (worker threads unless `swap.verify_threads` is 0). */
  verifier: SignatureVerifier;
  /** Milliseconds since the epoch (injected so tests can move time). */
  now: () => number;
  logger: Logger;
  /** Prometheus metrics (metrics.ts), served by main.ts on `[metrics]`'s own listener. */
  metrics: SwapMetrics;
}

export function resolverById(ctx: SwapContext, id: string): Resolver | undefined {
  return ctx.resolvers.find((r) => r.id === id);
}
