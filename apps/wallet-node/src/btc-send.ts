/**
 * Watch-only BTC sends (`/wallet/sendbtcbegin` → external signature → `/wallet/sendbtcend`). rgb-lib's c-ffi
 * can only send BTC by signing with a mnemonic, so the PSBT is built here, from the wallet's VANILLA UTXOs
 * only, with the BIP32 records a signer needs; the inputs are reserved (in a file in the wallet's
 * directory) until the reservation expires, and `sendbtcend` broadcasts nothing but a transaction built and
 * reserved here.
 *
 * Facts this relies on, checked against rgb-lib 0.3.0-beta.7 on the devnet (e2e/wallet-node.btc-send.test.ts
 * and the rgb-lib test in btc-send.test.ts):
 * - `listUnspents` returns both keychains; vanilla UTXOs have `colorable: false`, colored ones (including
 *   those created by createutxos, with or without an allocation) `colorable: true`. Each also carries a
 *   keychain-local `derivationIndex`, used here only as a hint that is checked against the output script.
 * - A watch-only wallet opened with `vanillaKeychain: null` derives its vanilla addresses (`getAddress`,
 *   change) at `<vanilla account xpub>/0/i`, i.e. m/84'|86' / coin' / 0' / 0 / i with coin 0 on mainnet
 *   and 1 elsewhere.
 * - `btcbalance.vanilla.spendable` counts unconfirmed vanilla UTXOs too, a third party's incoming ones
 *   included (future = spendable before any confirmation). Begin follows that reference: every existing
 *   vanilla UTXO without allocations is spendable, confirmed or not.
 */
import { randomInt } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Unspent } from '@rgbx/rgb';
import { HDKey } from '@scure/bip32';
import { Address, OutScript, p2tr, p2wpkh, Transaction } from '@scure/btc-signer';
import type { NetworkName } from './config.ts';
import { E } from './errors.ts';

export type WitnessKind = 'SegWitV0' | 'Taproot';

/** Where begin keeps its reservations, inside the wallet's directory (`<data_dir>/<fingerprint>/`). */
export const RESERVATION_FILE = 'rgbx-btc-reservations.json';
/** Vanilla addresses derived when looking for a UTXO's index before giving up (500). */
export const MAX_DERIVATION_INDEX = 10_000;
/** Keychain of rgb-lib's vanilla addresses for wallets opened with `vanillaKeychain: null`. */
export const VANILLA_KEYCHAIN = 0;
/** BIP-125 replaceable, nLockTime enabled (as BDK, which rgb-lib's own sends use). */
export const INPUT_SEQUENCE = 0xfffffffd;
/** Change below this goes to the fee instead (P2WPKH 546, P2TR 330, as the service documents). */
export const CHANGE_DUST: Record<WitnessKind, bigint> = { SegWitV0: 546n, Taproot: 330n };
/** Bitcoin Core's standard transaction weight limit (400 000 WU). */
export const MAX_STANDARD_VSIZE = 100_000;
/** 21 million BTC in sats: no amount can exceed it. */
export const MAX_MONEY = 2_100_000_000_000_000n;

// ---------- network and addresses ----------

/** @scure/btc-signer network parameters of a service network. */
export function signerNetwork(network: NetworkName): {
  bech32: string;
  pubKeyHash: number;
  scriptHash: number;
  wif: number;
} {
  if (network === 'mainnet') return { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, wif: 0x80 };
  return {
    bech32: network === 'regtest' ? 'bcrt' : 'tb',
    pubKeyHash: 0x6f,
    scriptHash: 0xc4,
    wif: 0xef,
  };
}

/** BIP-32 versions of the xpubs the service accepts on this network (xpub on mainnet, tpub elsewhere). */
function xpubVersions(network: NetworkName): { private: number; public: number } {
  return network === 'mainnet'
    ? { private: 0x0488ade4, public: 0x0488b21e }
    : { private: 0x04358394, public: 0x043587cf };
}

/**
 * The output script an address pays, on `network`; E.INVALID_ADDRESS (400) for anything else: a typo, a
 * bad checksum, another network's address, or a pay-to-anchor output.
 */
export function recipientScript(address: string, network: NetworkName): Uint8Array {
  let decoded: ReturnType<ReturnType<typeof Address>['decode']>;
  try {
    decoded = Address(signerNetwork(network)).decode(address.trim());
  } catch (err) {
    throw E.INVALID_ADDRESS.createWith(
      { details: { address, network, reason: (err as Error).message } },
      `${JSON.stringify(address)} is not a valid ${network} address`,
    );
  }
  if (decoded.type === 'p2a')
    throw E.INVALID_ADDRESS.createWith(
      { details: { address, network } },
      `${address} is a pay-to-anchor address, which cannot receive a payment`,
    );
  return OutScript.encode(decoded);
}

const varintSize = (n: number) => (n < 0xfd ? 1 : n <= 0xffff ? 3 : n <= 0xffffffff ? 5 : 9);

/** Serialized size of an output paying `scriptLength` bytes of script. */
const outputSize = (scriptLength: number) => 8 + varintSize(scriptLength) + scriptLength;

/**
 * Bitcoin Core's dust threshold of an output at the default dust relay fee (3 sat/vB): what spending it
 * would cost (`GetDustThreshold`): 546 P2PKH, 540 P2SH, 294 P2WPKH, 330 P2WSH/P2TR.
 */
export function dustThreshold(script: Uint8Array): bigint {
  const isWitnessProgram =
    script.length >= 4 &&
    script.length <= 42 &&
    (script[0] === 0x00 || (script[0]! >= 0x51 && script[0]! <= 0x60)) &&
    script[1] === script.length - 2;
  // input spending it: outpoint 32 + 4, script length 1, sequence 4, plus the scriptSig (107) or the
  // witness discounted by 4 (107 / 4 = 26, integer division as in Core)
  const spend = isWitnessProgram ? 32 + 4 + 1 + 26 + 4 : 32 + 4 + 1 + 107 + 4;
  return BigInt((outputSize(script.length) + spend) * 3);
}

// ---------- size and fee ----------

/**
 * Witness weight of one key-path input. P2TR: item count 1, length 1, 64-byte Schnorr signature
 * (SIGHASH_DEFAULT, the signer's default) = 66, exact. P2WPKH: item count 1, length 1, DER signature with
 * its sighash byte (at most 72: S is always low, as relay policy requires, so only R can take 33 bytes),
 * length 1, 33-byte key = 108: the largest it can be, so the paid rate is never below the asked one (an
 * input whose R is short, about half of them, weighs 1 WU less).
 */
export const INPUT_WITNESS_WEIGHT: Record<WitnessKind, number> = { SegWitV0: 108, Taproot: 66 };
/** Output script length of the wallet's change: P2WPKH 22 bytes, P2TR 34. */
export const CHANGE_SCRIPT_LENGTH: Record<WitnessKind, number> = { SegWitV0: 22, Taproot: 34 };

/**
 * Weight of the signed transaction: `inputs` key-path inputs of the wallet's kind (empty scriptSig) and
 * outputs with these script lengths; version 4, locktime 4, segwit marker and flag 2 WU.
 */
export function estimateWeight(kind: WitnessKind, inputs: number, outputScriptLengths: number[]): number {
  let base = 4 + varintSize(inputs) + inputs * (32 + 4 + 1 + 4) + varintSize(outputScriptLengths.length) + 4;
  for (const len of outputScriptLengths) base += outputSize(len);
  return base * 4 + 2 + inputs * INPUT_WITNESS_WEIGHT[kind];
}

/** Virtual size (weight / 4, rounded up) of the signed transaction; see {@link estimateWeight}. */
export function estimateVsize(kind: WitnessKind, inputs: number, outputScriptLengths: number[]): number {
  return Math.ceil(estimateWeight(kind, inputs, outputScriptLengths) / 4);
}

// ---------- coin selection ----------

export interface Candidate {
  txid: string;
  vout: number;
  amount: bigint;
  /** rgb-lib's keychain-local derivation index, a hint checked against the script before use. */
  derivationIndex?: number | undefined;
}

export interface Selection {
  inputs: Candidate[];
  /** Sats to the recipient. */
  amount: bigint;
  /** 0 when there is no change output (a sub-dust remainder went to the fee). */
  change: bigint;
  fee: bigint;
  /** vsize the fee pays for (with or without the change output). */
  vsize: number;
}

/** Not enough vanilla funds: `available` is the total of the eligible UTXOs, `needed` amount + fee with all of them. */
export class InsufficientFundsError extends Error {
  override readonly name = 'InsufficientFundsError';
  readonly available: bigint;
  readonly needed: bigint;
  constructor(available: bigint, needed: bigint) {
    super(`${available} sats spendable, ${needed} needed (amount + fee)`);
    this.available = available;
    this.needed = needed;
  }
}

const outpointKey = (c: { txid: string; vout: number }) => `${c.txid}:${c.vout}`;

/**
 * Largest-first selection: UTXOs are taken in decreasing amount (ties by outpoint, so the result is
 * deterministic) until they pay `amount` + fee with a change output of at least the dust limit, or
 * `amount` + fee without change (the remainder, below what a change output would cost plus its dust
 * limit, then goes to the fee). The k largest UTXOs are the best k for feasibility, so if this fails no
 * subset of the candidates can pay.
 *
 * @throws InsufficientFundsError
 */
export function selectCoins(
  candidates: readonly Candidate[],
  amount: bigint,
  feeRate: bigint,
  kind: WitnessKind,
  recipientScriptLength: number,
): Selection {
  const sorted = [...candidates].sort((a, b) =>
    a.amount === b.amount ? (outpointKey(a) < outpointKey(b) ? -1 : 1) : a.amount > b.amount ? -1 : 1,
  );
  const withChange = [recipientScriptLength, CHANGE_SCRIPT_LENGTH[kind]];
  const noChange = [recipientScriptLength];
  let total = 0n;
  for (let k = 1; k <= sorted.length; k++) {
    total += sorted[k - 1]!.amount;
    const vsizeC = estimateVsize(kind, k, withChange);
    const feeC = BigInt(vsizeC) * feeRate;
    if (total >= amount + feeC + CHANGE_DUST[kind]) {
      return { inputs: sorted.slice(0, k), amount, change: total - amount - feeC, fee: feeC, vsize: vsizeC };
    }
    const vsizeN = estimateVsize(kind, k, noChange);
    if (total >= amount + BigInt(vsizeN) * feeRate) {
      return { inputs: sorted.slice(0, k), amount, change: 0n, fee: total - amount, vsize: vsizeN };
    }
  }
  const needed = amount + BigInt(estimateVsize(kind, Math.max(1, sorted.length), noChange)) * feeRate;
  throw new InsufficientFundsError(total, needed);
}

// ---------- eligibility and reservations ----------

/**
 * The UTXOs begin may spend: vanilla (`colorable === false`), existing, without any RGB allocation or
 * pending blinded receive, and not reserved by another pending begin. Unconfirmed ones count, as in
 * rgb-lib's `vanilla.spendable`.
 */
export function spendableVanilla(unspents: readonly Unspent[], reserved: ReadonlySet<string>): Candidate[] {
  const out: Candidate[] = [];
  for (const u of unspents) {
    const { utxo } = u;
    if (utxo.colorable !== false || utxo.exists === false) continue;
    if ((u.rgbAllocations?.length ?? 0) > 0 || (u.pendingBlinded ?? 0) > 0) continue;
    if (reserved.has(outpointKey(utxo.outpoint))) continue;
    const hint = (utxo as { derivationIndex?: unknown }).derivationIndex;
    out.push({
      txid: utxo.outpoint.txid,
      vout: utxo.outpoint.vout,
      amount: BigInt(utxo.btcAmount),
      derivationIndex: typeof hint === 'number' ? hint : undefined,
    });
  }
  return out;
}

export interface Reservation {
  /** `txid:vout` of every input. */
  outpoints: string[];
  /** Unix ms. */
  created_at: number;
  /** Unix ms; an expired reservation is ignored and pruned. */
  expires_at: number;
  address: string;
  /** Sats, decimal strings (exact). */
  amount: string;
  fee: string;
  /** Unix ms of the first successful broadcast; kept until expiry so a retried sendbtcend is idempotent. */
  broadcast_at?: number;
}

/** Reservations by unsigned txid. */
export type Reservations = Record<string, Reservation>;

/** The live (unexpired) reservations of the wallet in `walletDir`; a missing or unreadable file is none. */
export function readReservations(walletDir: string, now = Date.now()): Reservations {
  const file = join(walletDir, RESERVATION_FILE);
  if (!existsSync(file)) return {};
  let parsed: { version?: unknown; reservations?: unknown };
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as typeof parsed;
  } catch {
    // A torn write cannot happen (writes are rename-atomic); anything else unreadable holds nothing usable.
    return {};
  }
  const out: Reservations = Object.create(null) as Reservations;
  if (parsed?.version !== 1 || typeof parsed.reservations !== 'object' || parsed.reservations === null)
    return out;
  for (const [txid, r] of Object.entries(parsed.reservations as Record<string, Reservation>)) {
    if (!/^[0-9a-f]{64}$/.test(txid)) continue;
    if (typeof r?.expires_at !== 'number' || r.expires_at <= now || !Array.isArray(r.outpoints)) continue;
    out[txid] = r;
  }
  return out;
}

/** Writes the reservations (expired ones dropped) atomically, mode 0600. */
export function writeReservations(walletDir: string, reservations: Reservations, now = Date.now()): void {
  const live: Reservations = {};
  for (const [txid, r] of Object.entries(reservations)) if (r.expires_at > now) live[txid] = r;
  const file = join(walletDir, RESERVATION_FILE);
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ version: 1, reservations: live }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600); // mode only applies when the file is created
  renameSync(tmp, file);
}

/** Every outpoint held by a live reservation. */
export function reservedOutpoints(reservations: Reservations): Set<string> {
  return new Set(Object.values(reservations).flatMap((r) => r.outpoints));
}

// ---------- vanilla key derivation ----------

export interface DerivedKey {
  index: number;
  /** 33-byte compressed public key. */
  pubkey: Uint8Array;
  script: Uint8Array;
}

const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The vanilla keychain of one wallet: `<account xpub>/0/i` keys and scripts, with a script → index map
 * filled in chunks (the event loop gets a turn between chunks) up to {@link MAX_DERIVATION_INDEX}.
 */
export class VanillaKeys {
  readonly kind: WitnessKind;
  /** Full path of the account: purpose', coin', account' (hardened). */
  readonly accountPath: number[];
  readonly #chain: HDKey;
  readonly #byScript = new Map<string, number>();
  #derived = 0;

  constructor(xpub: string, kind: WitnessKind, network: NetworkName) {
    const account = HDKey.fromExtendedKey(xpub, xpubVersions(network));
    if (account.depth !== 3)
      throw new Error(`vanilla xpub is at depth ${account.depth}, expected an account key (depth 3)`);
    this.kind = kind;
    const H = 0x80000000;
    this.accountPath = [
      (kind === 'Taproot' ? 86 : 84) + H,
      (network === 'mainnet' ? 0 : 1) + H,
      account.index,
    ];
    this.#chain = account.deriveChild(VANILLA_KEYCHAIN);
  }

  /** Key and output script at vanilla index `index`. */
  derive(index: number): DerivedKey {
    const pubkey = this.#chain.deriveChild(index).publicKey;
    if (!pubkey) throw new Error(`cannot derive vanilla key ${index}`);
    const script = this.kind === 'Taproot' ? p2tr(pubkey.subarray(1)).script : p2wpkh(pubkey).script;
    return { index, pubkey, script };
  }

  /** BIP-32 path of vanilla index `index` from the master key. */
  path(index: number): number[] {
    return [...this.accountPath, VANILLA_KEYCHAIN, index];
  }

  /** How many indexes are in the script map. */
  get derived(): number {
    return this.#derived;
  }

  /**
   * The vanilla index whose output script is `script`: the `hint` first (one derivation), then the map,
   * extended in chunks of `chunk` up to `limit`. Undefined when not found within the limit. A derivation
   * costs 1–2.5 ms (@scure/bip32 public derivation plus the script), so a chunk of 25 holds the event loop
   * for at most ~60 ms, and a full search to 10 000 takes 10–25 s once per wallet (the map is kept);
   * rgb-lib's own index (the hint) normally makes it one derivation.
   */
  async indexOf(
    script: Uint8Array,
    hint?: number,
    limit = MAX_DERIVATION_INDEX,
    chunk = 25,
  ): Promise<number | undefined> {
    if (hint !== undefined && Number.isInteger(hint) && hint >= 0 && hint < 2 ** 31) {
      const k = this.derive(hint);
      if (Buffer.compare(k.script, script) === 0) return hint;
    }
    const want = toHex(script);
    const known = this.#byScript.get(want);
    if (known !== undefined) return known;
    while (this.#derived < limit) {
      const end = Math.min(limit, this.#derived + chunk);
      let found: number | undefined;
      for (let i = this.#derived; i < end; i++) {
        const s = toHex(this.derive(i).script);
        this.#byScript.set(s, i);
        if (s === want) found ??= i;
      }
      this.#derived = end;
      if (found !== undefined) return found;
      await yieldToLoop();
    }
    return undefined;
  }
}

const keysCache = new Map<string, VanillaKeys>();
const KEYS_CACHE_MAX = 256;

/** The wallet's {@link VanillaKeys}, cached (least recently used evicted beyond 256 wallets). */
export function vanillaKeysFor(xpub: string, kind: WitnessKind, network: NetworkName): VanillaKeys {
  const key = `${network}:${kind}:${xpub}`;
  let k = keysCache.get(key);
  if (k) {
    keysCache.delete(key);
  } else {
    k = new VanillaKeys(xpub, kind, network);
    if (keysCache.size >= KEYS_CACHE_MAX) keysCache.delete(keysCache.keys().next().value as string);
  }
  keysCache.set(key, k);
  return k;
}

// ---------- PSBT ----------

export interface PsbtInput {
  txid: string;
  vout: number;
  amount: bigint;
  /** The previous output's script (the wallet's P2WPKH or P2TR). */
  script: Uint8Array;
  /** The whole previous transaction (serialized): added as non_witness_utxo to P2WPKH inputs. */
  prevTx?: Uint8Array;
  key: DerivedKey;
}

export interface BuildPsbtParams {
  kind: WitnessKind;
  /** Master fingerprint, 8 hex digits. */
  fingerprint: string;
  keys: VanillaKeys;
  inputs: PsbtInput[];
  recipient: { script: Uint8Array; amount: bigint };
  change?: { key: DerivedKey; amount: bigint };
  /** Position of the change output (0 or 1); random by default so the change cannot be told by its place. */
  changeIndex?: number;
}

function derivationRecord(kind: WitnessKind, fingerprint: number, path: number[], key: DerivedKey) {
  return kind === 'Taproot'
    ? {
        tapInternalKey: key.pubkey.subarray(1),
        tapBip32Derivation: [[key.pubkey.subarray(1), { hashes: [], der: { fingerprint, path } }]] as [
          Uint8Array,
          { hashes: Uint8Array[]; der: { fingerprint: number; path: number[] } },
        ][],
      }
    : {
        bip32Derivation: [[key.pubkey, { fingerprint, path }]] as [
          Uint8Array,
          { fingerprint: number; path: number[] },
        ][],
      };
}

/**
 * The unsigned PSBT (version 2, locktime 0, sequence {@link INPUT_SEQUENCE}): every input with its
 * witness_utxo and BIP32 record (P2WPKH: bip32_derivation and non_witness_utxo; P2TR: tap_internal_key
 * and tap_bip32_derivation), the recipient, and the change with its BIP32 record so signers recognize it.
 * @returns base64 PSBT and the transaction id it will have once signed.
 */
export function buildPsbt(p: BuildPsbtParams): { psbt: string; txid: string } {
  const fp = Number.parseInt(p.fingerprint, 16);
  const tx = new Transaction({ version: 2, lockTime: 0 });
  for (const i of p.inputs) {
    tx.addInput({
      txid: i.txid,
      index: i.vout,
      sequence: INPUT_SEQUENCE,
      witnessUtxo: { script: i.script, amount: i.amount },
      ...(p.kind === 'SegWitV0' && i.prevTx ? { nonWitnessUtxo: i.prevTx } : {}),
      ...derivationRecord(p.kind, fp, p.keys.path(i.key.index), i.key),
    });
  }
  const recipient = { script: p.recipient.script, amount: p.recipient.amount };
  const outputs: Parameters<Transaction['addOutput']>[0][] = [recipient];
  if (p.change) {
    const change = {
      script: p.change.key.script,
      amount: p.change.amount,
      ...derivationRecord(p.kind, fp, p.keys.path(p.change.key.index), p.change.key),
    };
    const at = p.changeIndex ?? randomInt(2);
    outputs.splice(at === 0 ? 0 : 1, 0, change);
  }
  for (const o of outputs) tx.addOutput(o);
  return { psbt: Buffer.from(tx.toPSBT()).toString('base64'), txid: tx.id };
}

/**
 * Parses a signed PSBT, finalizes the inputs not finalized yet and extracts the transaction.
 * @throws E.INVALID_PSBT saying what is wrong (not a PSBT, an input not signed, outputs above inputs).
 */
export function finalizeSigned(psbtBase64: string): { txid: string; hex: string } {
  const text = psbtBase64.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0)
    throw E.INVALID_PSBT.createWith(
      { details: { expected: 'base64 PSBT' } },
      'expected a base64 PSBT, received text that is not base64',
    );
  let tx: Transaction;
  try {
    tx = Transaction.fromPSBT(Buffer.from(text, 'base64'), { allowUnknownOutputs: true, allowUnknown: true });
  } catch (err) {
    throw E.INVALID_PSBT.createWith(
      { details: { reason: (err as Error).message } },
      `cannot parse the PSBT: ${(err as Error).message}`,
    );
  }
  for (let i = 0; i < tx.inputsLength; i++) {
    const input = tx.getInput(i);
    if (input.finalScriptWitness || input.finalScriptSig) continue;
    try {
      tx.finalizeIdx(i);
    } catch (err) {
      throw E.INVALID_PSBT.createWith(
        { details: { input: i, reason: (err as Error).message } },
        `input ${i} cannot be finalized (expected a signature from the wallet's key): ${(err as Error).message}`,
      );
    }
  }
  let raw: Uint8Array;
  try {
    raw = tx.extract();
  } catch (err) {
    throw E.INVALID_PSBT.createWith(
      { details: { reason: (err as Error).message } },
      `cannot extract the transaction: ${(err as Error).message}`,
    );
  }
  return { txid: tx.id, hex: toHex(raw) };
}
