/**
 * The two annotations the wallet node's schemas carry, and the walks that read them. Each is a JSON Schema
 * keyword, so it appears in the OpenAPI document as a vendor extension and every consumer derives its
 * behaviour from the same schema object; there is no key list anywhere.
 *
 * - `x-u64: true` marks a u64 value ({@link U64} in requests, {@link U64Out} in replies). {@link reviveNumbers}
 *   turns a losslessly parsed JSON value into JavaScript values against a schema: an integer at a marked
 *   position is a `bigint` (whatever its size), any other integer a `number` when it is a safe integer and a
 *   `bigint` otherwise (never rounded). The SDK reads replies with it, the rgb binding reads rgb-lib's results
 *   with it.
 * - `x-aliases: ["feeRate"]` on a request property lists its other accepted spellings. {@link normalizeAliases}
 *   rewrites them to the property's own name before validation (the wallet node, at its edge), and refuses a
 *   body that carries two spellings of one field with different values.
 */
import { Type } from 'typebox';

export const U64_KEYWORD = 'x-u64';
export const ALIASES_KEYWORD = 'x-aliases';
/** The annotation keywords of these schemas, for a validator that refuses unknown keywords (Ajv strict). */
export const SCHEMA_KEYWORDS = [U64_KEYWORD, ALIASES_KEYWORD] as const;

export const U64_MAX = 18446744073709551615n;
const U64_DIGITS = '^(0|[1-9][0-9]{0,19})$';

/**
 * u64 in a request: a JSON integer, exact up to 18446744073709551615 (the node parses bodies losslessly), or
 * the same value as a decimal string. The service checks the upper bound (a 20-digit string may exceed it).
 */
const U64_IN_DESCRIPTION =
  'u64 (0 to 18446744073709551615): a JSON integer, read exactly at any size, or the same value as a decimal string';
const U64_OUT_DESCRIPTION =
  'u64 (0 to 18446744073709551615), an exact JSON integer: parse it losslessly (a double rounds values above 2^53)';

export const U64 = Type.Unsafe<bigint | number | string>({
  anyOf: [
    { type: 'integer', minimum: 0 },
    { type: 'string', pattern: U64_DIGITS },
  ],
  [U64_KEYWORD]: true,
  description: U64_IN_DESCRIPTION,
});

/** {@link U64} with its own description (what the amount is); still marked u64. */
export const u64 = (description: string) =>
  Type.Unsafe<bigint | number | string>({ ...U64, description: `${description}; ${U64_IN_DESCRIPTION}` });

/**
 * u64 in a reply: always a JSON integer with every digit, up to 18446744073709551615. Read it with a lossless
 * JSON parser (a double rounds integers above 2^53); the SDK does, and holds it as `bigint`.
 */
export const U64Out = Type.Unsafe<bigint>({
  type: 'integer',
  minimum: 0,
  [U64_KEYWORD]: true,
  description: U64_OUT_DESCRIPTION,
});

/** {@link U64Out} with its own description (what the amount is); still marked u64. */
export const u64Out = (description: string) =>
  Type.Unsafe<bigint>({ ...U64Out, description: `${description}; ${U64_OUT_DESCRIPTION}` });

type Schema = Record<string, unknown>;
/** Named schemas by `$id`, to follow `$ref`s (`"Balance"` or `"#/components/schemas/Balance"`). */
export type SchemaRefs = ReadonlyMap<string, unknown>;

export function schemaRefs(schemas: readonly unknown[]): SchemaRefs {
  const refs = new Map<string, unknown>();
  for (const s of schemas) {
    const id = (s as Schema).$id;
    if (typeof id === 'string') refs.set(id, s);
  }
  return refs;
}

const isU64 = (s: Schema) => s[U64_KEYWORD] === true;

/** The alternatives a schema stands for: `$ref`s followed, unions flattened (a u64 union is one u64). */
function alternatives(schema: unknown, refs: SchemaRefs, out: Schema[] = [], depth = 0): Schema[] {
  if (schema === null || typeof schema !== 'object' || depth > 32) return out;
  const s = schema as Schema;
  if (typeof s.$ref === 'string') {
    const id = s.$ref.replace(/^#\/components\/schemas\//, '');
    const target = refs.get(id);
    if (target === undefined) throw new Error(`schema reference ${s.$ref} is not among the known schemas`);
    return alternatives(target, refs, out, depth + 1);
  }
  if (!isU64(s) && (Array.isArray(s.anyOf) || Array.isArray(s.oneOf))) {
    for (const b of [...((s.anyOf as unknown[]) ?? []), ...((s.oneOf as unknown[]) ?? [])]) {
      alternatives(b, refs, out, depth + 1);
    }
    return out;
  }
  out.push(s);
  return out;
}

/** The schemas a member `key` may have under any of these object schemas. */
function memberSchemas(parents: Schema[], key: string): unknown[] {
  const out: unknown[] = [];
  for (const p of parents) {
    const props = p.properties as Record<string, unknown> | undefined;
    if (props && Object.hasOwn(props, key)) {
      out.push(props[key]);
      continue;
    }
    const patterns = p.patternProperties as Record<string, unknown> | undefined;
    if (patterns) {
      for (const [re, s] of Object.entries(patterns)) if (new RegExp(re).test(key)) out.push(s);
    }
    if (p.additionalProperties !== null && typeof p.additionalProperties === 'object') {
      out.push(p.additionalProperties);
    }
  }
  return out;
}

export interface ReviveOptions {
  /** The digits of a parsed JSON number (e.g. lossless-json's LosslessNumber), or undefined if `v` is none. */
  digitsOf(v: unknown): string | undefined;
  /** The schema's name of an object key (e.g. rgb-lib's camelCase to the wire's snake_case); default as is. */
  keyOf?(key: string): string;
}

/**
 * A losslessly parsed JSON value as JavaScript values, read against `schema` (undefined = no schema known):
 * an integer where any alternative of the schema is marked u64 becomes a `bigint`; any other integer a
 * `number` if it is a safe integer, else a `bigint`; a number with a fraction or exponent a `number`.
 */
export function reviveNumbers(
  value: unknown,
  schema: unknown,
  refs: SchemaRefs,
  opts: ReviveOptions,
): unknown {
  return revive(value, schema === undefined ? [] : alternatives(schema, refs), refs, opts);
}

function revive(value: unknown, alts: Schema[], refs: SchemaRefs, opts: ReviveOptions): unknown {
  const digits = opts.digitsOf(value);
  if (digits !== undefined) {
    if (!/^-?[0-9]+$/.test(digits)) return Number(digits);
    if (alts.some(isU64)) return BigInt(digits);
    const n = Number(digits);
    return Number.isSafeInteger(n) ? n : BigInt(digits);
  }
  if (Array.isArray(value)) {
    const items = alts.flatMap((a) => (a.items === undefined ? [] : alternatives(a.items, refs)));
    return value.map((x) => revive(x, items, refs, opts));
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const member = memberSchemas(alts, opts.keyOf ? opts.keyOf(k) : k).flatMap((s) =>
        alternatives(s, refs),
      );
      out[k] = revive(v, member, refs, opts);
    }
    return out;
  }
  return value;
}

/** Every u64-marked position in `schema`, as JSON-pointer-like paths (`/utxo/btc_amount`, `/items/amount`). */
export function u64Paths(schema: unknown, refs: SchemaRefs): string[] {
  const out = new Set<string>();
  const walk = (s: unknown, path: string, seen: ReadonlySet<unknown>) => {
    for (const a of alternatives(s, refs)) {
      if (seen.has(a)) continue;
      const next = new Set(seen).add(a);
      if (isU64(a)) out.add(path || '/');
      if (a.items !== undefined) walk(a.items, `${path}/items`, next);
      for (const [k, p] of Object.entries((a.properties as Record<string, unknown>) ?? {})) {
        walk(p, `${path}/${k}`, next);
      }
      for (const p of Object.values((a.patternProperties as Record<string, unknown>) ?? {})) {
        walk(p, `${path}/*`, next);
      }
    }
  };
  walk(schema, '', new Set());
  return [...out].sort();
}

/** The other spellings a request property accepts (`x-aliases`). */
export function aliases(description?: string, ...names: string[]): { description?: string } {
  const out: Record<string, unknown> = { [ALIASES_KEYWORD]: names };
  if (description !== undefined) out.description = description;
  return out as { description?: string };
}

/** Thrown by {@link normalizeAliases}: two spellings of one field with different values. */
export class AliasConflictError extends Error {
  override readonly name = 'AliasConflictError';
}

/**
 * The body with every aliased spelling (`x-aliases` of a property of the schema, at any depth) renamed to
 * the property's own name, in place. Both spellings with the same value (as `json` writes them) keep one; with
 * different values it throws {@link AliasConflictError} naming both. Keys the schema does not alias are left as they are.
 */
export function normalizeAliases(
  body: unknown,
  schema: unknown,
  refs: SchemaRefs,
  json: (v: unknown) => string,
): unknown {
  normalize(body, alternatives(schema, refs), refs, json, '');
  return body;
}

function normalize(
  value: unknown,
  alts: Schema[],
  refs: SchemaRefs,
  json: (v: unknown) => string,
  path: string,
): void {
  if (alts.length === 0 || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    const items = alts.flatMap((a) => (a.items === undefined ? [] : alternatives(a.items, refs)));
    value.forEach((x, i) => {
      normalize(x, items, refs, json, `${path}/${i}`);
    });
    return;
  }
  const o = value as Record<string, unknown>;
  for (const a of alts) {
    for (const [name, prop] of Object.entries((a.properties as Record<string, Schema>) ?? {})) {
      const names = prop?.[ALIASES_KEYWORD];
      if (!Array.isArray(names)) continue;
      for (const alias of names as string[]) {
        if (!Object.hasOwn(o, alias)) continue;
        if (Object.hasOwn(o, name) && json(o[name]) !== json(o[alias])) {
          throw new AliasConflictError(
            `${path}/${name} and ${path}/${alias} are two spellings of one field with different values (${json(o[name])} and ${json(o[alias])}): send one`,
          );
        }
        if (!Object.hasOwn(o, name)) o[name] = o[alias];
        delete o[alias];
      }
    }
  }
  for (const [k, v] of Object.entries(o)) {
    normalize(
      v,
      memberSchemas(alts, k).flatMap((s) => alternatives(s, refs)),
      refs,
      json,
      `${path}/${k}`,
    );
  }
}
