export { PERMIT2_DIGEST_PROBE, TEST_TOKEN } from './artifacts.ts';
export type { EvmDevnode, EvmDevnodeOptions } from './node.ts';
export { devnodePrivateKey, startEvmDevnode } from './node.ts';
export { approveErc20, deployPermit2DigestProbe, deployTestToken } from './token.ts';
