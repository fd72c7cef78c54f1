export { AddressPolicy, checkWebhookUrl, type Resolver, webhookUrlProblem } from '@rgbx/service-kit/webhooks';
export { createToken, listTokens, revokeToken } from './auth/tokens.ts';
export { type BuildCloudOptions, buildCloud, CLOUD_VERSION, type Cloud } from './cloud.ts';
export {
  type CloudConfig,
  ConfigSchema,
  ENCRYPTION_KEY_ENV,
  installedWalletNodeMain,
  loadConfig,
  requireEncryptionKey,
} from './config.ts';
export { allErrorCodes, CloudErrors, cloudEnvelope } from './errors.ts';
export { type BackendPlugin, backendResolver } from './nodes/backend.ts';
export type { NodeBackend, NodeDriver, NodeRuntime, NodeSpec, Probe } from './nodes/driver.ts';
export { LocalProcessDriver } from './nodes/local-driver.ts';
export { changeNode } from './nodes/status.ts';
export { generateOpenApi } from './openapi.ts';
export { Dispatcher, USER_AGENT } from './webhooks/dispatcher.ts';
export { SigningKeyVault } from './webhooks/key-vault.ts';
export { activateKey, addKey, keyIdOf, publishedKeys, retireKey } from './webhooks/keys.ts';
export { statusPayload } from './webhooks/outbox.ts';
