import { randomBytes } from 'node:crypto';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { bech32, bech32m } from '@scure/base';
import { Transaction } from '@scure/btc-signer';
import { type BytesLike, equalBytes, hex, preview, toBytes } from '../bytes.ts';
import { ChainInputError } from '../errors.ts';
import { sha256 } from './hash.ts';
import { parseTx } from './tx.ts';

/** Bitcoin networks; `signet` shares testnet's `tb` address prefix, `regtest` uses `bcrt`. */
export type BtcNetwork = 'mainnet' | 'testnet' | 'signet' | 'regtest';

const HRP: Record<BtcNetwork, string> = { mainnet: 'bc', testnet: 'tb', signet: 'tb', regtest: 'bcrt' };

/** btc-signer network parameters for `network`. */
export function btcSignerNetwork(network: BtcNetwork): {
  bech32: string;
  pubKeyHash: number;
  scriptHash: number;
  wif: number;
} {
  return network === 'mainnet'
    ? { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, wif: 0x80 }
    : { bech32: HRP[network], pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };
}

/** BIP-342 tapscript leaf version. */
export const TAPSCRIPT_LEAF_VERSION = 0xc0;

/**
 * The BIP-341 "H" point, x-only: `lift_x(0x50929b…3ac0)`, the SHA-256 of the uncompressed secp256k1
 * generator G. Nobody knows its discrete logarithm, so an output whose internal key is H can only be
 * spent through a script leaf. Used untweaked (not `H + r·G`): anyone can see the HTLC has no key path,
 * which is fine for a published swap contract and lets any observer check it.
 */
export const HTLC_NUMS_KEY: Uint8Array = Uint8Array.from(
  Buffer.from('50929b74c1a04954b78b4b6035e97a5e078a5a0f28ec96d547bfee9ace803ac0', 'hex'),
);

/**
 * 32 random bytes (node:crypto CSPRNG): the swap secret.
 *
 * @example
 * const preimage = generatePreimage(); const secretHash = secretHashOf(preimage);
 */
export function generatePreimage(): Uint8Array {
  return Uint8Array.from(randomBytes(32));
}

/**
 * `SHA-256(preimage)`: the hash in the HTLC claim leaf and in the EVM/Tron/Solana intents.
 *
 * @example
 * hex(secretHashOf(new Uint8Array(32))) // '66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925'
 */
export function secretHashOf(preimage: Uint8Array): Uint8Array {
  return Uint8Array.from(sha256(preimage));
}

/** BIP-340 tagged hash. */
function taggedHash(tag: string, ...parts: Uint8Array[]): Uint8Array {
  return schnorr.utils.taggedHash(tag, ...parts);
}

function compactSize(n: number): Uint8Array {
  if (n < 0xfd) return Uint8Array.of(n);
  if (n <= 0xffff) return Uint8Array.of(0xfd, n & 0xff, n >> 8);
  throw new ChainInputError('script', `script too long (${n} bytes)`);
}

/** BIP-341 TapLeaf hash of a tapscript. */
export function tapLeafHash(script: Uint8Array, leafVersion = TAPSCRIPT_LEAF_VERSION): Uint8Array {
  return taggedHash('TapLeaf', Uint8Array.of(leafVersion), compactSize(script.length), script);
}

/** BIP-341 TapBranch hash of two child hashes (sorted lexicographically first). */
export function tapBranchHash(a: Uint8Array, b: Uint8Array): Uint8Array {
  return Buffer.compare(a, b) <= 0 ? taggedHash('TapBranch', a, b) : taggedHash('TapBranch', b, a);
}

/** x-only key from a 32-byte x-only or 33-byte compressed key; checks it is on the curve. */
export function xOnlyKey(key: BytesLike, field: string): Uint8Array {
  const raw = toBytes(key, field);
  if (raw.length !== 32 && raw.length !== 33)
    throw new ChainInputError(
      field,
      `expected a 32-byte x-only or 33-byte compressed public key, received ${raw.length} bytes`,
    );
  const x = raw.length === 33 ? raw.subarray(1) : raw;
  try {
    if (raw.length === 33) secp256k1.Point.fromBytes(raw);
    else schnorr.utils.lift_x(BigInt(`0x${hex(x)}`));
  } catch {
    throw new ChainInputError(field, `not a valid secp256k1 public key: ${preview(hex(raw))}`);
  }
  return Uint8Array.from(x);
}

/**
 * BIP-341 output key: `Q = P + int(TapTweak(P ‖ merkleRoot))·G` with P = lift_x(internalKey).
 * Returns x(Q) and the parity of Q.y (the control block's low bit).
 */
export function taprootOutputKey(
  internalKey: Uint8Array,
  merkleRoot: Uint8Array,
): { key: Uint8Array; parity: 0 | 1 } {
  const P = schnorr.utils.lift_x(BigInt(`0x${hex(internalKey)}`));
  const t = BigInt(`0x${hex(taggedHash('TapTweak', internalKey, merkleRoot))}`);
  if (t >= secp256k1.Point.CURVE().n) throw new ChainInputError('internalKey', 'tweak out of range');
  const Q = P.add(secp256k1.Point.BASE.multiply(t));
  const bytes = Q.toBytes(true);
  return { key: bytes.subarray(1), parity: bytes[0] === 0x03 ? 1 : 0 };
}

/** Minimal script push of a non-negative number (CScriptNum rules: OP_0, OP_1…OP_16, else LE bytes + sign byte). */
function pushNumber(n: number): Uint8Array {
  if (n === 0) return Uint8Array.of(0x00);
  if (n >= 1 && n <= 16) return Uint8Array.of(0x50 + n);
  const bytes: number[] = [];
  let v = n;
  while (v > 0) {
    bytes.push(v & 0xff);
    v = Math.floor(v / 256);
  }
  if ((bytes[bytes.length - 1] ?? 0) & 0x80) bytes.push(0x00);
  return Uint8Array.of(bytes.length, ...bytes);
}

function push32(data: Uint8Array): Uint8Array {
  return Uint8Array.of(0x20, ...data);
}

const OP = {
  SHA256: 0xa8,
  EQUALVERIFY: 0x88,
  CHECKSIG: 0xac,
  CHECKLOCKTIMEVERIFY: 0xb1,
  DROP: 0x75,
} as const;

/** Inputs of {@link buildHtlc}. */
export interface HtlcParams {
  /** SHA-256 of the preimage (32 bytes). */
  secretHash: BytesLike;
  /** Resolver's key (claims with the preimage): 32-byte x-only or 33-byte compressed. */
  resolverPubkey: BytesLike;
  /** User's key (refunds after the lock time): 32-byte x-only or 33-byte compressed, untweaked. */
  userPubkey: BytesLike;
  /** CLTV value: < 500 000 000 is a block height, otherwise a unix time compared with median-time-past. */
  locktime: number;
  network: BtcNetwork;
}

/** A Taproot HTLC: two tapscript leaves under the unspendable {@link HTLC_NUMS_KEY}. */
export interface Htlc {
  /** bech32m P2TR address on `network`. */
  address: string;
  /** `OP_1 <32-byte output key>` */
  outputScript: Uint8Array;
  outputKey: Uint8Array;
  /** {@link HTLC_NUMS_KEY} */
  internalKey: Uint8Array;
  merkleRoot: Uint8Array;
  /** `OP_SHA256 <secretHash> OP_EQUALVERIFY <resolverKey> OP_CHECKSIG` */
  claimScript: Uint8Array;
  /** `<locktime> OP_CHECKLOCKTIMEVERIFY OP_DROP <userKey> OP_CHECKSIG` */
  refundScript: Uint8Array;
  /** `0xc0|parity ‖ internalKey ‖ TapLeaf(refundScript)` */
  claimControlBlock: Uint8Array;
  /** `0xc0|parity ‖ internalKey ‖ TapLeaf(claimScript)` */
  refundControlBlock: Uint8Array;
  locktime: number;
  network: BtcNetwork;
  secretHash: Uint8Array;
  /** x-only */
  resolverKey: Uint8Array;
  /** x-only */
  userKey: Uint8Array;
}

/**
 * Builds the Taproot HTLC (BIP-341/342): a claim leaf that needs the SHA-256 preimage and the
 * resolver's Schnorr signature, and a refund leaf that needs the user's signature in a transaction
 * whose nLockTime ≥ `locktime`. The internal key is the NUMS point H, so there is no key path.
 *
 * @throws ChainInputError for a bad key, hash length or lock time
 * @example
 * const htlc = buildHtlc({ secretHash, resolverPubkey, userPubkey, locktime: height + 144, network: 'regtest' });
 * htlc.address // 'bcrt1p…'
 */
export function buildHtlc(p: HtlcParams): Htlc {
  const secretHash = toBytes(p.secretHash, 'secretHash', 32);
  const resolverKey = xOnlyKey(p.resolverPubkey, 'resolverPubkey');
  const userKey = xOnlyKey(p.userPubkey, 'userPubkey');
  if (!Number.isSafeInteger(p.locktime) || p.locktime < 1 || p.locktime > 0xffffffff)
    throw new ChainInputError(
      'locktime',
      `expected an integer in [1, 2^32), received ${preview(p.locktime)}`,
    );
  if (!(p.network in HRP))
    throw new ChainInputError(
      'network',
      `expected one of ${Object.keys(HRP).join(', ')}, received ${preview(p.network)}`,
    );
  const claimScript = Uint8Array.from([
    OP.SHA256,
    ...push32(secretHash),
    OP.EQUALVERIFY,
    ...push32(resolverKey),
    OP.CHECKSIG,
  ]);
  const refundScript = Uint8Array.from([
    ...pushNumber(p.locktime),
    OP.CHECKLOCKTIMEVERIFY,
    OP.DROP,
    ...push32(userKey),
    OP.CHECKSIG,
  ]);
  const claimLeaf = tapLeafHash(claimScript);
  const refundLeaf = tapLeafHash(refundScript);
  const merkleRoot = tapBranchHash(claimLeaf, refundLeaf);
  const internalKey = Uint8Array.from(HTLC_NUMS_KEY);
  const { key: outputKey, parity } = taprootOutputKey(internalKey, merkleRoot);
  const controlBlock = (sibling: Uint8Array) =>
    Uint8Array.from([TAPSCRIPT_LEAF_VERSION | parity, ...internalKey, ...sibling]);
  return {
    address: bech32m.encode(HRP[p.network], [1, ...bech32m.toWords(outputKey)]),
    outputScript: Uint8Array.from([0x51, ...push32(outputKey)]),
    outputKey: Uint8Array.from(outputKey),
    internalKey,
    merkleRoot,
    claimScript,
    refundScript,
    claimControlBlock: controlBlock(refundLeaf),
    refundControlBlock: controlBlock(claimLeaf),
    locktime: p.locktime,
    network: p.network,
    secretHash,
    resolverKey,
    userKey,
  };
}

/**
 * scriptPubKey of a segwit address (bech32 v0 / bech32m v1+) on `network`. Legacy base58 addresses
 * are not accepted: swap outputs are always segwit.
 *
 * @example
 * addressToScript('bcrt1q…', 'regtest') // 0014…
 */
export function addressToScript(address: string, network: BtcNetwork): Uint8Array {
  const hrp = HRP[network];
  if (typeof address !== 'string' || !address.toLowerCase().startsWith(`${hrp}1`))
    throw new ChainInputError(
      'address',
      `expected a segwit address starting with ${hrp}1, received ${preview(address)}`,
    );
  // BIP-173 for version 0, BIP-350 (bech32m) for version 1+: the checksum variant must match the version.
  let words: number[] | undefined;
  for (const coder of [bech32, bech32m]) {
    try {
      const d = coder.decode(address as `${string}1${string}`, 90);
      if (d.prefix === hrp && (coder === bech32) === (d.words[0] === 0)) words = d.words;
    } catch {
      // try the other checksum variant
    }
  }
  if (!words)
    throw new ChainInputError(
      'address',
      `not a valid bech32/bech32m address for ${network}: ${preview(address)}`,
    );
  const version = words[0] ?? -1;
  let program: Uint8Array;
  try {
    program = bech32.fromWords(words.slice(1));
  } catch {
    throw new ChainInputError('address', `invalid witness program padding in ${preview(address)}`);
  }
  if (
    version < 0 ||
    version > 16 ||
    program.length < 2 ||
    program.length > 40 ||
    (version === 0 && program.length !== 20 && program.length !== 32)
  )
    throw new ChainInputError(
      'address',
      `invalid witness program (version ${version}, ${program.length} bytes)`,
    );
  return Uint8Array.from([version === 0 ? 0x00 : 0x50 + version, program.length, ...program]);
}

/** Inputs shared by the claim and refund builders. */
export interface HtlcSpendParams {
  htlc: Htlc;
  /** Funding transaction id (RPC byte order). */
  fundingTxid: string;
  /** Index of the HTLC output in the funding transaction. */
  vout: number;
  /** Value of the HTLC output, sats. */
  amount: bigint;
  /** Where the swept sats go. */
  destinationAddress: string;
  /** sat/vB, integer ≥ 1. */
  feeRate: bigint;
}

/** A fully signed transaction. */
export interface SignedTx {
  txHex: string;
  txid: string;
  fee: bigint;
  vsize: number;
}

function spendLeaf(
  p: HtlcSpendParams,
  leaf: { script: Uint8Array; controlBlock: Uint8Array; lockTime: number; sequence: number },
  privateKey: Uint8Array,
  extraWitness: Uint8Array[],
): SignedTx {
  if (!/^[0-9a-f]{64}$/i.test(p.fundingTxid))
    throw new ChainInputError('fundingTxid', `expected 64 hex, received ${preview(p.fundingTxid)}`);
  if (typeof p.feeRate !== 'bigint' || p.feeRate < 1n)
    throw new ChainInputError(
      'feeRate',
      `expected a bigint ≥ 1 sat/vB, received ${preview(String(p.feeRate))}`,
    );
  if (typeof p.amount !== 'bigint' || p.amount <= 0n)
    throw new ChainInputError('amount', `expected positive sats, received ${preview(String(p.amount))}`);
  const destination = addressToScript(p.destinationAddress, p.htlc.network);
  const build = (fee: bigint): { raw: Uint8Array; tx: Transaction } => {
    const tx = new Transaction({ lockTime: leaf.lockTime, allowUnknownOutputs: true });
    tx.addInput({
      txid: p.fundingTxid,
      index: p.vout,
      sequence: leaf.sequence,
      witnessUtxo: { script: p.htlc.outputScript, amount: p.amount },
    });
    tx.addOutput({ script: destination, amount: p.amount - fee });
    const digest = tx.preimageWitnessV1(
      0,
      [p.htlc.outputScript],
      0x00,
      [p.amount],
      undefined,
      leaf.script,
      TAPSCRIPT_LEAF_VERSION,
    );
    const sig = schnorr.sign(digest, privateKey);
    tx.updateInput(0, { finalScriptWitness: [sig, ...extraWitness, leaf.script, leaf.controlBlock] }, true);
    return { raw: tx.extract(), tx };
  };
  // The witness has a fixed size (64-byte SIGHASH_DEFAULT signature), so one dry run gives the exact vsize.
  const dry = build(0n);
  const vsize = Math.ceil(parseTx(Buffer.from(dry.raw)).weight / 4);
  const fee = BigInt(vsize) * p.feeRate;
  if (p.amount - fee < 330n)
    throw new ChainInputError(
      'amount',
      `${p.amount} sats cannot pay a ${fee}-sat fee and leave a non-dust output (≥ 330 sats)`,
    );
  const { raw, tx } = build(fee);
  return { txHex: hex(raw), txid: tx.id, fee, vsize };
}

/**
 * Builds and signs the resolver's claim: spends the HTLC through the claim leaf with witness
 * `[sig, preimage, claimScript, controlBlock]`, sending `amount − fee` to `destinationAddress`.
 *
 * @throws ChainInputError when the preimage does not hash to the HTLC's secret hash or the key is not the resolver's
 * @example
 * const { txHex } = buildHtlcClaimTx({ htlc, fundingTxid, vout: 0, amount, destinationAddress, feeRate: 2n,
 *   preimage, resolverPrivateKey });
 * await rpc.call('sendrawtransaction', [txHex]);
 */
export function buildHtlcClaimTx(
  p: HtlcSpendParams & { preimage: Uint8Array; resolverPrivateKey: Uint8Array },
): SignedTx {
  const preimage = toBytes(p.preimage, 'preimage', 32);
  if (!equalBytes(secretHashOf(preimage), p.htlc.secretHash))
    throw new ChainInputError(
      'preimage',
      `SHA-256(preimage) is ${hex(secretHashOf(preimage))}, the HTLC expects ${hex(p.htlc.secretHash)}`,
    );
  const key = toBytes(p.resolverPrivateKey, 'resolverPrivateKey', 32);
  if (!equalBytes(schnorr.getPublicKey(key), p.htlc.resolverKey))
    throw new ChainInputError('resolverPrivateKey', 'is not the key of the HTLC claim leaf');
  return spendLeaf(
    p,
    { script: p.htlc.claimScript, controlBlock: p.htlc.claimControlBlock, lockTime: 0, sequence: 0xffffffff },
    key,
    [preimage],
  );
}

/**
 * Builds and signs the user's refund: spends the HTLC through the refund leaf with witness
 * `[sig, refundScript, controlBlock]`, nLockTime = the HTLC lock time and a non-final sequence
 * (0xfffffffe) so OP_CHECKLOCKTIMEVERIFY passes. Valid once the chain passes the lock time
 * (height, or median-time-past for a time lock).
 *
 * @throws ChainInputError when the key is not the user's
 * @example
 * const { txHex } = buildHtlcRefundTx({ htlc, fundingTxid, vout: 0, amount, destinationAddress, feeRate: 2n, userPrivateKey });
 */
export function buildHtlcRefundTx(p: HtlcSpendParams & { userPrivateKey: Uint8Array }): SignedTx {
  const key = toBytes(p.userPrivateKey, 'userPrivateKey', 32);
  if (!equalBytes(schnorr.getPublicKey(key), p.htlc.userKey))
    throw new ChainInputError('userPrivateKey', 'is not the key of the HTLC refund leaf');
  return spendLeaf(
    p,
    {
      script: p.htlc.refundScript,
      controlBlock: p.htlc.refundControlBlock,
      lockTime: p.htlc.locktime,
      sequence: 0xfffffffe,
    },
    key,
    [],
  );
}
