export type { BytesLike, Hex } from '../bytes.ts';
export type { RpcReadErrorCode } from '../errors.ts';
export { ChainInputError, RpcReadError, VerificationError } from '../errors.ts';
export type { EscrowDepositParams } from './escrow.ts';
export {
  ESCROW_CALL_ABI,
  escrowClaimCalldata,
  escrowDepositArgs,
  escrowDepositCalldata,
  escrowRefundCalldata,
} from './escrow.ts';
export type {
  EvmAddress,
  Permit2Domain,
  Permit2Message,
  Permit2Params,
  Permit2Signable,
  Permit2TypedData,
  Permit2TypedDataJson,
  SwapIntentInput,
  SwapIntentWitness,
} from './permit2.ts';
export {
  buildPermit2Message,
  buildPermit2TypedData,
  buildSwapIntentWitness,
  destinationIdHash,
  PERMIT2_ADDRESS,
  PERMIT2_SWAP_TYPES,
  permit2Digest,
  permit2TypedDataFromJson,
  permit2TypedDataToJson,
  permit2WitnessTypeString,
  requireEvmAddress,
  SWAP_INTENT_FIELDS,
  SWAP_INTENT_TYPE_NAME,
  SWAP_INTENT_WITNESS_TYPE_STRING,
  swapIntentWitnessHash,
  uuidToBytes32,
} from './permit2.ts';
export type { EvmLog, EvmReadOptions, EvmReceipt, EvmTx } from './reads.ts';
export { evmBlockNumber, evmBlockTime, evmReceipt, evmTransaction, readErc20Allowance } from './reads.ts';
export type { RecoverableSignature, VerifiedPermit2 } from './signature.ts';
export {
  normalizeEvmSignature,
  parseRecoverableSignature,
  serializeRecoverableSignature,
  verifyPermit2Signature,
} from './signature.ts';
