export { PERMIT2_DIGEST_PROBE, SIGNATURE_TRANSFER, SWAP_ESCROW, TEST_TOKEN } from './artifacts.ts';
export type { EscrowDepositParams } from './escrow.ts';
export {
  deploySwapContracts,
  deploySwapDevnet,
  escrowClaim,
  escrowDeposit,
  escrowRefund,
  SWAP_ESCROW_EVENTS,
} from './escrow.ts';
export type { EvmDevnode, EvmDevnodeOptions } from './node.ts';
export { devnodePrivateKey, startEvmDevnode } from './node.ts';
export { approveErc20, deployPermit2DigestProbe, deployTestToken } from './token.ts';
