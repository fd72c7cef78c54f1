export { type ApiKeyInfo, type CreatedApiKey, createApiKey, listApiKeys, revokeApiKey } from './api-keys.ts';
export { type BuildSwapAppOptions, buildSwapApp, SERVICE_VERSION, type SwapApp } from './app.ts';
export { type ChainGateway, createChainGateway } from './chain-gateway.ts';
export { ConfigSchema, loadConfig, type SwapConfig } from './config.ts';
export { migrations, openSwapDatabase, type SwapDb } from './database.ts';
export { E as SwapErrors, ERROR_CODES, errorTable } from './errors.ts';
export { type IntentStatus, STATUSES, TRANSITIONS, transitionTableMarkdown } from './lifecycle.ts';
export { generateOpenApi, renderOpenApi } from './openapi.ts';
export { type Scheduler, startScheduler } from './scheduler.ts';
