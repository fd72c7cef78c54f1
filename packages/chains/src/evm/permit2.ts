import { keccak256, stringToBytes } from 'viem';
import { type BytesLike, type Hex, hex0x, preview, toBytes } from '../bytes.ts';
import { ChainInputError } from '../errors.ts';
import { eip712Hasher } from './eip712.ts';

/** A 20-byte EVM address as `0x` hex. */
export type EvmAddress = `0x${string}`;

/** Canonical Permit2 deployment (same address on every EVM chain). */
export const PERMIT2_ADDRESS: EvmAddress = '0x000000000022D473030F116dDEE9F6B43aC78BA3';

/** EIP-712 name of the witness struct that binds a swap intent. */
export const SWAP_INTENT_TYPE_NAME = 'SwapIntent';

/**
 * Fields of the `SwapIntent` witness, in this exact order (the order is part of the type hash).
 * Only `address`, `uint256` and `bytes32` are used: the field types wallets and the public swap SDKs
 * accept in a Permit2 witness. Non-EVM strings (destination token and address) go in as
 * {@link destinationIdHash} so any chain's identifiers fit in a `bytes32`. `minAmountOut`,
 * `maxAmountOut` and `deadline` carry these names because Hotpot clients read them from the witness
 * (and re-parse them with `BigInt`) to build the message they sign.
 */
export const SWAP_INTENT_FIELDS = [
  { name: 'intentId', type: 'bytes32' },
  { name: 'resolver', type: 'address' },
  { name: 'secretHash', type: 'bytes32' },
  { name: 'destChainId', type: 'uint256' },
  { name: 'destToken', type: 'bytes32' },
  { name: 'destAddress', type: 'bytes32' },
  { name: 'minAmountOut', type: 'uint256' },
  { name: 'maxAmountOut', type: 'uint256' },
  { name: 'deadline', type: 'uint256' },
] as const;

const TOKEN_PERMISSIONS_FIELDS = [
  { name: 'token', type: 'address' },
  { name: 'amount', type: 'uint256' },
] as const;

const PERMIT_WITNESS_TRANSFER_FROM_FIELDS = [
  { name: 'permitted', type: 'TokenPermissions' },
  { name: 'spender', type: 'address' },
  { name: 'nonce', type: 'uint256' },
  { name: 'deadline', type: 'uint256' },
  { name: 'witness', type: SWAP_INTENT_TYPE_NAME },
] as const;

/** Permit2's EIP-712 domain has no `version` field: name, chainId, verifyingContract only. */
const EIP712_DOMAIN_FIELDS = [
  { name: 'name', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
] as const;

/** The full type set of a Permit2 `PermitWitnessTransferFrom` with a `SwapIntent` witness. */
export const PERMIT2_SWAP_TYPES = {
  EIP712Domain: EIP712_DOMAIN_FIELDS,
  PermitWitnessTransferFrom: PERMIT_WITNESS_TRANSFER_FROM_FIELDS,
  TokenPermissions: TOKEN_PERMISSIONS_FIELDS,
  SwapIntent: SWAP_INTENT_FIELDS,
} as const;

type Field = { readonly name: string; readonly type: string };

/** EIP-712 atomic and dynamic non-struct types. */
const ATOMIC_TYPE_RE =
  /^(address|bool|string|bytes([1-9]|[12]\d|3[0-2])?|u?int(8|16|24|32|40|48|56|64|72|80|88|96|104|112|120|128|136|144|152|160|168|176|184|192|200|208|216|224|232|240|248|256)?)$/;

/**
 * Builds the `witnessTypeString` argument of Permit2's `permitWitnessTransferFrom`: Permit2 hashes
 * `"PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,"`
 * followed by this string, so it must read `"<Type> <fieldName>)"` and then every struct type the
 * full type references (the witness type, its nested structs and `TokenPermissions`) in EIP-712
 * `encodeType` order: sorted by name.
 *
 * @example
 * permit2WitnessTypeString('SwapIntent', 'witness', { SwapIntent: SWAP_INTENT_FIELDS })
 * // 'SwapIntent witness)SwapIntent(bytes32 intentId,…,uint256 deadline)TokenPermissions(address token,uint256 amount)'
 */
export function permit2WitnessTypeString(
  witnessTypeName: string,
  witnessFieldName: string,
  witnessTypes: Record<string, readonly Field[]>,
): string {
  const all: Record<string, readonly Field[]> = {
    ...witnessTypes,
    TokenPermissions: TOKEN_PERMISSIONS_FIELDS,
  };
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    const fields = all[name];
    if (!fields)
      throw new ChainInputError('witnessTypes', `struct type ${name} is referenced but not defined`);
    seen.add(name);
    for (const f of fields) {
      const base = f.type.replace(/(\[\d*\])+$/, '');
      if (!ATOMIC_TYPE_RE.test(base)) visit(base);
    }
  };
  visit(witnessTypeName);
  seen.add('TokenPermissions');
  const encoded = [...seen]
    .sort()
    .map((n) => `${n}(${(all[n] ?? []).map((f) => `${f.type} ${f.name}`).join(',')})`)
    .join('');
  return `${witnessTypeName} ${witnessFieldName})${encoded}`;
}

/** `witnessTypeString` for the {@link SWAP_INTENT_FIELDS} witness. */
export const SWAP_INTENT_WITNESS_TYPE_STRING: string = permit2WitnessTypeString(
  SWAP_INTENT_TYPE_NAME,
  'witness',
  {
    SwapIntent: SWAP_INTENT_FIELDS,
  },
);

/** What the service knows about an intent; {@link buildSwapIntentWitness} turns it into the witness. */
export interface SwapIntentInput {
  /** The intent's UUID text. */
  intentId: string;
  /** The resolver's address on the source chain. */
  resolver: EvmAddress;
  /** SHA-256 of the preimage, 32 bytes. */
  secretHash: BytesLike;
  /** Destination network id (the service's network id). */
  destChainId: bigint;
  /** Destination token identifier in canonical text (see {@link destinationIdHash}). */
  destToken: string;
  /** User's destination address in canonical text (see {@link destinationIdHash}). */
  destAddress: string;
  /** Minimum destination amount in integer lots (the quote's `min_dest_amount_lots`). */
  minAmountOut: bigint;
  /** Maximum destination amount in integer lots (the quote's `max_dest_amount_lots`). */
  maxAmountOut: bigint;
  /** Intent deadline, unix seconds. */
  deadline: bigint;
}

/** The witness message as it is signed. */
export interface SwapIntentWitness {
  intentId: Hex;
  resolver: EvmAddress;
  secretHash: Hex;
  destChainId: bigint;
  destToken: Hex;
  destAddress: Hex;
  minAmountOut: bigint;
  maxAmountOut: bigint;
  deadline: bigint;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const UINT256_MAX = (1n << 256n) - 1n;

/**
 * The intent UUID as a `bytes32`: its 16 bytes right-aligned (the UUID read as a uint128).
 *
 * @example
 * uuidToBytes32('123e4567-e89b-12d3-a456-426614174000')
 * // '0x00000000000000000000000000000000123e4567e89b12d3a456426614174000'
 */
export function uuidToBytes32(uuid: string): Hex {
  if (typeof uuid !== 'string' || !UUID_RE.test(uuid))
    throw new ChainInputError(
      'intentId',
      `expected a UUID like 123e4567-e89b-12d3-a456-426614174000, received ${preview(uuid)}`,
    );
  return `0x${'0'.repeat(32)}${uuid.replaceAll('-', '').toLowerCase()}`;
}

/**
 * `keccak256(utf8(id))` of a destination-chain identifier (token or address), after one
 * canonicalization: a `0x`-prefixed 20-byte EVM address is lower-cased. Every other string is hashed
 * exactly as given, so the service must pass the canonical form it stores (bech32 lower-case, Tron and
 * Solana base58 as is).
 *
 * @example
 * destinationIdHash('0xAbC0000000000000000000000000000000000001') === destinationIdHash('0xabc0000000000000000000000000000000000001')
 */
export function destinationIdHash(id: string): Hex {
  if (typeof id !== 'string' || id.length === 0)
    throw new ChainInputError('destination', `expected a non-empty identifier, received ${preview(id)}`);
  const canonical = ADDRESS_RE.test(id) ? id.toLowerCase() : id;
  // UTF-8 of the text: viem's toBytes would read a "0x…" string as hex bytes instead.
  return keccak256(stringToBytes(canonical));
}

/** Checks a 20-byte `0x` address and returns it unchanged (mixed case is accepted; checksums are not enforced). */
export function requireEvmAddress(value: unknown, field: string): EvmAddress {
  if (typeof value !== 'string' || !ADDRESS_RE.test(value))
    throw new ChainInputError(
      field,
      `expected a 0x-prefixed 20-byte hex address, received ${preview(value)}`,
    );
  return value as EvmAddress;
}

function requireUint256(value: unknown, field: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > UINT256_MAX)
    throw new ChainInputError(field, `expected a bigint in [0, 2^256), received ${preview(String(value))}`);
  return value;
}

/**
 * Builds the `SwapIntent` witness from the intent's fields.
 *
 * @throws ChainInputError on a malformed field, or when `maxAmountOut < minAmountOut`
 *
 * @example
 * const witness = buildSwapIntentWitness({ intentId, resolver, secretHash, destChainId: 1n,
 *   destToken: 'btc', destAddress: 'bcrt1q…', minAmountOut: 99_000n, maxAmountOut: 100_000n, deadline: 1_900_000_000n });
 */
export function buildSwapIntentWitness(input: SwapIntentInput): SwapIntentWitness {
  const witness: SwapIntentWitness = {
    intentId: uuidToBytes32(input.intentId),
    resolver: requireEvmAddress(input.resolver, 'witness.resolver'),
    secretHash: hex0x(toBytes(input.secretHash, 'witness.secretHash', 32)),
    destChainId: requireUint256(input.destChainId, 'witness.destChainId'),
    destToken: destinationIdHash(input.destToken),
    destAddress: destinationIdHash(input.destAddress),
    minAmountOut: requireUint256(input.minAmountOut, 'witness.minAmountOut'),
    maxAmountOut: requireUint256(input.maxAmountOut, 'witness.maxAmountOut'),
    deadline: requireUint256(input.deadline, 'witness.deadline'),
  };
  if (witness.maxAmountOut < witness.minAmountOut)
    throw new ChainInputError(
      'witness.maxAmountOut',
      `expected at least minAmountOut (${witness.minAmountOut}), received ${witness.maxAmountOut}`,
    );
  return witness;
}

/**
 * EIP-712 `hashStruct` of the witness: the `witness` argument Permit2's `permitWitnessTransferFrom`
 * takes. Equal to viem's `hashStruct({ primaryType: 'SwapIntent', … })` (tested).
 *
 * @example
 * const witnessHash = swapIntentWitnessHash(buildSwapIntentWitness(input));
 */
export function swapIntentWitnessHash(witness: SwapIntentWitness): Hex {
  return permit2Hasher().hashStruct(SWAP_INTENT_TYPE_NAME, { ...witness });
}

/** Inputs of {@link buildPermit2TypedData}. */
export interface Permit2Params {
  /** EVM chain id of the source chain (for Tron use `buildTronPermit2TypedData`). */
  chainId: bigint;
  /** Defaults to {@link PERMIT2_ADDRESS}. */
  permit2Address?: EvmAddress;
  /** Source token (the quote's `source_token`). */
  token: EvmAddress;
  /** Source amount in integer lots. */
  amount: bigint;
  /** The ESCROW contract (Permit2 checks `msg.sender == spender`), not the resolver. */
  spender: EvmAddress;
  /** Unique per owner; Permit2 nonces are an unordered bitmap keyed by the owner. */
  nonce: bigint;
  /** The intent deadline (unix seconds). */
  deadline: bigint;
  witness: SwapIntentWitness;
}

export interface Permit2Domain {
  name: 'Permit2';
  chainId: bigint;
  verifyingContract: EvmAddress;
}

export interface Permit2Message {
  permitted: { token: EvmAddress; amount: bigint };
  spender: EvmAddress;
  nonce: bigint;
  deadline: bigint;
  witness: SwapIntentWitness;
}

/** Everything a wallet needs to sign, plus the values Permit2 and the service check. */
export interface Permit2TypedData {
  domain: Permit2Domain;
  types: typeof PERMIT2_SWAP_TYPES;
  primaryType: 'PermitWitnessTransferFrom';
  message: Permit2Message;
  witnessTypeString: string;
  witnessHash: Hex;
  /** The EIP-712 digest the owner signs (Permit2 recomputes exactly this on chain). */
  digest: Hex;
}

/** The part of the typed data a signature covers, and all a verifier reads: domain and message. */
export type Permit2Signable = Pick<Permit2TypedData, 'domain' | 'message'>;

/**
 * The domain and message of {@link buildPermit2TypedData}, checked, without the hashes: what a
 * verifier needs (it computes the digest itself).
 *
 * @throws ChainInputError on a malformed field
 * @example
 * const { canonicalSignature } = await verifyPermit2Signature(buildPermit2Message(params), sig, owner);
 */
export function buildPermit2Message(p: Permit2Params): Permit2Signable {
  const domain: Permit2Domain = {
    name: 'Permit2',
    chainId: requireUint256(p.chainId, 'chainId'),
    verifyingContract: requireEvmAddress(p.permit2Address ?? PERMIT2_ADDRESS, 'permit2Address'),
  };
  const witness = { ...p.witness, resolver: requireEvmAddress(p.witness.resolver, 'witness.resolver') };
  const message: Permit2Message = {
    permitted: { token: requireEvmAddress(p.token, 'token'), amount: requireUint256(p.amount, 'amount') },
    spender: requireEvmAddress(p.spender, 'spender'),
    nonce: requireUint256(p.nonce, 'nonce'),
    deadline: requireUint256(p.deadline, 'deadline'),
    witness,
  };
  return { domain, message };
}

/**
 * Builds the EIP-712 `PermitWitnessTransferFrom` typed data for a swap intent.
 *
 * @example
 * const td = buildPermit2TypedData({ chainId: 1n, token: USDC, amount: 1_000_000n, spender: ESCROW,
 *   nonce: 7n, deadline: 1_900_000_000n, witness });
 * const signature = await account.signTypedData(td); // viem LocalAccount
 */
export function buildPermit2TypedData(p: Permit2Params): Permit2TypedData {
  const { domain, message } = buildPermit2Message(p);
  const witnessHash = swapIntentWitnessHash(message.witness);
  return {
    domain,
    types: PERMIT2_SWAP_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message,
    witnessTypeString: SWAP_INTENT_WITNESS_TYPE_STRING,
    witnessHash,
    // the witness hash just computed from this same message
    digest: digestOf(domain, message, witnessHash),
  };
}

let hasher: ReturnType<typeof eip712Hasher> | undefined;
/** The Permit2 swap type set's prepared hasher (type hashes computed once, on first use). */
function permit2Hasher() {
  hasher ??= eip712Hasher(PERMIT2_SWAP_TYPES);
  return hasher;
}

/**
 * The EIP-712 digest of a Permit2 swap message: what the owner signs and Permit2 recomputes on chain
 * (equal to viem's `hashTypedData` over {@link PERMIT2_SWAP_TYPES}; tested).
 *
 * @throws ChainInputError when a field does not fit its EIP-712 type
 */
export function permit2Digest(domain: Permit2Domain, message: Permit2Message): Hex {
  return digestOf(domain, message);
}

function digestOf(domain: Permit2Domain, message: Permit2Message, witnessHash?: Hex): Hex {
  return permit2Hasher().hashTypedData({
    domain: { ...domain },
    primaryType: 'PermitWitnessTransferFrom',
    message: { ...message },
    ...(witnessHash === undefined ? {} : { prehashed: { witness: witnessHash } }),
  });
}

type JsonValue = string | number | boolean | null | JsonValue[] | { [k: string]: JsonValue };

/** {@link Permit2TypedData} with every bigint as a decimal string: what `eth_signTypedData_v4` takes. */
export interface Permit2TypedDataJson {
  domain: { name: 'Permit2'; chainId: string; verifyingContract: string };
  types: Record<string, { name: string; type: string }[]>;
  primaryType: 'PermitWitnessTransferFrom';
  message: { [k: string]: JsonValue };
  witnessTypeString: string;
  witnessHash: Hex;
  digest: Hex;
}

function jsonify(v: unknown): JsonValue {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(jsonify);
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonify(x)]));
  return v as JsonValue;
}

/**
 * JSON-safe copy of the typed data (bigints → decimal strings) for `additional_data` / Surface A.
 *
 * @example
 * reply.send({ permit2: permit2TypedDataToJson(td) });
 */
export function permit2TypedDataToJson(td: Permit2TypedData): Permit2TypedDataJson {
  return {
    domain: { ...td.domain, chainId: td.domain.chainId.toString() },
    types: jsonify(td.types) as Permit2TypedDataJson['types'],
    primaryType: td.primaryType,
    message: jsonify(td.message) as Permit2TypedDataJson['message'],
    witnessTypeString: td.witnessTypeString,
    witnessHash: td.witnessHash,
    digest: td.digest,
  };
}

function big(v: unknown, field: string): bigint {
  if (typeof v === 'string' && /^(0|[1-9]\d*)$/.test(v)) return BigInt(v);
  if (typeof v === 'string' && /^0x[0-9a-fA-F]+$/.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === 'bigint') return v;
  throw new ChainInputError(
    field,
    `expected a non-negative integer (decimal string), received ${preview(String(v))}`,
  );
}

function obj(v: unknown, field: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new ChainInputError(field, 'expected an object');
  return v as Record<string, unknown>;
}

function bytes32(v: unknown, field: string): Hex {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(v))
    throw new ChainInputError(field, `expected 0x + 64 hex, received ${preview(v)}`);
  return v.toLowerCase() as Hex;
}

/**
 * Rebuilds {@link Permit2TypedData} from its JSON form (as stored or sent by
 * {@link permit2TypedDataToJson}). The type set must be exactly {@link PERMIT2_SWAP_TYPES}
 * (`EIP712Domain` may be absent); `witnessHash` and `digest` are recomputed and, when the JSON carries
 * them, must match.
 *
 * @throws ChainInputError on any shape or consistency problem
 * @example
 * const td = permit2TypedDataFromJson(JSON.parse(row.permit2_json));
 */
export function permit2TypedDataFromJson(json: unknown): Permit2TypedData {
  const j = obj(json, 'typedData');
  const domain = obj(j.domain, 'domain');
  if (domain.name !== 'Permit2')
    throw new ChainInputError('domain.name', `expected "Permit2", received ${preview(domain.name)}`);
  if ('version' in domain) throw new ChainInputError('domain.version', 'Permit2 has no domain version');
  if (j.primaryType !== undefined && j.primaryType !== 'PermitWitnessTransferFrom')
    throw new ChainInputError(
      'primaryType',
      `expected PermitWitnessTransferFrom, received ${preview(j.primaryType)}`,
    );
  if (j.types !== undefined) {
    const { EIP712Domain: _d, ...rest } = obj(j.types, 'types');
    const { EIP712Domain: _e, ...want } = PERMIT2_SWAP_TYPES;
    if (JSON.stringify(rest) !== JSON.stringify(want))
      throw new ChainInputError(
        'types',
        `expected exactly the Permit2 SwapIntent types, received ${preview(JSON.stringify(rest), 200)}`,
      );
  }
  const m = obj(j.message, 'message');
  const permitted = obj(m.permitted, 'message.permitted');
  const w = obj(m.witness, 'message.witness');
  const td = buildPermit2TypedData({
    chainId: big(domain.chainId, 'domain.chainId'),
    permit2Address: requireEvmAddress(domain.verifyingContract, 'domain.verifyingContract'),
    token: requireEvmAddress(permitted.token, 'message.permitted.token'),
    amount: big(permitted.amount, 'message.permitted.amount'),
    spender: requireEvmAddress(m.spender, 'message.spender'),
    nonce: big(m.nonce, 'message.nonce'),
    deadline: big(m.deadline, 'message.deadline'),
    witness: {
      intentId: bytes32(w.intentId, 'witness.intentId'),
      resolver: requireEvmAddress(w.resolver, 'witness.resolver'),
      secretHash: bytes32(w.secretHash, 'witness.secretHash'),
      destChainId: big(w.destChainId, 'witness.destChainId'),
      destToken: bytes32(w.destToken, 'witness.destToken'),
      destAddress: bytes32(w.destAddress, 'witness.destAddress'),
      minAmountOut: big(w.minAmountOut, 'witness.minAmountOut'),
      maxAmountOut: big(w.maxAmountOut, 'witness.maxAmountOut'),
      deadline: big(w.deadline, 'witness.deadline'),
    },
  });
  for (const k of ['witnessHash', 'digest', 'witnessTypeString'] as const) {
    if (j[k] !== undefined && String(j[k]).toLowerCase() !== td[k].toLowerCase())
      throw new ChainInputError(
        k,
        `does not match the message: expected ${td[k]}, received ${preview(j[k])}`,
      );
  }
  return td;
}
