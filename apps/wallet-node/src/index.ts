export { APP_NAME, APP_VERSION, buildWalletNode, type WalletNode } from './app.ts';
export { NETWORKS, WalletNodeConfig } from './config.ts';
export { CODES, E as WalletNodeErrors, envelope } from './errors.ts';
export { MISSING_HEADERS_TEXT, readIdentity, type WalletIdentity } from './identity.ts';
