export { freePort, isListening, waitFor } from '@rgbx/service-kit';
export { BITCOIND_SHA256, bitcoindPath, verifiedBitcoind } from './bitcoind.ts';
export { type BlockProducer, produceBlocks } from './blocks.ts';
export type { Devnet, DevnetInfo, DevnetOptions, DevnetStatus } from './devnet.ts';
export { devnetStatus, openDevnet, startDevnet, stopDevnet } from './devnet.ts';
export { type Market, type MarketOptions, RESOLVER_MAIN, SWAP_MAIN, startMarket } from './market.ts';
export {
  DEVNET_RESOLVER_API_KEY,
  DEVNET_RFQ_SECRET,
  devnetResolverBtcAddress,
  devnetResolverKey,
  type FundDevnetResolverOptions,
  fundDevnetResolver,
  type ResolverDevnetOptions,
  writeResolverDevnetFiles,
} from './resolver-config.ts';
export { type ServiceProcess, type SpawnServiceOptions, spawnService, walletNodeToml } from './services.ts';
export {
  DEVNET_RESOLVER,
  defaultSwapRates,
  SOL_MINT,
  SWAP_NET,
  type SwapDevnetOptions,
  type SwapDevnetRate,
  swapDevnetConfig,
  swapDevnetTemplateToml,
  swapDevnetToml,
  type TomlValue,
} from './swap-config.ts';
