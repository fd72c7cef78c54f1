import { ChainInputError } from './errors.ts';

/** Bytes given either as a `Uint8Array` or as hex text (an optional `0x` prefix is accepted). */
export type BytesLike = Uint8Array | string;

/** `0x`-prefixed hex. */
export type Hex = `0x${string}`;

const HEX_RE = /^(0x)?([0-9a-fA-F]{2})*$/;

/** Parses hex (with or without `0x`) or copies a `Uint8Array`; checks the length when given. */
export function toBytes(value: BytesLike, field: string, length?: number): Uint8Array {
  let out: Uint8Array;
  if (typeof value === 'string') {
    if (!HEX_RE.test(value))
      throw new ChainInputError(field, `expected hex bytes, received ${preview(value)}`);
    out = Uint8Array.from(Buffer.from(value.startsWith('0x') ? value.slice(2) : value, 'hex'));
  } else if (value instanceof Uint8Array) {
    out = Uint8Array.from(value);
  } else {
    throw new ChainInputError(field, `expected Uint8Array or hex string, received ${typeof value}`);
  }
  if (length !== undefined && out.length !== length)
    throw new ChainInputError(field, `expected ${length} bytes, received ${out.length}`);
  return out;
}

/** Lower-case hex without prefix. */
export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Lower-case `0x` hex. */
export function hex0x(bytes: Uint8Array): Hex {
  return `0x${hex(bytes)}`;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

/** Short, safe rendering of untrusted text for error messages. */
export function preview(value: unknown, max = 80): string {
  const s = typeof value === 'string' ? value : String(value);
  return JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s);
}
