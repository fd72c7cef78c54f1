/**
 * Reading executed Solana transactions (settlement verification): the wire bytes a node returns
 * (`getTransaction` with `encoding: "base64"`) decoded into signatures, the message bytes, the static
 * account keys and the instructions, plus the System-program transfers they contain.
 */
import { getBase58Decoder, getCompiledTransactionMessageDecoder } from '@solana/kit';
import { VerificationError } from '../errors.ts';
import { parseWireBytes } from './cosign.ts';

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
  const parsed = parseWireBytes(wire);
  if (!parsed) throw new VerificationError('malformed_transaction', 'not a Solana wire transaction');
  let compiled: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
  try {
    compiled = getCompiledTransactionMessageDecoder().decode(parsed.message);
  } catch (err) {
    throw new VerificationError(
      'malformed_transaction',
      `the message does not decode: ${(err as Error).message}`,
    );
  }
  if (!('instructions' in compiled))
    throw new VerificationError('malformed_transaction', 'only legacy and v0 messages are read', {
      received: `version ${String(compiled.version)}`,
    });
  const b58 = getBase58Decoder();
  const keys = compiled.staticAccounts.map(String);
  const lookups = 'addressTableLookups' in compiled ? (compiled.addressTableLookups ?? []) : [];
  return {
    signatures: parsed.signatures.map((s) => b58.decode(s)),
    messageBytes: Uint8Array.from(parsed.message),
    accountKeys: keys,
    numSigners: compiled.header.numSignerAccounts,
    instructions: compiled.instructions.map((ix) => ({
      programId: keys[ix.programAddressIndex] ?? '',
      accounts: (ix.accountIndices ?? []).map((i) => keys[i] ?? ''),
      data: Uint8Array.from(ix.data ?? new Uint8Array()),
    })),
    usesLookupTables: lookups.length > 0,
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
