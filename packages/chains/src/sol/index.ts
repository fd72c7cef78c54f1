export type { BytesLike, Hex } from '../bytes.ts';
export type { RpcReadErrorCode } from '../errors.ts';
export { ChainInputError, RpcReadError, VerificationError } from '../errors.ts';
export type { CosignTransaction, CosignTxParams, CosignVerificationCode, VerifiedCosign } from './cosign.ts';
export {
  buildCosignTransaction,
  COSIGN_POSITIONS,
  MEMO_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS,
  verifyCosignTransaction,
} from './cosign.ts';
export type { SolanaReadOptions, SolanaTx } from './reads.ts';
export { solanaLatestBlockhash, solanaSlot, solanaTransaction } from './reads.ts';
export type { DecodedSolanaTx } from './transaction.ts';
export { decodeSolanaTransaction, systemTransfers } from './transaction.ts';
