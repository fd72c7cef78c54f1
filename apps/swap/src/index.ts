export { type BuildSwapAppOptions, buildSwapApp, SERVICE_VERSION, type SwapApp } from './app.ts';
export { type ChainGateway, createChainGateway } from './chains/chain-gateway.ts';
export { ConfigSchema, loadConfig, type SwapConfig } from './config.ts';
export { type IntentStatus, STATUSES, TRANSITIONS, transitionTableMarkdown } from './domain/lifecycle.ts';
export { type Scheduler, startScheduler } from './domain/scheduler.ts';
export { E as SwapErrors, ERROR_CODES, errorTable } from './errors.ts';
export { generateOpenApi, renderOpenApi } from './openapi.ts';
export {
  type ApiKeyInfo,
  type CreatedApiKey,
  createApiKey,
  listApiKeys,
  revokeApiKey,
} from './store/api-keys.ts';
export { migrations, openSwapDatabase, type SwapDb } from './store/database.ts';
