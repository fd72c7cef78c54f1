import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  createKeyPairSignerFromPrivateKeyBytes,
  getAddressDecoder,
  getBase58Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
  type SignatureBytes,
  verifySignature,
} from '@solana/kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChainInputError, VerificationError } from '../errors.ts';
import {
  buildCosignTransaction,
  type CosignTxParams,
  MEMO_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS,
  verifyCosignTransaction,
} from './index.ts';

const vectors: {
  rfc8032: { secretKey: string; publicKey: string; signature: string };
  seeds: { name: string; seedHex: string; address: string }[];
} = JSON.parse(readFileSync(new URL('../../test/vectors/solana-keys.json', import.meta.url), 'utf8'));
const seed = (name: string) =>
  Uint8Array.from(Buffer.from(vectors.seeds.find((s) => s.name === name)!.seedHex, 'hex'));

const [resolver, user, backend, stranger] = await Promise.all(
  ['resolver', 'user', 'backend', 'stranger'].map((n) => createKeyPairSignerFromPrivateKeyBytes(seed(n))),
);
const DESTINATION = 'BPFLoaderUpgradeab1e11111111111111111111111';
const BLOCKHASH = 'EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k';

function params(over: Partial<CosignTxParams> = {}): CosignTxParams {
  return {
    resolver: resolver!.address,
    user: user!.address,
    backend: backend!.address,
    recentBlockhash: BLOCKHASH,
    lastValidBlockHeight: 1_000n,
    lamports: 1_500_000_000n,
    destination: DESTINATION,
    memo: 'rgbx:intent:00000000-0000-4000-8000-000000000001',
    ...over,
  };
}

/** What a wallet does: decode, partially sign with the user key, re-encode. */
async function userSigns(txHex: string, signer = user!): Promise<string> {
  const tx = getTransactionDecoder().decode(Buffer.from(txHex, 'hex'));
  const signed = await partiallySignTransaction([signer.keyPair], tx);
  return Buffer.from(getTransactionEncoder().encode(signed)).toString('hex');
}

async function expectCode(p: Promise<unknown>, code: string): Promise<VerificationError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(VerificationError);
  expect((e as VerificationError).code).toBe(code);
  return e as VerificationError;
}

/** Overwrites signature slot `i` of a wire transaction. */
function setSlot(txHex: string, i: number, sig: Uint8Array): string {
  const b = Buffer.from(txHex, 'hex');
  b.set(sig, 1 + 64 * i);
  return b.toString('hex');
}

describe('Solana cosign transaction', () => {
  it('RFC 8032 test 1: kit derives the public key and verifies the signature', async () => {
    const v = vectors.rfc8032;
    const signer = await createKeyPairSignerFromPrivateKeyBytes(
      Uint8Array.from(Buffer.from(v.secretKey, 'hex')),
    );
    expect(Buffer.from(getBase58Encoder().encode(signer.address)).toString('hex')).toBe(v.publicKey);
    const sig = Uint8Array.from(Buffer.from(v.signature, 'hex')) as SignatureBytes;
    expect(await verifySignature(signer.keyPair.publicKey, sig, new Uint8Array(0))).toBe(true);
    expect(await verifySignature(signer.keyPair.publicKey, sig, new Uint8Array(1))).toBe(false);
  });

  it('key vectors: seeds derive the recorded addresses (kit and @noble/curves agree)', () => {
    for (const v of vectors.seeds) {
      const pub = ed25519.getPublicKey(Uint8Array.from(Buffer.from(v.seedHex, 'hex')));
      expect(getAddressDecoder().decode(pub)).toBe(v.address);
    }
    expect(user!.address).toBe(vectors.seeds.find((s) => s.name === 'user')!.address);
  });

  it('puts resolver at signer position 0, user at 1, backend at 2, and a transfer + memo', () => {
    const built = buildCosignTransaction(params());
    expect(built.signers).toEqual([resolver!.address, user!.address, backend!.address]);
    const wire = Buffer.from(built.transactionHex, 'hex');
    expect(wire[0]).toBe(3);
    expect(wire.subarray(1, 1 + 192).every((x) => x === 0)).toBe(true);
    expect(wire.subarray(193).toString('hex')).toBe(built.messageHex);
    const msg = getCompiledTransactionMessageDecoder().decode(wire.subarray(193));
    if (msg.version !== 0) throw new Error(`expected a v0 message, got ${String(msg.version)}`);
    expect(msg.header).toEqual({
      numSignerAccounts: 3,
      numReadonlySignerAccounts: 1,
      numReadonlyNonSignerAccounts: 2,
    });
    expect(msg.staticAccounts.slice(0, 3)).toEqual([resolver!.address, user!.address, backend!.address]);
    expect(msg.lifetimeToken).toBe(BLOCKHASH);
    const programs = msg.instructions.map((ix) => msg.staticAccounts[ix.programAddressIndex]);
    expect(programs).toEqual([SYSTEM_PROGRAM_ADDRESS, MEMO_PROGRAM_ADDRESS]);
    const data = Buffer.from(msg.instructions[0]!.data!);
    expect(data.readUInt32LE(0)).toBe(2);
    expect(data.readBigUInt64LE(4)).toBe(1_500_000_000n);
    expect(Buffer.from(msg.instructions[1]!.data!).toString('utf8')).toBe(params().memo);
    // without a backend: two signers
    expect(buildCosignTransaction(params({ backend: undefined })).signers).toEqual([
      resolver!.address,
      user!.address,
    ]);
  });

  it('verifies the user signature at position 1 made with @solana/kit', async () => {
    const { transactionHex } = buildCosignTransaction(params());
    const signed = await userSigns(transactionHex);
    const ok = await verifyCosignTransaction({
      unsignedTransactionHex: transactionHex,
      signedTransactionHex: signed,
      userAddress: user!.address,
    });
    expect(Buffer.from(getBase58Encoder().encode(ok.userSignature)).toString('hex')).toBe(
      signed.slice(130, 258),
    );
    // and independently: the slot holds an Ed25519 signature by the user over the message (noble)
    const wire = Buffer.from(signed, 'hex');
    expect(
      ed25519.verify(wire.subarray(65, 129), wire.subarray(193), ed25519.getPublicKey(seed('user'))),
    ).toBe(true);
    // two-signer variant
    const two = buildCosignTransaction(params({ backend: undefined })).transactionHex;
    await verifyCosignTransaction({
      unsignedTransactionHex: two,
      signedTransactionHex: await userSigns(two),
      userAddress: user!.address,
    });
  });

  it('rejects a signature by the wrong key', async () => {
    const { transactionHex } = buildCosignTransaction(params());
    const wire = Buffer.from(transactionHex, 'hex');
    const forged = setSlot(transactionHex, 1, ed25519.sign(wire.subarray(193), seed('stranger')));
    await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: forged,
        userAddress: user!.address,
      }),
      'invalid_signature',
    );
    // claiming to be someone else: the stranger is not at position 1
    const e = await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: forged,
        userAddress: stranger!.address,
      }),
      'user_position',
    );
    expect(e.expected).toBe(user!.address);
  });

  it('rejects a signature at position 0 or 2, and an empty user slot', async () => {
    const { transactionHex } = buildCosignTransaction(params());
    const signed = await userSigns(transactionHex);
    const msg = Buffer.from(transactionHex, 'hex').subarray(193);
    const at0 = setSlot(signed, 0, ed25519.sign(msg, seed('resolver')));
    await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: at0,
        userAddress: user!.address,
      }),
      'position_0_changed',
    );
    const at2 = setSlot(signed, 2, ed25519.sign(msg, seed('backend')));
    await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: at2,
        userAddress: user!.address,
      }),
      'position_2_changed',
    );
    // the user signed, but into slot 0 instead of 1
    const wrongSlot = setSlot(transactionHex, 0, ed25519.sign(msg, seed('user')));
    await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: wrongSlot,
        userAddress: user!.address,
      }),
      'position_0_changed',
    );
    await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: transactionHex,
        userAddress: user!.address,
      }),
      'missing_signature',
    );
  });

  it('rejects a modified message (re-signed by the user, as a wallet injecting instructions would)', async () => {
    const { transactionHex } = buildCosignTransaction(params());
    const other = buildCosignTransaction(params({ lamports: 1n })).transactionHex;
    const e = await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: await userSigns(other),
        userAddress: user!.address,
      }),
      'message_changed',
    );
    expect(e.message).toMatch(/first difference at byte \d+/);
    const fewer = buildCosignTransaction(params({ backend: undefined })).transactionHex;
    await expectCode(
      verifyCosignTransaction({
        unsignedTransactionHex: transactionHex,
        signedTransactionHex: await userSigns(fewer),
        userAddress: user!.address,
      }),
      'signer_count',
    );
    for (const bad of ['', 'zz', '00', '03', transactionHex.slice(0, 100)])
      await expectCode(
        verifyCosignTransaction({
          unsignedTransactionHex: transactionHex,
          signedTransactionHex: bad,
          userAddress: user!.address,
        }),
        'malformed_transaction',
      );
  });

  it('rejects bad builder input with ChainInputError', () => {
    expect(() => buildCosignTransaction(params({ user: 'not-an-address' }))).toThrow(
      /user: expected a base58 Solana address/,
    );
    expect(() => buildCosignTransaction(params({ backend: resolver!.address }))).toThrow(ChainInputError);
    expect(() => buildCosignTransaction(params({ lamports: 0n }))).toThrow(/lamports/);
    expect(() => buildCosignTransaction(params({ memo: 'x'.repeat(257) }))).toThrow(/memo/);
  });

  it('property: random byte edits of a signed transaction never verify and only throw VerificationError', async () => {
    const { transactionHex } = buildCosignTransaction(params());
    const signed = Buffer.from(await userSigns(transactionHex), 'hex');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(signed.length - 1), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 3,
        }),
        async (edits) => {
          const m = Buffer.from(signed);
          for (const [pos, byte] of edits) m[pos] = byte;
          if (m.equals(signed)) return true;
          try {
            await verifyCosignTransaction({
              unsignedTransactionHex: transactionHex,
              signedTransactionHex: m.toString('hex'),
              userAddress: user!.address,
            });
            return false;
          } catch (e) {
            return e instanceof VerificationError;
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
