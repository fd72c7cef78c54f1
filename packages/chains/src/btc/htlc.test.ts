import { readFileSync } from 'node:fs';
import { schnorr } from '@noble/curves/secp256k1.js';
import { bech32, bech32m } from '@scure/base';
import { p2tr, Script, SigHash, TaprootControlBlock, Transaction } from '@scure/btc-signer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hex } from '../bytes.ts';
import { ChainInputError, VerificationError } from '../errors.ts';
import {
  addressToScript,
  btcSignerNetwork,
  buildHtlc,
  buildHtlcClaimTx,
  buildHtlcFundingPsbt,
  buildHtlcRefundTx,
  generatePreimage,
  HTLC_NUMS_KEY,
  parseTx,
  secretHashOf,
  tapBranchHash,
  tapLeafHash,
  taprootOutputKey,
  verifySignedFundingPsbt,
} from './index.ts';
import { fakeTxid, parsePsbt, testWallet, toB64, userSigns } from './test-fixtures.ts';

interface TaprootVector {
  id: string;
  internalPubkey: string;
  leaves: string[];
  leafHashes?: string[];
  tweakedPubkey: string;
  controlBlocks: string[];
  address: string | null;
}
const bip341: { vectors: TaprootVector[] } = JSON.parse(
  readFileSync(new URL('../../test/vectors/bip341-taproot.json', import.meta.url), 'utf8'),
);
const b = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));

const user = testWallet(0x11);
const resolver = testWallet(0x22);
const stranger = testWallet(0x33);
const preimage = b('00'.repeat(31) + '07');
const secretHash = secretHashOf(preimage);
const htlc = buildHtlc({
  secretHash,
  resolverPubkey: resolver.pubkey,
  userPubkey: user.pubkey,
  locktime: 1_000,
  network: 'regtest',
});

function fundingFixture(kind: 'p2tr' | 'p2wpkh' | 'mixed' = 'p2tr') {
  const utxos = [
    {
      txid: fakeTxid(1),
      vout: 0,
      value: 60_000n,
      script: kind === 'p2wpkh' ? user.p2wpkhScript : user.p2trScript,
    },
    {
      txid: fakeTxid(2),
      vout: 3,
      value: 70_000n,
      script: kind === 'p2tr' ? user.p2trScript : user.p2wpkhScript,
    },
  ];
  const funding = buildHtlcFundingPsbt({
    htlc,
    amount: 100_000n,
    utxos,
    userPubkey: user.pubkey,
    changeAddress: user.p2trAddress,
    feeRate: 2n,
    coinSelection: 'all',
  });
  return { utxos, funding };
}

function verify(
  signedPsbtBase64: string,
  f = fundingFixture().funding,
  userPubkey: Uint8Array = user.pubkey,
) {
  return verifySignedFundingPsbt({
    unsignedPsbtBase64: f.psbtBase64,
    signedPsbtBase64,
    inputsToSign: f.inputsToSign,
    prevouts: f.prevouts,
    userPubkey,
  });
}

function expectCode(fn: () => unknown, code: string): VerificationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(VerificationError);
    expect((e as VerificationError).code).toBe(code);
    return e as VerificationError;
  }
  throw new Error(`expected VerificationError ${code}, nothing was thrown`);
}

describe('Taproot primitives against BIP-341 test vectors', () => {
  it.each(bip341.vectors)('$id', (v) => {
    const leaves = v.leaves.map((s) => tapLeafHash(b(s)));
    if (v.leafHashes) expect(leaves.map(hex)).toEqual(v.leafHashes);
    const root =
      leaves.length === 0
        ? new Uint8Array(0)
        : leaves.length === 1
          ? leaves[0]!
          : tapBranchHash(leaves[0]!, leaves[1]!);
    const { key, parity } = taprootOutputKey(b(v.internalPubkey), root);
    expect(hex(key)).toBe(v.tweakedPubkey);
    // control block of leaf i: version|parity, internal key, sibling hash
    v.controlBlocks.forEach((cb, i) => {
      const sibling = leaves.length === 2 ? hex(leaves[1 - i]!) : '';
      expect(`${(0xc0 | parity).toString(16)}${v.internalPubkey}${sibling}`).toBe(cb);
    });
    if (v.address)
      expect(addressToScript(v.address, 'mainnet')).toEqual(Uint8Array.from([0x51, 0x20, ...key]));
  });
});

describe('HTLC construction', () => {
  it('has the documented leaf scripts, the NUMS internal key, and matches btc-signer p2tr', () => {
    expect(hex(htlc.claimScript)).toBe(`a820${hex(secretHash)}8820${hex(resolver.xonly)}ac`);
    expect(hex(htlc.refundScript)).toBe(`02e803b175 20${hex(user.xonly)}ac`.replace(' ', ''));
    expect(hex(HTLC_NUMS_KEY)).toBe('50929b74c1a04954b78b4b6035e97a5e078a5a0f28ec96d547bfee9ace803ac0');
    expect(htlc.internalKey).toEqual(HTLC_NUMS_KEY);
    // Independent construction by @scure/btc-signer
    const ref = p2tr(
      HTLC_NUMS_KEY,
      [{ script: htlc.claimScript }, { script: htlc.refundScript }],
      btcSignerNetwork('regtest'),
      true,
    );
    expect(htlc.address).toBe(ref.address);
    expect(htlc.outputScript).toEqual(ref.script);
    const refBlocks = new Map(
      ref.tapLeafScript!.map(([cb, s]) => [hex(s.subarray(0, -1)), hex(TaprootControlBlock.encode(cb))]),
    );
    expect(refBlocks.get(hex(htlc.claimScript))).toBe(hex(htlc.claimControlBlock));
    expect(refBlocks.get(hex(htlc.refundScript))).toBe(hex(htlc.refundControlBlock));
    expect(htlc.address.startsWith('bcrt1p')).toBe(true);
    expect(
      buildHtlc({
        secretHash,
        resolverPubkey: resolver.xonly,
        userPubkey: user.xonly,
        locktime: 1_000,
        network: 'mainnet',
      }).address,
    ).toMatch(/^bc1p/);
  });

  it('encodes lock times as minimal CScriptNum pushes (cross-checked with btc-signer Script)', () => {
    for (const locktime of [
      1, 16, 17, 127, 128, 255, 256, 32_767, 32_768, 8_388_608, 499_999_999, 500_000_000, 1_900_000_000,
      0xffffffff,
    ]) {
      const h = buildHtlc({
        secretHash,
        resolverPubkey: resolver.pubkey,
        userPubkey: user.pubkey,
        locktime,
        network: 'regtest',
      });
      expect(h.refundScript).toEqual(
        Script.encode([locktime, 'CHECKLOCKTIMEVERIFY', 'DROP', user.xonly, 'CHECKSIG']),
      );
    }
  });

  it('hashes the preimage with SHA-256 and generates 32-byte preimages', () => {
    expect(hex(secretHashOf(new Uint8Array(32)))).toBe(
      '66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925',
    );
    const p = generatePreimage();
    expect(p.length).toBe(32);
    expect(hex(p)).not.toBe(hex(generatePreimage()));
  });

  it('rejects bad parameters with ChainInputError', () => {
    const base = {
      secretHash,
      resolverPubkey: resolver.pubkey,
      userPubkey: user.pubkey,
      locktime: 1_000,
      network: 'regtest' as const,
    };
    expect(() => buildHtlc({ ...base, secretHash: secretHash.subarray(1) })).toThrow(
      /secretHash: expected 32 bytes, received 31/,
    );
    expect(() => buildHtlc({ ...base, resolverPubkey: new Uint8Array(31) })).toThrow(ChainInputError);
    expect(() => buildHtlc({ ...base, userPubkey: Uint8Array.of(5, ...new Uint8Array(32).fill(1)) })).toThrow(
      /not a valid secp256k1/,
    );
    expect(() => buildHtlc({ ...base, locktime: 0 })).toThrow(/locktime/);
    expect(() => buildHtlc({ ...base, locktime: 2 ** 32 })).toThrow(/locktime/);
  });

  it('claim and refund transactions carry the right witness, lock time and sequence', () => {
    const claim = buildHtlcClaimTx({
      htlc,
      fundingTxid: fakeTxid(9),
      vout: 0,
      amount: 100_000n,
      destinationAddress: resolver.p2trAddress,
      feeRate: 3n,
      preimage,
      resolverPrivateKey: resolver.privateKey,
    });
    const ctx = Transaction.fromRaw(b(claim.txHex), { allowUnknownOutputs: true });
    const w = ctx.getInput(0).finalScriptWitness!;
    expect(w.map((x) => x.length)).toEqual([64, 32, htlc.claimScript.length, 65]);
    expect(w[1]).toEqual(preimage);
    expect(ctx.lockTime).toBe(0);
    expect(claim.fee).toBe(BigInt(claim.vsize) * 3n);
    expect(Math.ceil(parseTx(Buffer.from(claim.txHex, 'hex')).weight / 4)).toBe(claim.vsize);
    expect(ctx.getOutput(0).amount).toBe(100_000n - claim.fee);
    // the signature verifies under the resolver key for the tapscript sighash
    const digest = ctx.preimageWitnessV1(
      0,
      [htlc.outputScript],
      SigHash.DEFAULT,
      [100_000n],
      undefined,
      htlc.claimScript,
      0xc0,
    );
    expect(schnorr.verify(w[0]!, digest, resolver.xonly)).toBe(true);

    const refund = buildHtlcRefundTx({
      htlc,
      fundingTxid: fakeTxid(9),
      vout: 0,
      amount: 100_000n,
      destinationAddress: user.p2wpkhAddress,
      feeRate: 1n,
      userPrivateKey: user.privateKey,
    });
    const rtx = Transaction.fromRaw(b(refund.txHex), { allowUnknownOutputs: true });
    expect(rtx.lockTime).toBe(1_000);
    expect(rtx.getInput(0).sequence).toBe(0xfffffffe);
    expect(rtx.getInput(0).finalScriptWitness!.map((x) => x.length)).toEqual([
      64,
      htlc.refundScript.length,
      65,
    ]);

    expect(() =>
      buildHtlcClaimTx({
        htlc,
        fundingTxid: fakeTxid(9),
        vout: 0,
        amount: 100_000n,
        destinationAddress: resolver.p2trAddress,
        feeRate: 3n,
        preimage: new Uint8Array(32),
        resolverPrivateKey: resolver.privateKey,
      }),
    ).toThrow(/SHA-256\(preimage\)/);
    expect(() =>
      buildHtlcClaimTx({
        htlc,
        fundingTxid: fakeTxid(9),
        vout: 0,
        amount: 100_000n,
        destinationAddress: resolver.p2trAddress,
        feeRate: 3n,
        preimage,
        resolverPrivateKey: user.privateKey,
      }),
    ).toThrow(/not the key of the HTLC claim leaf/);
    expect(() =>
      buildHtlcRefundTx({
        htlc,
        fundingTxid: fakeTxid(9),
        vout: 0,
        amount: 100_000n,
        destinationAddress: user.p2trAddress,
        feeRate: 1n,
        userPrivateKey: resolver.privateKey,
      }),
    ).toThrow(/refund leaf/);
    expect(() =>
      buildHtlcRefundTx({
        htlc,
        fundingTxid: fakeTxid(9),
        vout: 0,
        amount: 400n,
        destinationAddress: user.p2trAddress,
        feeRate: 1n,
        userPrivateKey: user.privateKey,
      }),
    ).toThrow(/non-dust/);
  });

  it('addressToScript accepts segwit v0/v1 of the right network only', () => {
    expect(hex(addressToScript(user.p2wpkhAddress, 'regtest'))).toBe(hex(user.p2wpkhScript));
    expect(hex(addressToScript(user.p2trAddress, 'regtest'))).toBe(hex(user.p2trScript));
    expect(() => addressToScript(user.p2trAddress, 'mainnet')).toThrow(/starting with bc1/);
    expect(() =>
      addressToScript(
        `${user.p2trAddress.slice(0, -1)}${user.p2trAddress.endsWith('x') ? 'y' : 'x'}`,
        'regtest',
      ),
    ).toThrow(/not a valid bech32/);
  });
});

describe('addressToScript parser', () => {
  it('property: segwit programs round-trip through bech32/bech32m; arbitrary text is ChainInputError', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ minLength: 20, maxLength: 20 }).map((p) => ({ v: 0, p })),
          fc.uint8Array({ minLength: 32, maxLength: 32 }).map((p) => ({ v: 0, p })),
          fc.uint8Array({ minLength: 32, maxLength: 32 }).map((p) => ({ v: 1, p })),
        ),
        ({ v, p }) => {
          const coder = v === 0 ? bech32 : bech32m;
          const address = coder.encode('bcrt', [v, ...coder.toWords(p)]);
          const script = addressToScript(address, 'regtest');
          return hex(script) === hex(Uint8Array.from([v === 0 ? 0 : 0x51, p.length, ...p]));
        },
      ),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((x) => `bcrt1${x}`),
        ),
        (text) => {
          try {
            addressToScript(text, 'regtest');
            return true;
          } catch (e) {
            return e instanceof ChainInputError;
          }
        },
      ),
      { numRuns: 500 },
    );
    // bech32 (v0 checksum) on a v1 program is invalid (BIP-350)
    const wrongVariant = bech32.encode('bcrt', [1, ...bech32.toWords(new Uint8Array(32).fill(7))]);
    expect(() => addressToScript(wrongVariant, 'regtest')).toThrow(ChainInputError);
  });
});

describe('funding PSBT', () => {
  it('builds HTLC output 0, change output 1, witness_utxo on every input, fee = vsize × rate', () => {
    const { funding, utxos } = fundingFixture();
    const tx = parsePsbt(funding.psbtBase64);
    expect(tx.inputsLength).toBe(2);
    expect(funding.inputsToSign).toEqual([0, 1]);
    expect(tx.getOutput(0).script).toEqual(htlc.outputScript);
    expect(tx.getOutput(0).amount).toBe(100_000n);
    expect(funding.changeVout).toBe(1);
    expect(tx.getOutput(1).amount).toBe(130_000n - 100_000n - funding.fee);
    expect(funding.fee).toBe(BigInt(funding.vsize) * 2n);
    for (let i = 0; i < 2; i++) {
      expect(tx.getInput(i).witnessUtxo!.amount).toBe(utxos[i]!.value);
      expect(tx.getInput(i).tapInternalKey).toEqual(user.xonly);
    }
    expect(funding.txid).toBe(tx.id);
  });

  it('largest-first picks the fewest UTXOs and drops sub-dust change into the fee', () => {
    const utxos = [
      { txid: fakeTxid(1), vout: 0, value: 1_000n, script: user.p2trScript },
      { txid: fakeTxid(2), vout: 0, value: 200_000n, script: user.p2trScript },
    ];
    const f = buildHtlcFundingPsbt({
      htlc,
      amount: 100_000n,
      utxos,
      userPubkey: user.pubkey,
      changeAddress: user.p2trAddress,
      feeRate: 1n,
    });
    expect(f.prevouts.map((p) => p.txid)).toEqual([fakeTxid(2)]);
    const exact = buildHtlcFundingPsbt({
      htlc,
      amount: 199_700n,
      utxos: [utxos[1]!],
      userPubkey: user.pubkey,
      changeAddress: user.p2trAddress,
      feeRate: 1n,
    });
    expect(exact.changeVout).toBeNull();
    expect(exact.fee).toBe(300n);
    expect(() =>
      buildHtlcFundingPsbt({
        htlc,
        amount: 300_000n,
        utxos,
        userPubkey: user.pubkey,
        changeAddress: user.p2trAddress,
        feeRate: 1n,
      }),
    ).toThrow(/insufficient funds: need at least \d+ sats .* have 201000/);
    expect(() =>
      buildHtlcFundingPsbt({
        htlc,
        amount: 100_000n,
        utxos: [{ ...utxos[1]!, script: stranger.p2trScript }],
        userPubkey: user.pubkey,
        changeAddress: user.p2trAddress,
        feeRate: 1n,
      }),
    ).toThrow(/utxos\[0\]\.script: expected P2TR/);
  });
});

describe('signed funding PSBT verification', () => {
  it.each(['p2tr', 'p2wpkh', 'mixed'] as const)(
    'accepts a %s PSBT signed by the user with btc-signer and finalizes it',
    (kind) => {
      const { funding } = fundingFixture(kind);
      const signed = userSigns(funding.psbtBase64, funding.inputsToSign, user.privateKey);
      const ok = verify(signed, funding);
      expect(ok.txid).toBe(funding.txid);
      expect(ok.signatures.map((s) => s.index)).toEqual([0, 1]);
      const final = Transaction.fromRaw(b(ok.txHex!), { allowUnknownOutputs: true });
      expect(final.id).toBe(funding.txid);
      // a wallet that finalizes itself (final_scriptwitness instead of tap_key_sig/partial_sig) is accepted too
      const finalized = userSigns(funding.psbtBase64, funding.inputsToSign, user.privateKey, {
        finalize: true,
      });
      const again = verify(finalized, funding);
      expect(Transaction.fromRaw(b(again.txHex!), { allowUnknownOutputs: true }).id).toBe(funding.txid);
      // the service finalizes from the stored PSBT with exactly the signatures it verified
      expect(final.getInput(0).finalScriptWitness![0]).toEqual(b(ok.signatures[0]!.signature));
    },
  );

  it('accepts SIGHASH_ALL (65-byte Schnorr) and rejects ANYONECANPAY/NONE/SINGLE', () => {
    const { funding } = fundingFixture();
    verify(
      userSigns(funding.psbtBase64, funding.inputsToSign, user.privateKey, { sighash: [SigHash.ALL] }),
      funding,
    );
    for (const s of [SigHash.ALL_ANYONECANPAY, SigHash.NONE, SigHash.SINGLE]) {
      const e = expectCode(
        () =>
          verify(
            userSigns(funding.psbtBase64, funding.inputsToSign, user.privateKey, { sighash: [s] }),
            funding,
          ),
        'bad_sighash_type',
      );
      expect(e.message).toMatch(/expected 0x00 \(64-byte\) or 0x01; received 0x/);
    }
  });

  it('rejects a changed output amount (re-signed by the user, and with the old signatures kept)', () => {
    const { funding } = fundingFixture();
    const t = parsePsbt(funding.psbtBase64);
    t.updateOutput(0, { amount: 99_000n });
    const e = expectCode(
      () => verify(userSigns(toB64(t), [0, 1], user.privateKey), funding),
      'output_amount',
    );
    expect(e.message).toBe('output 0 amount changed; expected 100000 sats; received 99000 sats');
    const s = parsePsbt(userSigns(funding.psbtBase64, [0, 1], user.privateKey));
    s.updateOutput(1, { amount: 1n }, true);
    expectCode(() => verify(toB64(s), funding), 'output_amount');
  });

  it('rejects an added output', () => {
    const { funding } = fundingFixture();
    const t = parsePsbt(funding.psbtBase64);
    t.addOutput({ script: stranger.p2trScript, amount: 1_000n });
    const e = expectCode(() => verify(userSigns(toB64(t), [0, 1], user.privateKey), funding), 'output_count');
    expect(e.message).toBe('number of outputs changed; expected 2; received 3');
  });

  it('rejects swapped inputs and a replaced input', () => {
    const { funding, utxos } = fundingFixture();
    const swapped = new Transaction({ version: 2 });
    for (const u of [utxos[1]!, utxos[0]!])
      swapped.addInput({
        txid: u.txid,
        index: u.vout,
        witnessUtxo: { script: u.script, amount: u.value },
        tapInternalKey: user.xonly,
      });
    const orig = parsePsbt(funding.psbtBase64);
    for (let i = 0; i < orig.outputsLength; i++) swapped.addOutput(orig.getOutput(i));
    expectCode(() => verify(userSigns(toB64(swapped), [0, 1], user.privateKey), funding), 'input_outpoint');
    const replaced = parsePsbt(funding.psbtBase64);
    replaced.updateInput(1, { txid: fakeTxid(7) });
    expectCode(() => verify(toB64(replaced), funding), 'input_outpoint');
  });

  it('rejects changed sequence, lock time and version', () => {
    const { funding } = fundingFixture();
    const seq = parsePsbt(funding.psbtBase64);
    seq.updateInput(0, { sequence: 1 });
    expectCode(() => verify(userSigns(toB64(seq), [0, 1], user.privateKey), funding), 'input_sequence');
    const lt = new Transaction({ version: 2, lockTime: 5 });
    const orig = parsePsbt(funding.psbtBase64);
    for (let i = 0; i < orig.inputsLength; i++) lt.addInput(orig.getInput(i));
    for (let i = 0; i < orig.outputsLength; i++) lt.addOutput(orig.getOutput(i));
    expectCode(() => verify(userSigns(toB64(lt), [0, 1], user.privateKey), funding), 'tx_locktime');
    const v = new Transaction({ version: 1 });
    for (let i = 0; i < orig.inputsLength; i++) v.addInput(orig.getInput(i));
    for (let i = 0; i < orig.outputsLength; i++) v.addOutput(orig.getOutput(i));
    expectCode(() => verify(userSigns(toB64(v), [0, 1], user.privateKey), funding), 'tx_version');
  });

  it('rejects a missing signature', () => {
    const { funding } = fundingFixture();
    expectCode(() => verify(funding.psbtBase64, funding), 'missing_signature');
    const e = expectCode(
      () => verify(userSigns(funding.psbtBase64, [0], user.privateKey), funding),
      'missing_signature',
    );
    expect(e.message).toMatch(/input 1 has no Taproot key-path signature/);
    const { funding: fw } = fundingFixture('p2wpkh');
    expectCode(() => verify(userSigns(fw.psbtBase64, [1], user.privateKey), fw), 'missing_signature');
  });

  it('rejects a signature by another key', () => {
    const { funding } = fundingFixture();
    // The stranger signs the user's inputs as if they were his (tap_internal_key swapped to his key)
    const opts = { allowUnknownOutputs: true, disableScriptCheck: true };
    const t = Transaction.fromPSBT(Uint8Array.from(Buffer.from(funding.psbtBase64, 'base64')), opts);
    for (const i of [0, 1]) {
      t.updateInput(i, { tapInternalKey: stranger.xonly }, true);
      expect(t.signIdx(stranger.privateKey, i)).toBe(true);
    }
    expectCode(() => verify(toB64(t), funding), 'invalid_signature');
    // P2WPKH: a partial_sig from another key
    const { funding: fw } = fundingFixture('p2wpkh');
    const s = parsePsbt(userSigns(fw.psbtBase64, [1], user.privateKey));
    const strangerSig = parsePsbt(
      userSigns(
        buildHtlcFundingPsbt({
          htlc,
          amount: 100_000n,
          utxos: [
            { txid: fakeTxid(1), vout: 0, value: 60_000n, script: stranger.p2wpkhScript },
            { txid: fakeTxid(2), vout: 3, value: 70_000n, script: stranger.p2wpkhScript },
          ],
          userPubkey: stranger.pubkey,
          changeAddress: user.p2trAddress,
          feeRate: 2n,
          coinSelection: 'all',
        }).psbtBase64,
        [0, 1],
        stranger.privateKey,
      ),
    );
    s.updateInput(0, { partialSig: strangerSig.getInput(0).partialSig! }, true);
    const e = expectCode(() => verify(toB64(s), fw), 'wrong_key');
    expect(e.message).toMatch(/input 0 is signed by another key; expected 02|03/);
  });

  it('uses the stored prevouts, not the witness_utxo in the returned PSBT', () => {
    const { funding } = fundingFixture();
    // The user's wallet sees (and signs over) a lower amount for input 0 than the service stored.
    const t = parsePsbt(funding.psbtBase64);
    t.updateInput(0, { witnessUtxo: { script: user.p2trScript, amount: 1_000n } }, true);
    expectCode(() => verify(userSigns(toB64(t), [0, 1], user.privateKey), funding), 'invalid_signature');
    // The user lies about witness_utxo after signing correctly: ignored, still valid.
    const s = parsePsbt(userSigns(funding.psbtBase64, [0, 1], user.privateKey));
    s.updateInput(1, { witnessUtxo: { script: user.p2trScript, amount: 1n } }, true);
    expect(verify(toB64(s), funding).txid).toBe(funding.txid);
  });

  it('rejects non-PSBT input as malformed_psbt and inconsistent stored data as ChainInputError', () => {
    const { funding } = fundingFixture();
    for (const bad of [
      '',
      'not base64!',
      Buffer.from('psbt').toString('base64'),
      funding.psbtBase64.slice(0, 40),
    ])
      expectCode(() => verify(bad, funding), 'malformed_psbt');
    const signed = userSigns(funding.psbtBase64, [0, 1], user.privateKey);
    expect(() =>
      verifySignedFundingPsbt({
        unsignedPsbtBase64: funding.psbtBase64,
        signedPsbtBase64: signed,
        inputsToSign: [0, 1],
        prevouts: funding.prevouts.slice(1),
        userPubkey: user.pubkey,
      }),
    ).toThrow(/prevouts: expected 2/);
    expect(() =>
      verifySignedFundingPsbt({
        unsignedPsbtBase64: funding.psbtBase64,
        signedPsbtBase64: signed,
        inputsToSign: [0, 5],
        prevouts: funding.prevouts,
        userPubkey: user.pubkey,
      }),
    ).toThrow(ChainInputError);
    expectCode(() => verify(signed, funding, stranger.pubkey), 'wrong_key');
  });

  it('only-listed inputs: a signature on an unlisted input is rejected', () => {
    const { funding } = fundingFixture();
    const signed = userSigns(funding.psbtBase64, [0, 1], user.privateKey);
    const e = (() => {
      try {
        verifySignedFundingPsbt({
          unsignedPsbtBase64: funding.psbtBase64,
          signedPsbtBase64: signed,
          inputsToSign: [0],
          prevouts: funding.prevouts,
          userPubkey: user.pubkey,
        });
      } catch (x) {
        return x as VerificationError;
      }
    })();
    expect(e?.code).toBe('unlisted_input_signed');
  });

  it('property: random byte mutations of a signed PSBT never throw anything but VerificationError, never verify with a changed tx', () => {
    const { funding } = fundingFixture('mixed');
    const signed = Buffer.from(
      userSigns(funding.psbtBase64, funding.inputsToSign, user.privateKey),
      'base64',
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(signed.length - 1), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.boolean(),
        (edits, truncate) => {
          const m = Buffer.from(signed);
          for (const [pos, byte] of edits) m[pos] = byte;
          const data = truncate ? m.subarray(0, m.length - (edits[0]![0] % 50)) : m;
          try {
            const ok = verify(data.toString('base64'), funding);
            return ok.txid === funding.txid; // e.g. an edit in ignored metadata (witness_utxo, derivation)
          } catch (e) {
            return e instanceof VerificationError;
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
