/**
 * BTC send building blocks: addresses and dust, exact sizes (checked against transactions really signed by
 * the SDK signer), coin selection (examples and a fast-check property), eligibility, reservations, and the
 * vanilla key derivation checked against rgb-lib itself (a real watch-only wallet in the rgb-lib child).
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDefaultHost, generateKeys, type Keys, openWallet, type Unspent } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { HDKey } from '@scure/bip32';
import { generateMnemonic, mnemonicToSeedSync } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { Address, OutScript, p2pkh, p2wpkh, Transaction } from '@scure/btc-signer';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildPsbt,
  type Candidate,
  CHANGE_DUST,
  CHANGE_SCRIPT_LENGTH,
  dustThreshold,
  estimateVsize,
  estimateWeight,
  finalizeSigned,
  INPUT_SEQUENCE,
  InsufficientFundsError,
  RESERVATION_FILE,
  readReservations,
  recipientScript,
  reservedOutpoints,
  selectCoins,
  signerNetwork,
  spendableVanilla,
  VanillaKeys,
  type WitnessKind,
  writeReservations,
} from './btc-send.ts';

const TPUB = { private: 0x04358394, public: 0x043587cf };
const REGTEST = signerNetwork('regtest');
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'btc-send-'));
  dirs.push(d);
  return d;
};
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await closeDefaultHost();
});

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const errOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e as { code?: string; statusCode?: number; message: string };
  }
  throw new Error('expected a throw');
};

/** A mnemonic with the account xpubs rgb-lib would derive (checked against rgb-lib in the last block). */
function wallet(kind: WitnessKind) {
  const mnemonic = generateMnemonic(wordlist);
  const root = HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic), TPUB);
  const xpub = root.derive(`m/${kind === 'Taproot' ? 86 : 84}'/1'/0'`).publicExtendedKey;
  const fingerprint = root.fingerprint.toString(16).padStart(8, '0');
  return { mnemonic, root, xpub, fingerprint, keys: new VanillaKeys(xpub, kind, 'regtest') };
}

/** A previous transaction paying `amounts` to the wallet's vanilla indexes `indexes` (never broadcast). */
function fakeFunding(keys: VanillaKeys, indexes: number[], amounts: bigint[]) {
  const tx = new Transaction({ allowUnknownInputs: true });
  indexes.forEach((ix, i) => {
    tx.addOutput({ script: keys.derive(ix).script, amount: amounts[i] as bigint });
  });
  tx.addInput({ txid: '11'.repeat(32), index: 0, finalScriptSig: new Uint8Array([0x51]) });
  return { raw: tx.toBytes(true, false), txid: tx.id };
}

describe('addresses and dust', () => {
  const key = new Uint8Array(33).fill(2);
  const hash20 = new Uint8Array(20).fill(7);
  const hash32 = new Uint8Array(32).fill(9);
  const cases = [
    ['P2WPKH', { type: 'wpkh', hash: hash20 }, 22, 294n],
    ['P2WSH', { type: 'wsh', hash: hash32 }, 34, 330n],
    ['P2TR', { type: 'tr', pubkey: hash32 }, 34, 330n],
    ['P2PKH', { type: 'pkh', hash: hash20 }, 25, 546n],
    ['P2SH', { type: 'sh', hash: hash20 }, 23, 540n],
  ] as const;

  it.each(cases)(
    'decodes a regtest %s address to its script, with Core’s dust limit',
    (_n, out, len, dust) => {
      const address = Address(REGTEST).encode(out as never);
      const script = recipientScript(address, 'regtest');
      expect(hex(script)).toBe(hex(OutScript.encode(out as never)));
      expect(script.length).toBe(len);
      expect(dustThreshold(script)).toBe(dust);
    },
  );

  it('refuses other networks, bad checksums, garbage and pay-to-anchor with INVALID_ADDRESS (400)', () => {
    const bad = [
      p2wpkh(key, signerNetwork('testnet')).address as string, // tb1… on regtest
      p2wpkh(key, signerNetwork('mainnet')).address as string, // bc1… on regtest
      p2pkh(key, signerNetwork('mainnet')).address as string, // 1… on regtest
      `${(p2wpkh(key, REGTEST).address as string).slice(0, -1)}q`,
      'not an address',
      'bcrt1pfeesnyr2tx', // pay-to-anchor (P2A) on regtest
    ];
    for (const a of bad) {
      const e = errOf(() => recipientScript(a, 'regtest'));
      expect([a, e.code, e.statusCode]).toEqual([a, 'INVALID_ADDRESS', 400]);
    }
    // the same key's address is valid on its own network
    expect(hex(recipientScript(p2wpkh(key, signerNetwork('testnet')).address as string, 'signet'))).toBe(
      hex(p2wpkh(key).script),
    );
  });
});

describe('size and fee', () => {
  it.each([
    ['Taproot', 1, true],
    ['Taproot', 3, false],
    ['Taproot', 7, true],
    ['SegWitV0', 1, true],
    ['SegWitV0', 4, false],
    ['SegWitV0', 9, true],
  ] as const)(
    '%s, %i inputs, change %s: the estimate is the signed size (P2WPKH: never below it)',
    (kind, n, withChange) => {
      const w = wallet(kind);
      const amounts = Array.from({ length: n }, (_, i) => 50_000n + BigInt(i));
      const funding = fakeFunding(
        w.keys,
        amounts.map((_, i) => i),
        amounts,
      );
      const recipient = OutScript.encode({ type: 'wsh', hash: new Uint8Array(32).fill(1) }); // 34-byte script
      const outLens = withChange ? [recipient.length, CHANGE_SCRIPT_LENGTH[kind]] : [recipient.length];
      const estimate = estimateVsize(kind, n, outLens);
      const fee = BigInt(estimate) * 3n;
      const total = amounts.reduce((a, b) => a + b, 0n);
      const change = withChange ? { key: w.keys.derive(40), amount: 20_000n } : undefined;
      const built = buildPsbt({
        kind,
        fingerprint: w.fingerprint,
        keys: w.keys,
        inputs: amounts.map((amount, i) => ({
          txid: funding.txid,
          vout: i,
          amount,
          script: w.keys.derive(i).script,
          prevTx: funding.raw,
          key: w.keys.derive(i),
        })),
        recipient: { script: recipient, amount: total - fee - (change?.amount ?? 0n) },
        ...(change ? { change } : {}),
      });
      const signed = signPsbt(built.psbt, w.mnemonic);
      const tx = Transaction.fromPSBT(Buffer.from(signed, 'base64'));
      expect(tx.isFinal).toBe(true);
      expect(tx.fee).toBe(fee);
      if (kind === 'Taproot') {
        expect(tx.weight).toBe(estimateWeight(kind, n, outLens));
        expect(tx.vsize).toBe(estimate);
      } else {
        // low-S DER signatures with the sighash byte are at most 72 bytes (71 with a low R; shorter when r or s
        // happens to have leading zero bytes, ~1 in 128 each): the estimate counts 72, so each shorter one weighs
        // exactly that many WU less and the estimate is never below the signed size
        const short = Array.from(
          { length: n },
          (_, i) => 72 - (tx.getInput(i).finalScriptWitness?.[0]?.length ?? 0),
        );
        expect(
          short.every((d) => Number.isInteger(d) && d >= 0 && d <= 4),
          `shorter by ${short}`,
        ).toBe(true);
        expect(tx.weight).toBe(estimateWeight(kind, n, outLens) - short.reduce((a, b) => a + b, 0));
        expect(tx.vsize).toBeLessThanOrEqual(estimate);
      }
      // the paid rate is never below the asked one
      expect(fee).toBeGreaterThanOrEqual(3n * BigInt(tx.vsize));
      // and the extracted transaction is the one begin promised
      expect(finalizeSigned(signed).txid).toBe(built.txid);
    },
  );

  it('counts the input-count varint: it grows from 1 to 3 bytes at 253 inputs', () => {
    const w = (n: number) => estimateWeight('Taproot', n, [34]);
    expect(w(252) - w(251)).toBe(4 * 41 + 66);
    expect(w(253) - w(252)).toBe(4 * (41 + 2) + 66);
    // 1-input 1-output P2TR → P2TR: 10.5 + 57.5 + 43 = 111 vB
    expect(estimateVsize('Taproot', 1, [34])).toBe(111);
    // 1-input 2-output P2WPKH: 10.5 + 68 (72-byte sig) + 2 × 31 = 140.5 → 141
    expect(estimateVsize('SegWitV0', 1, [22, 22])).toBe(141);
    // 4 inputs: 10.5 + 4 × 68 + 31 = 313.5 → 314
    expect(estimateVsize('SegWitV0', 4, [22])).toBe(314);
  });
});

describe('coin selection', () => {
  const c = (amount: bigint, vout = 0, txid = 'aa'.repeat(32)): Candidate => ({ txid, vout, amount });

  it('takes the largest UTXOs first and pays change to the wallet', () => {
    const s = selectCoins([c(5_000n, 0), c(90_000n, 1), c(40_000n, 2)], 100_000n, 2n, 'Taproot', 34);
    expect(s.inputs.map((i) => i.vout)).toEqual([1, 2]);
    const vsize = estimateVsize('Taproot', 2, [34, 34]);
    expect(s).toMatchObject({
      vsize,
      fee: BigInt(vsize) * 2n,
      change: 130_000n - 100_000n - BigInt(vsize) * 2n,
    });
  });

  it('gives a sub-dust remainder to the fee instead of a change output', () => {
    const vsizeN = estimateVsize('SegWitV0', 1, [22]);
    const amount = 10_000n;
    const utxo = amount + BigInt(vsizeN) * 5n + 545n; // change would be 545 - (31 vB × 5) < 546
    const s = selectCoins([c(utxo)], amount, 5n, 'SegWitV0', 22);
    expect(s).toMatchObject({ change: 0n, fee: utxo - amount, vsize: vsizeN });
  });

  it('keeps the change once it reaches the dust limit exactly', () => {
    const vsizeC = estimateVsize('Taproot', 1, [22, 34]);
    const utxo = 10_000n + BigInt(vsizeC) + CHANGE_DUST.Taproot;
    const s = selectCoins([c(utxo)], 10_000n, 1n, 'Taproot', 22);
    expect(s).toMatchObject({ change: 330n, fee: BigInt(vsizeC) });
  });

  it('throws InsufficientFundsError with what is there and what is needed', () => {
    const e = errOf(() => selectCoins([c(3_000n, 0), c(2_000n, 1)], 5_000n, 1n, 'Taproot', 34));
    expect(e).toBeInstanceOf(InsufficientFundsError);
    const ie = e as unknown as InsufficientFundsError;
    expect(ie.available).toBe(5_000n);
    expect(ie.needed).toBe(5_000n + BigInt(estimateVsize('Taproot', 2, [34])));
    expect(() => selectCoins([], 1_000n, 1n, 'SegWitV0', 22)).toThrow(InsufficientFundsError);
  });

  it('property: balanced, pays at least the rate for its size, change ≥ dust or none worth keeping, and refuses only when no subset pays', () => {
    const kind = fc.constantFrom<WitnessKind>('SegWitV0', 'Taproot');
    const utxos = fc.array(fc.bigInt({ min: 1n, max: 5_000_000n }), { minLength: 0, maxLength: 30 });
    fc.assert(
      fc.property(
        kind,
        utxos,
        fc.bigInt({ min: 294n, max: 20_000_000n }),
        fc.bigInt({ min: 1n, max: 500n }),
        fc.constantFrom(22, 23, 25, 34),
        (k, amounts, amount, rate, recipientLen) => {
          const cands = amounts.map((a, i) => c(a, i));
          let s: ReturnType<typeof selectCoins>;
          try {
            s = selectCoins(cands, amount, rate, k, recipientLen);
          } catch (e) {
            expect(e).toBeInstanceOf(InsufficientFundsError);
            // no k-subset pays: the k largest are the best k, so check every prefix of the sorted list
            const sorted = [...amounts].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
            let total = 0n;
            sorted.forEach((a, i) => {
              total += a;
              expect(total).toBeLessThan(amount + BigInt(estimateVsize(k, i + 1, [recipientLen])) * rate);
            });
            return;
          }
          const inputs = s.inputs.reduce((a, i) => a + i.amount, 0n);
          const keys = new Set(s.inputs.map((i) => i.vout));
          expect(keys.size).toBe(s.inputs.length);
          expect(inputs).toBe(amount + s.change + s.fee);
          const outs = s.change > 0n ? [recipientLen, CHANGE_SCRIPT_LENGTH[k]] : [recipientLen];
          expect(s.vsize).toBe(estimateVsize(k, s.inputs.length, outs));
          expect(s.fee).toBeGreaterThanOrEqual(BigInt(s.vsize) * rate);
          if (s.change > 0n) {
            expect(s.change).toBeGreaterThanOrEqual(CHANGE_DUST[k]);
            expect(s.fee).toBe(BigInt(s.vsize) * rate);
          } else {
            // the fee's surplus could not have paid for a change output of at least the dust limit
            const withChange =
              BigInt(estimateVsize(k, s.inputs.length, [recipientLen, CHANGE_SCRIPT_LENGTH[k]])) * rate;
            expect(s.fee).toBeLessThan(withChange + CHANGE_DUST[k]);
          }
          // one input fewer would not have paid (no needless inputs)
          const fewer = s.inputs.slice(0, -1).reduce((a, i) => a + i.amount, 0n);
          if (s.inputs.length > 1)
            expect(fewer).toBeLessThan(
              amount + BigInt(estimateVsize(k, s.inputs.length - 1, [recipientLen])) * rate,
            );
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('eligible UTXOs', () => {
  const u = (vout: number, over: Partial<Unspent['utxo']> = {}, rest: Partial<Unspent> = {}): Unspent => ({
    utxo: {
      outpoint: { txid: 'bb'.repeat(32), vout },
      btcAmount: 1_000n + BigInt(vout),
      colorable: false,
      exists: true,
      ...over,
    },
    rgbAllocations: [],
    pendingBlinded: 0,
    ...rest,
  });

  it('keeps only vanilla, existing, unallocated, unreserved UTXOs', () => {
    const list = [
      u(0, { derivationIndex: 4 } as never),
      u(1, { colorable: true }),
      u(2, { exists: false }),
      u(3, {}, { rgbAllocations: [{ assetId: 'rgb:x', assignment: { Fungible: 5n }, settled: true }] }),
      u(4, {}, { pendingBlinded: 1 }),
      u(5),
      u(6),
    ];
    const out = spendableVanilla(list, new Set([`${'bb'.repeat(32)}:6`]));
    expect(out).toEqual([
      { txid: 'bb'.repeat(32), vout: 0, amount: 1_000n, derivationIndex: 4 },
      { txid: 'bb'.repeat(32), vout: 5, amount: 1_005n, derivationIndex: undefined },
    ]);
  });
});

describe('reservations file', () => {
  const r = (expires_at: number, outpoints: string[]) => ({
    outpoints,
    created_at: 1,
    expires_at,
    address: 'bcrt1q…',
    amount: '1000',
    fee: '200',
  });

  it('round-trips through a 0600 file and drops expired entries on read and write', () => {
    const dir = tempDir();
    const now = 1_000_000;
    const live = 'a1'.repeat(32);
    const old = 'a2'.repeat(32);
    writeReservations(dir, { [live]: r(now + 10, ['x:0', 'x:1']), [old]: r(now + 5, ['y:0']) }, now);
    expect(statSync(join(dir, RESERVATION_FILE)).mode & 0o777).toBe(0o600);
    expect(Object.keys(readReservations(dir, now))).toEqual([live, old]);
    const later = readReservations(dir, now + 6);
    expect(Object.keys(later)).toEqual([live]);
    expect(reservedOutpoints(later)).toEqual(new Set(['x:0', 'x:1']));
    writeReservations(dir, later, now + 6);
    expect(JSON.parse(readFileSync(join(dir, RESERVATION_FILE), 'utf8'))).toEqual({
      version: 1,
      reservations: { [live]: r(now + 10, ['x:0', 'x:1']) },
    });
    expect(readReservations(dir, now + 10)).toEqual({});
  });

  it('treats a missing, unreadable or foreign file as no reservations', () => {
    const dir = tempDir();
    expect(readReservations(dir)).toEqual({});
    writeFileSync(join(dir, RESERVATION_FILE), '{"version":1,"reservations":{"__proto__":{"x":1}}');
    expect(readReservations(dir)).toEqual({});
    writeFileSync(join(dir, RESERVATION_FILE), JSON.stringify({ version: 2, reservations: {} }));
    expect(readReservations(dir)).toEqual({});
  });
});

describe('PSBT for the SDK signer', () => {
  it.each(['SegWitV0', 'Taproot'] as const)(
    '%s: carries the BIP32 records the signer needs, change recognized as the wallet’s',
    (kind) => {
      const w = wallet(kind);
      const funding = fakeFunding(w.keys, [3, 17], [60_000n, 70_000n]);
      const recipient = p2wpkh(wallet('SegWitV0').keys.derive(0).pubkey, REGTEST); // someone else
      const change = { key: w.keys.derive(21), amount: 9_000n };
      const built = buildPsbt({
        kind,
        fingerprint: w.fingerprint,
        keys: w.keys,
        inputs: [3, 17].map((ix, vout) => ({
          txid: funding.txid,
          vout,
          amount: vout === 0 ? 60_000n : 70_000n,
          script: w.keys.derive(ix).script,
          prevTx: funding.raw,
          key: w.keys.derive(ix),
        })),
        recipient: { script: recipient.script, amount: 120_000n },
        change,
        changeIndex: 1,
      });
      const tx = Transaction.fromPSBT(Buffer.from(built.psbt, 'base64'));
      const fp = Number.parseInt(w.fingerprint, 16);
      const purpose = kind === 'Taproot' ? 86 : 84;
      const H = 0x80000000;
      for (const [i, ix] of [
        [0, 3],
        [1, 17],
      ] as const) {
        const input = tx.getInput(i);
        const expectedKey = w.root.derive(`m/${purpose}'/1'/0'/0/${ix}`).publicKey as Uint8Array;
        expect(input.sequence).toBe(INPUT_SEQUENCE);
        expect(input.witnessUtxo?.amount).toBe(i === 0 ? 60_000n : 70_000n);
        if (kind === 'Taproot') {
          expect(hex(input.tapInternalKey as Uint8Array)).toBe(hex(expectedKey.subarray(1)));
          expect(input.tapBip32Derivation?.map(([k, d]) => [hex(k), d.hashes, d.der])).toEqual([
            [hex(expectedKey.subarray(1)), [], { fingerprint: fp, path: [purpose + H, 1 + H, H, 0, ix] }],
          ]);
          expect(input.nonWitnessUtxo).toBeUndefined();
        } else {
          expect(input.bip32Derivation?.map(([k, d]) => [hex(k), d])).toEqual([
            [hex(expectedKey), { fingerprint: fp, path: [purpose + H, 1 + H, H, 0, ix] }],
          ]);
          expect(input.nonWitnessUtxo).toBeDefined();
        }
      }
      expect(tx.getOutput(0).amount).toBe(120_000n);
      expect(tx.getOutput(1).amount).toBe(9_000n);
      // The signer's output check: only the recipient is expected; the change passes as the wallet's own
      // (its BIP32 record derives from the mnemonic), so the PSBT is signed.
      const signed = signPsbt(built.psbt, w.mnemonic, {
        expectOutputs: [{ address: recipient.address as string, amount: 120_000n }],
      });
      expect(finalizeSigned(signed).txid).toBe(built.txid);
      // …while another mnemonic does not recognize that change and refuses
      expect(() =>
        signPsbt(built.psbt, wallet(kind).mnemonic, {
          expectOutputs: [{ address: recipient.address as string, amount: 120_000n }],
        }),
      ).toThrow(/pays neither an expected address nor change/);
    },
  );

  it('finalizeSigned refuses what it cannot broadcast with INVALID_PSBT (400)', () => {
    const w = wallet('Taproot');
    const funding = fakeFunding(w.keys, [0], [10_000n]);
    const built = buildPsbt({
      kind: 'Taproot',
      fingerprint: w.fingerprint,
      keys: w.keys,
      inputs: [
        {
          txid: funding.txid,
          vout: 0,
          amount: 10_000n,
          script: w.keys.derive(0).script,
          key: w.keys.derive(0),
        },
      ],
      recipient: { script: w.keys.derive(1).script, amount: 9_000n },
    });
    for (const [psbt, why] of [
      [built.psbt, /input 0 cannot be finalized/],
      ['not base64!', /not base64/],
      [Buffer.from('hello world!').toString('base64'), /cannot parse the PSBT/],
    ] as const) {
      const e = errOf(() => finalizeSigned(psbt));
      expect([e.code, e.statusCode]).toEqual(['INVALID_PSBT', 400]);
      expect(e.message).toMatch(why);
    }
  });
});

describe('vanilla keychain', () => {
  it('yields to the event loop between derivation chunks and stops at the limit', async () => {
    const w = wallet('SegWitV0');
    let ticks = 0;
    let running = true;
    const spin = () => {
      ticks++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    const missing = new Uint8Array(22);
    expect(await w.keys.indexOf(missing, undefined, 1_000, 100)).toBeUndefined();
    running = false;
    expect(w.keys.derived).toBe(1_000);
    expect(ticks).toBeGreaterThanOrEqual(9);
    // found in the map now, and through a hint without extending it
    expect(await w.keys.indexOf(w.keys.derive(999).script)).toBe(999);
    expect(await w.keys.indexOf(w.keys.derive(5_000).script, 5_000)).toBe(5_000);
    expect(w.keys.derived).toBe(1_000);
    // a wrong hint falls back to the search
    expect(await w.keys.indexOf(w.keys.derive(7).script, 8)).toBe(7);
  });

  it.each(['SegWitV0', 'Taproot'] as const)(
    '%s: rgb-lib’s watch-only vanilla addresses (vanillaKeychain null) are <vanilla xpub>/0/i = m/purpose’/1’/0’/0/i',
    async (kind) => {
      const k: Keys = await generateKeys('Regtest', kind);
      const root = HDKey.fromMasterSeed(mnemonicToSeedSync(k.mnemonic), TPUB);
      const purpose = kind === 'Taproot' ? 86 : 84;
      expect(root.fingerprint.toString(16).padStart(8, '0')).toBe(k.masterFingerprint);
      expect(root.derive(`m/${purpose}'/1'/0'`).publicExtendedKey).toBe(k.accountXpubVanilla);
      const w = await openWallet({
        dataDir: tempDir(),
        network: 'Regtest',
        keys: { ...k, witnessVersion: kind },
      });
      try {
        const keys = new VanillaKeys(k.accountXpubVanilla, kind, 'regtest');
        for (let i = 0; i < 4; i++) {
          const address = await w.getAddress();
          const index = await keys.indexOf(recipientScript(address, 'regtest'));
          expect(index).toBe(i);
          const fromMnemonic = root.derive(`m/${purpose}'/1'/0'/0/${i}`).publicKey as Uint8Array;
          expect(hex(keys.derive(i).pubkey)).toBe(hex(fromMnemonic));
          expect(keys.path(i)).toEqual([purpose + 0x80000000, 1 + 0x80000000, 0x80000000, 0, i]);
        }
      } finally {
        await w.drop();
      }
    },
    120_000,
  );
});
