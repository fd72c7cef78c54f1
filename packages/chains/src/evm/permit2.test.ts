import { readFileSync } from 'node:fs';
import { keccak_256 } from '@noble/hashes/sha3.js';
import fc from 'fast-check';
import {
  encodeAbiParameters,
  type Hex,
  hashStruct,
  hashTypedData,
  keccak256,
  parseSignature,
  serializeCompactSignature,
  toBytes,
  toHex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { ChainInputError, VerificationError } from '../errors.ts';
import {
  buildPermit2TypedData,
  buildSwapIntentWitness,
  destinationIdHash,
  normalizeEvmSignature,
  PERMIT2_ADDRESS,
  type Permit2TypedData,
  permit2TypedDataFromJson,
  permit2TypedDataToJson,
  permit2WitnessTypeString,
  SWAP_INTENT_WITNESS_TYPE_STRING,
  swapIntentWitnessHash,
  uuidToBytes32,
  verifyPermit2Signature,
} from './index.ts';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
// Hardhat/Anvil default account #0 (publicly known test key; never holds value).
const OWNER_KEY: Hex = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const owner = privateKeyToAccount(OWNER_KEY);
const other = privateKeyToAccount(generatePrivateKey());
const ESCROW = '0x1111111111111111111111111111111111111111';
const TOKEN = '0x2222222222222222222222222222222222222222';
const RESOLVER = '0x3333333333333333333333333333333333333333';

function sampleTypedData(over: Partial<Parameters<typeof buildPermit2TypedData>[0]> = {}): Permit2TypedData {
  const witness = buildSwapIntentWitness({
    intentId: '123e4567-e89b-12d3-a456-426614174000',
    resolver: RESOLVER,
    secretHash: `0x${'ab'.repeat(32)}`,
    destChainId: 3n,
    destToken: 'btc',
    destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    minAmountOut: 99_000n,
    maxAmountOut: 100_000n,
    deadline: 1_900_000_000n,
  });
  return buildPermit2TypedData({
    chainId: 31337n,
    token: TOKEN,
    amount: 1_000_000_000_000_000_000n,
    spender: ESCROW,
    nonce: 42n,
    deadline: 1_900_000_000n,
    witness,
    ...over,
  });
}

function sign(td: Permit2TypedData, account = owner): Promise<Hex> {
  return account.signTypedData({
    domain: td.domain,
    types: td.types,
    primaryType: td.primaryType,
    message: td.message,
  });
}

/**
 * Independent re-statement of what the deployed Permit2 contract computes in
 * `permitWitnessTransferFrom` (SignatureTransfer.sol + PermitHash.sol + EIP712.sol), using only the
 * contract's published constants and abi.encode — no EIP-712 type machinery.
 */
function permit2ContractDigest(td: Permit2TypedData, witnessHash: Hex, witnessTypeString: string): Hex {
  const stub =
    'PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,';
  const typeHash = keccak256(toBytes(stub + witnessTypeString));
  const TOKEN_PERMISSIONS_TYPEHASH = '0x618358ac3db8dc274f0cd8829da7e234bd48cd73c4a740aede1adec9846d06a1';
  const tokenPermissionsHash = keccak256(
    encodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'address' }, { type: 'uint256' }],
      [TOKEN_PERMISSIONS_TYPEHASH, td.message.permitted.token, td.message.permitted.amount],
    ),
  );
  const dataHash = keccak256(
    encodeAbiParameters(
      [
        { type: 'bytes32' },
        { type: 'bytes32' },
        { type: 'address' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'bytes32' },
      ],
      [
        typeHash,
        tokenPermissionsHash,
        td.message.spender,
        td.message.nonce,
        td.message.deadline,
        witnessHash,
      ],
    ),
  );
  const domainSeparator = keccak256(
    encodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }, { type: 'address' }],
      [
        keccak256(toBytes('EIP712Domain(string name,uint256 chainId,address verifyingContract)')),
        keccak256(toBytes('Permit2')),
        td.domain.chainId,
        td.domain.verifyingContract,
      ],
    ),
  );
  return keccak256(`0x1901${domainSeparator.slice(2)}${dataHash.slice(2)}`);
}

async function expectReject(p: Promise<unknown>, code: string): Promise<VerificationError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(VerificationError);
  expect((e as VerificationError).code).toBe(code);
  return e as VerificationError;
}

const vectors = JSON.parse(readFileSync(new URL('../../test/vectors/permit2.json', import.meta.url), 'utf8'));

describe('Permit2 vectors', () => {
  it('Permit2 published type hashes', () => {
    const c = vectors.permit2Constants;
    expect(keccak256(toBytes(c.TOKEN_PERMISSIONS_TYPESTRING))).toBe(c.TOKEN_PERMISSIONS_TYPEHASH);
    expect(
      keccak256(
        toBytes(
          'PermitTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline)' +
            c.TOKEN_PERMISSIONS_TYPESTRING,
        ),
      ),
    ).toBe(c.PERMIT_TRANSFER_FROM_TYPEHASH);
    expect(SWAP_INTENT_WITNESS_TYPE_STRING.endsWith(c.TOKEN_PERMISSIONS_TYPESTRING)).toBe(true);
  });

  it('regression vector: same typed data, witness hash, digest and signature', async () => {
    const r = vectors.regression;
    const w = r.witnessInput;
    const witness = buildSwapIntentWitness({
      ...w,
      destChainId: BigInt(w.destChainId),
      minAmountOut: BigInt(w.minAmountOut),
      maxAmountOut: BigInt(w.maxAmountOut),
      deadline: BigInt(w.deadline),
    });
    const m = r.typedData.message;
    const td = buildPermit2TypedData({
      chainId: BigInt(r.typedData.domain.chainId),
      token: m.permitted.token,
      amount: BigInt(m.permitted.amount),
      spender: m.spender,
      nonce: BigInt(m.nonce),
      deadline: BigInt(m.deadline),
      witness,
    });
    expect(JSON.parse(JSON.stringify(permit2TypedDataToJson(td)))).toEqual(r.typedData);
    expect(await sign(td, privateKeyToAccount(r.privateKey))).toBe(r.signature);
    expect((await verifyPermit2Signature(td, r.signature, r.owner)).signer).toBe(r.owner);
  });
});

describe('Permit2 witness typed data', () => {
  it('witnessTypeString is exactly what Permit2 concatenates after its stub (types sorted, TokenPermissions included)', () => {
    expect(SWAP_INTENT_WITNESS_TYPE_STRING).toBe(
      'SwapIntent witness)SwapIntent(bytes32 intentId,address resolver,bytes32 secretHash,uint256 destChainId,' +
        'bytes32 destToken,bytes32 destAddress,uint256 minAmountOut,uint256 maxAmountOut,uint256 deadline)' +
        'TokenPermissions(address token,uint256 amount)',
    );
    // A witness name sorting after TokenPermissions, with a nested struct: EIP-712 order is by name.
    expect(
      permit2WitnessTypeString('Witness', 'witness', {
        Witness: [
          { name: 'order', type: 'Order' },
          { name: 'x', type: 'uint256' },
        ],
        Order: [{ name: 'a', type: 'address' }],
        Unused: [{ name: 'b', type: 'bytes32' }],
      }),
    ).toBe(
      'Witness witness)Order(address a)TokenPermissions(address token,uint256 amount)Witness(Order order,uint256 x)',
    );
    expect(() =>
      permit2WitnessTypeString('W', 'witness', { W: [{ name: 'o', type: 'Missing' }], Missing2: [] }),
    ).toThrow(ChainInputError);
  });

  it('witnessHash equals viem hashStruct of the witness', () => {
    const td = sampleTypedData();
    const viaViem = hashStruct({
      data: td.message.witness,
      primaryType: 'SwapIntent',
      types: { SwapIntent: td.types.SwapIntent },
    });
    expect(td.witnessHash).toBe(viaViem);
    expect(swapIntentWitnessHash(td.message.witness)).toBe(viaViem);
    // and it changes with every field
    for (const [k, v] of [
      ['minAmountOut', 99_001n],
      ['maxAmountOut', 100_001n],
      ['deadline', 1_900_000_001n],
    ] as const) {
      const other = sampleTypedData({ witness: { ...td.message.witness, [k]: v } });
      expect(other.witnessHash).not.toBe(td.witnessHash);
    }
  });

  it('digest equals viem hashTypedData and the digest the Permit2 contract computes on chain', () => {
    const td = sampleTypedData();
    expect(td.digest).toBe(
      hashTypedData({ domain: td.domain, types: td.types, primaryType: td.primaryType, message: td.message }),
    );
    expect(td.digest).toBe(permit2ContractDigest(td, td.witnessHash, td.witnessTypeString));
    // a witness type string missing TokenPermissions would not match what the wallet signed
    const wrong = td.witnessTypeString.replace('TokenPermissions(address token,uint256 amount)', '');
    expect(permit2ContractDigest(td, td.witnessHash, wrong)).not.toBe(td.digest);
    expect(td.domain).toEqual({ name: 'Permit2', chainId: 31337n, verifyingContract: PERMIT2_ADDRESS });
    expect('version' in td.domain).toBe(false);
  });

  it('encodes the intent id as a right-aligned uint128 and destination strings as keccak256', () => {
    expect(uuidToBytes32('123E4567-E89B-12D3-A456-426614174000')).toBe(
      '0x00000000000000000000000000000000123e4567e89b12d3a456426614174000',
    );
    expect(() => uuidToBytes32('not-a-uuid')).toThrow(ChainInputError);
    expect(destinationIdHash('bcrt1qabc')).toBe(keccak256(toBytes('bcrt1qabc')));
    expect(destinationIdHash(`0x${'Ab'.repeat(20)}`)).toBe(destinationIdHash(`0x${'ab'.repeat(20)}`));
  });

  it('rejects out-of-range builder input with ChainInputError', () => {
    const input = {
      intentId: '123e4567-e89b-12d3-a456-426614174000',
      resolver: RESOLVER,
      secretHash: `0x${'ab'.repeat(32)}`,
      destChainId: 3n,
      destToken: 'btc',
      destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
      minAmountOut: 99_000n,
      maxAmountOut: 99_000n,
      deadline: 1_900_000_000n,
    } as const;
    expect(buildSwapIntentWitness(input).maxAmountOut).toBe(99_000n);
    expect(() => buildSwapIntentWitness({ ...input, maxAmountOut: 98_999n })).toThrow(
      /witness\.maxAmountOut: expected at least minAmountOut/,
    );
    expect(() => buildSwapIntentWitness({ ...input, minAmountOut: -1n })).toThrow(ChainInputError);
    expect(() => sampleTypedData({ amount: -1n })).toThrow(ChainInputError);
    expect(() => sampleTypedData({ nonce: 1n << 256n })).toThrow(/nonce: expected a bigint/);
    expect(() => sampleTypedData({ spender: '0x1234' })).toThrow(/spender: expected a 0x-prefixed 20-byte/);
  });

  it('JSON round trip keeps every value exactly (bigints as decimal strings)', () => {
    const td = sampleTypedData({ amount: (1n << 255n) + 1n });
    const json = JSON.parse(JSON.stringify(permit2TypedDataToJson(td)));
    expect(json.message.permitted.amount).toBe(((1n << 255n) + 1n).toString());
    // Hotpot's widget re-parses these three witness fields with BigInt(...): decimal strings
    expect(json.message.witness).toMatchObject({
      minAmountOut: '99000',
      maxAmountOut: '100000',
      deadline: '1900000000',
    });
    for (const k of ['minAmountOut', 'maxAmountOut', 'deadline'])
      expect(BigInt(json.message.witness[k])).toBe(td.message.witness[k as 'deadline']);
    const back = permit2TypedDataFromJson(json);
    expect(back).toEqual(td);
    expect(() => permit2TypedDataFromJson({ ...json, witnessHash: `0x${'00'.repeat(32)}` })).toThrow(
      /witnessHash/,
    );
    expect(() => permit2TypedDataFromJson({ ...json, domain: { ...json.domain, version: '1' } })).toThrow(
      /version/,
    );
  });
});

describe('permit2TypedDataFromJson parser', () => {
  it('property: any single-field mutation of the JSON is rejected with ChainInputError or parses to a consistent value', () => {
    const json = JSON.parse(JSON.stringify(permit2TypedDataToJson(sampleTypedData())));
    const paths: string[][] = [];
    const walk = (o: unknown, path: string[]) => {
      if (o && typeof o === 'object') for (const [k, v] of Object.entries(o)) walk(v, [...path, k]);
      else paths.push(path);
    };
    walk(json, []);
    fc.assert(
      fc.property(
        fc.constantFrom(...paths),
        fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.bigInt().map(String)),
        (path, value) => {
          const copy = JSON.parse(JSON.stringify(json));
          let o = copy;
          for (const k of path.slice(0, -1)) o = o[k];
          o[path[path.length - 1]!] = value;
          try {
            const td = permit2TypedDataFromJson(copy);
            return (
              td.digest === permit2TypedDataToJson(td).digest &&
              permit2TypedDataFromJson(permit2TypedDataToJson(td)).digest === td.digest
            );
          } catch (e) {
            return e instanceof ChainInputError;
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('Permit2 signature verification', () => {
  it('accepts the owner signature made by a viem account (case-insensitive owner)', async () => {
    const td = sampleTypedData();
    const sig = await sign(td);
    const ok = await verifyPermit2Signature(td, sig, owner.address.toLowerCase());
    expect(ok.signer).toBe(owner.address);
    expect(ok.canonicalSignature).toBe(sig); // viem signs low-s with v 27/28 already
    await verifyPermit2Signature(td, sig, owner.address.toUpperCase().replace('0X', '0x'));
  });

  it('normalizes v=0/1, high-s and EIP-2098 compact to one canonical signature', async () => {
    const td = sampleTypedData();
    const sig = await sign(td);
    const { r, s, yParity } = parseSignature(sig);
    const v01 = `${sig.slice(0, 130)}${yParity === 1 ? '01' : '00'}` as Hex;
    const highS =
      `0x${r.slice(2)}${toHex(N - BigInt(s), { size: 32 }).slice(2)}${yParity === 1 ? '1b' : '1c'}` as Hex;
    const compact = serializeCompactSignature({
      r,
      yParityAndS: toHex(BigInt(s) | (BigInt(yParity) << 255n), { size: 32 }),
    });
    for (const variant of [v01, highS, compact]) {
      const ok = await verifyPermit2Signature(td, variant, owner.address);
      expect(ok.canonicalSignature).toBe(sig);
      expect(normalizeEvmSignature(variant)).toBe(sig);
    }
  });

  it('rejects a signature by another key', async () => {
    const td = sampleTypedData();
    const e = await expectReject(
      verifyPermit2Signature(td, await sign(td, other), owner.address),
      'signer_mismatch',
    );
    expect(e.expected).toBe(owner.address);
    expect(e.received).toBe(other.address);
    expect(e.message).toMatch(/not by the source address; expected 0x.*; received 0x/);
  });

  it('rejects when any signed field was tampered with', async () => {
    const td = sampleTypedData();
    const sig = await sign(td);
    const w = td.message.witness;
    const tampered: Permit2TypedData[] = [
      sampleTypedData({ amount: td.message.permitted.amount + 1n }),
      sampleTypedData({ token: ESCROW }),
      sampleTypedData({ spender: RESOLVER }),
      sampleTypedData({ nonce: 43n }),
      sampleTypedData({ deadline: 1_900_000_001n }),
      sampleTypedData({ permit2Address: ESCROW }),
      sampleTypedData({ witness: { ...w, resolver: ESCROW } }),
      sampleTypedData({ witness: { ...w, secretHash: `0x${'ac'.repeat(32)}` } }),
      sampleTypedData({ witness: { ...w, destAddress: destinationIdHash('bcrt1qsomeoneelse') } }),
      sampleTypedData({ witness: { ...w, minAmountOut: 1n } }),
      sampleTypedData({ witness: { ...w, maxAmountOut: w.maxAmountOut + 1n } }),
      sampleTypedData({ witness: { ...w, deadline: w.deadline + 1n } }),
      sampleTypedData({ witness: { ...w, intentId: uuidToBytes32('123e4567-e89b-12d3-a456-426614174001') } }),
    ];
    for (const t of tampered)
      await expectReject(verifyPermit2Signature(t, sig, owner.address), 'signer_mismatch');
  });

  it('rejects a signature made for another chain id', async () => {
    const sig = await sign(sampleTypedData({ chainId: 1n }));
    await expectReject(
      verifyPermit2Signature(sampleTypedData({ chainId: 31337n }), sig, owner.address),
      'signer_mismatch',
    );
  });

  it('rejects malformed signatures with malformed_signature', async () => {
    const td = sampleTypedData();
    const sig = await sign(td);
    for (const bad of [
      '',
      '0x',
      sig.slice(0, 100),
      `${sig}00`,
      `${sig.slice(0, 130)}1d`,
      `0x${'00'.repeat(65)}`,
      `0x${'ff'.repeat(64)}1b`,
    ]) {
      await expectReject(verifyPermit2Signature(td, bad, owner.address), 'malformed_signature');
    }
    await expect(verifyPermit2Signature(td, sig, 'not-an-address')).rejects.toThrow(ChainInputError);
  });

  it('property: arbitrary signature bytes never throw anything but VerificationError', async () => {
    const td = sampleTypedData();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ minLength: 0, maxLength: 70 }).map((b) => toHex(b)),
          fc.string(),
          fc
            .tuple(fc.uint8Array({ minLength: 64, maxLength: 64 }), fc.integer({ min: 0, max: 255 }))
            .map(([b, v]) => toHex(new Uint8Array([...b, v]))),
        ),
        async (sig) => {
          try {
            await verifyPermit2Signature(td, sig, owner.address);
            return false; // a random string verifying as the owner would be a bug
          } catch (e) {
            return e instanceof VerificationError;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: every variant of a real signature canonicalizes to the same value and verifies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.boolean(),
        fc.boolean(),
        async (nonce, flipS, v01) => {
          const td = sampleTypedData({ nonce });
          const sig = await sign(td);
          const { r, s, yParity } = parseSignature(sig);
          const sN = flipS ? N - BigInt(s) : BigInt(s);
          const parity = flipS ? 1 - yParity : yParity;
          const v = v01 ? parity : 27 + parity;
          const variant = `0x${r.slice(2)}${toHex(sN, { size: 32 }).slice(2)}${v.toString(16).padStart(2, '0')}`;
          const ok = await verifyPermit2Signature(td, variant, owner.address);
          return ok.canonicalSignature === sig;
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('destinationIdHash', () => {
  it('hashes the UTF-8 text of an identifier, a 0x address lower-cased first (not its 20 bytes)', () => {
    const utf8 = (s: string) => `0x${Buffer.from(keccak_256(new TextEncoder().encode(s))).toString('hex')}`;
    const evm = '0xd62c69F427b5CB171Bf39C22E22F10Cb777aA2C9';
    // The SDK's signing check computes the same hash independently (keccak-256 of the UTF-8 text).
    expect(destinationIdHash(evm)).toBe(utf8(evm.toLowerCase()));
    expect(destinationIdHash(evm)).toBe('0x5f543c86610821049d036e822e86e7207cf20346d4b83acf1d6b12e9801887c7');
    expect(destinationIdHash('bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080')).toBe(
      utf8('bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080'),
    );
  });
});
