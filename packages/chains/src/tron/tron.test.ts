import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { type Hex, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { ChainInputError, VerificationError } from '../errors.ts';
import {
  buildTronPermit2TypedData,
  isTronAddress,
  maskTronChainId,
  TRON_MAINNET_CHAIN_ID,
  type TronPermit2Params,
  tronAddressFromHex,
  tronAddressFromPublicKey,
  tronAddressToEvm,
  tronAddressToHex,
  verifyTronPermit2Signature,
} from './index.ts';

interface Vectors {
  addresses: { hex: string; base58: string }[];
  keys: { privateKey: string; evmAddress: string; tronAddress: string | null }[];
}
const vectors: Vectors = JSON.parse(
  readFileSync(new URL('../../test/vectors/tron-addresses.json', import.meta.url), 'utf8'),
);

/** Independent base58check: BigInt base conversion + node:crypto double SHA-256 (no shared code). */
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58checkEncode(payloadHex: string): string {
  const payload = Buffer.from(payloadHex, 'hex');
  const h1 = createHash('sha256').update(payload).digest();
  const checksum = createHash('sha256').update(h1).digest().subarray(0, 4);
  const full = Buffer.concat([payload, checksum]);
  let n = BigInt(`0x${full.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of full) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}

const ownerKey = vectors.keys[0]!;
const owner = privateKeyToAccount(`0x${ownerKey.privateKey}`);
const other = privateKeyToAccount(`0x${vectors.keys[1]!.privateKey}`);
const OWNER_TRON = ownerKey.tronAddress!;
const USDT = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
const ESCROW = tronAddressFromHex(`41${'11'.repeat(20)}`);
const PERMIT2 = tronAddressFromHex(`41${'22'.repeat(20)}`);
const RESOLVER = tronAddressFromHex(`41${'33'.repeat(20)}`);

function params(over: Partial<TronPermit2Params> = {}): TronPermit2Params {
  return {
    chainId: 0xcd8690dc2b6653dcn, // an unmasked id: the builder masks it
    permit2Address: PERMIT2,
    token: USDT,
    amount: 5_000_000n,
    spender: ESCROW,
    nonce: 9n,
    deadline: 1_900_000_000n,
    witness: {
      intentId: '00000000-0000-4000-8000-000000000001',
      resolver: RESOLVER,
      secretHash: `0x${'cd'.repeat(32)}`,
      destChainId: 3n,
      destToken: 'btc',
      destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
      minAmountOut: 4_900n,
      maxAmountOut: 5_000n,
      deadline: 1_900_000_000n,
    },
    ...over,
  };
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(VerificationError);
  expect((e as VerificationError).code).toBe(code);
}

describe('Tron addresses', () => {
  it('matches the known vectors both ways, and an independent base58check', () => {
    for (const v of vectors.addresses) {
      expect(base58checkEncode(v.hex)).toBe(v.base58);
      expect(tronAddressFromHex(v.hex)).toBe(v.base58);
      expect(tronAddressFromHex(`0x${v.hex}`)).toBe(v.base58);
      expect(tronAddressFromHex(`0x${v.hex.slice(2)}`)).toBe(v.base58);
      expect(tronAddressToHex(v.base58)).toBe(v.hex);
      expect(tronAddressToEvm(v.base58)).toBe(`0x${v.hex.slice(2)}`);
      expect(isTronAddress(v.base58)).toBe(true);
    }
  });

  it('derives the address from a private key (compressed and uncompressed public key)', () => {
    for (const k of vectors.keys) {
      const priv = Buffer.from(k.privateKey, 'hex');
      // EVM address by viem, independently of our keccak path
      expect(privateKeyToAccount(`0x${k.privateKey}`).address.toLowerCase()).toBe(k.evmAddress);
      const want = k.tronAddress ?? base58checkEncode(`41${k.evmAddress.slice(2)}`);
      expect(tronAddressFromPublicKey(secp256k1.getPublicKey(priv, false))).toBe(want);
      expect(tronAddressFromPublicKey(toHex(secp256k1.getPublicKey(priv, true)))).toBe(want);
    }
  });

  it('rejects malformed addresses with ChainInputError naming the problem', () => {
    expect(() => tronAddressToHex('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6a')).toThrow(/checksum/);
    expect(() => tronAddressToHex('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')).toThrow(/starting with T/);
    expect(() => tronAddressToHex('')).toThrow(ChainInputError);
    expect(() => tronAddressFromHex('42a614f803b6fd780986a42c78ec9c7f77e6ded13c')).toThrow(
      /starting with 41/,
    );
    expect(() => tronAddressFromPublicKey(new Uint8Array(64))).toThrow(/33 .* or 65/);
    expect(() => tronAddressFromPublicKey(new Uint8Array(33))).toThrow(/not a point/);
    expect(isTronAddress('T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwc')).toBe(false);
  });

  it('property: hex → base58 → hex round-trips and agrees with the independent encoder', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (body) => {
        const h = `41${Buffer.from(body).toString('hex')}`;
        const b58 = tronAddressFromHex(h);
        return b58 === base58checkEncode(h) && tronAddressToHex(b58) === h && isTronAddress(b58);
      }),
      { numRuns: 500 },
    );
  });

  it('property: arbitrary text is either a valid address that round-trips, or ChainInputError', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^T[1-9A-HJ-NP-Za-km-z]{33}$/)), (s) => {
        try {
          return tronAddressFromHex(tronAddressToHex(s)) === s;
        } catch (e) {
          return e instanceof ChainInputError && !isTronAddress(s);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('TIP-712 Permit2', () => {
  it('masks the chain id and converts every Tron address to 20-byte hex', () => {
    const td = buildTronPermit2TypedData(params());
    expect(td.domain.chainId).toBe(TRON_MAINNET_CHAIN_ID);
    expect(maskTronChainId(0xcd8690dc2b6653dcn)).toBe(728126428n);
    expect(td.domain.verifyingContract).toBe(`0x${'22'.repeat(20)}`);
    expect(td.message.permitted.token).toBe('0xa614f803b6fd780986a42c78ec9c7f77e6ded13c');
    expect(td.message.spender).toBe(`0x${'11'.repeat(20)}`);
    expect(td.message.witness.resolver).toBe(`0x${'33'.repeat(20)}`);
    expect(() =>
      buildTronPermit2TypedData(params({ spender: '0x1111111111111111111111111111111111111111' })),
    ).toThrow(ChainInputError);
  });

  it('verifies a signature by the owner key; v as 27/28, 0/1 or 29/30', async () => {
    const td = buildTronPermit2TypedData(params());
    const sig = await owner.signTypedData({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    const ok = await verifyTronPermit2Signature(td, sig, OWNER_TRON);
    expect(ok.signer).toBe(OWNER_TRON);
    expect(ok.canonicalSignature).toBe(sig);
    const v = Number.parseInt(sig.slice(130), 16);
    const variants = [v - 27, v + 2].map(
      (x) => `${sig.slice(0, 130)}${x.toString(16).padStart(2, '0')}` as Hex,
    );
    for (const s of variants)
      expect((await verifyTronPermit2Signature(td, s, OWNER_TRON)).canonicalSignature).toBe(sig);
  });

  it('rejects another signer, a tampered field, and the unmasked chain id', async () => {
    const td = buildTronPermit2TypedData(params());
    const sig = await owner.signTypedData({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    const bySomeoneElse = await other.signTypedData({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    await expectCode(verifyTronPermit2Signature(td, bySomeoneElse, OWNER_TRON), 'signer_mismatch');
    await expectCode(
      verifyTronPermit2Signature(buildTronPermit2TypedData(params({ amount: 5_000_001n })), sig, OWNER_TRON),
      'signer_mismatch',
    );
    await expectCode(
      verifyTronPermit2Signature(buildTronPermit2TypedData(params({ spender: RESOLVER })), sig, OWNER_TRON),
      'signer_mismatch',
    );
    // a wallet that signed with the unmasked 64-bit chain id produced a different digest
    const unmasked = { ...td, domain: { ...td.domain, chainId: 0xcd8690dc2b6653dcn } };
    const sigUnmasked = await owner.signTypedData({
      domain: unmasked.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    await expectCode(verifyTronPermit2Signature(td, sigUnmasked, OWNER_TRON), 'signer_mismatch');
    await expectCode(
      verifyTronPermit2Signature(td, `${sig.slice(0, 130)}1f`, OWNER_TRON),
      'malformed_signature',
    );
    await expect(
      verifyTronPermit2Signature(td, sig, '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'),
    ).rejects.toThrow(ChainInputError);
  });

  it('property: random signatures only ever fail with VerificationError', async () => {
    const td = buildTronPermit2TypedData(params());
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 63, maxLength: 66 }), async (b) => {
        try {
          await verifyTronPermit2Signature(td, toHex(b), OWNER_TRON);
          return false;
        } catch (e) {
          return e instanceof VerificationError;
        }
      }),
      { numRuns: 300 },
    );
  });
});
