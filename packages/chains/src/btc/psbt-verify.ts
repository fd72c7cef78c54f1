import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { Transaction } from '@scure/btc-signer';
import { type BytesLike, equalBytes, hex, preview, toBytes } from '../bytes.ts';
import { ChainInputError, VerificationError } from '../errors.ts';
import { classifyUserInput, normalizePrevouts, type Prevout } from './funding.ts';
import { xOnlyKey } from './htlc.ts';

/** Inputs of {@link verifySignedFundingPsbt}. */
export interface VerifyPsbtParams {
  /** The PSBT the service built and stored (Base64). */
  unsignedPsbtBase64: string;
  /** The PSBT the user returned (Base64). */
  signedPsbtBase64: string;
  /** The input indexes the service asked the user to sign (stored). */
  inputsToSign: readonly number[];
  /** One prevout per input, in input order, FROM THE SERVICE'S STORE: the PSBT's `witness_utxo` is never trusted. */
  prevouts: readonly Prevout[];
  /** The user's key: 33-byte compressed or 32-byte x-only. */
  userPubkey: BytesLike;
}

/** One verified user signature. */
export interface VerifiedInputSignature {
  index: number;
  type: 'p2tr' | 'p2wpkh';
  /** The signature as found (64/65-byte Schnorr, or DER + sighash byte). */
  signature: string;
}

/** Result of a successful verification. */
export interface VerifiedPsbt {
  /** Transaction id (unchanged by segwit signatures; equals the id of the unsigned PSBT). */
  txid: string;
  /** The finalized signed transaction, when every input is signed (always, for PSBTs from `buildHtlcFundingPsbt`). */
  txHex: string | null;
  signatures: VerifiedInputSignature[];
}

/** Verification error codes of {@link verifySignedFundingPsbt}. */
export type PsbtVerificationCode =
  | 'malformed_psbt'
  | 'tx_version'
  | 'tx_locktime'
  | 'input_count'
  | 'output_count'
  | 'input_outpoint'
  | 'input_sequence'
  | 'output_amount'
  | 'output_script'
  | 'tx_changed'
  | 'unlisted_input_signed'
  | 'missing_signature'
  | 'malformed_signature'
  | 'bad_sighash_type'
  | 'wrong_key'
  | 'invalid_signature';

function fail(
  code: PsbtVerificationCode,
  message: string,
  detail?: { expected?: string; received?: string },
): never {
  throw new VerificationError(code, message, detail);
}

const B64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function decodePsbt(b64: string): Transaction | undefined {
  if (typeof b64 !== 'string' || b64.length === 0 || !B64_RE.test(b64)) return undefined;
  try {
    return Transaction.fromPSBT(Uint8Array.from(Buffer.from(b64, 'base64')), {
      allowUnknownOutputs: true,
      allowUnknownInputs: true,
      allowUnknownVersion: true,
      disableScriptCheck: true,
    });
  } catch {
    return undefined;
  }
}

const SIG_FIELDS = [
  'tapKeySig',
  'partialSig',
  'tapScriptSig',
  'finalScriptWitness',
  'finalScriptSig',
] as const;

function sigFieldsEqual(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): string =>
    JSON.stringify(v, (_k, x) => (x instanceof Uint8Array ? hex(x) : x)) ?? 'undefined';
  return norm(a) === norm(b);
}

/** BIP-143 scriptCode of a P2WPKH input: the P2PKH script of its key hash. */
function p2wpkhScriptCode(hash: Uint8Array): Uint8Array {
  return Uint8Array.from([0x76, 0xa9, 0x14, ...hash, 0x88, 0xac]);
}

/**
 * Verifies the user's signed funding PSBT against the one the service built:
 *
 * 1. The transaction is unchanged: version, lock time, every input outpoint and sequence, every
 *    output amount and script, the counts, and the unsigned txid.
 * 2. Every listed input carries a signature by the user's key over its prevout, computed with the
 *    prevouts SUPPLIED BY THE CALLER: P2TR key path = BIP-341 sighash + BIP-340 Schnorr against the
 *    output key (which must be the BIP-86 tweak of the user key); P2WPKH = BIP-143 sighash + low-S
 *    ECDSA by the user's compressed key. Accepted in `tap_key_sig` / `partial_sig` or in a final
 *    witness. Only SIGHASH_DEFAULT (64-byte Schnorr) and SIGHASH_ALL are accepted: NONE, SINGLE and
 *    ANYONECANPAY would let the transaction change after signing.
 * 3. Inputs not listed carry exactly the signature fields they had in the unsigned PSBT.
 *
 * PSBT metadata the user may add (a different `witness_utxo`, `non_witness_utxo`, derivation paths)
 * is ignored: nothing of it reaches the transaction or the sighash.
 *
 * @throws VerificationError with a {@link PsbtVerificationCode}
 * @throws ChainInputError when the stored data is inconsistent (prevouts do not match the unsigned PSBT)
 * @example
 * const { txHex } = verifySignedFundingPsbt({ unsignedPsbtBase64: row.psbt, signedPsbtBase64: body.psbt,
 *   inputsToSign: row.inputs, prevouts: row.prevouts, userPubkey: intent.sourcePublicKey });
 * await rpc.call('testmempoolaccept', [[txHex]]);
 */
export function verifySignedFundingPsbt(p: VerifyPsbtParams): VerifiedPsbt {
  const userKey = toBytes(p.userPubkey, 'userPubkey');
  xOnlyKey(userKey, 'userPubkey');
  const unsigned = decodePsbt(p.unsignedPsbtBase64);
  if (!unsigned) throw new ChainInputError('unsignedPsbtBase64', 'the stored PSBT does not parse');
  const prevouts = normalizePrevouts(p.prevouts, 'prevouts');
  if (prevouts.length !== unsigned.inputsLength)
    throw new ChainInputError(
      'prevouts',
      `expected ${unsigned.inputsLength} (one per input), received ${prevouts.length}`,
    );
  for (let i = 0; i < unsigned.inputsLength; i++) {
    const inp = unsigned.getInput(i);
    const pv = prevouts[i]!;
    if (hex(inp.txid!) !== pv.txid || inp.index !== pv.vout)
      throw new ChainInputError(
        `prevouts[${i}]`,
        `is ${pv.txid}:${pv.vout} but input ${i} spends ${hex(inp.txid!)}:${inp.index}`,
      );
  }
  const listed = [...new Set(p.inputsToSign)];
  if (
    listed.length !== p.inputsToSign.length ||
    listed.some((i) => !Number.isInteger(i) || i < 0 || i >= unsigned.inputsLength)
  )
    throw new ChainInputError(
      'inputsToSign',
      `expected distinct indexes below ${unsigned.inputsLength}, received ${preview(JSON.stringify(p.inputsToSign))}`,
    );

  const signed = decodePsbt(p.signedPsbtBase64);
  if (!signed) fail('malformed_psbt', 'the signed PSBT is not valid Base64 BIP-174 data');

  // 1. Nothing in the transaction changed.
  if (signed.version !== unsigned.version)
    fail('tx_version', 'transaction version changed', {
      expected: String(unsigned.version),
      received: String(signed.version),
    });
  if (signed.lockTime !== unsigned.lockTime)
    fail('tx_locktime', 'transaction lock time changed', {
      expected: String(unsigned.lockTime),
      received: String(signed.lockTime),
    });
  if (signed.inputsLength !== unsigned.inputsLength)
    fail('input_count', 'number of inputs changed', {
      expected: String(unsigned.inputsLength),
      received: String(signed.inputsLength),
    });
  if (signed.outputsLength !== unsigned.outputsLength)
    fail('output_count', 'number of outputs changed', {
      expected: String(unsigned.outputsLength),
      received: String(signed.outputsLength),
    });
  for (let i = 0; i < unsigned.inputsLength; i++) {
    const a = unsigned.getInput(i);
    const b = signed.getInput(i);
    if (!b.txid || !equalBytes(a.txid!, b.txid) || a.index !== b.index)
      fail('input_outpoint', `input ${i} spends another outpoint`, {
        expected: `${hex(a.txid!)}:${a.index}`,
        received: `${b.txid ? hex(b.txid) : '?'}:${b.index}`,
      });
    if ((a.sequence ?? 0xffffffff) !== (b.sequence ?? 0xffffffff))
      fail('input_sequence', `input ${i} sequence changed`, {
        expected: String(a.sequence),
        received: String(b.sequence),
      });
  }
  for (let i = 0; i < unsigned.outputsLength; i++) {
    const a = unsigned.getOutput(i);
    const b = signed.getOutput(i);
    if (!b.script || !equalBytes(a.script!, b.script))
      fail('output_script', `output ${i} script changed`, {
        expected: hex(a.script!),
        received: b.script ? hex(b.script) : 'none',
      });
    if (a.amount !== b.amount)
      fail('output_amount', `output ${i} amount changed`, {
        expected: `${a.amount} sats`,
        received: `${b.amount} sats`,
      });
  }
  if (signed.id !== unsigned.id)
    fail('tx_changed', 'unsigned transaction id changed', { expected: unsigned.id, received: signed.id });

  // 3. Inputs the user was not asked to sign are untouched.
  for (let i = 0; i < unsigned.inputsLength; i++) {
    if (listed.includes(i)) continue;
    const a = unsigned.getInput(i);
    const b = signed.getInput(i);
    for (const f of SIG_FIELDS)
      if (!sigFieldsEqual(a[f], b[f]))
        fail('unlisted_input_signed', `input ${i} was not to be signed but its ${f} changed`);
  }

  // 2. Every listed input is signed by the user's key over the stored prevouts.
  const scripts = prevouts.map((x) => x.script);
  const amounts = prevouts.map((x) => x.value);
  const signatures: VerifiedInputSignature[] = [];
  const finalWitness = new Map<number, Uint8Array[]>();
  for (const i of [...listed].sort((a, b) => a - b)) {
    const pv = prevouts[i]!;
    const kind = classifyUserInput(pv.script, userKey);
    if (!kind)
      fail('wrong_key', `input ${i} prevout is not controlled by the user's key`, {
        expected: `P2TR (BIP-86) or P2WPKH of ${hex(userKey)}`,
        received: `script ${hex(pv.script)}`,
      });
    const input = signed.getInput(i);
    if (kind.type === 'p2tr') {
      let sig: Uint8Array | undefined;
      if (input.finalScriptWitness) {
        if (input.finalScriptWitness.length !== 1)
          fail('malformed_signature', `input ${i} final witness must hold exactly one key-path signature`, {
            expected: '1 element',
            received: `${input.finalScriptWitness.length} elements`,
          });
        sig = input.finalScriptWitness[0];
      } else sig = input.tapKeySig;
      if (!sig)
        fail(
          'missing_signature',
          `input ${i} has no Taproot key-path signature (tap_key_sig or final witness)`,
        );
      if (sig.length !== 64 && sig.length !== 65)
        fail('malformed_signature', `input ${i} Schnorr signature has a wrong length`, {
          expected: '64 or 65 bytes',
          received: `${sig.length} bytes`,
        });
      const hashType = sig.length === 65 ? sig[64]! : 0x00;
      if (sig.length === 65 && hashType !== 0x01)
        fail('bad_sighash_type', `input ${i} signature uses a sighash type other than DEFAULT/ALL`, {
          expected: '0x00 (64-byte) or 0x01',
          received: `0x${hashType.toString(16).padStart(2, '0')}`,
        });
      const digest = unsigned.preimageWitnessV1(i, scripts, hashType, amounts);
      let ok = false;
      try {
        ok = schnorr.verify(sig.subarray(0, 64), digest, kind.outputKey);
      } catch {
        ok = false;
      }
      if (!ok)
        fail(
          'invalid_signature',
          `input ${i} Schnorr signature does not verify against the prevout's output key over the stored prevouts`,
          {
            expected: `a BIP-340 signature by ${hex(kind.outputKey)}`,
            received: hex(sig),
          },
        );
      signatures.push({ index: i, type: 'p2tr', signature: hex(sig) });
      finalWitness.set(i, [sig]);
    } else {
      let pair: [Uint8Array, Uint8Array] | undefined;
      if (input.finalScriptWitness) {
        const w = input.finalScriptWitness;
        if (w.length !== 2)
          fail('malformed_signature', `input ${i} P2WPKH final witness must be [signature, pubkey]`, {
            expected: '2 elements',
            received: `${w.length} elements`,
          });
        pair = [w[1]!, w[0]!];
      } else if (input.partialSig && input.partialSig.length > 0) {
        pair = input.partialSig.find(([k]) => equalBytes(k, kind.pubkey)) ?? input.partialSig[0];
      }
      if (!pair)
        fail('missing_signature', `input ${i} has no P2WPKH signature (partial_sig or final witness)`);
      const [pubkey, sig] = pair;
      if (!equalBytes(pubkey, kind.pubkey))
        fail('wrong_key', `input ${i} is signed by another key`, {
          expected: hex(kind.pubkey),
          received: hex(pubkey),
        });
      if (sig.length < 9 || sig.length > 73)
        fail('malformed_signature', `input ${i} ECDSA signature has a wrong length`, {
          expected: '9..73 bytes (DER + sighash)',
          received: `${sig.length} bytes`,
        });
      const hashType = sig[sig.length - 1]!;
      if (hashType !== 0x01)
        fail('bad_sighash_type', `input ${i} signature uses a sighash type other than ALL`, {
          expected: '0x01',
          received: `0x${hashType.toString(16).padStart(2, '0')}`,
        });
      const der = sig.subarray(0, -1);
      let parsed: ReturnType<typeof secp256k1.Signature.fromBytes>;
      try {
        parsed = secp256k1.Signature.fromBytes(der, 'der');
      } catch {
        fail('malformed_signature', `input ${i} ECDSA signature is not strict DER`, { received: hex(sig) });
      }
      if (parsed.hasHighS())
        fail('invalid_signature', `input ${i} ECDSA signature has a high S (non-standard, malleable)`);
      const digest = unsigned.preimageWitnessV0(i, p2wpkhScriptCode(kind.hash), hashType, pv.value);
      let ok = false;
      try {
        ok = secp256k1.verify(parsed.toBytes('compact'), digest, kind.pubkey, {
          prehash: false,
          lowS: true,
          format: 'compact',
        });
      } catch {
        ok = false;
      }
      if (!ok)
        fail(
          'invalid_signature',
          `input ${i} ECDSA signature does not verify for the user's key over the stored prevout`,
          {
            expected: `a signature by ${hex(kind.pubkey)}`,
            received: hex(sig),
          },
        );
      signatures.push({ index: i, type: 'p2wpkh', signature: hex(sig) });
      finalWitness.set(i, [sig, pubkey]);
    }
  }

  // Finalize from the stored PSBT (never from the user's copy) when every input has a witness.
  const out = Transaction.fromPSBT(Uint8Array.from(Buffer.from(p.unsignedPsbtBase64, 'base64')), {
    allowUnknownOutputs: true,
    allowUnknownInputs: true,
    allowUnknownVersion: true,
    disableScriptCheck: true,
  });
  let complete = true;
  for (let i = 0; i < out.inputsLength; i++) {
    const w = finalWitness.get(i) ?? signed.getInput(i).finalScriptWitness;
    if (!w) {
      complete = false;
      break;
    }
    out.updateInput(i, { finalScriptWitness: w }, true);
  }
  let txHex: string | null = null;
  if (complete) {
    try {
      txHex = hex(out.extract());
    } catch {
      txHex = null;
    }
  }
  return { txid: unsigned.id, txHex, signatures };
}
