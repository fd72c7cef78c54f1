export type { BytesLike, Hex } from '../bytes.ts';
export { ChainInputError, VerificationError } from '../errors.ts';
export type { Permit2Signable, Permit2TypedData } from '../evm/permit2.ts';
export {
  isTronAddress,
  requireTronAddress,
  TRON_ADDRESS_PREFIX,
  tronAddressFromHex,
  tronAddressFromPublicKey,
  tronAddressToEvm,
  tronAddressToHex,
} from './address.ts';
export type { TronPermit2Params, VerifiedTronPermit2 } from './permit2.ts';
export {
  buildTronPermit2Message,
  buildTronPermit2TypedData,
  maskTronChainId,
  TRON_MAINNET_CHAIN_ID,
  verifyTronPermit2Signature,
} from './permit2.ts';
