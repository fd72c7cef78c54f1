export { identityKeys, openWallet, type RunningResolver, SERVICE_VERSION, startResolver } from './app.ts';
export { loadConfig, type ResolverConfig, ResolverConfigSchema } from './config.ts';
export { type CrashPoint, FillEngine } from './engine.ts';
export { convertLots, priceQuote, Reservations } from './pricing.ts';
export type { ChainWallet, SignedTx, TxState } from './wallets/wallet.ts';
