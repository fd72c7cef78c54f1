/**
 * Client-side PSBT signing for watch-only rgb-lib wallets: the service holds only xpubs, builds
 * PSBTs (`createUtxosBegin`, `sendBegin`, …), and the mnemonic owner signs them here.
 */
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync, validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { p2tr, p2wpkh, Transaction } from '@scure/btc-signer';
import {
  type BitcoinNetwork,
  checkFee,
  describeScript,
  equalBytes,
  hasScript,
  networkOfAddress,
  refuse,
  scriptOfAddress,
} from './signing-check.ts';

export interface SignPsbtOptions {
  /**
   * Finalize the inputs this call signed (default true). rgb-lib does NOT finalize an externally signed PSBT
   * before broadcasting it, so leave this on unless you finalize elsewhere (e.g. rgb-lib's
   * `finalizePsbt`).
   */
  finalize?: boolean;
  /**
   * Opt-in output check, before anything is signed: every output must be one of these (same
   * address, exactly this amount, each entry used once, all present), change, or a zero-value
   * OP_RETURN (an RGB commitment). Change is {@link changeAddresses} plus, unless
   * {@link walletChange} is false, every output that carries a BIP32 derivation record of this
   * mnemonic whose key really is the output's (P2WPKH, or P2TR key path BIP-86). Without this
   * option outputs are not checked. An empty list allows change only.
   */
  expectOutputs?: { address: string; amount: bigint }[];
  /** Addresses that count as change (any amount). Only used with {@link expectOutputs}. */
  changeAddresses?: string[];
  /** Count as change the outputs that derive from this mnemonic (default true). Only used with {@link expectOutputs}. */
  walletChange?: boolean;
  /** Refuse when the fee (inputs − outputs, from the PSBT's previous outputs) is above this. */
  maxFeeSats?: bigint;
  /** Network of the addresses above; by default each address is decoded as mainnet, testnet or regtest. */
  network?: BitcoinNetwork;
}

function base64ToBytes(b64: string): Uint8Array {
  const trimmed = b64.trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0) {
    throw new Error('signPsbt: PSBT must be base64');
  }
  return new Uint8Array(Buffer.from(trimmed, 'base64'));
}

type Root = ReturnType<typeof HDKey.fromMasterSeed>;

/** Whether a PSBT output carries a BIP32 derivation record of `root` whose derived key is the one the script pays. */
function derivesFromWallet(tx: Transaction, i: number, root: Root): boolean {
  const out = tx.getOutput(i);
  const script = out.script;
  if (!script) return false;
  const derive = (fingerprint: number, path: number[]): Uint8Array | undefined => {
    if (fingerprint !== root.fingerprint) return undefined;
    try {
      let k = root;
      for (const index of path) k = k.deriveChild(index);
      return k.publicKey ?? undefined;
    } catch {
      return undefined;
    }
  };
  for (const [pubkey, { fingerprint, path }] of out.bip32Derivation ?? []) {
    const key = derive(fingerprint, path);
    if (key && equalBytes(key, pubkey) && equalBytes(p2wpkh(key).script, script)) return true;
  }
  for (const [xonly, { der }] of out.tapBip32Derivation ?? []) {
    const key = derive(der.fingerprint, der.path);
    if (key && equalBytes(key.subarray(1), xonly) && equalBytes(p2tr(xonly).script, script)) return true;
  }
  return false;
}

function decodeAddress(address: string, network: BitcoinNetwork | undefined, field: string): Uint8Array {
  const script = scriptOfAddress(address, network);
  if (!script) throw new Error(`signPsbt: ${field} ${JSON.stringify(address)} is not a Bitcoin address`);
  return script;
}

/** The output check of {@link signPsbt} (`opts.expectOutputs`). */
function checkOutputs(tx: Transaction, root: Root, opts: SignPsbtOptions): void {
  const who = 'signPsbt';
  const expected = (opts.expectOutputs ?? []).map((o) => ({
    address: o.address,
    amount: o.amount,
    script: decodeAddress(o.address, opts.network, 'expected output address'),
    used: false,
  }));
  const change = (opts.changeAddresses ?? []).map((a) => decodeAddress(a, opts.network, 'change address'));
  const network =
    opts.network ??
    [...expected.map((e) => e.address), ...(opts.changeAddresses ?? [])]
      .map(networkOfAddress)
      .find((n) => n !== undefined);
  const show = (s: Uint8Array) => describeScript(s, network);
  for (let i = 0; i < tx.outputsLength; i++) {
    const out = tx.getOutput(i);
    const script = out.script ?? new Uint8Array();
    const amount = out.amount ?? 0n;
    if (script[0] === 0x6a && amount === 0n) continue; // OP_RETURN: pays nobody
    const match = expected.find((e) => !e.used && equalBytes(e.script, script) && e.amount === amount);
    if (match) {
      match.used = true;
      continue;
    }
    if (hasScript(change, script) || ((opts.walletChange ?? true) && derivesFromWallet(tx, i, root)))
      continue;
    const sameAddress = expected.find((e) => !e.used && equalBytes(e.script, script));
    if (sameAddress)
      refuse(
        'output_amount',
        `${who}: output ${i} to ${sameAddress.address}`,
        `${sameAddress.amount} sats`,
        `${amount} sats`,
      );
    refuse(
      'unexpected_output',
      `${who}: output ${i} pays neither an expected address nor change`,
      [...expected.map((e) => e.address), ...change.map(show), 'this wallet'].join(' or '),
      `${show(script)} (${amount} sats)`,
    );
  }
  const missing = expected.find((e) => !e.used);
  if (missing)
    refuse('missing_output', `${who}: no output pays ${missing.address}`, `${missing.amount} sats`, 'none');
}

/**
 * Sign every input of a PSBT that belongs to the mnemonic's BIP32 tree, then (by default) finalize
 * the inputs it signed. With `opts.expectOutputs` (and `opts.maxFeeSats`) the outputs (and the fee)
 * are checked first and a {@link SigningCheckError} is thrown, with nothing signed, when the PSBT
 * pays anyone else.
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
 * @throws SigningCheckError (`unexpected_output`, `output_amount`, `missing_output`, `fee`) when an
 *   expectation is given and not met.
 *
 * @example
 * ```ts
 * import { signPsbt } from '@rgbx/sdk';
 *
 * const unsigned = await wallet.createUtxosBegin(false, 5, 1000, 2); // watch-only wallet (service side)
 * const signed = signPsbt(unsigned, process.env.MNEMONIC!);           // client side
 * await wallet.createUtxosEnd(signed);
 *
 * // Checked: creating UTXOs must pay only this wallet (outputs with its BIP32 records), fee ≤ 5 000 sats.
 * const checked = signPsbt(unsigned, process.env.MNEMONIC!, { expectOutputs: [], maxFeeSats: 5_000n });
 * // A payment: the recipient exactly, everything else change or the zero-value commitment.
 * signPsbt(psbt, mnemonic, { expectOutputs: [{ address: 'bcrt1q…', amount: 50_000n }], changeAddresses: ['bcrt1q…'] });
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
  const hd = HDKey.fromMasterSeed(mnemonicToSeedSync(normalized));
  if (opts.expectOutputs !== undefined) checkOutputs(tx, hd, opts);
  if (opts.maxFeeSats !== undefined) checkFee(tx, opts.maxFeeSats, 'signPsbt');
  // A master key from a seed always has both keys; btc-signer's `Signer` type wants them non-null.
  const root = hd as unknown as Parameters<Transaction['signIdx']>[0];
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
