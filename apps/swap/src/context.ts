/** What the domain functions share: store, configuration, chains, clock, logger. */
import type { Logger } from '@rgbx/service-kit';
import type { Dialect } from '@rgbx/store';
import type { Catalog } from './catalog.ts';
import type { ChainGateway } from './chain-gateway.ts';
import type { SwapConfig } from './config.ts';
import type { SwapDb } from './database.ts';
import type { PreimageVault } from './preimage-vault.ts';
import type { Resolver } from './resolvers.ts';

export interface SwapContext {
  db: SwapDb;
  dialect: Dialect;
  config: SwapConfig;
  catalog: Catalog;
  resolvers: readonly Resolver[];
  vault: PreimageVault;
  gateway: ChainGateway;
  /** Milliseconds since the epoch (injected so tests can move time). */
  now: () => number;
  logger: Logger;
}

export function resolverById(ctx: SwapContext, id: string): Resolver | undefined {
  return ctx.resolvers.find((r) => r.id === id);
}
