export { btcToSats, satsToBtc } from './amount.ts';
export { fromReversedHex, reversedHex, scriptHash, sha256, sha256d } from './hash.ts';
export { merkleBranch, merkleRoot, merkleRootFromBranch } from './merkle.ts';
export type { BatchItem, BitcoindRpcOptions, LosslessValue } from './rpc.ts';
export { BitcoindRpc, BitcoindRpcError, BitcoindUnavailableError, losslessToJson } from './rpc.ts';
export type { ParsedBlock, ParsedTx, TxInput, TxOutput } from './tx.ts';
export { headerMerkleRoot, parseBlock, parseTx } from './tx.ts';
