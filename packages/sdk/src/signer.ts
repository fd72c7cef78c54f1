/**
 * Client-side PSBT signing for watch-only rgb-lib wallets: the service holds only xpubs, builds
 * PSBTs (`createUtxosBegin`, `sendBegin`, …), and the mnemonic owner signs them here.
 */
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync, validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { Transaction } from '@scure/btc-signer';

export interface SignPsbtOptions {
  /**
   * Finalize the inputs this call signed (default true). rgb-lib does NOT finalize an externally signed PSBT
   * before broadcasting it, so leave this on unless you finalize elsewhere (e.g. rgb-lib's
   * `finalizePsbt`).
   */
  finalize?: boolean;
}

function base64ToBytes(b64: string): Uint8Array {
  const trimmed = b64.trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0) {
    throw new Error('signPsbt: PSBT must be base64');
  }
  return new Uint8Array(Buffer.from(trimmed, 'base64'));
}

/**
 * Sign every input of a PSBT that belongs to the mnemonic's BIP32 tree, then (by default) finalize
 * the inputs it signed.
 *
 * Inputs are matched through their BIP32 derivation records (`bip32_derivs` for P2WPKH,
 * `taproot_bip32_derivs` for P2TR: master fingerprint + path), which rgb-lib fills in for both its
 * vanilla and colored keychains. Unknown fields and outputs (rgb-lib's OP_RETURN commitment and
 * proprietary keys) are preserved.
 *
 * @param psbtBase64 PSBT as produced by rgb-lib (base64).
 * @param mnemonic BIP39 English mnemonic (no passphrase), as returned by rgb-lib `generateKeys`.
 * @returns the signed (by default finalized) PSBT, base64.
 * @throws if the PSBT or mnemonic is invalid, or no input could be signed with this mnemonic.
 *
 * @example
 * ```ts
 * import { signPsbt } from '@rgbx/sdk';
 *
 * const unsigned = await wallet.createUtxosBegin(false, 5, 1000, 2); // watch-only wallet (service side)
 * const signed = signPsbt(unsigned, process.env.MNEMONIC!);           // client side
 * await wallet.createUtxosEnd(signed);
 * ```
 */
export function signPsbt(psbtBase64: string, mnemonic: string, opts: SignPsbtOptions = {}): string {
  const normalized = mnemonic.trim().split(/\s+/).join(' ');
  if (!validateMnemonic(normalized, wordlist)) throw new Error('signPsbt: invalid BIP39 mnemonic');
  let tx: Transaction;
  try {
    tx = Transaction.fromPSBT(base64ToBytes(psbtBase64), { allowUnknownOutputs: true, allowUnknown: true });
  } catch (err) {
    throw new Error(`signPsbt: cannot parse PSBT: ${(err as Error).message}`);
  }
  // A master key from a seed always has both keys; btc-signer's `Signer` type wants them non-null.
  const root = HDKey.fromMasterSeed(mnemonicToSeedSync(normalized)) as unknown as Parameters<
    Transaction['signIdx']
  >[0];
  // Same as `tx.sign(root)`, but remembers WHICH inputs were signed so only those are finalized
  // (inputs of other parties stay untouched) and the first per-input error can be reported.
  const signed: number[] = [];
  let firstError: string | undefined;
  for (let i = 0; i < tx.inputsLength; i++) {
    try {
      if (tx.signIdx(root, i)) signed.push(i);
    } catch (err) {
      firstError ??= `input ${i}: ${(err as Error).message}`;
    }
  }
  if (signed.length === 0) {
    throw new Error(
      'signPsbt: no input could be signed with this mnemonic (wrong mnemonic, or inputs without BIP32 derivation info)' +
        (firstError ? ` [${firstError}]` : ''),
    );
  }
  if (opts.finalize ?? true) for (const i of signed) tx.finalizeIdx(i);
  return Buffer.from(tx.toPSBT()).toString('base64');
}
