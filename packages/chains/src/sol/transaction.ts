/**
 * Reading executed Solana transactions (settlement verification): the wire bytes a node returns
 * (`getTransaction` with `encoding: "base64"`) decoded (by the shared `@rgbx/codecs/solana`) into
 * signatures, the message bytes, the static account keys and the instructions, plus the System-program
 * transfers they contain.
 */
import { decodeSolanaMessage, decodeSolanaWire, SolanaCodecError, solanaBase58 } from '@rgbx/codecs/solana';
import { VerificationError } from '../errors.ts';

export interface DecodedSolanaTx {
  /** Base58 signatures in position order (signature 0 is the transaction id). */
  signatures: string[];
  messageBytes: Uint8Array;
  /** Static account keys (base58), signers first. */
  accountKeys: string[];
  numSigners: number;
  instructions: { programId: string; accounts: string[]; data: Uint8Array }[];
  /** True when the message loads accounts from lookup tables (their keys are not in `accountKeys`). */
  usesLookupTables: boolean;
}

/**
 * Decodes wire bytes (compact-u16 signature count, 64-byte signatures, legacy or v0 message).
 * @throws VerificationError `malformed_transaction` when the bytes do not parse
 */
export function decodeSolanaTransaction(wire: Uint8Array): DecodedSolanaTx {
  let split: ReturnType<typeof decodeSolanaWire>;
  try {
    split = decodeSolanaWire(wire);
  } catch (err) {
    if (err instanceof SolanaCodecError)
      throw new VerificationError('malformed_transaction', `not a Solana wire transaction: ${err.message}`);
    throw err;
  }
  let message: ReturnType<typeof decodeSolanaMessage>;
  try {
    message = decodeSolanaMessage(split.messageBytes);
  } catch (err) {
    if (err instanceof SolanaCodecError)
      throw new VerificationError('malformed_transaction', `the message does not decode: ${err.message}`);
    throw err;
  }
  const keys = message.accountKeys;
  return {
    signatures: split.signatures.map(solanaBase58),
    messageBytes: Uint8Array.from(split.messageBytes),
    accountKeys: keys,
    numSigners: message.header.numRequiredSignatures,
    instructions: message.instructions.map((ix) => ({
      programId: keys[ix.programIdIndex] ?? '',
      accounts: ix.accounts.map((i) => keys[i] ?? ''),
      data: ix.data,
    })),
    usesLookupTables: message.addressTableLookups.length > 0,
  };
}

const SYSTEM_PROGRAM = '11111111111111111111111111111111';

/** System-program `Transfer` instructions (index 2: u32 LE tag, u64 LE lamports; accounts [from, to]). */
export function systemTransfers(
  tx: DecodedSolanaTx,
): { index: number; from: string; to: string; lamports: bigint }[] {
  const out: { index: number; from: string; to: string; lamports: bigint }[] = [];
  tx.instructions.forEach((ix, index) => {
    if (ix.programId !== SYSTEM_PROGRAM || ix.data.length !== 12 || ix.accounts.length < 2) return;
    const view = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.byteLength);
    if (view.getUint32(0, true) !== 2) return;
    out.push({ index, from: ix.accounts[0]!, to: ix.accounts[1]!, lamports: view.getBigUint64(4, true) });
  });
  return out;
}
