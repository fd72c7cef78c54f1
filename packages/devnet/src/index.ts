export { freePort, isListening, waitFor } from '@rgbx/service-kit';
export { BITCOIND_SHA256, bitcoindPath, verifiedBitcoind } from './bitcoind.ts';
export { type BlockProducer, produceBlocks } from './blocks.ts';
export type { Devnet, DevnetInfo, DevnetOptions, DevnetStatus } from './devnet.ts';
export { devnetStatus, openDevnet, startDevnet, stopDevnet } from './devnet.ts';
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
} from './swap-config.ts';
