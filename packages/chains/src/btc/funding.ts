import { ripemd160 } from '@noble/hashes/legacy.js';
import { Transaction } from '@scure/btc-signer';
import { type BytesLike, equalBytes, hex, preview, toBytes } from '../bytes.ts';
import { ChainInputError } from '../errors.ts';
import { sha256 } from './hash.ts';
import { addressToScript, type BtcNetwork, type Htlc, taprootOutputKey, xOnlyKey } from './htlc.ts';

/** A previous output: an outpoint with its value and scriptPubKey. The user's UTXOs have this shape too. */
export interface Prevout {
  /** RPC byte order (as Electrum and bitcoind print it). */
  txid: string;
  vout: number;
  /** sats */
  value: bigint;
  /** scriptPubKey */
  script: BytesLike;
}

/** A UTXO of the user (P2TR key path of `userPubkey`, or P2WPKH of `userPubkey`). */
export type UserUtxo = Prevout;

/** How a user input is spent. */
export type UserInputKind =
  | { type: 'p2tr'; outputKey: Uint8Array; internalKey: Uint8Array }
  | { type: 'p2wpkh'; pubkey: Uint8Array; hash: Uint8Array };

/** HASH160 = RIPEMD-160(SHA-256(x)). */
export function hash160(data: Uint8Array): Uint8Array {
  return ripemd160(sha256(data));
}

/** The BIP-86 output key of `internalKey` (tweak with no script tree). */
export function bip86OutputKey(internalKey: Uint8Array): Uint8Array {
  return taprootOutputKey(internalKey, new Uint8Array(0)).key;
}

/**
 * Classifies a scriptPubKey the user must sign for: P2TR whose output key is the BIP-86 tweak of the
 * user's key, or P2WPKH of the user's compressed key. Returns undefined for anything else (another
 * script type, or a script of another key).
 */
export function classifyUserInput(script: Uint8Array, userPubkey: Uint8Array): UserInputKind | undefined {
  if (script.length === 34 && script[0] === 0x51 && script[1] === 0x20) {
    const internalKey = userPubkey.length === 33 ? userPubkey.subarray(1) : userPubkey;
    const outputKey = script.subarray(2);
    if (internalKey.length === 32 && equalBytes(bip86OutputKey(internalKey), outputKey))
      return {
        type: 'p2tr',
        outputKey: Uint8Array.from(outputKey),
        internalKey: Uint8Array.from(internalKey),
      };
    return undefined;
  }
  if (script.length === 22 && script[0] === 0x00 && script[1] === 0x14) {
    const hash = script.subarray(2);
    if (userPubkey.length === 33 && equalBytes(hash160(userPubkey), hash))
      return { type: 'p2wpkh', pubkey: Uint8Array.from(userPubkey), hash: Uint8Array.from(hash) };
    return undefined;
  }
  return undefined;
}

/** Checks and normalizes a prevout list (txid, vout, value, script). */
export function normalizePrevouts(
  prevouts: readonly Prevout[],
  field: string,
): { txid: string; vout: number; value: bigint; script: Uint8Array }[] {
  if (!Array.isArray(prevouts)) throw new ChainInputError(field, 'expected an array');
  return prevouts.map((u, i) => {
    if (!u || typeof u.txid !== 'string' || !/^[0-9a-fA-F]{64}$/.test(u.txid))
      throw new ChainInputError(`${field}[${i}].txid`, `expected 64 hex, received ${preview(u?.txid)}`);
    if (!Number.isInteger(u.vout) || u.vout < 0 || u.vout > 0xffffffff)
      throw new ChainInputError(
        `${field}[${i}].vout`,
        `expected an output index, received ${preview(u.vout)}`,
      );
    if (typeof u.value !== 'bigint' || u.value <= 0n || u.value > 21_000_000n * 100_000_000n)
      throw new ChainInputError(
        `${field}[${i}].value`,
        `expected positive sats as bigint, received ${preview(String(u.value))}`,
      );
    return {
      txid: u.txid.toLowerCase(),
      vout: u.vout,
      value: u.value,
      script: toBytes(u.script, `${field}[${i}].script`),
    };
  });
}

/** Dust limit applied to the change output; below it the change is left to the fee. */
export const CHANGE_DUST_LIMIT = 546n;

/** Inputs of {@link buildHtlcFundingPsbt}. */
export interface FundingPsbtParams {
  htlc: Htlc;
  /** Sats locked in the HTLC output (output 0). */
  amount: bigint;
  /** The user's UTXOs (from Electrum). */
  utxos: UserUtxo[];
  /** User's key: 33-byte compressed (needed for P2WPKH inputs) or 32-byte x-only (P2TR inputs only). */
  userPubkey: BytesLike;
  /** Change output (index 1), left out when the change would be below {@link CHANGE_DUST_LIMIT}. */
  changeAddress: string;
  /** sat/vB, integer ≥ 1. */
  feeRate: bigint;
  /** `largest-first` (default): the fewest large UTXOs that cover amount + fee. `all`: spend every UTXO given. */
  coinSelection?: 'largest-first' | 'all';
}

/** The unsigned funding PSBT and what the service must store to verify the signed one. */
export interface FundingPsbt {
  /** BIP-174 PSBT (version 0), Base64. */
  psbtBase64: string;
  /** Input indexes the user signs: every input (all are the user's). */
  inputsToSign: number[];
  /** sats */
  fee: bigint;
  /** Estimated vsize of the signed transaction (fee = vsize × feeRate, or more when change is dropped). */
  vsize: number;
  htlcVout: 0;
  changeVout: 1 | null;
  /** The transaction id (segwit: signatures do not change it). */
  txid: string;
  /** Prevouts of the inputs, in input order: store them and pass them to `verifySignedFundingPsbt`. */
  prevouts: { txid: string; vout: number; value: bigint; script: string }[];
}

/** Witness weight upper bounds: P2TR key path (count, length, 65-byte sig) and P2WPKH (count, 72-byte DER sig, 33-byte key). */
const WITNESS_WU = { p2tr: 1 + 1 + 65, p2wpkh: 1 + 1 + 72 + 1 + 33 } as const;

function varintSize(n: number): number {
  return n < 0xfd ? 1 : n <= 0xffff ? 3 : 5;
}

/** vsize of a segwit tx with these inputs and output scripts, signatures at their maximum size. */
export function estimateVsize(
  inputs: readonly UserInputKind['type'][],
  outputScripts: readonly Uint8Array[],
): number {
  let weight = 4 * (4 + 4 + varintSize(inputs.length) + varintSize(outputScripts.length)) + 2;
  for (const t of inputs) weight += 4 * (32 + 4 + 1 + 4) + WITNESS_WU[t];
  for (const s of outputScripts) weight += 4 * (8 + varintSize(s.length) + s.length);
  return Math.ceil(weight / 4);
}

/**
 * Builds the unsigned PSBT that funds the HTLC from the user's UTXOs: output 0 = HTLC (`amount`),
 * output 1 = change (when not dust). Every input carries `witness_utxo` (BIP-341 signers need all
 * prevouts) and, for P2TR, `tap_internal_key`. Version 2, lock time 0, sequence 0xffffffff.
 *
 * @throws ChainInputError for a UTXO that is not the user's P2TR/P2WPKH, or insufficient funds
 * @example
 * const f = buildHtlcFundingPsbt({ htlc, amount: 100_000n, utxos, userPubkey, changeAddress, feeRate: 2n });
 * // reply { htlc: { psbt: f.psbtBase64, inputs: f.inputsToSign } }; store f.prevouts and f.psbtBase64
 */
export function buildHtlcFundingPsbt(p: FundingPsbtParams): FundingPsbt {
  const network: BtcNetwork = p.htlc.network;
  const rawUserKey = toBytes(p.userPubkey, 'userPubkey');
  xOnlyKey(rawUserKey, 'userPubkey');
  if (typeof p.amount !== 'bigint' || p.amount < 330n)
    throw new ChainInputError(
      'amount',
      `expected a bigint ≥ 330 sats (P2TR dust), received ${preview(String(p.amount))}`,
    );
  if (typeof p.feeRate !== 'bigint' || p.feeRate < 1n || p.feeRate > 100_000n)
    throw new ChainInputError(
      'feeRate',
      `expected a bigint in [1, 100000] sat/vB, received ${preview(String(p.feeRate))}`,
    );
  const changeScript = addressToScript(p.changeAddress, network);
  const utxos = normalizePrevouts(p.utxos, 'utxos').map((u, i) => {
    const kind = classifyUserInput(u.script, rawUserKey);
    if (!kind)
      throw new ChainInputError(
        `utxos[${i}].script`,
        `expected P2TR (BIP-86 of userPubkey) or P2WPKH of userPubkey, received script ${hex(u.script)}`,
      );
    return { ...u, kind, order: i };
  });
  const seen = new Set<string>();
  for (const u of utxos) {
    const k = `${u.txid}:${u.vout}`;
    if (seen.has(k)) throw new ChainInputError('utxos', `outpoint ${k} listed twice`);
    seen.add(k);
  }
  const candidates =
    p.coinSelection === 'all'
      ? utxos
      : [...utxos].sort((a, b) => (b.value > a.value ? 1 : b.value < a.value ? -1 : a.order - b.order));
  const chosen: typeof utxos = [];
  let total = 0n;
  let fee = 0n;
  let vsize = 0;
  let change = 0n;
  const htlcScript = p.htlc.outputScript;
  let enough = false;
  for (const u of candidates) {
    chosen.push(u);
    total += u.value;
    if (p.coinSelection === 'all' && chosen.length < candidates.length) continue;
    const kinds = chosen.map((c) => c.kind.type);
    const vsizeWithChange = estimateVsize(kinds, [htlcScript, changeScript]);
    const feeWithChange = BigInt(vsizeWithChange) * p.feeRate;
    if (total >= p.amount + feeWithChange + CHANGE_DUST_LIMIT) {
      vsize = vsizeWithChange;
      fee = feeWithChange;
      change = total - p.amount - fee;
      enough = true;
      break;
    }
    const vsizeNoChange = estimateVsize(kinds, [htlcScript]);
    const feeNoChange = BigInt(vsizeNoChange) * p.feeRate;
    if (total >= p.amount + feeNoChange) {
      vsize = vsizeNoChange;
      fee = total - p.amount; // the sub-dust remainder goes to the fee
      change = 0n;
      enough = true;
      break;
    }
  }
  if (!enough) {
    const need =
      p.amount +
      BigInt(
        estimateVsize(
          utxos.map((u) => u.kind.type),
          [htlcScript],
        ),
      ) *
        p.feeRate;
    throw new ChainInputError(
      'utxos',
      `insufficient funds: need at least ${need} sats (amount + fee at ${p.feeRate} sat/vB), have ${total}`,
    );
  }
  chosen.sort((a, b) => a.order - b.order);
  const tx = new Transaction({ version: 2, lockTime: 0 });
  for (const u of chosen) {
    tx.addInput({
      txid: u.txid,
      index: u.vout,
      sequence: 0xffffffff,
      witnessUtxo: { script: u.script, amount: u.value },
      ...(u.kind.type === 'p2tr' ? { tapInternalKey: u.kind.internalKey } : {}),
    });
  }
  tx.addOutput({ script: htlcScript, amount: p.amount });
  if (change > 0n) tx.addOutput({ script: changeScript, amount: change });
  return {
    psbtBase64: Buffer.from(tx.toPSBT(0)).toString('base64'),
    inputsToSign: chosen.map((_, i) => i),
    fee,
    vsize,
    htlcVout: 0,
    changeVout: change > 0n ? 1 : null,
    txid: tx.id,
    prevouts: chosen.map((u) => ({ txid: u.txid, vout: u.vout, value: u.value, script: hex(u.script) })),
  };
}
