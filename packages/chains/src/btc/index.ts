export type { BytesLike, Hex } from '../bytes.ts';
export { ChainInputError, VerificationError } from '../errors.ts';
export { btcToSats, satsToBtc } from './amount.ts';
export { fulfilCommitment, fulfilCommitmentScript } from './commitment.ts';
export type {
  ElectrumHeader,
  ElectrumHistoryEntry,
  ElectrumNotification,
  ElectrumOptions,
  ElectrumUtxo,
} from './electrum.ts';
export {
  ElectrumConnection,
  ElectrumServerError,
  ElectrumUnavailableError,
  electrumRequest,
  parseElectrumUrl,
  ReconnectingElectrum,
} from './electrum.ts';
export type { FundingPsbt, FundingPsbtParams, Prevout, UserInputKind, UserUtxo } from './funding.ts';
export {
  bip86OutputKey,
  buildHtlcFundingPsbt,
  CHANGE_DUST_LIMIT,
  classifyUserInput,
  estimateVsize,
  hash160,
} from './funding.ts';
export { fromReversedHex, reversedHex, scriptHash, sha256, sha256d } from './hash.ts';
export type { BtcNetwork, Htlc, HtlcParams, HtlcSpendParams, SignedTx } from './htlc.ts';
export {
  addressToScript,
  btcSignerNetwork,
  buildHtlc,
  buildHtlcClaimTx,
  buildHtlcRefundTx,
  generatePreimage,
  HTLC_NUMS_KEY,
  secretHashOf,
  TAPSCRIPT_LEAF_VERSION,
  tapBranchHash,
  tapLeafHash,
  taprootOutputKey,
  xOnlyKey,
} from './htlc.ts';
export { merkleBranch, merkleRoot, merkleRootFromBranch } from './merkle.ts';
export type {
  PsbtVerificationCode,
  VerifiedInputSignature,
  VerifiedPsbt,
  VerifyPsbtParams,
} from './psbt-verify.ts';
export { verifySignedFundingPsbt } from './psbt-verify.ts';
export type { BatchItem, BitcoindRpcOptions, LosslessValue } from './rpc.ts';
export { BitcoindRpc, BitcoindRpcError, BitcoindUnavailableError, losslessToJson } from './rpc.ts';
export type { ParsedBlock, ParsedTx, TxInput, TxOutput } from './tx.ts';
export { headerMerkleRoot, parseBlock, parseTx } from './tx.ts';
