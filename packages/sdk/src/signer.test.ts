import { createHash } from 'node:crypto';
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';
import { p2tr, p2wpkh, Script, Transaction } from '@scure/btc-signer';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type SignPsbtOptions, signPsbt } from './signer.ts';
import { SigningCheckError } from './signing-check.ts';

// BIP39 test vector mnemonic: a fixed, public test key (never use it for funds).
const MNEMONIC =
  'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
const OTHER = 'zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong';
const H = 0x80000000;

// ---- minimal secp256k1 verification (test-only), to check the produced witnesses ----------------
const P = 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn;
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
type Pt = { x: bigint; y: bigint } | null;
const G: Pt = {
  x: 0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798n,
  y: 0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8n,
};
const mod = (a: bigint, m = P) => ((a % m) + m) % m;
function pow(b: bigint, e: bigint, m = P): bigint {
  let r = 1n;
  let x = mod(b, m);
  let k = e;
  while (k > 0n) {
    if (k & 1n) r = (r * x) % m;
    x = (x * x) % m;
    k >>= 1n;
  }
  return r;
}
const inv = (a: bigint, m = P) => pow(a, m - 2n, m);
function add(a: Pt, b: Pt): Pt {
  if (!a) return b;
  if (!b) return a;
  if (a.x === b.x && mod(a.y + b.y) === 0n) return null;
  const l = a.x === b.x ? mod(3n * a.x * a.x * inv(2n * a.y)) : mod((b.y - a.y) * inv(b.x - a.x));
  const x = mod(l * l - a.x - b.x);
  return { x, y: mod(l * (a.x - x) - a.y) };
}
function mul(p: Pt, k: bigint): Pt {
  let r: Pt = null;
  let q = p;
  let e = mod(k, N);
  while (e > 0n) {
    if (e & 1n) r = add(r, q);
    q = add(q, q);
    e >>= 1n;
  }
  return r;
}
const toBig = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString('hex') || '0'}`);
function liftX(x: bigint, odd: boolean): Pt {
  const y = pow(mod(x ** 3n + 7n), (P + 1n) / 4n);
  if (mod(y * y) !== mod(x ** 3n + 7n)) return null;
  return { x, y: (y & 1n) === (odd ? 1n : 0n) ? y : P - y };
}
const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};
function verifySchnorr(pub32: Uint8Array, msg: Uint8Array, sig: Uint8Array): boolean {
  const Pk = liftX(toBig(pub32), false);
  const r = toBig(sig.subarray(0, 32));
  const s = toBig(sig.subarray(32, 64));
  if (!Pk || r >= P || s >= N) return false;
  const tag = sha256(new TextEncoder().encode('BIP0340/challenge'));
  const e = mod(toBig(sha256(tag, tag, sig.subarray(0, 32), pub32, msg)), N);
  const R = add(mul(G, s), mul(Pk, N - e));
  return R !== null && (R.y & 1n) === 0n && R.x === r;
}
function parseDer(der: Uint8Array): { r: bigint; s: bigint } {
  let i = 2;
  const rl = der[i + 1]!;
  const r = toBig(der.subarray(i + 2, i + 2 + rl));
  i += 2 + rl;
  const sl = der[i + 1]!;
  return { r, s: toBig(der.subarray(i + 2, i + 2 + sl)) };
}
function verifyEcdsa(pub33: Uint8Array, msg: Uint8Array, der: Uint8Array): boolean {
  const Q = liftX(toBig(pub33.subarray(1)), pub33[0] === 3);
  const { r, s } = parseDer(der);
  if (!Q || r <= 0n || r >= N || s <= 0n || s >= N) return false;
  const w = inv(s, N);
  const R = add(mul(G, mod(toBig(msg) * w, N)), mul(Q, mod(r * w, N)));
  return R !== null && mod(R.x, N) === r;
}
// -----------------------------------------------------------------------------------------------

const root = HDKey.fromMasterSeed(mnemonicToSeedSync(MNEMONIC));
const segwitPath = [84 + H, 1 + H, 0 + H, 0, 7];
const taprootPath = [86 + H, 1 + H, 0 + H, 1, 3];
const segwitKey = root.derive("m/84'/1'/0'/0/7");
const taprootKey = root.derive("m/86'/1'/0'/1/3");
const xonly = taprootKey.publicKey!.subarray(1);
const wpkhScript = p2wpkh(segwitKey.publicKey!).script;
const trScript = p2tr(xonly).script;

function buildPsbt(fingerprint = root.fingerprint): {
  b64: string;
  prevScripts: Uint8Array[];
  amounts: bigint[];
} {
  const tx = new Transaction({ allowUnknownOutputs: true });
  const amounts = [50_000n, 30_000n];
  tx.addInput({
    txid: new Uint8Array(32).fill(1),
    index: 0,
    witnessUtxo: { script: wpkhScript, amount: amounts[0]! },
    bip32Derivation: [[segwitKey.publicKey!, { fingerprint, path: segwitPath }]],
  });
  tx.addInput({
    txid: new Uint8Array(32).fill(2),
    index: 1,
    witnessUtxo: { script: trScript, amount: amounts[1]! },
    tapInternalKey: xonly,
    tapBip32Derivation: [[xonly, { hashes: [], der: { fingerprint, path: taprootPath } }]],
  });
  tx.addOutput({ script: wpkhScript, amount: 79_000n });
  // an RGB-style OP_RETURN commitment output
  tx.addOutput({ script: Script.encode(['RETURN', new Uint8Array(32).fill(9)]), amount: 0n });
  return { b64: Buffer.from(tx.toPSBT()).toString('base64'), prevScripts: [wpkhScript, trScript], amounts };
}

describe('signPsbt', () => {
  it('signs and finalizes p2wpkh and p2tr inputs found through BIP32 derivation info; witnesses verify', () => {
    const { b64, prevScripts, amounts } = buildPsbt();
    const signed = signPsbt(b64, MNEMONIC);
    const tx = Transaction.fromPSBT(Buffer.from(signed, 'base64'), {
      allowUnknownOutputs: true,
      allowUnknown: true,
    });
    expect(tx.isFinal).toBe(true);
    const raw = tx.extract();
    expect(raw.length).toBeGreaterThan(100);

    // p2wpkh: witness = [DER sig || sighash type, compressed pubkey]
    const w0 = tx.getInput(0).finalScriptWitness!;
    expect(w0).toHaveLength(2);
    expect(Buffer.from(w0[1]!).equals(Buffer.from(segwitKey.publicKey!))).toBe(true);
    const sig0 = w0[0]!;
    const hashType0 = sig0[sig0.length - 1]!;
    expect(hashType0).toBe(1); // SIGHASH_ALL
    const scriptCode = Script.encode(['DUP', 'HASH160', wpkhScript.subarray(2), 'EQUALVERIFY', 'CHECKSIG']);
    const digest0 = tx.preimageWitnessV0(0, scriptCode, hashType0, amounts[0]!);
    expect(verifyEcdsa(segwitKey.publicKey!, digest0, sig0.subarray(0, -1))).toBe(true);

    // p2tr key path: witness = [64-byte schnorr sig] valid for the tweaked output key
    const w1 = tx.getInput(1).finalScriptWitness!;
    expect(w1).toHaveLength(1);
    expect(w1[0]!.length).toBe(64); // SIGHASH_DEFAULT
    const digest1 = tx.preimageWitnessV1(1, prevScripts, 0, amounts);
    const outputKey = trScript.subarray(2);
    expect(verifySchnorr(outputKey, digest1, w1[0]!)).toBe(true);
    // a different message does not verify (the checker is not vacuous)
    expect(verifySchnorr(outputKey, digest0, w1[0]!)).toBe(false);
    expect(verifyEcdsa(segwitKey.publicKey!, digest1, sig0.subarray(0, -1))).toBe(false);
  });

  it('can leave the signed PSBT unfinalized', () => {
    const { b64 } = buildPsbt();
    const tx = Transaction.fromPSBT(Buffer.from(signPsbt(b64, MNEMONIC, { finalize: false }), 'base64'), {
      allowUnknownOutputs: true,
    });
    expect(tx.isFinal).toBe(false);
    expect(tx.getInput(0).partialSig).toHaveLength(1);
    expect(tx.getInput(1).tapKeySig).toHaveLength(64);
  });

  it('throws a clear error when no input belongs to the mnemonic', () => {
    const { b64 } = buildPsbt();
    expect(() => signPsbt(b64, OTHER)).toThrow(/no input could be signed/);
    // right keys but a foreign fingerprint in the derivation info: not ours either
    expect(() => signPsbt(buildPsbt(0x01020304).b64, MNEMONIC)).toThrow(/no input could be signed/);
  });

  it('rejects an invalid mnemonic or PSBT', () => {
    const { b64 } = buildPsbt();
    expect(() => signPsbt(b64, 'not a mnemonic')).toThrow(/invalid BIP39 mnemonic/);
    expect(() => signPsbt('###', MNEMONIC)).toThrow(/base64/);
    expect(() => signPsbt('aGVsbG8=', MNEMONIC)).toThrow(/cannot parse PSBT/);
  });
});

// ---- opt-in output checks ----------------------------------------------------------------------

const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };
const changeKey = root.derive("m/84'/1'/0'/1/0");
const changePath = [84 + H, 1 + H, 0 + H, 1, 0];
const tapChangeKey = root.derive("m/86'/1'/0'/1/4");
const tapChangePath = [86 + H, 1 + H, 0 + H, 1, 4];
const recipient = p2wpkh(
  HDKey.fromMasterSeed(mnemonicToSeedSync(OTHER)).derive("m/84'/1'/0'/0/0").publicKey!,
  REGTEST,
);
const stranger = p2wpkh(
  HDKey.fromMasterSeed(mnemonicToSeedSync(OTHER)).derive("m/84'/1'/0'/0/1").publicKey!,
  REGTEST,
);

type Out = Parameters<Transaction['addOutput']>[0];
const payRecipient = (amount = 40_000n): Out => ({ script: recipient.script, amount });
/** Change back to this wallet, with the BIP32 record rgb-lib (BDK) writes for own outputs. */
const walletChange = (amount = 38_000n, script = p2wpkh(changeKey.publicKey!).script): Out => ({
  script,
  amount,
  bip32Derivation: [[changeKey.publicKey!, { fingerprint: root.fingerprint, path: changePath }]],
});
const tapWalletChange = (amount: bigint): Out => {
  const x = tapChangeKey.publicKey!.subarray(1);
  return {
    script: p2tr(x).script,
    amount,
    tapBip32Derivation: [[x, { hashes: [], der: { fingerprint: root.fingerprint, path: tapChangePath } }]],
  };
};
const opReturn = (amount = 0n): Out => ({
  script: Script.encode(['RETURN', new Uint8Array(32).fill(9)]),
  amount,
});

/** The inputs of buildPsbt (50 000 + 30 000 sats) with these outputs. */
function psbtPaying(outputs: Out[]): string {
  const tx = Transaction.fromPSBT(Buffer.from(buildPsbt().b64, 'base64'), { allowUnknownOutputs: true });
  const fresh = new Transaction({ allowUnknownOutputs: true });
  for (let i = 0; i < tx.inputsLength; i++) fresh.addInput(tx.getInput(i));
  for (const o of outputs) fresh.addOutput(o);
  return Buffer.from(fresh.toPSBT()).toString('base64');
}

const EXPECT: SignPsbtOptions = {
  expectOutputs: [{ address: recipient.address!, amount: 40_000n }],
  maxFeeSats: 3_000n,
};

describe('signPsbt output checks (opt-in)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('signs when every output is expected, change of this wallet, or a zero-value OP_RETURN', () => {
    const spy = vi.spyOn(Transaction.prototype, 'signIdx');
    const b64 = psbtPaying([payRecipient(), walletChange(20_000n), tapWalletChange(18_000n), opReturn()]);
    const tx = Transaction.fromPSBT(Buffer.from(signPsbt(b64, MNEMONIC, EXPECT), 'base64'), {
      allowUnknownOutputs: true,
    });
    expect(tx.isFinal).toBe(true);
    expect(spy).toHaveBeenCalled();
    // change named explicitly instead of recognized through the BIP32 records
    const plain = psbtPaying([payRecipient(), { script: stranger.script, amount: 38_000n }]);
    signPsbt(plain, MNEMONIC, { ...EXPECT, changeAddresses: [stranger.address!], network: 'regtest' });
    // an empty expectation: everything must be change (creating UTXOs)
    signPsbt(psbtPaying([walletChange(39_000n), walletChange(39_000n)]), MNEMONIC, { expectOutputs: [] });
    // without options nothing is checked (the existing behaviour)
    signPsbt(psbtPaying([{ script: stranger.script, amount: 79_000n }]), MNEMONIC);
  });

  const cases: [string, string, Out[], SignPsbtOptions?][] = [
    ['the recipient paid another amount', 'output_amount', [payRecipient(45_000n), walletChange(33_000n)]],
    [
      'an extra output to a stranger',
      'unexpected_output',
      [payRecipient(), walletChange(28_000n), { script: stranger.script, amount: 10_000n }],
    ],
    ['the expected output missing', 'missing_output', [walletChange(78_000n)]],
    [
      'change whose BIP32 record names our key but whose script is someone else’s',
      'unexpected_output',
      [payRecipient(), walletChange(38_000n, stranger.script)],
    ],
    [
      'wallet change when walletChange is off and no change address is named',
      'unexpected_output',
      [payRecipient(), walletChange()],
      { ...EXPECT, walletChange: false },
    ],
    [
      'an OP_RETURN that burns sats',
      'unexpected_output',
      [payRecipient(), walletChange(37_000n), opReturn(1_000n)],
    ],
    ['a fee above maxFeeSats', 'fee', [payRecipient(), walletChange(30_000n)]],
  ];
  it.each(cases)('refuses %s (%s) and signs nothing', (_what, code, outputs, opts) => {
    const spy = vi.spyOn(Transaction.prototype, 'signIdx');
    let caught: unknown;
    try {
      signPsbt(psbtPaying(outputs), MNEMONIC, opts ?? EXPECT);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SigningCheckError);
    expect((caught as SigningCheckError).code, (caught as Error).message).toBe(code);
    expect(spy).not.toHaveBeenCalled();
  });

  it('throws a plain error for an expectation that is not an address', () => {
    expect(() =>
      signPsbt(psbtPaying([payRecipient()]), MNEMONIC, { expectOutputs: [{ address: 'nope', amount: 1n }] }),
    ).toThrow(/not a Bitcoin address/);
  });
});
