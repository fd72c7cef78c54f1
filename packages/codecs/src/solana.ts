/**
 * Solana wire transactions, decoded once for the whole repository: the services (co-sign checks,
 * settlement reads), the Solana devnode and the SDK all read transactions through this module.
 *
 * Wire format: compact-u16 signature count, that many 64-byte signature slots, then the message
 * (legacy, or versioned with a 0x80|version prefix byte; only version 0 exists). The bytes are read with
 * `@solana/kit`'s codecs (`getShortU16Decoder`, `getCompiledTransactionMessageDecoder`); this module adds
 * what they leave to the caller: at least one signature slot, no version but 0, no trailing bytes, a
 * message that re-encodes to the same bytes (no section left out), and
 * one error type ({@link SolanaCodecError}) whose message says what was wrong ("truncated …",
 * "unsupported message version 1", "3 trailing bytes after the message").
 *
 * Pure: no I/O, no Node-only API (Uint8Array in and out), so the SDK can run it in a browser.
 */
import { hex } from '@scure/base';
import {
  fixDecoderSize,
  getArrayDecoder,
  getBase58Decoder,
  getBytesDecoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getShortU16Decoder,
  isSolanaError,
  SOLANA_ERROR__CODECS__CANNOT_DECODE_EMPTY_BYTE_ARRAY,
  SOLANA_ERROR__CODECS__INVALID_BYTE_LENGTH,
} from '@solana/kit';

/** Bytes that are not a (supported) Solana transaction or message. */
export class SolanaCodecError extends Error {
  override readonly name = 'SolanaCodecError';
}

/** A transaction split into its signature slots and the message bytes they sign. */
export interface SolanaWire {
  /** The 64-byte slots in position order (slot 0 is the fee payer's; an unsigned slot is all zeros). */
  signatures: Uint8Array[];
  /** The message bytes every signer signs. */
  messageBytes: Uint8Array;
}

/** A decoded message (legacy or v0), keys and blockhash in base58 (the form Solana tools print). */
export interface SolanaMessage {
  version: 'legacy' | 0;
  header: {
    numRequiredSignatures: number;
    numReadonlySignedAccounts: number;
    numReadonlyUnsignedAccounts: number;
  };
  /** Static account keys: signers first (writable, then read-only), then the others. */
  accountKeys: string[];
  recentBlockhash: string;
  instructions: { programIdIndex: number; accounts: number[]; data: Uint8Array }[];
  /** v0 only: accounts loaded from lookup tables (their keys are not in `accountKeys`). */
  addressTableLookups: { accountKey: string; writableIndexes: number[]; readonlyIndexes: number[] }[];
}

/** A whole transaction: its slots, message bytes and decoded message. */
export interface SolanaTransaction extends SolanaWire {
  message: SolanaMessage;
}

const slotsDecoder = getArrayDecoder(fixDecoderSize(getBytesDecoder(), 64), { size: getShortU16Decoder() });
const messageDecoder = getCompiledTransactionMessageDecoder();
const messageEncoder = getCompiledTransactionMessageEncoder();
const base58 = getBase58Decoder();

function failure(what: string, err: unknown): SolanaCodecError {
  if (
    isSolanaError(err, SOLANA_ERROR__CODECS__INVALID_BYTE_LENGTH) ||
    isSolanaError(err, SOLANA_ERROR__CODECS__CANNOT_DECODE_EMPTY_BYTE_ARRAY)
  )
    return new SolanaCodecError(`truncated ${what}`);
  return new SolanaCodecError(`malformed ${what}: ${(err as Error).message}`);
}

function sameBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Splits wire bytes into signature slots and message bytes (views into `wire`, not copies).
 *
 * @throws SolanaCodecError when the count or a slot is cut short, there is no slot, or no message follows
 * @example
 * const { signatures, messageBytes } = decodeSolanaWire(wire);
 */
export function decodeSolanaWire(wire: Uint8Array): SolanaWire {
  if (wire.length === 0) throw new SolanaCodecError('truncated transaction: no bytes');
  let slots: ReturnType<typeof slotsDecoder.decode>;
  let end: number;
  try {
    [slots, end] = slotsDecoder.read(wire, 0);
  } catch (err) {
    throw failure('transaction', err);
  }
  if (slots.length === 0) throw new SolanaCodecError('a transaction has at least one signature slot');
  if (end >= wire.length)
    throw new SolanaCodecError('truncated transaction: no message after the signatures');
  const base = wire.byteOffset;
  // kit's bytes decoder copies; views keep `signatures[i]` and `messageBytes` cheap and comparable in place.
  const signatures = slots.map(
    (_, i) => new Uint8Array(wire.buffer, base + end - 64 * (slots.length - i), 64),
  );
  return { signatures, messageBytes: wire.subarray(end) };
}

/**
 * Decodes message bytes (legacy or v0).
 *
 * @throws SolanaCodecError on a truncated message, trailing bytes, or a version other than 0
 * @example
 * decodeSolanaMessage(decodeSolanaWire(wire).messageBytes).instructions.length;
 */
export function decodeSolanaMessage(bytes: Uint8Array): SolanaMessage {
  if (bytes.length === 0) throw new SolanaCodecError('truncated message: no bytes');
  const first = bytes[0] ?? 0;
  if (first & 0x80 && (first & 0x7f) !== 0)
    throw new SolanaCodecError(`unsupported message version ${first & 0x7f}`);
  let compiled: ReturnType<typeof messageDecoder.decode>;
  let end: number;
  try {
    [compiled, end] = messageDecoder.read(bytes, 0);
  } catch (err) {
    throw failure('message', err);
  }
  if (end !== bytes.length)
    throw new SolanaCodecError(`${bytes.length - end} trailing bytes after the message`);
  if (!('instructions' in compiled) || (compiled.version !== 'legacy' && compiled.version !== 0))
    throw new SolanaCodecError(`unsupported message version ${String(compiled.version)}`);
  // The decoder reads a v0 message that stops before its lookup-table count as having none; a validator
  // refuses it. Re-encoding must give the same bytes.
  if (!sameBytes(messageEncoder.encode(compiled), bytes))
    throw new SolanaCodecError('truncated message: it does not re-encode to the same bytes');
  const lookups = 'addressTableLookups' in compiled ? (compiled.addressTableLookups ?? []) : [];
  return {
    version: compiled.version,
    header: {
      numRequiredSignatures: compiled.header.numSignerAccounts,
      numReadonlySignedAccounts: compiled.header.numReadonlySignerAccounts,
      numReadonlyUnsignedAccounts: compiled.header.numReadonlyNonSignerAccounts,
    },
    accountKeys: compiled.staticAccounts.map(String),
    recentBlockhash: String(compiled.lifetimeToken),
    instructions: compiled.instructions.map((ix) => ({
      programIdIndex: ix.programAddressIndex,
      accounts: [...(ix.accountIndices ?? [])],
      data: Uint8Array.from(ix.data ?? []),
    })),
    addressTableLookups: lookups.map((l) => ({
      accountKey: String(l.lookupTableAddress),
      writableIndexes: [...l.writableIndexes],
      readonlyIndexes: [...l.readonlyIndexes],
    })),
  };
}

/**
 * Decodes a whole transaction and checks the one rule between its parts: as many signature slots as
 * the message's header requires (a validator refuses anything else at sanitize).
 *
 * @throws SolanaCodecError
 */
export function decodeSolanaTransaction(wire: Uint8Array): SolanaTransaction {
  const split = decodeSolanaWire(wire);
  const message = decodeSolanaMessage(split.messageBytes);
  if (split.signatures.length !== message.header.numRequiredSignatures)
    throw new SolanaCodecError(
      `${split.signatures.length} signature slots for ${message.header.numRequiredSignatures} required signers`,
    );
  return { ...split, message };
}

/**
 * Hex text (`0x` optional, either case) of wire bytes → the bytes.
 *
 * @throws SolanaCodecError when the text is not an even number of hex digits
 */
export function solanaWireFromHex(text: string): Uint8Array {
  if (typeof text !== 'string' || !/^(0x)?([0-9a-fA-F]{2})+$/.test(text))
    throw new SolanaCodecError('expected hex wire bytes');
  return hex.decode(text.replace(/^0x/, '').toLowerCase());
}

/** Base58 (Bitcoin alphabet, no checksum) of bytes: how Solana writes keys, hashes and signatures. */
export function solanaBase58(bytes: Uint8Array): string {
  return base58.decode(bytes);
}
