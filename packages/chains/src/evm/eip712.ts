/**
 * EIP-712 hashing for a fixed type set, prepared once: each struct's `encodeType` string and type
 * hash are computed when the hasher is made, so hashing a message is only the field encodings and
 * one keccak per struct. viem's `hashTypedData` re-derives and re-hashes every type string and
 * re-validates the whole message on every call; for the Permit2 swap digest that was most of the
 * swap service's event-loop time per approval (profile and figures in `bench/README.md`).
 *
 * Supported field types: `address`, `bool`, `string`, `bytes`, `bytes1`…`bytes32`, `uintN`/`intN`
 * and struct types of the set. Arrays are not (no type this package signs uses one): a type set
 * that has one is rejected when the hasher is made. The result equals viem's `hashStruct` /
 * `hashTypedData` (property-tested), with one difference: a mixed-case address is not checked
 * against its EIP-55 checksum (viem refuses a wrong one), as `requireEvmAddress` does not; the
 * encoding is of its 20 bytes either way.
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { type Hex, hex0x, preview } from '../bytes.ts';
import { ChainInputError } from '../errors.ts';

type Field = { readonly name: string; readonly type: string };
export type TypedDataTypes = Record<string, readonly Field[]>;

/** The EIP-712 domain fields, in the order `EIP712Domain` lists them when derived from a domain. */
const DOMAIN_FIELDS: readonly Field[] = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
  { name: 'salt', type: 'bytes32' },
];

const ATOMIC_RE = /^(address|bool|string|bytes([1-9]|[12]\d|3[0-2])?|u?int(\d{1,3})?)$/;
const HEX_RE = /^0x(?:[0-9a-fA-F]{2})*$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

/** `encodeType` of `primary`: its own signature, then every struct it references, sorted by name. */
function encodeType(types: TypedDataTypes, primary: string): string {
  const deps = new Set<string>();
  const visit = (name: string): void => {
    if (deps.has(name)) return;
    const fields = types[name];
    if (!fields) throw new ChainInputError('types', `struct type ${name} is referenced but not defined`);
    deps.add(name);
    for (const f of fields) if (!ATOMIC_RE.test(f.type)) visit(f.type);
  };
  visit(primary);
  deps.delete(primary);
  const sig = (n: string) => `${n}(${(types[n] ?? []).map((f) => `${f.type} ${f.name}`).join(',')})`;
  return [primary, ...[...deps].sort()].map(sig).join('');
}

function word(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let v = value;
  for (let i = 31; i >= 0 && v > 0n; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function hexBytes(value: unknown, field: string, size?: number): Uint8Array {
  if (
    typeof value !== 'string' ||
    !HEX_RE.test(value) ||
    (size !== undefined && value.length !== 2 + size * 2)
  )
    throw new ChainInputError(
      field,
      `expected 0x-hex${size === undefined ? '' : ` of ${size} bytes`}, received ${preview(value)}`,
    );
  return Uint8Array.from(Buffer.from(value.slice(2), 'hex'));
}

function integer(value: unknown, field: string, bits: number, signed: boolean): bigint {
  const v = typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value;
  const min = signed ? -(1n << BigInt(bits - 1)) : 0n;
  const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
  if (typeof v !== 'bigint' || v < min || v > max)
    throw new ChainInputError(
      field,
      `expected an integer in [${min}, ${max}] (${signed ? 'int' : 'uint'}${bits}), received ${preview(String(value))}`,
    );
  return v < 0n ? (1n << 256n) + v : v;
}

/** One field's 32-byte encoding (`encodeData` of EIP-712). */
type Encoder = (value: unknown, field: string) => Uint8Array;

export interface Eip712Hasher {
  /** `keccak256(encodeType(name))`. */
  typeHash(name: string): Hex;
  /** `hashStruct(name, data)`: `keccak256(typeHash ‖ encodeData(data))`. */
  hashStruct(name: string, data: Record<string, unknown>): Hex;
  /**
   * The digest a wallet signs: `keccak256(0x1901 ‖ hashStruct(EIP712Domain, domain) ‖ hashStruct(primaryType, message))`.
   * `prehashed` gives the struct hash of some of the primary type's struct fields, when the caller has
   * just computed it from the same value (a builder that also returns it), so it is not hashed twice.
   */
  hashTypedData(args: {
    domain: Record<string, unknown>;
    primaryType: string;
    message: Record<string, unknown>;
    prehashed?: Record<string, Hex>;
  }): Hex;
}

/**
 * Prepares an EIP-712 hasher for `types`. When `types` has no `EIP712Domain`, the domain's type is
 * derived from the fields the domain has, not `undefined` or `null` (`name`, `version`, `chainId`,
 * `verifyingContract`, `salt`, in that order), as ethers does; viem also drops an empty `version`.
 *
 * @throws ChainInputError when a referenced struct is undefined or a field type is unsupported
 * @example
 * const hasher = eip712Hasher(PERMIT2_SWAP_TYPES);
 * const digest = hasher.hashTypedData({ domain, primaryType: 'PermitWitnessTransferFrom', message });
 */
export function eip712Hasher(types: TypedDataTypes): Eip712Hasher {
  const encoders = new Map<string, Encoder>();
  const prepared = new Map<string, { hash: Uint8Array; fields: { name: string; encode: Encoder }[] }>();

  const encoderFor = (type: string): Encoder => {
    const known = encoders.get(type);
    if (known) return known;
    let enc: Encoder;
    const m = /^(u?)int(\d{1,3})?$/.exec(type);
    if (type === 'address')
      enc = (v, f) => {
        if (typeof v !== 'string' || !ADDRESS_RE.test(v))
          throw new ChainInputError(f, `expected a 0x-prefixed 20-byte hex address, received ${preview(v)}`);
        return word(BigInt(v));
      };
    else if (type === 'bool')
      enc = (v, f) => {
        if (typeof v !== 'boolean')
          throw new ChainInputError(f, `expected a boolean, received ${preview(v)}`);
        return word(v ? 1n : 0n);
      };
    else if (type === 'string')
      enc = (v, f) => {
        if (typeof v !== 'string') throw new ChainInputError(f, `expected a string, received ${preview(v)}`);
        return keccak_256(utf8ToBytes(v));
      };
    else if (type === 'bytes') enc = (v, f) => keccak_256(hexBytes(v, f));
    else if (/^bytes\d+$/.test(type) && ATOMIC_RE.test(type)) {
      const size = Number(type.slice(5));
      enc = (v, f) => {
        const out = new Uint8Array(32);
        out.set(hexBytes(v, f, size));
        return out;
      };
    } else if (m && ATOMIC_RE.test(type)) {
      const bits = m[2] === undefined ? 256 : Number(m[2]);
      if (bits < 8 || bits > 256 || bits % 8 !== 0)
        throw new ChainInputError('types', `unsupported integer type ${type}`);
      enc = (v, f) => word(integer(v, f, bits, m[1] === ''));
    } else if (types[type]) enc = (v, f) => structHash(type, v, f);
    else throw new ChainInputError('types', `unsupported EIP-712 field type ${preview(type)}`);
    encoders.set(type, enc);
    return enc;
  };

  const prepare = (name: string) => {
    let p = prepared.get(name);
    if (!p) {
      const fields = types[name];
      if (!fields) throw new ChainInputError('primaryType', `struct type ${name} is not defined`);
      p = {
        hash: keccak_256(utf8ToBytes(encodeType(types, name))),
        fields: fields.map((f) => ({ name: f.name, encode: encoderFor(f.type) })),
      };
      prepared.set(name, p);
    }
    return p;
  };

  function structHash(
    name: string,
    data: unknown,
    path: string,
    prehashed?: Record<string, Hex>,
  ): Uint8Array {
    if (!data || typeof data !== 'object' || Array.isArray(data))
      throw new ChainInputError(path, `expected a ${name} object, received ${preview(data)}`);
    const p = prepare(name);
    const buf = new Uint8Array(32 * (p.fields.length + 1));
    buf.set(p.hash);
    p.fields.forEach((f, i) => {
      const given = prehashed?.[f.name];
      buf.set(
        given === undefined
          ? f.encode((data as Record<string, unknown>)[f.name], `${path}.${f.name}`)
          : hexBytes(given, `${path}.${f.name}`, 32),
        32 * (i + 1),
      );
    });
    return keccak_256(buf);
  }

  // Every struct of the set is prepared now, so an unsupported field type fails here, not at first use.
  for (const name of Object.keys(types)) prepare(name);

  /** Derived `EIP712Domain` types by the set of fields present (at most 32 sets). */
  const derivedDomains = new Map<string, (domain: Record<string, unknown>) => Uint8Array>();
  const hashDomain = (domain: Record<string, unknown>): Uint8Array => {
    if (types.EIP712Domain) return structHash('EIP712Domain', domain, 'domain');
    const fields = DOMAIN_FIELDS.filter((f) => domain[f.name] != null);
    const key = fields.map((f) => f.name).join(',');
    let hash = derivedDomains.get(key);
    if (!hash) {
      const h = eip712Hasher({ EIP712Domain: fields });
      hash = (d) => hexBytes(h.hashStruct('EIP712Domain', d), 'domain', 32);
      derivedDomains.set(key, hash);
    }
    return hash(domain);
  };
  // Domain separators by their values (a service signs for a few domains; the key is the values, so a
  // changed domain is a different key).
  const separators = new Map<string, Uint8Array>();
  const domainHash = (domain: Record<string, unknown>): Uint8Array => {
    if (!domain || typeof domain !== 'object')
      throw new ChainInputError('domain', `expected an object, received ${preview(domain)}`);
    const parts: string[] = [];
    for (const k of Object.keys(domain).sort()) {
      const v = domain[k];
      if (v !== null && typeof v === 'object') return hashDomain(domain); // not keyed by value: not cached
      parts.push(k, typeof v, String(v));
    }
    const key = JSON.stringify(parts); // unambiguous, whatever the strings hold
    let sep = separators.get(key);
    if (!sep) {
      sep = hashDomain(domain);
      if (separators.size >= 64) separators.clear();
      separators.set(key, sep);
    }
    return sep;
  };

  return {
    typeHash: (name) => hex0x(prepare(name).hash),
    hashStruct: (name, data) => hex0x(structHash(name, data, name)),
    hashTypedData({ domain, primaryType, message, prehashed }) {
      const buf = new Uint8Array(66);
      buf[0] = 0x19;
      buf[1] = 0x01;
      buf.set(domainHash(domain), 2);
      buf.set(structHash(primaryType, message, 'message', prehashed), 34);
      return hex0x(keccak_256(buf));
    },
  };
}
