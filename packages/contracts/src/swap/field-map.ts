/**
 * A field map: one wire schema seen under other field names. The swap's Surface B (the Hotpot
 * affiliate API, snake_case) is Surface A (camelCase) with its keys renamed, so its schemas and
 * its conversions are derived here from Surface A's instead of being written a second time.
 *
 * Keys become snake_case unless `overrides` names them; a key of a record (affiliate names, EIP-712
 * domains) is data and keeps its name; only the record's values are renamed.
 *
 * @example
 * const TokenB = fieldMap(TokenA, { contractAddress: 'contract_address' });
 * TokenB.toWire({ networkId: 1, contractAddress: '0x…' }); // { network_id: 1, contract_address: '0x…' }
 */
import { type Static, type TSchema, Type } from 'typebox';

/** `fooBarBaz` → `foo_bar_baz` (an upper-case letter becomes `_` + its lower case). */
export type SnakeCase<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeCase<T>}`
  : S;

export type FieldOverrides = Readonly<Record<string, string>>;
type WireKey<K, O> = K extends keyof O ? O[K] : K extends string ? SnakeCase<K> : K;

/** A value of Surface A's type with its keys renamed as `fieldMap` renames them. */
export type Renamed<T, O extends FieldOverrides> = T extends readonly (infer U)[]
  ? Renamed<U, O>[]
  : T extends object
    ? string extends keyof T
      ? { [k: string]: Renamed<T[string & keyof T], O> }
      : { [K in keyof T as WireKey<K, O>]: Renamed<T[K], O> }
    : T;

export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A copy of a TypeBox schema with some fields replaced (its hidden `~kind`/`~optional` marks kept). */
function withFields(schema: TSchema, fields: Record<string, unknown>): TSchema {
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(schema)) as Record<
    string,
    unknown
  >;
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) delete copy[k];
    else copy[k] = v;
  }
  return copy as TSchema;
}

type Convert = (v: unknown) => unknown;
const identity: Convert = (v) => v;
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

interface Walked {
  schema: TSchema;
  /** Surface A value → the other surface's value. */
  forward: Convert;
  /** The other surface's value → Surface A's. */
  backward: Convert;
}

function walk(schema: TSchema, key: (k: string) => string): Walked {
  const s = schema as Record<string, unknown>;
  if (isPlainObject(s.properties)) {
    const props = Object.entries(s.properties as Record<string, TSchema>).map(
      ([k, sub]) => [k, key(k), walk(sub, key)] as const,
    );
    const forward: Convert = (v) => {
      if (!isPlainObject(v)) return v;
      const out: Record<string, unknown> = {};
      for (const [from, to, w] of props) if (v[from] !== undefined) out[to] = w.forward(v[from]);
      return out;
    };
    const backward: Convert = (v) => {
      if (!isPlainObject(v)) return v;
      const out: Record<string, unknown> = {};
      for (const [from, to, w] of props) if (v[to] !== undefined) out[from] = w.backward(v[to]);
      return out;
    };
    return {
      schema: withFields(schema, {
        $id: undefined,
        properties: Object.fromEntries(props.map(([, to, w]) => [to, w.schema])),
        required: Array.isArray(s.required) ? (s.required as string[]).map(key) : undefined,
      }),
      forward,
      backward,
    };
  }
  if (isPlainObject(s.patternProperties)) {
    const entries = Object.entries(s.patternProperties as Record<string, TSchema>);
    if (entries.length !== 1) throw new Error('fieldMap: a record has exactly one value schema');
    const [pattern, valueSchema] = entries[0]!;
    const w = walk(valueSchema, key);
    if (w.forward === identity) return { schema, forward: identity, backward: identity };
    const each =
      (f: Convert): Convert =>
      (v) =>
        isPlainObject(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, f(x)])) : v;
    return {
      schema: withFields(schema, { $id: undefined, patternProperties: { [pattern]: w.schema } }),
      forward: each(w.forward),
      backward: each(w.backward),
    };
  }
  if (s.type === 'array' && s.items) {
    const w = walk(s.items as TSchema, key);
    if (w.forward === identity) return { schema, forward: identity, backward: identity };
    const each =
      (f: Convert): Convert =>
      (v) =>
        Array.isArray(v) ? v.map(f) : v;
    return {
      schema: withFields(schema, { $id: undefined, items: w.schema }),
      forward: each(w.forward),
      backward: each(w.backward),
    };
  }
  if (Array.isArray(s.anyOf)) {
    const branches = (s.anyOf as TSchema[]).map((b) => walk(b, key));
    const objects = branches.filter((b) => b.forward !== identity);
    if (objects.length === 0) return { schema, forward: identity, backward: identity };
    // Unions here are "a value or null"; a union of several shapes is mapped by its own surface.
    if (objects.length > 1) throw new Error('fieldMap: a union of several objects needs its own mapping');
    const [only] = objects as [Walked];
    return {
      schema: withFields(schema, { $id: undefined, anyOf: branches.map((b) => b.schema) }),
      forward: only.forward,
      backward: only.backward,
    };
  }
  return { schema, forward: identity, backward: identity };
}

export interface FieldMapOptions {
  /** Surface A keys (top level) the other surface does not have. */
  omit?: readonly string[];
  /** Top-level properties only the other surface has, already under their wire names (appended). */
  extend?: Record<string, TSchema>;
  /** Top-level properties whose schema differs on the other surface, by wire name. */
  retype?: Record<string, TSchema>;
  /** Schema options of the derived object (description, additionalProperties, …). */
  options?: Record<string, unknown>;
}

export interface FieldMap<A, B> {
  /** The derived schema (for validation, serialization and the OpenAPI document). */
  readonly schema: TSchema;
  /** A Surface A value under the other surface's names. */
  toWire(a: A): B;
  /** A value of the other surface under Surface A's names (unknown keys are left out). */
  fromWire(b: B): A;
}

/**
 * Surface A's object schema with its keys renamed (deeply), plus the two conversions.
 * Top-level `omit`/`extend`/`retype` describe where the other surface differs in shape.
 */
export function fieldMap<S extends TSchema, const O extends FieldOverrides = Record<never, string>>(
  schemaA: S,
  overrides?: O,
  opts: FieldMapOptions = {},
): FieldMap<Static<S>, Renamed<Static<S>, O>> {
  const o: FieldOverrides = overrides ?? {};
  const key = (k: string) => o[k] ?? snakeCase(k);
  const source = schemaA as unknown as { properties?: Record<string, TSchema>; required?: string[] };
  let base: TSchema = schemaA;
  if (opts.omit?.length) {
    if (!source.properties) throw new Error('fieldMap: omit needs an object schema');
    const omit = new Set(opts.omit);
    base = withFields(schemaA, {
      properties: Object.fromEntries(Object.entries(source.properties).filter(([k]) => !omit.has(k))),
      required: source.required?.filter((k) => !omit.has(k)),
    });
  }
  const w = walk(base, key);
  let schema = w.schema;
  if (opts.extend || opts.retype || opts.options) {
    const t = schema as unknown as { properties: Record<string, TSchema>; required?: string[] };
    const properties = { ...t.properties, ...opts.retype, ...opts.extend };
    // Rebuilt with Type.Object so `required` follows the (possibly optional) extra properties.
    const rebuilt = Type.Object(properties, { ...withoutStructure(schema), ...opts.options });
    schema = rebuilt;
  }
  return {
    schema,
    toWire: w.forward as (a: Static<S>) => Renamed<Static<S>, O>,
    fromWire: w.backward as (b: Renamed<Static<S>, O>) => Static<S>,
  };
}

/** An object schema's options (description, additionalProperties, …) without its shape or `$id`. */
function withoutStructure(schema: TSchema): Record<string, unknown> {
  const { properties: _p, required: _r, type: _t, $id: _i, ...rest } = schema as Record<string, unknown>;
  return rest;
}
