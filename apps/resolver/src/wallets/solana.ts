/**
 * The resolver's Solana hot wallet: native SOL only.
 *
 * - Payments (fulfilments, refunds) are System transfers signed by the wallet's own key, which is also
 *   the fee payer, plus an SPL Memo `rgbx:payment:<intent id>`: two payments of the same amount to the
 *   same user within one blockhash would otherwise be byte-identical (Ed25519 signatures are
 *   deterministic), so one would silently count for both intents.
 * - Deposits (`cosign`): the user's transaction from the intent's execution data, with the resolver as
 *   fee payer at signer position 0. It is checked before the resolver signs anything: position 0 is this
 *   wallet; every other signature slot holds a valid signature; the instructions are exactly one System
 *   transfer of the intent's source lamports from the intent's source address to the intent's deposit
 *   address (`swap_metadata.proxy_address`: the escrow, or the resolver itself) and at most one memo
 *   naming the intent. Anything else is refused: the fee payer's signature would otherwise authorize it.
 * - Lifetime: a transaction can land only while its recent blockhash is valid. `meta.last_valid_block_height`
 *   is the bound; `status` reports `dead` only when the signature is unknown AND the blockhash has
 *   expired (`isBlockhashValid` false, or the block height is past the bound), checking the signature
 *   once more after the expiry to close the race with a last-moment landing.
 *
 * Reads use commitment `confirmed` (block height, blockhash validity, balance): a blockhash invalid
 * as of a confirmed bank can no longer be included in any block built on it.
 */
import { solanaLatestBlockhash } from '@rgbx/chains/sol';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Base64EncodedWireTransaction,
  type Blockhash,
  type Commitment,
  compileTransaction,
  createKeyPairSignerFromPrivateKeyBytes,
  createSolanaRpc,
  createTransactionMessage,
  getBase58Decoder,
  getPublicKeyFromAddress,
  getTransactionEncoder,
  type Instruction,
  isAddress,
  type KeyPairSigner,
  pipe,
  type Rpc,
  type Signature,
  type SignatureBytes,
  type SolanaRpcApi,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
  signTransaction,
  verifySignature,
} from '@solana/kit';
import type { ChainWallet, IntentView, PaymentRequest, SignedTx, TxState } from './wallet.ts';

/** The wrapped-SOL mint: how the swap service names native SOL. */
export const SOL_MINT = 'So11111111111111111111111111111111111111112';
const SYSTEM_PROGRAM = '11111111111111111111111111111111' as Address;
const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address;
/** Blocks a blockhash stays valid after the block that produced it (Agave's MAX_PROCESSING_AGE). */
const BLOCKHASH_VALIDITY = 150;
/** A finalized transaction counts as 32 confirmations (Solana's maximum lockout), as the swap service counts it. */
const FINALIZED_CONFIRMATIONS = 32;
/**
 * Default lamports `balance` keeps back: the rent-exempt minimum of a data-less System account
 * (890 880 lamports; a fee payer may not drop below it) plus fees for several hundred transactions
 * (5 000 lamports per signature: a payment 5 000, a co-signed deposit 10 000–15 000).
 */
export const DEFAULT_FEE_RESERVE_LAMPORTS = 10_000_000n;
const DEFAULT_TIMEOUT_MS = 10_000;
const COMMITMENT: Commitment = 'confirmed';

export interface SolanaWalletOptions {
  /** The node's JSON-RPC URL. */
  rpcUrl: string;
  /** The 32-byte Ed25519 seed (private key) of the wallet. */
  privateKey: Uint8Array;
  /** Lamports `balance` does not report as spendable (fees, rent-exempt minimum). Default {@link DEFAULT_FEE_RESERVE_LAMPORTS}. */
  feeReserveLamports?: bigint;
  /** Per RPC request; default 10 s. */
  timeoutMs?: number;
}

export type SolanaWalletErrorCode =
  | 'unsupported_token'
  | 'invalid_request'
  | 'deposit_refused'
  | 'blockhash_expired'
  | 'broadcast_failed';

/** What this wallet refuses to sign or could not send; `code` says which. */
export class SolanaWalletError extends Error {
  readonly code: SolanaWalletErrorCode;
  constructor(code: SolanaWalletErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SolanaWalletError';
    this.code = code;
  }
}

const refuse = (why: string): never => {
  throw new SolanaWalletError('deposit_refused', `Solana deposit refused: ${why}`);
};

const b58 = getBase58Decoder();
const txEncoder = getTransactionEncoder();

const isZero = (b: Uint8Array) => b.every((x) => x === 0);

/** Reads a compact-u16 at `at`: its value and byte length. */
function compactU16(bytes: Uint8Array, at: number): { value: number; size: number } {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const b = bytes[at + i];
    if (b === undefined) throw new Error('truncated compact-u16');
    value |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) return { value, size: i + 1 };
  }
  throw new Error('compact-u16 longer than 3 bytes');
}

interface Instr {
  programId: string;
  accounts: string[];
  data: Uint8Array;
}

/** The parts of a (legacy or v0) wire transaction this wallet looks at. */
interface WireTx {
  bytes: Uint8Array;
  /** Offset of signature slot 0 in `bytes`. */
  signaturesAt: number;
  signatures: Uint8Array[];
  message: Uint8Array;
  numSigners: number;
  accountKeys: string[];
  recentBlockhash: string;
  instructions: Instr[];
  usesLookupTables: boolean;
}

/**
 * Parses wire bytes: compact-u16 signature count, 64-byte slots, then a legacy or v0 message (header,
 * static keys, recent blockhash, instructions, v0 lookups).
 * @throws Error when the bytes are not a well-formed transaction
 */
function parseWire(bytes: Uint8Array): WireTx {
  const count = compactU16(bytes, 0);
  const signaturesAt = count.size;
  const messageAt = signaturesAt + 64 * count.value;
  if (messageAt > bytes.length) throw new Error('truncated signatures');
  const signatures = Array.from({ length: count.value }, (_, i) =>
    bytes.subarray(signaturesAt + 64 * i, signaturesAt + 64 * (i + 1)),
  );
  const message = bytes.subarray(messageAt);
  let at = 0;
  const need = (n: number) => {
    if (at + n > message.length) throw new Error('truncated message');
  };
  need(1);
  const versioned = (message[0]! & 0x80) !== 0;
  if (versioned) {
    if ((message[0]! & 0x7f) !== 0) throw new Error(`unsupported message version ${message[0]! & 0x7f}`);
    at = 1;
  }
  need(3);
  const numSigners = message[at]!;
  at += 3;
  const keyCount = compactU16(message, at);
  at += keyCount.size;
  need(32 * keyCount.value + 32);
  const accountKeys = Array.from({ length: keyCount.value }, (_, i) =>
    b58.decode(message.subarray(at + 32 * i, at + 32 * (i + 1))),
  );
  at += 32 * keyCount.value;
  const recentBlockhash = b58.decode(message.subarray(at, at + 32));
  at += 32;
  const ixCount = compactU16(message, at);
  at += ixCount.size;
  const instructions: Instr[] = [];
  for (let i = 0; i < ixCount.value; i++) {
    need(1);
    const program = message[at]!;
    at += 1;
    const n = compactU16(message, at);
    at += n.size;
    need(n.value);
    const accounts = Array.from(message.subarray(at, at + n.value), (k) => accountKeys[k] ?? `#${k}`);
    at += n.value;
    const len = compactU16(message, at);
    at += len.size;
    need(len.value);
    const data = Uint8Array.from(message.subarray(at, at + len.value));
    at += len.value;
    instructions.push({ programId: accountKeys[program] ?? `#${program}`, accounts, data });
  }
  let usesLookupTables = false;
  if (versioned) {
    const lookups = compactU16(message, at);
    at += lookups.size;
    usesLookupTables = lookups.value > 0;
  }
  if (!usesLookupTables && at !== message.length) throw new Error('trailing bytes after the message');
  return {
    bytes,
    signaturesAt,
    signatures,
    message,
    numSigners,
    accountKeys,
    recentBlockhash,
    instructions,
    usesLookupTables,
  };
}

function hexToBytes(value: unknown, field: string): Uint8Array {
  const h = typeof value === 'string' ? value.replace(/^0x/, '') : '';
  if (h.length === 0 || !/^([0-9a-fA-F]{2})+$/.test(h))
    throw new SolanaWalletError('invalid_request', `${field}: expected hex wire bytes`);
  return Uint8Array.from(Buffer.from(h, 'hex'));
}

function transferOf(ix: Instr): { from: string; to: string; lamports: bigint } | undefined {
  if (ix.programId !== SYSTEM_PROGRAM || ix.data.length !== 12) return undefined;
  const view = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.byteLength);
  if (view.getUint32(0, true) !== 2) return undefined; // SystemInstruction::Transfer
  if (ix.accounts.length !== 2) return undefined;
  return { from: ix.accounts[0]!, to: ix.accounts[1]!, lamports: view.getBigUint64(4, true) };
}

/**
 * `ChainWallet` for Solana. Create with {@link SolanaWallet.create} (deriving the key is asynchronous).
 *
 * @example
 * const sol = await SolanaWallet.create({ rpcUrl, privateKey: seed32 });
 * const tx = await sol.signPayment({ intentId, token: SOL_MINT, to: user, amount: 1_000_000n });
 * await store.save(tx); // before broadcasting: never pays twice
 * await sol.broadcast(tx);
 */
export class SolanaWallet implements ChainWallet {
  readonly type = 'SOLANA' as const;
  /** The base58 address (fee payer at position 0 of co-signed deposits). */
  readonly identity: string;
  readonly #signer: KeyPairSigner;
  readonly #rpcUrl: string;
  readonly #rpc: Rpc<SolanaRpcApi>;
  readonly #reserve: bigint;
  readonly #timeoutMs: number;

  private constructor(signer: KeyPairSigner, opts: SolanaWalletOptions) {
    this.#signer = signer;
    this.identity = signer.address;
    this.#rpcUrl = opts.rpcUrl;
    this.#rpc = createSolanaRpc(opts.rpcUrl);
    this.#reserve = opts.feeReserveLamports ?? DEFAULT_FEE_RESERVE_LAMPORTS;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  static async create(opts: SolanaWalletOptions): Promise<SolanaWallet> {
    if (!(opts.privateKey instanceof Uint8Array) || opts.privateKey.length !== 32)
      throw new SolanaWalletError('invalid_request', 'privateKey: expected the 32-byte Ed25519 seed');
    if (opts.feeReserveLamports !== undefined && opts.feeReserveLamports < 0n)
      throw new SolanaWalletError('invalid_request', 'feeReserveLamports: must not be negative');
    return new SolanaWallet(await createKeyPairSignerFromPrivateKeyBytes(opts.privateKey), opts);
  }

  #abort(): { abortSignal: AbortSignal } {
    return { abortSignal: AbortSignal.timeout(this.#timeoutMs) };
  }

  /** Native SOL: the confirmed balance minus the fee reserve (never negative); any other mint: 0. */
  async balance(token: string): Promise<bigint> {
    if (token !== SOL_MINT) return 0n;
    const r = await this.#rpc
      .getBalance(this.identity as Address, { commitment: COMMITMENT })
      .send(this.#abort());
    const spendable = BigInt(r.value) - this.#reserve;
    return spendable > 0n ? spendable : 0n;
  }

  /**
   * A System transfer of `amount` lamports to `to` (plus a memo naming the intent), fee paid by this
   * wallet, on the latest (finalized) blockhash. Not broadcast.
   * @throws SolanaWalletError `unsupported_token` for anything but native SOL, `invalid_request` for a bad address or amount
   */
  async signPayment(p: PaymentRequest): Promise<SignedTx> {
    if (p.token !== SOL_MINT)
      throw new SolanaWalletError(
        'unsupported_token',
        `Solana payments support only native SOL (${SOL_MINT}), not ${p.token}`,
      );
    if (typeof p.to !== 'string' || !isAddress(p.to))
      throw new SolanaWalletError('invalid_request', `to: expected a base58 Solana address, got ${p.to}`);
    if (p.to === this.identity) throw new SolanaWalletError('invalid_request', 'to: is the wallet itself');
    if (typeof p.amount !== 'bigint' || p.amount <= 0n || p.amount >= 1n << 64n)
      throw new SolanaWalletError(
        'invalid_request',
        `amount: expected lamports in (0, 2^64), got ${p.amount}`,
      );
    const memo = new TextEncoder().encode(`rgbx:payment:${p.intentId}`);
    if (memo.length > 256) throw new SolanaWalletError('invalid_request', 'intentId: too long for the memo');

    const { blockhash, lastValidBlockHeight } = await solanaLatestBlockhash(this.#rpcUrl, {
      timeoutMs: this.#timeoutMs,
    });
    const data = new Uint8Array(12);
    const view = new DataView(data.buffer);
    view.setUint32(0, 2, true); // SystemInstruction::Transfer
    view.setBigUint64(4, p.amount, true);
    const transfer: Instruction = {
      programAddress: SYSTEM_PROGRAM,
      accounts: [
        { address: this.identity as Address, role: AccountRole.WRITABLE_SIGNER },
        { address: p.to, role: AccountRole.WRITABLE },
      ],
      data,
    };
    const memoIx: Instruction = { programAddress: MEMO_PROGRAM, accounts: [], data: memo };
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(this.identity as Address, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: blockhash as Blockhash, lastValidBlockHeight },
          m,
        ),
      (m) => appendTransactionMessageInstructions([transfer, memoIx], m),
    );
    const signed = await signTransaction([this.#signer.keyPair], compileTransaction(message));
    const raw = Uint8Array.from(txEncoder.encode(signed));
    const txid = b58.decode(parseWire(raw).signatures[0]!);
    return {
      txid,
      raw: Buffer.from(raw).toString('hex'),
      meta: { last_valid_block_height: Number(lastValidBlockHeight), recent_blockhash: blockhash },
    };
  }

  /**
   * The user-signed co-sign transaction (`execution.signed_transaction`) with this wallet's signature
   * at position 0, after checking it is exactly the approved deposit (see the module comment).
   * `meta.last_valid_block_height` is an upper bound: the confirmed block height at signing + 150
   * (the transaction names only its blockhash, and the blockhash was checked valid at signing).
   * @throws SolanaWalletError `deposit_refused` for anything but the approved transfer to the deposit
   *   address with this wallet as fee payer; `blockhash_expired` when it can no longer land
   */
  async signDeposit(intent: IntentView): Promise<SignedTx | null> {
    if (intent.approval_mechanism !== 'cosign')
      refuse(`a Solana deposit is co-signed, this intent's mechanism is ${intent.approval_mechanism}`);
    // Read through the wire names (the contracts' derived type of `intent` is not precise enough).
    const rec = intent.intent as unknown as DepositFields;
    if (typeof rec?.user_source_address !== 'string' || typeof rec.intent_id !== 'string')
      refuse('the intent view lacks intent_id / user_source_address');
    if (rec.source_token !== SOL_MINT)
      refuse(`only native SOL sources are co-signed, not ${rec.source_token}`);
    const bytes = hexToBytes(intent.execution?.signed_transaction, 'execution.signed_transaction');
    let tx: WireTx;
    try {
      tx = parseWire(bytes);
    } catch (err) {
      return refuse(`the transaction does not parse: ${(err as Error).message}`);
    }
    if (tx.usesLookupTables) refuse('the transaction loads address lookup tables');
    if (tx.numSigners < 2 || tx.signatures.length !== tx.numSigners)
      refuse(`expected ≥ 2 signature slots matching the required signers, got ${tx.signatures.length}`);
    if (tx.accountKeys[0] !== this.identity)
      refuse(`the fee payer (position 0) is ${tx.accountKeys[0]}, not this resolver ${this.identity}`);
    if (tx.accountKeys.indexOf(this.identity, 1) !== -1)
      refuse('the resolver appears twice among the accounts');

    // The instructions: one System transfer from the user to the deposit address, at most one memo.
    const user = rec.user_source_address;
    const destination = rec.swap_metadata?.proxy_address || this.identity;
    let lamports: bigint;
    try {
      lamports = BigInt(rec.source_amount_lots);
    } catch {
      return refuse(`source_amount_lots is not an integer: ${rec.source_amount_lots}`);
    }
    let transfers = 0;
    let memos = 0;
    for (const [n, ix] of tx.instructions.entries()) {
      const t = transferOf(ix);
      if (t) {
        transfers++;
        if (t.from === this.identity) refuse(`instruction ${n} transfers the resolver's own lamports`);
        if (t.from !== user)
          refuse(`instruction ${n} transfers from ${t.from}, not the intent's source ${user}`);
        if (t.to !== destination)
          refuse(`instruction ${n} pays ${t.to}, not the deposit address ${destination}`);
        if (t.lamports !== lamports) refuse(`instruction ${n} moves ${t.lamports} lamports, not ${lamports}`);
      } else if (ix.programId === MEMO_PROGRAM) {
        memos++;
        const text = new TextDecoder().decode(ix.data);
        if (text !== `rgbx:intent:${rec.intent_id}`) refuse(`the memo "${text}" does not name this intent`);
      } else refuse(`instruction ${n} (program ${ix.programId}) is neither the System transfer nor the memo`);
    }
    if (transfers !== 1) refuse(`expected exactly one System transfer, found ${transfers}`);
    if (memos > 1) refuse(`expected at most one memo, found ${memos}`);

    // Every other signer has signed (otherwise the transaction can never land).
    for (let i = 1; i < tx.numSigners; i++) {
      const sig = tx.signatures[i]!;
      const signer = tx.accountKeys[i]!;
      let ok = false;
      if (!isZero(sig)) {
        try {
          ok = await verifySignature(
            await getPublicKeyFromAddress(signer as Address),
            sig as SignatureBytes,
            tx.message,
          );
        } catch {
          ok = false;
        }
      }
      if (!ok) refuse(`signature slot ${i} (${signer}) is not a valid signature over the message`);
    }

    // Still able to land? The height is read after the check: a blockhash valid now was produced at or
    // below the current height, so it expires at most 150 blocks above it.
    if (!(await this.#blockhashValid(tx.recentBlockhash)))
      throw new SolanaWalletError(
        'blockhash_expired',
        `the user's transaction can no longer land: its blockhash ${tx.recentBlockhash} has expired`,
      );
    const height = await this.#blockHeight();

    const out = Uint8Array.from(bytes);
    out.set(await signBytes(this.#signer.keyPair.privateKey, tx.message), tx.signaturesAt);
    return {
      txid: b58.decode(out.subarray(tx.signaturesAt, tx.signaturesAt + 64)),
      raw: Buffer.from(out).toString('hex'),
      meta: {
        last_valid_block_height: Number(height) + BLOCKHASH_VALIDITY,
        recent_blockhash: tx.recentBlockhash,
      },
    };
  }

  /** No claim leg on Solana: the co-signed deposit paid the resolver (or the escrow) directly. */
  async signClaim(_intent: IntentView, _preimage: string): Promise<SignedTx | null> {
    return null;
  }

  /**
   * `sendTransaction` (base64, with preflight). A transaction the node already has — "already
   * processed", or any error while its signature is known — counts as sent.
   * @throws SolanaWalletError `broadcast_failed` with the node's error (e.g. blockhash not found) otherwise
   */
  async broadcast(tx: SignedTx): Promise<void> {
    const raw = hexToBytes(tx.raw, 'raw');
    try {
      const sig = await this.#rpc
        .sendTransaction(Buffer.from(raw).toString('base64') as Base64EncodedWireTransaction, {
          encoding: 'base64',
          preflightCommitment: COMMITMENT,
        })
        .send(this.#abort());
      if (sig !== tx.txid)
        throw new SolanaWalletError(
          'broadcast_failed',
          `the node reports signature ${sig}, the stored transaction is ${tx.txid}`,
        );
    } catch (err) {
      if (err instanceof SolanaWalletError) throw err;
      // Already processed (or landed between attempts): the node knows the signature.
      if ((await this.#signatureStatus(tx.txid)) !== null) return;
      throw new SolanaWalletError('broadcast_failed', `sendTransaction ${tx.txid}: ${describe(err)}`, {
        cause: err,
      });
    }
  }

  /**
   * `getSignatureStatuses` with history: finalized → confirmed (32 confirmations), confirmed →
   * confirmed (the node's count, at least 1), processed → pending, an error → failed (once
   * confirmed); not found → `dead` when the blockhash has expired, else `unknown`.
   */
  async status(tx: SignedTx): Promise<TxState> {
    const first = await this.#signatureStatus(tx.txid);
    if (first !== null) return stateOf(first);
    if (!(await this.#expired(tx))) return { state: 'unknown' };
    // Expired now: if it is still not found, it can never land (it may have just before the expiry).
    const again = await this.#signatureStatus(tx.txid);
    return again === null ? { state: 'dead' } : stateOf(again);
  }

  async close(): Promise<void> {}

  async #signatureStatus(txid: string): Promise<SignatureStatus | null> {
    const r = await this.#rpc
      .getSignatureStatuses([txid as Signature], { searchTransactionHistory: true })
      .send(this.#abort());
    const s = r.value[0];
    return s
      ? {
          err: s.err ?? null,
          confirmations: s.confirmations === null ? null : Number(s.confirmations),
          confirmationStatus: s.confirmationStatus ?? null,
        }
      : null;
  }

  async #blockHeight(): Promise<bigint> {
    return BigInt(await this.#rpc.getBlockHeight({ commitment: COMMITMENT }).send(this.#abort()));
  }

  async #blockhashValid(blockhash: string): Promise<boolean> {
    const r = await this.#rpc
      .isBlockhashValid(blockhash as Blockhash, { commitment: COMMITMENT })
      .send(this.#abort());
    return r.value;
  }

  /** The blockhash of `tx` can no longer be used: past `last_valid_block_height`, or the node says invalid. */
  async #expired(tx: SignedTx): Promise<boolean> {
    const bound = Number(tx.meta.last_valid_block_height);
    if (Number.isFinite(bound) && (await this.#blockHeight()) > BigInt(Math.floor(bound))) return true;
    let blockhash: string;
    try {
      blockhash = parseWire(hexToBytes(tx.raw, 'raw')).recentBlockhash;
    } catch {
      return false; // not our bytes: never declared dead on a guess
    }
    return !(await this.#blockhashValid(blockhash));
  }
}

/** The intent record's fields a deposit check reads (Surface B / resolver API wire names). */
interface DepositFields {
  intent_id: string;
  source_token: string;
  source_amount_lots: string;
  user_source_address: string;
  swap_metadata?: { proxy_address?: string };
}

/** An error and its causes (the kit puts the node's transaction error, e.g. "Blockhash not found", in `cause`). */
function describe(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error && parts.length < 4; e = e.cause) parts.push(e.message);
  return parts.length > 0 ? parts.join(': ') : String(err);
}

interface SignatureStatus {
  err: unknown;
  confirmations: number | null;
  confirmationStatus: string | null;
}

function stateOf(s: SignatureStatus): TxState {
  if (s.confirmationStatus === 'processed') return { state: 'pending' };
  if (s.err !== null) return { state: 'failed' };
  if (s.confirmationStatus === 'finalized' || s.confirmations === null)
    return { state: 'confirmed', confirmations: FINALIZED_CONFIRMATIONS };
  return { state: 'confirmed', confirmations: Math.max(1, s.confirmations) };
}
