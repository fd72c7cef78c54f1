import {
  decodeSolanaMessage,
  decodeSolanaWire,
  SolanaCodecError,
  solanaWireFromHex,
} from '@rgbx/codecs/solana';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createTransactionMessage,
  getBase58Decoder,
  getPublicKeyFromAddress,
  getTransactionEncoder,
  type Instruction,
  isAddress,
  isBlockhash,
  pipe,
  type SignatureBytes,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  verifySignature,
} from '@solana/kit';
import { equalBytes, hex, preview } from '../bytes.ts';
import { ChainInputError, VerificationError } from '../errors.ts';

/** System program (transfers). */
export const SYSTEM_PROGRAM_ADDRESS = '11111111111111111111111111111111' as Address;
/** SPL Memo program v2. */
export const MEMO_PROGRAM_ADDRESS = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address;

/** Signer positions of a cosign transaction (the spec's rule 4). */
export const COSIGN_POSITIONS = { resolver: 0, user: 1, backend: 2 } as const;

function requireAddress(value: unknown, field: string): Address {
  if (typeof value !== 'string' || !isAddress(value))
    throw new ChainInputError(
      field,
      `expected a base58 Solana address (32 bytes), received ${preview(value)}`,
    );
  return value;
}

/** Inputs of {@link buildCosignTransaction}. */
export interface CosignTxParams {
  /** Fee payer, signer position 0. */
  resolver: string;
  /** Signer position 1: the source of the transfer. */
  user: string;
  /** Optional signer position 2 (a read-only signer of the memo). */
  backend?: string;
  /** Recent blockhash (base58) and the last block height it is valid at. */
  recentBlockhash: string;
  lastValidBlockHeight: bigint;
  /** Lamports moved from `user` to `destination` by a System transfer. */
  lamports: bigint;
  /** Escrow or resolver deposit address. */
  destination: string;
  /** UTF-8 memo binding the transaction to the intent, e.g. `rgbx:intent:<uuid>` (≤ 256 bytes). */
  memo: string;
}

/** The unsigned transaction, hex-encoded wire bytes (all signature slots zero). */
export interface CosignTransaction {
  /** Wire format: compact-u16 signature count, 64-byte slots, v0 message. */
  transactionHex: string;
  /** The v0 message bytes every signer signs. */
  messageHex: string;
  /** Static account keys 0..n-1 that must sign, in position order. */
  signers: string[];
}

/**
 * Builds a v0 transaction with two instructions — System `Transfer(lamports)` user → destination and an
 * SPL Memo — whose required signers are, in order: resolver (fee payer) at 0, user at 1, backend at 2
 * when given. The order follows from Solana's account ordering (fee payer, then writable signers, then
 * read-only signers): the user is a writable signer (transfer source), the backend a read-only signer.
 *
 * @throws ChainInputError for a bad address, blockhash, amount or memo
 * @example
 * const { transactionHex } = buildCosignTransaction({ resolver, user, recentBlockhash, lastValidBlockHeight: 100n,
 *   lamports: 1_000_000n, destination: escrow, memo: `rgbx:intent:${intentId}` });
 */
export function buildCosignTransaction(p: CosignTxParams): CosignTransaction {
  const resolver = requireAddress(p.resolver, 'resolver');
  const user = requireAddress(p.user, 'user');
  const backend = p.backend === undefined ? undefined : requireAddress(p.backend, 'backend');
  const destination = requireAddress(p.destination, 'destination');
  const distinct = new Set([resolver, user, ...(backend ? [backend] : [])]);
  if (distinct.size !== (backend ? 3 : 2))
    throw new ChainInputError('signers', 'resolver, user and backend must be distinct addresses');
  if (typeof p.recentBlockhash !== 'string' || !isBlockhash(p.recentBlockhash))
    throw new ChainInputError(
      'recentBlockhash',
      `expected a base58 32-byte blockhash, received ${preview(p.recentBlockhash)}`,
    );
  if (typeof p.lamports !== 'bigint' || p.lamports <= 0n || p.lamports >= 1n << 64n)
    throw new ChainInputError(
      'lamports',
      `expected a bigint in (0, 2^64), received ${preview(String(p.lamports))}`,
    );
  if (typeof p.lastValidBlockHeight !== 'bigint' || p.lastValidBlockHeight < 0n)
    throw new ChainInputError(
      'lastValidBlockHeight',
      `expected a non-negative bigint, received ${preview(String(p.lastValidBlockHeight))}`,
    );
  const memo = new TextEncoder().encode(p.memo);
  if (typeof p.memo !== 'string' || memo.length === 0 || memo.length > 256)
    throw new ChainInputError('memo', `expected 1..256 UTF-8 bytes, received ${memo.length}`);

  const transferData = new Uint8Array(12);
  const view = new DataView(transferData.buffer);
  view.setUint32(0, 2, true); // SystemInstruction::Transfer
  view.setBigUint64(4, p.lamports, true);
  const transfer: Instruction = {
    programAddress: SYSTEM_PROGRAM_ADDRESS,
    accounts: [
      { address: user, role: AccountRole.WRITABLE_SIGNER },
      { address: destination, role: AccountRole.WRITABLE },
    ],
    data: transferData,
  };
  const memoIx: Instruction = {
    programAddress: MEMO_PROGRAM_ADDRESS,
    accounts: [
      { address: user, role: AccountRole.READONLY_SIGNER },
      ...(backend ? [{ address: backend, role: AccountRole.READONLY_SIGNER }] : []),
    ],
    data: memo,
  };
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(resolver, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: p.recentBlockhash as Blockhash, lastValidBlockHeight: p.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions([transfer, memoIx], m),
  );
  const tx = compileTransaction(message);
  const bytes = Uint8Array.from(getTransactionEncoder().encode(tx));
  const signers = Object.keys(tx.signatures);
  const expected = [resolver, user, ...(backend ? [backend] : [])];
  if (signers.join() !== expected.join())
    throw new Error(`internal: signer order ${signers.join(', ')} is not resolver, user, backend`);
  return { transactionHex: hex(bytes), messageHex: hex(Uint8Array.from(tx.messageBytes)), signers };
}

interface WireTx {
  signatures: Uint8Array[];
  message: Uint8Array;
}

/** Hex wire bytes → signature slots and message (the shared codec), or undefined when they do not parse. */
function parseWire(txHex: unknown): WireTx | undefined {
  try {
    const w = decodeSolanaWire(solanaWireFromHex(txHex as string));
    return { signatures: w.signatures, message: w.messageBytes };
  } catch (err) {
    if (err instanceof SolanaCodecError) return undefined;
    throw err;
  }
}

const EMPTY_SIGNATURE = new Uint8Array(64);

/** Verification error codes of {@link verifyCosignTransaction}. */
export type CosignVerificationCode =
  | 'malformed_transaction'
  | 'signer_count'
  | 'message_changed'
  | 'user_position'
  | 'missing_signature'
  | 'invalid_signature'
  | 'position_0_changed'
  | 'position_2_changed'
  | 'position_changed';

/** Result of a successful verification. */
export interface VerifiedCosign {
  /** The user's signature, base58 (the form Solana tools print). Not the transaction id: that is slot 0. */
  userSignature: string;
  /** The signed transaction, lower-case hex. */
  transactionHex: string;
}

/**
 * Verifies the user's cosigned transaction against the one the service built: same message bytes
 * (so the same instructions, accounts, blockhash), `userAddress` is the signer at position 1 and its
 * Ed25519 signature over the message is valid, and every other signature slot (0 = resolver,
 * 2 = backend) is exactly as in the unsigned transaction (empty).
 *
 * @throws VerificationError with a {@link CosignVerificationCode}
 * @throws ChainInputError when the stored transaction does not parse
 * @example
 * await verifyCosignTransaction({ unsignedTransactionHex: row.tx, signedTransactionHex: body.cosign.transaction,
 *   userAddress: body.cosign.userAddress });
 */
export async function verifyCosignTransaction(p: {
  unsignedTransactionHex: string;
  signedTransactionHex: string;
  userAddress: string;
}): Promise<VerifiedCosign> {
  const unsigned = parseWire(p.unsignedTransactionHex);
  if (!unsigned) throw new ChainInputError('unsignedTransactionHex', 'the stored transaction does not parse');
  const signed = parseWire(p.signedTransactionHex);
  if (!signed)
    throw new VerificationError(
      'malformed_transaction',
      'the signed transaction is not hex wire-format bytes (compact-u16 count, 64-byte signatures, message)',
      {
        received: preview(p.signedTransactionHex),
      },
    );
  if (signed.signatures.length !== unsigned.signatures.length)
    throw new VerificationError('signer_count', 'number of signature slots changed', {
      expected: String(unsigned.signatures.length),
      received: String(signed.signatures.length),
    });
  if (!equalBytes(signed.message, unsigned.message))
    throw new VerificationError(
      'message_changed',
      'the transaction message differs from the one the service built (a wallet may have added instructions)',
      {
        expected: `${unsigned.message.length} bytes, first difference at byte ${firstDifference(unsigned.message, signed.message)}`,
        received: `${signed.message.length} bytes`,
      },
    );
  const compiled = decodeSolanaMessage(unsigned.message);
  const atOne = compiled.accountKeys[1] as Address | undefined;
  if (compiled.header.numRequiredSignatures < 2 || atOne === undefined || p.userAddress !== atOne)
    throw new VerificationError('user_position', 'userAddress is not the signer at position 1', {
      expected: atOne ?? '(no signer at position 1)',
      received: preview(p.userAddress),
    });
  for (let i = 0; i < signed.signatures.length; i++) {
    if (i === 1) continue;
    if (!equalBytes(signed.signatures[i]!, unsigned.signatures[i]!))
      throw new VerificationError(
        i === 0 ? 'position_0_changed' : i === 2 ? 'position_2_changed' : 'position_changed',
        `signature slot ${i} (${i === 0 ? 'resolver' : i === 2 ? 'backend' : 'signer'}) was modified`,
        {
          expected: equalBytes(unsigned.signatures[i]!, EMPTY_SIGNATURE)
            ? 'empty (64 zero bytes)'
            : hex(unsigned.signatures[i]!),
          received: hex(signed.signatures[i]!),
        },
      );
  }
  const sig = signed.signatures[1]!;
  if (equalBytes(sig, EMPTY_SIGNATURE))
    throw new VerificationError('missing_signature', 'signature slot 1 (user) is empty');
  let ok = false;
  try {
    const key = await getPublicKeyFromAddress(atOne);
    ok = await verifySignature(key, sig as SignatureBytes, signed.message);
  } catch {
    ok = false;
  }
  if (!ok)
    throw new VerificationError(
      'invalid_signature',
      'signature slot 1 is not a valid Ed25519 signature by userAddress over the message',
      {
        expected: `a signature by ${atOne}`,
        received: hex(sig),
      },
    );
  return {
    userSignature: getBase58Decoder().decode(sig),
    transactionHex: p.signedTransactionHex.replace(/^0x/, '').toLowerCase(),
  };
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}
