import fc from 'fast-check';
import { getAddress, hashStruct, hashTypedData, keccak256, type TypedDataDomain, toBytes, toHex } from 'viem';
import { describe, expect, it } from 'vitest';
import { ChainInputError } from '../errors.ts';
import { eip712Hasher } from './eip712.ts';
import { PERMIT2_SWAP_TYPES, permit2Digest, SWAP_INTENT_FIELDS, swapIntentWitnessHash } from './permit2.ts';

const hex = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => toHex(b));
const address = hex(20);
/** EIP-55 checksummed (mixed case): viem refuses a mixed-case address whose checksum is wrong. */
const mixedCase = address.map((a) => getAddress(a));
const uint = (bits: number) => fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n });
const int = (bits: number) =>
  fc.bigInt({ min: -(1n << BigInt(bits - 1)), max: (1n << BigInt(bits - 1)) - 1n });

const witness = fc.record({
  intentId: hex(32),
  resolver: address,
  secretHash: hex(32),
  destChainId: uint(256),
  destToken: hex(32),
  destAddress: hex(32),
  minAmountOut: uint(256),
  maxAmountOut: uint(256),
  deadline: uint(256),
});
const permitMessage = fc.record({
  permitted: fc.record({ token: address, amount: uint(256) }),
  spender: address,
  nonce: uint(256),
  deadline: uint(256),
  witness,
});
const permitDomain = fc.record({
  name: fc.constant('Permit2' as const),
  chainId: uint(64),
  verifyingContract: address,
});

/** Every supported field type, nested structs (referenced out of name order) included. */
const ALL_TYPES = {
  Order: [
    { name: 'maker', type: 'address' },
    { name: 'zeta', type: 'Zeta' },
    { name: 'note', type: 'string' },
    { name: 'data', type: 'bytes' },
    { name: 'flag', type: 'bool' },
    { name: 'small', type: 'uint8' },
    { name: 'signed', type: 'int64' },
    { name: 'wide', type: 'int256' },
    { name: 'b4', type: 'bytes4' },
    { name: 'alpha', type: 'Alpha' },
  ],
  Zeta: [{ name: 'x', type: 'uint256' }],
  Alpha: [
    { name: 'id', type: 'bytes32' },
    { name: 'z', type: 'Zeta' },
  ],
} as const;
const order = fc.record({
  maker: mixedCase,
  zeta: fc.record({ x: uint(256) }),
  note: fc.string({ unit: 'grapheme' }),
  data: fc.uint8Array({ maxLength: 80 }).map((b) => toHex(b)),
  flag: fc.boolean(),
  small: fc.integer({ min: 0, max: 255 }),
  signed: int(64),
  wide: int(256),
  b4: hex(4),
  alpha: fc.record({ id: hex(32), z: fc.record({ x: uint(256) }) }),
});
/** Domains with any subset of the five fields: the hasher derives `EIP712Domain` from the fields present. */
const anyDomain = fc.record(
  {
    name: fc.string(),
    // viem leaves an empty `version` out of the derived domain type (ethers keeps it, as we do)
    version: fc.string({ minLength: 1 }),
    chainId: uint(64),
    verifyingContract: address,
    salt: hex(32),
  },
  { requiredKeys: [] },
);

/** viem's digest of a Permit2 swap message: the reference. */
const viemPermit2Digest = (
  domain: Parameters<typeof permit2Digest>[0],
  message: Parameters<typeof permit2Digest>[1],
) => hashTypedData({ domain, types: PERMIT2_SWAP_TYPES, primaryType: 'PermitWitnessTransferFrom', message });

describe('eip712Hasher: equal to viem', () => {
  it('Permit2 swap digest and witness hash, for any message (property)', () => {
    fc.assert(
      fc.property(permitDomain, permitMessage, (domain, message) => {
        expect(permit2Digest(domain, message)).toBe(viemPermit2Digest(domain, message));
        expect(swapIntentWitnessHash(message.witness)).toBe(
          hashStruct({
            data: message.witness,
            primaryType: 'SwapIntent',
            types: { SwapIntent: SWAP_INTENT_FIELDS },
          }),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('one hasher over changing domains: every digest is for its own domain, separators being cached by value', () => {
    fc.assert(
      fc.property(
        fc.array(permitDomain, { minLength: 2, maxLength: 6 }),
        permitMessage,
        (domains, message) => {
          for (const domain of [...domains, ...domains.reverse()])
            expect(permit2Digest(domain, message)).toBe(viemPermit2Digest(domain, message));
        },
      ),
      { numRuns: 50 },
    );
  });

  it('a prehashed witness gives the same digest as hashing it', () => {
    const hasher = eip712Hasher(PERMIT2_SWAP_TYPES);
    fc.assert(
      fc.property(permitDomain, permitMessage, (domain, message) => {
        const witnessHash = hashStruct({
          data: message.witness,
          primaryType: 'SwapIntent',
          types: PERMIT2_SWAP_TYPES,
        });
        expect(
          hasher.hashTypedData({
            domain,
            primaryType: 'PermitWitnessTransferFrom',
            message,
            prehashed: { witness: witnessHash },
          }),
        ).toBe(permit2Digest(domain, message));
      }),
      { numRuns: 50 },
    );
  });

  it('every supported field type, nested structs, and a domain derived from the fields present (property)', () => {
    const hasher = eip712Hasher(ALL_TYPES);
    fc.assert(
      fc.property(anyDomain, order, (domain, message) => {
        expect(hasher.hashTypedData({ domain, primaryType: 'Order', message })).toBe(
          hashTypedData({
            domain: domain as TypedDataDomain,
            types: ALL_TYPES,
            primaryType: 'Order',
            message,
          }),
        );
        expect(hasher.hashStruct('Alpha', message.alpha)).toBe(
          hashStruct({ data: message.alpha, primaryType: 'Alpha', types: ALL_TYPES }),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('type hash: encodeType lists the primary type first, then referenced structs sorted by name', () => {
    const hasher = eip712Hasher(ALL_TYPES);
    expect(hasher.typeHash('Order')).toBe(
      keccak256(
        toBytes(
          'Order(address maker,Zeta zeta,string note,bytes data,bool flag,uint8 small,int64 signed,int256 wide,bytes4 b4,Alpha alpha)' +
            'Alpha(bytes32 id,Zeta z)Zeta(uint256 x)',
        ),
      ),
    );
  });
});

describe('eip712Hasher: what it refuses, with the field named', () => {
  it('a type set with an array, or an undefined struct, or a bad integer width, fails when the hasher is made', () => {
    expect(() => eip712Hasher({ A: [{ name: 'xs', type: 'uint256[]' }] })).toThrow(ChainInputError);
    expect(() => eip712Hasher({ A: [{ name: 'b', type: 'B' }] })).toThrow(
      /struct type B is referenced but not defined/,
    );
    expect(() => eip712Hasher({ A: [{ name: 'x', type: 'uint7' }] })).toThrow(
      /unsupported integer type uint7/,
    );
  });

  it('values that do not fit their type', () => {
    const hasher = eip712Hasher(ALL_TYPES);
    const base = fc.sample(order, { numRuns: 1, seed: 1 })[0]!;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ small: 256 }, /message\.small: expected an integer in \[0, 255\] \(uint8\), received "256"/],
      [{ signed: 1n << 63n }, /message\.signed: expected an integer in \[-9223372036854775808/],
      [{ maker: '0x12' }, /message\.maker: expected a 0x-prefixed 20-byte hex address/],
      [{ b4: '0x0102' }, /message\.b4: expected 0x-hex of 4 bytes/],
      [{ data: '0xabc' }, /message\.data: expected 0x-hex/],
      [{ flag: 1 }, /message\.flag: expected a boolean/],
      [{ note: 7 }, /message\.note: expected a string/],
      [{ alpha: { id: `0x${'00'.repeat(32)}`, z: null } }, /message\.alpha\.z: expected a Zeta object/],
      [{ small: 1.5 }, /message\.small: expected an integer/],
    ];
    for (const [over, re] of cases) {
      expect(() =>
        hasher.hashTypedData({ domain: {}, primaryType: 'Order', message: { ...base, ...over } }),
      ).toThrow(re);
    }
    expect(() => hasher.hashTypedData({ domain: {}, primaryType: 'Nope', message: base })).toThrow(
      /struct type Nope is not defined/,
    );
  });
});
