import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { decodeSolanaTransaction, type SolanaMessage } from '@rgbx/codecs/solana';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstruction,
  type Blockhash,
  compileTransaction,
  createKeyPairSignerFromPrivateKeyBytes,
  createTransactionMessage,
  getBase58Decoder,
  getBase58Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
  isAddress,
  type Lamports,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransaction,
  type Transaction,
} from '@solana/kit';
import { FailedTransactionMetadata, type InnerInstruction, LiteSVM, type TransactionMetadata } from 'litesvm';
// The error classes are not re-exported by litesvm's index (the package has no "exports" map).
import {
  InstructionErrorBorshIo,
  InstructionErrorCustom,
  TransactionErrorDuplicateInstruction,
  TransactionErrorInstructionError,
  TransactionErrorInsufficientFundsForRent,
  TransactionErrorProgramExecutionTemporarilyRestricted,
} from 'litesvm/dist/internal.js';
import { parse as parseLossless, parseNumberAndBigInt, stringify as stringifyLossless } from 'lossless-json';

/**
 * A local Solana JSON-RPC node for tests and the devnet: LiteSVM (the Agave 3.1 SVM runtime — the
 * program loaders, System program, SPL programs including Memo v2, Ed25519 signature verification —
 * compiled to a native Node addon) behind a small HTTP JSON-RPC front end written here. Every
 * `sendTransaction` executes at once in its own slot, which is immediately finalized; the blockhash
 * changes every slot and stays valid for 150 slots, as on a real cluster. State is in memory.
 *
 * Not emulated: consensus, forks, leaders, vote accounts, a fee market (the fee is LiteSVM's:
 * 5 000 lamports per signature plus any compute-budget priority fee), rent collection, epochs.
 *
 * Supported methods: getHealth, getVersion, getSlot, getBlockHeight, getLatestBlockhash,
 * isBlockhashValid, getBalance, getAccountInfo, getMinimumBalanceForRentExemption, requestAirdrop,
 * sendTransaction, getSignatureStatuses, getTransaction.
 */
export interface SolanaDevnode {
  /** `http://127.0.0.1:P` */
  readonly rpcUrl: string;
  /** Sends `lamports` from the devnode's faucet to `address` (a System transfer); returns its signature. */
  airdrop(address: string, lamports: bigint): Promise<string>;
  /** The current (finalized) slot; equal to the block height (no slot is ever skipped). */
  slot(): bigint;
  /** Stops the HTTP server. */
  stop(): Promise<void>;
}

export interface SolanaDevnodeOptions {
  /** Default 0 (a free port). */
  port?: number;
}

type Json = string | number | bigint | boolean | null | Json[] | { [k: string]: Json };

class RpcError extends Error {
  readonly code: number;
  readonly data: Json | undefined;
  constructor(code: number, message: string, data?: Json) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/** The Agave version LiteSVM 1.1.0 is built from (its crates are solana-*-3.1.11). */
const SOLANA_CORE = '3.1.11';
/** Blockhashes stay valid for this many blocks (Agave's MAX_PROCESSING_AGE). */
const MAX_PROCESSING_AGE = 150n;
/** Agave's limits: request body 50 KiB, wire transaction 1232 bytes, 256 signatures per status query. */
const MAX_REQUEST_BODY = 50 * 1024;
const PACKET_DATA_SIZE = 1232;
const MAX_SIGNATURE_STATUSES = 256;
/** The faucet holds 500 M SOL, like `solana-test-validator`'s. */
const FAUCET_LAMPORTS = 500_000_000n * 1_000_000_000n;
const SYSTEM_PROGRAM = '11111111111111111111111111111111' as Address;
const ADDRESS_LOOKUP_TABLE_META_SIZE = 56;

const b58 = getBase58Decoder();
const b58bytes = getBase58Encoder();
const txDecoder = getTransactionDecoder();
const txEncoder = getTransactionEncoder();

const TX_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
] as const;

const IX_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
] as const;

/** Agave's `Display` texts of the errors a swap's transactions can meet; others print their name. */
const TX_ERROR_TEXT: Record<string, string> = {
  AccountInUse: 'Account in use',
  AccountLoadedTwice: 'Account loaded twice',
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  ProgramAccountNotFound: 'Attempt to load a program that does not exist',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  InvalidAccountForFee: 'This account may not be used to pay transaction fees',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  SignatureFailure: 'Transaction did not pass signature verification',
  SanitizeFailure: 'Transaction failed to sanitize accounts offsets correctly',
  UnsupportedVersion: 'Transaction version is unsupported',
  AddressLookupTableNotFound: 'Transaction loads an address table account that does not exist',
  InvalidAddressLookupTableIndex: 'Transaction address table lookup uses an invalid index',
};
const IX_ERROR_TEXT: Record<string, string> = {
  GenericError: 'generic instruction error',
  InvalidArgument: 'invalid program argument',
  InvalidInstructionData: 'invalid instruction data',
  InvalidAccountData: 'invalid account data for instruction',
  AccountDataTooSmall: 'account data too small for instruction',
  InsufficientFunds: 'insufficient funds for instruction',
  IncorrectProgramId: 'incorrect program id for instruction',
  MissingRequiredSignature: 'missing required signature for instruction',
  AccountAlreadyInitialized: 'instruction requires an uninitialized account',
  UninitializedAccount: 'instruction requires an initialized account',
  ComputationalBudgetExceeded: 'Computational budget exceeded',
  ProgramFailedToComplete: 'Program failed to complete',
};

/** A transaction error as Agave serializes it (`err` fields) and prints it (preflight messages). */
function txError(e: ReturnType<FailedTransactionMetadata['err']>): { json: Json; text: string } {
  if (e instanceof TransactionErrorInstructionError) {
    const ie = e.err();
    let json: Json;
    let text: string;
    if (ie instanceof InstructionErrorCustom) {
      json = { Custom: ie.code };
      text = `custom program error: 0x${ie.code.toString(16)}`;
    } else if (ie instanceof InstructionErrorBorshIo) {
      json = { BorshIoError: ie.msg };
      text = `Failed to serialize or deserialize account data: ${ie.msg}`;
    } else {
      const name = IX_ERRORS[ie as number] ?? `InstructionError${String(ie)}`;
      json = name;
      text = IX_ERROR_TEXT[name] ?? name;
    }
    return {
      json: { InstructionError: [e.index, json] },
      text: `Error processing Instruction ${e.index}: ${text}`,
    };
  }
  if (e instanceof TransactionErrorInsufficientFundsForRent)
    return {
      json: { InsufficientFundsForRent: { account_index: e.accountIndex } },
      text: `Transaction results in an account (${e.accountIndex}) with insufficient funds for rent`,
    };
  if (e instanceof TransactionErrorProgramExecutionTemporarilyRestricted)
    return {
      json: { ProgramExecutionTemporarilyRestricted: { account_index: e.accountIndex } },
      text: `Execution of the program referenced by account at index ${e.accountIndex} is temporarily restricted.`,
    };
  if (e instanceof TransactionErrorDuplicateInstruction)
    return {
      json: { DuplicateInstruction: e.index },
      text: `Transaction contains a duplicate instruction (${e.index}) that is not allowed`,
    };
  const name = TX_ERRORS[e as number] ?? `TransactionError${String(e)}`;
  return { json: name, text: TX_ERROR_TEXT[name] ?? name };
}

// ---------- wire format ----------

type ParsedMessage = SolanaMessage;

/**
 * Parses a legacy or v0 wire transaction with the shared codec (`@rgbx/codecs/solana`), which also
 * checks the sanitize rule between its parts (as many signature slots as required signers); throws a
 * message for anything else.
 */
function parseWire(wire: Uint8Array): {
  signatures: Uint8Array[];
  messageBytes: Uint8Array;
  message: ParsedMessage;
} {
  return decodeSolanaTransaction(wire);
}

// ---------- LiteSVM 1.1.0 x87 workaround ----------
//
// LiteSVM 1.1.0's SBPF JIT spills a scratch register into the MMX register MM0 on its `callx` path and
// returns without EMMS (LiteSVM issues #171 and #396; fixed upstream by "clear x87 FPU state after
// transaction execution", released only in litesvm >= 1.4, which needs @solana/kit 8). SPL Memo v2 takes
// that path. Afterwards every x87 register of the calling thread — the JS thread — is tagged in use, so
// the next x87 computation on it overflows the x87 stack and yields NaN. On Node 20 there are two such
// users: V8's `%` on doubles (wrong once), and the long-double hash-table sizing inlined into V8's GC
// (PretenuringHandler::ProcessPretenuringFeedback), which then aborts the whole process with
// `std::bad_alloc` at the next garbage collection. Two measures, both needed:
//  1. allocation-site pretenuring is turned off (the GC's only x87 user; it is a heuristic, not
//     a correctness feature) — done once, in startSolanaDevnode, for the hosting process;
//  2. right after every LiteSVM call that may run SBF code, a `%` on doubles absorbs the NaN and pops
//     the two x87 registers V8's `%` needs, so JavaScript arithmetic stays exact.
// Delete this block when moving to a litesvm release with the upstream fix.

const x87Scratch = new Float64Array([5.5, 2, 0]);
/** Runs two x87 `fprem` sequences (typed-array operands: never constant-folded). */
function absorbX87Overflow(): void {
  x87Scratch[2] = x87Scratch[0]! % x87Scratch[1]!;
  x87Scratch[2] = x87Scratch[0]! % x87Scratch[1]!;
}
let pretenuringDisabled = false;
function disablePretenuring(): void {
  if (pretenuringDisabled) return;
  setFlagsFromString('--no-allocation-site-pretenuring');
  pretenuringDisabled = true;
}

const isZero = (b: Uint8Array) => b.every((x) => x === 0);
const equalBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

// ---------- state ----------

interface TxRecord {
  signature: string;
  wire: Uint8Array;
  message: ParsedMessage;
  loaded: { writable: string[]; readonly: string[] };
  slot: bigint;
  blockTime: number;
  err: Json;
  fee: bigint;
  preBalances: bigint[];
  postBalances: bigint[];
  logs: string[];
  innerInstructions: Json[];
  computeUnitsConsumed: bigint;
  returnData: Json;
}

/**
 * Starts an in-process Solana JSON-RPC node on 127.0.0.1.
 *
 * @example
 * const node = await startSolanaDevnode();
 * await node.airdrop(resolver.address, 10_000_000_000n);
 * // … sendTransaction / getTransaction against node.rpcUrl …
 * await node.stop();
 */
export async function startSolanaDevnode(opts: SolanaDevnodeOptions = {}): Promise<SolanaDevnode> {
  // Default LiteSVM: sysvars, builtins, precompiles, SPL programs (Token, Token-2022, ATA, Memo v1/v2),
  // signature verification on. Its own blockhash check accepts only the latest blockhash; we turn it
  // off and check the 150-block validity window ourselves (below), as a real cluster does.
  disablePretenuring();
  const svm = new LiteSVM().withBlockhashCheck(false).withTransactionHistory(0n);
  const faucet = await createKeyPairSignerFromPrivateKeyBytes(
    createHash('sha256').update('rgbx-sol-devnode:faucet').digest(),
  );
  svm.setAccount({
    address: faucet.address,
    data: new Uint8Array(0),
    executable: false,
    lamports: FAUCET_LAMPORTS as Lamports,
    programAddress: SYSTEM_PROGRAM,
    space: 0n,
  });

  let slot = 0n;
  let blockTime = Math.floor(Date.now() / 1000);
  /** blockhash → block height it was produced at; pruned beyond the validity window. */
  const blockhashes = new Map<string, bigint>([[svm.latestBlockhash(), 0n]]);
  const records = new Map<string, TxRecord>();
  setClock();

  function setClock(): void {
    const clock = svm.getClock();
    clock.slot = slot;
    clock.unixTimestamp = BigInt(blockTime);
    svm.setClock(clock);
  }

  /** Opens the next slot: a new clock, a new blockhash. */
  function advanceSlot(): void {
    slot += 1n;
    blockTime = Math.max(blockTime, Math.floor(Date.now() / 1000));
    svm.warpToSlot(slot);
    setClock();
    svm.expireBlockhash();
    blockhashes.set(svm.latestBlockhash(), slot);
    for (const [hash, height] of blockhashes) {
      if (height + MAX_PROCESSING_AGE * 2n >= slot) break;
      blockhashes.delete(hash);
    }
  }

  const context = (): Json => ({ apiVersion: SOLANA_CORE, slot });
  const balance = (a: string): bigint => svm.getBalance(a as Address) ?? 0n;

  /** Durable-nonce transactions: the lifetime token must equal the nonce stored in the nonce account. */
  function nonceMatches(m: ParsedMessage): boolean {
    const ix = m.instructions[0];
    if (!ix || m.accountKeys[ix.programIdIndex] !== SYSTEM_PROGRAM) return false;
    if (ix.data.length < 4 || new DataView(ix.data.buffer, ix.data.byteOffset).getUint32(0, true) !== 4)
      return false;
    const nonceKey = m.accountKeys[ix.accounts[0] ?? -1];
    if (!nonceKey) return false;
    const acct = svm.getAccount(nonceKey as Address);
    if (!acct.exists || acct.programAddress !== SYSTEM_PROGRAM || acct.data.length < 72) return false;
    return b58.decode(acct.data.subarray(40, 72)) === m.recentBlockhash;
  }

  /** Resolves v0 address-table lookups from the tables' current contents (writable, then read-only). */
  function loadedAddresses(m: ParsedMessage): { writable: string[]; readonly: string[] } {
    const writable: string[] = [];
    const readonly: string[] = [];
    for (const l of m.addressTableLookups) {
      const t = svm.getAccount(l.accountKey as Address);
      const data = t.exists ? t.data : new Uint8Array(0);
      const at = (i: number) => {
        const o = ADDRESS_LOOKUP_TABLE_META_SIZE + 32 * i;
        return o + 32 <= data.length ? b58.decode(data.subarray(o, o + 32)) : undefined;
      };
      for (const i of l.writableIndexes) {
        const a = at(i);
        if (a) writable.push(a);
      }
      for (const i of l.readonlyIndexes) {
        const a = at(i);
        if (a) readonly.push(a);
      }
    }
    return { writable, readonly };
  }

  function preflightError(err: Json, text: string, meta?: TransactionMetadata): RpcError {
    return new RpcError(-32002, `Transaction simulation failed: ${text}`, {
      accounts: null,
      err,
      innerInstructions: null,
      logs: meta ? meta.logs() : [],
      replacementBlockhash: null,
      returnData: null,
      unitsConsumed: meta ? meta.computeUnitsConsumed() : 0n,
    });
  }

  const signatureFailure = () => new RpcError(-32003, 'Transaction signature verification failure');

  /**
   * What a validator's `sendTransaction` does: sanitize, verify signatures, preflight-simulate
   * (unless skipped), then the transaction lands in the next slot. Returns the signature.
   */
  function submit(wire: Uint8Array, skipPreflight: boolean): string {
    if (wire.length > PACKET_DATA_SIZE)
      throw new RpcError(
        -32602,
        `invalid transaction: ${wire.length} bytes exceed the packet size (max ${PACKET_DATA_SIZE})`,
      );
    let parsed: ReturnType<typeof parseWire>;
    let tx: Transaction;
    try {
      parsed = parseWire(wire);
      tx = txDecoder.decode(wire);
    } catch (e) {
      throw new RpcError(-32602, `invalid transaction: ${(e as Error).message}`);
    }
    if (!equalBytes(Uint8Array.from(txEncoder.encode(tx)), wire))
      throw new RpcError(
        -32602,
        'invalid transaction: Transaction failed to sanitize accounts offsets correctly',
      );
    const { message } = parsed;
    const signature = b58.decode(parsed.signatures[0] ?? new Uint8Array(64));
    if (parsed.signatures.length === 0 || parsed.signatures.some(isZero)) throw signatureFailure();

    if (records.has(signature)) {
      if (skipPreflight) return signature;
      throw preflightError('AlreadyProcessed', TX_ERROR_TEXT.AlreadyProcessed!);
    }
    const height = blockhashes.get(message.recentBlockhash);
    const fresh = height !== undefined && slot + 1n <= height + MAX_PROCESSING_AGE;
    if (!fresh && !nonceMatches(message)) {
      if (skipPreflight) return signature; // a real cluster drops it: it never lands
      throw preflightError('BlockhashNotFound', TX_ERROR_TEXT.BlockhashNotFound!);
    }

    const sim = svm.simulateTransaction(tx);
    absorbX87Overflow();
    if (sim instanceof FailedTransactionMetadata) {
      const { json, text } = txError(sim.err());
      if (json === 'SignatureFailure') throw signatureFailure();
      if (json === 'SanitizeFailure') throw new RpcError(-32602, `invalid transaction: ${text}`);
      if (!skipPreflight) throw preflightError(json, text, sim.meta());
    }

    advanceSlot();
    const loaded = loadedAddresses(message);
    const keys = [...message.accountKeys, ...loaded.writable, ...loaded.readonly];
    const preBalances = keys.map(balance);
    const before = svm.getBalance(message.accountKeys[0] as Address);
    const result = svm.sendTransaction(tx);
    absorbX87Overflow();
    const failed = result instanceof FailedTransactionMetadata;
    const meta = failed ? result.meta() : result;
    const postBalances = keys.map(balance);
    // A failed transaction lands (and pays its fee) only if it got past fee collection.
    if (failed && before === svm.getBalance(message.accountKeys[0] as Address)) {
      const { json, text } = txError(result.err());
      if (skipPreflight) return signature;
      throw preflightError(json, text, meta);
    }
    const sum = (xs: bigint[]) => xs.reduce((a, b) => a + b, 0n);
    records.set(signature, {
      signature,
      wire: Uint8Array.from(wire),
      message,
      loaded,
      slot,
      blockTime,
      err: failed ? txError(result.err()).json : null,
      fee: sum(preBalances) - sum(postBalances),
      preBalances,
      postBalances,
      logs: meta.logs(),
      innerInstructions: innerJson(meta.innerInstructions()),
      computeUnitsConsumed: meta.computeUnitsConsumed(),
      returnData: returnDataJson(meta),
    });
    return signature;
  }

  function innerJson(inner: InnerInstruction[][]): Json[] {
    return inner.flatMap((ixs, index) =>
      ixs.length === 0
        ? []
        : [
            {
              index,
              instructions: ixs.map((ii) => {
                const ci = ii.instruction();
                return {
                  programIdIndex: ci.programIdIndex(),
                  accounts: Array.from(ci.accounts()),
                  data: b58.decode(ci.data()),
                  stackHeight: ii.stackHeight(),
                };
              }),
            },
          ],
    );
  }

  function returnDataJson(meta: TransactionMetadata): Json {
    const rd = meta.returnData();
    const data = rd.data();
    const programId = rd.programId();
    if (data.length === 0 && isZero(programId)) return null;
    return { programId: b58.decode(programId), data: [Buffer.from(data).toString('base64'), 'base64'] };
  }

  async function airdrop(address: string, lamports: bigint): Promise<string> {
    const transferData = new Uint8Array(12);
    const view = new DataView(transferData.buffer);
    view.setUint32(0, 2, true); // SystemInstruction::Transfer
    view.setBigUint64(4, lamports, true);
    const message = pipe(
      createTransactionMessage({ version: 'legacy' }),
      (m) => setTransactionMessageFeePayer(faucet.address, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: svm.latestBlockhash() as Blockhash, lastValidBlockHeight: slot + MAX_PROCESSING_AGE },
          m,
        ),
      (m) =>
        appendTransactionMessageInstruction(
          {
            programAddress: SYSTEM_PROGRAM,
            accounts: [
              { address: faucet.address, role: AccountRole.WRITABLE_SIGNER },
              { address: address as Address, role: AccountRole.WRITABLE },
            ],
            data: transferData,
          },
          m,
        ),
    );
    const signed = await signTransaction([faucet.keyPair], compileTransaction(message));
    return submit(Uint8Array.from(txEncoder.encode(signed)), false);
  }

  // ---------- parameters ----------

  const invalid = (msg: string) => new RpcError(-32602, `Invalid params: ${msg}`);

  function addressParam(v: unknown, field: string): string {
    if (typeof v !== 'string' || !isAddress(v)) throw invalid(`${field}: expected a base58 address`);
    return v;
  }

  function u64Param(v: unknown, field: string): bigint {
    const n =
      typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : undefined;
    if (n === undefined || n < 0n || n >= 1n << 64n) throw invalid(`${field}: expected a u64 integer`);
    return n;
  }

  function configParam(v: unknown): Record<string, unknown> {
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) throw invalid('expected a configuration object');
    const c = v as Record<string, unknown>;
    if (c.minContextSlot !== undefined && u64Param(c.minContextSlot, 'minContextSlot') > slot)
      throw new RpcError(-32016, 'Minimum context slot has not been reached', { contextSlot: slot });
    return c;
  }

  function signatureParam(v: unknown): string {
    let ok = false;
    try {
      ok = typeof v === 'string' && v.length <= 88 && b58bytes.encode(v).length === 64;
    } catch {
      ok = false;
    }
    if (!ok) throw invalid('expected a base58 transaction signature (64 bytes)');
    return v as string;
  }

  function airdropParams(p: unknown[]): { address: string; lamports: bigint } {
    const address = addressParam(p[0], 'pubkey');
    const lamports = u64Param(p[1], 'lamports');
    if (lamports === 0n) throw invalid('lamports: must be positive');
    configParam(p[2]);
    return { address, lamports };
  }

  // ---------- JSON views ----------

  function accountJson(address: string, encoding: unknown, dataSlice: unknown): Json {
    const a = svm.getAccount(address as Address);
    if (!a.exists) return null;
    let data = Uint8Array.from(a.data);
    if (dataSlice !== undefined && dataSlice !== null) {
      const s = dataSlice as { offset?: unknown; length?: unknown };
      const offset = Number(u64Param(s.offset, 'dataSlice.offset'));
      data = data.subarray(offset, offset + Number(u64Param(s.length, 'dataSlice.length')));
    }
    let encoded: Json;
    if (encoding === 'base64' || encoding === 'jsonParsed')
      encoded = [Buffer.from(data).toString('base64'), 'base64'];
    else if (encoding === undefined || encoding === 'binary' || encoding === 'base58') {
      if (data.length > 128)
        throw new RpcError(
          -32600,
          'Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.',
        );
      encoded = encoding === 'base58' ? [b58.decode(data), 'base58'] : b58.decode(data);
    } else throw invalid(`unsupported encoding ${JSON.stringify(encoding)}`);
    return {
      data: encoded,
      executable: a.executable,
      lamports: a.lamports,
      owner: a.programAddress,
      rentEpoch: (1n << 64n) - 1n,
      space: a.space,
    };
  }

  function transactionJson(r: TxRecord, encoding: string): Json {
    if (encoding === 'base64') return [Buffer.from(r.wire).toString('base64'), 'base64'];
    if (encoding === 'base58') return [b58.decode(r.wire), 'base58'];
    if (encoding === 'binary') return b58.decode(r.wire);
    const m = r.message;
    const { signatures } = parseWire(r.wire);
    return {
      signatures: signatures.map((s) => b58.decode(s)),
      message: {
        accountKeys: m.accountKeys,
        header: m.header,
        instructions: m.instructions.map((ix) => ({
          programIdIndex: ix.programIdIndex,
          accounts: ix.accounts,
          data: b58.decode(ix.data),
          stackHeight: null,
        })),
        recentBlockhash: m.recentBlockhash,
        ...(m.version === 0 ? { addressTableLookups: m.addressTableLookups } : {}),
      },
    };
  }

  const statusOf = (err: Json): Json => (err === null ? { Ok: null } : { Err: err });

  function statusJson(r: TxRecord): Json {
    return {
      slot: r.slot,
      confirmations: null,
      err: r.err,
      status: statusOf(r.err),
      confirmationStatus: 'finalized',
    };
  }

  const methods: Record<string, (p: unknown[]) => Json | Promise<Json>> = {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': SOLANA_CORE, 'feature-set': 0 }),
    getSlot: (p) => {
      configParam(p[0]);
      return slot;
    },
    getBlockHeight: (p) => {
      configParam(p[0]);
      return slot;
    },
    getLatestBlockhash: (p) => {
      configParam(p[0]);
      return {
        context: context(),
        value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: slot + MAX_PROCESSING_AGE },
      };
    },
    isBlockhashValid: (p) => {
      if (typeof p[0] !== 'string') throw invalid('expected a base58 blockhash');
      configParam(p[1]);
      const h = blockhashes.get(p[0]);
      // the same window sendTransaction applies: a transaction sent now lands in the next slot
      return { context: context(), value: h !== undefined && slot + 1n <= h + MAX_PROCESSING_AGE };
    },
    getBalance: (p) => {
      const a = addressParam(p[0], 'pubkey');
      configParam(p[1]);
      return { context: context(), value: balance(a) };
    },
    getAccountInfo: (p) => {
      const a = addressParam(p[0], 'pubkey');
      const c = configParam(p[1]);
      return { context: context(), value: accountJson(a, c.encoding, c.dataSlice) };
    },
    getMinimumBalanceForRentExemption: (p) => {
      const len = u64Param(p[0] ?? 0, 'dataLength');
      configParam(p[1]);
      return svm.minimumBalanceForRentExemption(len);
    },
    requestAirdrop: (p) => {
      const { address, lamports } = airdropParams(p);
      return airdrop(address, lamports);
    },
    sendTransaction: (p) => {
      const c = configParam(p[1]);
      const encoding = c.encoding ?? 'base58';
      if (typeof p[0] !== 'string') throw invalid('expected an encoded transaction string');
      let wire: Uint8Array;
      if (encoding === 'base64') {
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(p[0]) || p[0].length > 1644)
          throw new RpcError(-32602, 'invalid base64 encoding');
        wire = Uint8Array.from(Buffer.from(p[0], 'base64'));
      } else if (encoding === 'base58') {
        if (p[0].length > 1683) throw new RpcError(-32602, 'base58 encoded transaction too large');
        try {
          wire = Uint8Array.from(b58bytes.encode(p[0]));
        } catch {
          throw new RpcError(-32602, 'invalid base58 encoding');
        }
      } else throw invalid(`unsupported encoding: ${String(encoding)}. Supported encodings: base58, base64`);
      return submit(wire, c.skipPreflight === true);
    },
    getSignatureStatuses: (p) => {
      if (!Array.isArray(p[0])) throw invalid('expected an array of signatures');
      if (p[0].length > MAX_SIGNATURE_STATUSES)
        throw invalid(`Too many inputs provided; max ${MAX_SIGNATURE_STATUSES}`);
      configParam(p[1]);
      const sigs = p[0].map(signatureParam);
      return {
        context: context(),
        value: sigs.map((s) => {
          const r = records.get(s);
          return r ? statusJson(r) : null;
        }),
      };
    },
    getTransaction: (p) => {
      const sig = signatureParam(p[0]);
      const c = typeof p[1] === 'string' ? { encoding: p[1] } : configParam(p[1]);
      if (c.commitment === 'processed') throw invalid('Method does not support commitment below `confirmed`');
      const encoding = c.encoding ?? 'json';
      if (encoding !== 'json' && encoding !== 'base64' && encoding !== 'base58' && encoding !== 'binary')
        throw invalid(
          `unsupported encoding ${JSON.stringify(encoding)} (this devnode: json, base64, base58)`,
        );
      const max = c.maxSupportedTransactionVersion;
      if (max !== undefined && max !== null && u64Param(max, 'maxSupportedTransactionVersion') !== 0n)
        throw invalid('maxSupportedTransactionVersion: only 0 is supported');
      const r = records.get(sig);
      if (!r) return null;
      const withVersion = max !== undefined && max !== null;
      if (r.message.version === 0 && !withVersion)
        throw new RpcError(
          -32015,
          'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        );
      const meta: Record<string, Json> = {
        err: r.err,
        status: statusOf(r.err),
        fee: r.fee,
        preBalances: r.preBalances,
        postBalances: r.postBalances,
        innerInstructions: r.innerInstructions,
        logMessages: r.logs,
        preTokenBalances: [],
        postTokenBalances: [],
        rewards: [],
        loadedAddresses: r.loaded,
      };
      if (r.returnData !== null) meta.returnData = r.returnData;
      meta.computeUnitsConsumed = r.computeUnitsConsumed;
      const out: Record<string, Json> = { slot: r.slot, blockTime: r.blockTime };
      // like Agave: `version` only when the client declared maxSupportedTransactionVersion
      if (withVersion) out.version = r.message.version;
      out.meta = meta;
      out.transaction = transactionJson(r, encoding as string);
      return out;
    },
  };

  // ---------- transport ----------

  /** Serializes every request: one transaction at a time, reads see a settled state. */
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => T | Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  };

  async function handle(req: unknown): Promise<Json> {
    const r = req as { id?: Json; method?: unknown; params?: unknown };
    const id = r && typeof r === 'object' && 'id' in r ? (r.id ?? null) : null;
    if (!r || typeof r !== 'object' || Array.isArray(r) || typeof r.method !== 'string')
      return { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request' }, id };
    const fn = Object.hasOwn(methods, r.method) ? methods[r.method] : undefined;
    if (!fn) return { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id };
    if (r.params !== undefined && !Array.isArray(r.params))
      return { jsonrpc: '2.0', error: { code: -32602, message: 'Invalid params: expected an array' }, id };
    try {
      const result = await serial(() => fn((r.params as unknown[] | undefined) ?? []));
      return { jsonrpc: '2.0', result, id };
    } catch (e) {
      const err = e instanceof RpcError ? e : new RpcError(-32603, `Internal error: ${(e as Error).message}`);
      return {
        jsonrpc: '2.0',
        error: {
          code: err.code,
          message: err.message,
          ...(err.data === undefined ? {} : { data: err.data }),
        },
        id,
      };
    }
  }

  const send = (res: ServerResponse, status: number, body: Json) => {
    const text = stringifyLossless(body); // first: a body it cannot write fails before the head is sent
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(text);
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      if (tooLarge) return;
      size += c.length;
      if (size > MAX_REQUEST_BODY) {
        // Answer at once and close the connection after the response: the rest is never buffered.
        tooLarge = true;
        chunks.length = 0;
        res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
        res.end(
          stringifyLossless({
            jsonrpc: '2.0',
            error: { code: -32600, message: `request body exceeds ${MAX_REQUEST_BODY} bytes` },
            id: null,
          }),
        );
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (tooLarge) return;
      void (async () => {
        let body: unknown;
        try {
          body = parseLossless(Buffer.concat(chunks).toString('utf8'), null, parseNumberAndBigInt);
        } catch {
          send(res, 200, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
          return;
        }
        if (Array.isArray(body) && body.length === 0) {
          send(res, 200, { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request' }, id: null });
          return;
        }
        send(res, 200, Array.isArray(body) ? await Promise.all(body.map(handle)) : await handle(body));
      })().catch((e: unknown) => {
        // A bug in a method's answer is that request's error, never the devnode's end (one process serves all).
        if (res.headersSent) res.end();
        else
          send(res, 500, {
            jsonrpc: '2.0',
            error: { code: -32603, message: (e as Error).message },
            id: null,
          });
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    airdrop: (address, lamports) =>
      serial(() => {
        const p = airdropParams([address, lamports]);
        return airdrop(p.address, p.lamports);
      }),
    slot: () => slot,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
