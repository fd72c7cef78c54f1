export type { BytesLike, Hex } from '../bytes.ts';
export { ChainInputError, VerificationError } from '../errors.ts';
export type { CosignTransaction, CosignTxParams, CosignVerificationCode, VerifiedCosign } from './cosign.ts';
export {
  buildCosignTransaction,
  COSIGN_POSITIONS,
  MEMO_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS,
  verifyCosignTransaction,
} from './cosign.ts';
export type { DecodedSolanaTx } from './transaction.ts';
export { decodeSolanaTransaction, systemTransfers } from './transaction.ts';
