/**
 * TOML configuration: parse with smol-toml, check against a TypeBox schema with Ajv (defaults applied,
 * all errors collected, no type coercion), and reject unknown keys and mistyped values with messages
 * naming the full dotted key, what was expected and what was found.
 *
 * String values may reference environment variables: `${NAME}` or `${NAME:-fallback}`
 * (`$${...}` stays literal). A value that was entirely a reference is converted when the schema
 * wants an integer, number or boolean, so `port = "${PORT}"` works.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import ajvFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { parse, stringify, TomlError } from 'smol-toml';
import type { Static, TSchema } from 'typebox';

export interface ConfigIssue {
  /** Dotted key, e.g. `api.port` or `peers[2].url`; empty for the whole document. */
  path: string;
  message: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly issues: ConfigIssue[];
  readonly file?: string;
  /** Position of a TOML syntax error (1-based). */
  readonly line?: number;
  readonly column?: number;
  /** smol-toml's excerpt of the offending lines, for syntax errors. */
  readonly codeblock?: string;

  constructor(
    issues: ConfigIssue[],
    opts: { file?: string; line?: number; column?: number; codeblock?: string; cause?: unknown } = {},
  ) {
    super(
      issues.map((i) => `config: ${i.message}`).join('\n'),
      opts.cause === undefined ? undefined : { cause: opts.cause },
    );
    this.issues = issues;
    if (opts.file !== undefined) this.file = opts.file;
    if (opts.line !== undefined) this.line = opts.line;
    if (opts.column !== undefined) this.column = opts.column;
    if (opts.codeblock !== undefined) this.codeblock = opts.codeblock;
  }
}

/** A readable report for a CLI: file name, one line per issue, and the excerpt for syntax errors. */
export function formatConfigError(err: unknown): string {
  if (err instanceof ConfigError) {
    const head = err.file ? `invalid configuration in ${err.file}:` : 'invalid configuration:';
    const lines = err.issues.map((i) => `  - ${i.message}`);
    const block = err.codeblock ? `\n${err.codeblock.replace(/\n+$/, '')}` : '';
    return `${head}\n${lines.join('\n')}${block}`;
  }
  if (err instanceof Error) return `invalid configuration: ${err.message}`;
  return `invalid configuration: ${String(err)}`;
}

export interface ConfigSource {
  /** Path of a TOML file. Used in messages even when `text` is given. */
  file?: string;
  /** TOML text (wins over reading `file`). With neither, the document is empty: defaults only. */
  text?: string;
}

export interface LoadConfigOptions {
  /** Variables for `${NAME}` references. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Rewrites the parsed TOML document before it is validated, e.g. to accept another service's spelling of a
   * key (a reference implementation's alias) by moving it to ours. Gets the raw document (any shape).
   */
  prepare?: (doc: unknown) => void;
}

export function loadTomlConfig<T extends TSchema>(
  schema: T,
  source: ConfigSource,
  opts: LoadConfigOptions = {},
): Static<T> {
  const file = source.file;
  let text = source.text;
  if (text === undefined && file !== undefined) {
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new ConfigError([{ path: '', message: `cannot read "${file}": ${reason}` }], {
        file,
        cause: err,
      });
    }
  }
  let doc: unknown;
  try {
    doc = parse(text ?? '', { integersAsBigInt: 'asNeeded', unsafeKeyBehaviour: 'throw' });
  } catch (err) {
    if (err instanceof TomlError) {
      const reason = (err.message.split('\n')[0] ?? '').replace(/^Invalid TOML document:\s*/, '');
      throw new ConfigError(
        [
          {
            path: '',
            message: `TOML syntax error at line ${err.line}, column ${err.column}: ${reason}`,
          },
        ],
        {
          ...(file === undefined ? {} : { file }),
          line: err.line,
          column: err.column,
          codeblock: err.codeblock,
          cause: err,
        },
      );
    }
    throw err;
  }
  opts.prepare?.(doc);
  const ctx: EnvCtx = { issues: [], env: opts.env ?? process.env };
  resolveEnv(doc, schema as unknown as Schema, [], ctx);
  const validate = validatorOf(schema);
  const issues = validate(doc) ? [] : issuesOf(validate.errors ?? [], doc);
  if (ctx.issues.length > 0 || issues.length > 0) {
    throw new ConfigError([...ctx.issues, ...issues], file === undefined ? {} : { file });
  }
  return doc as Static<T>;
}

// ---------------------------------------------------------------------------------------------
// Validation is Ajv's (the validator Fastify already loads), compiled once per schema with
// `useDefaults` and `allErrors`, coercing nothing. Three things are ours: the `${ENV}` pre-pass (it
// needs the schema to know where a whole reference may become a number or boolean), a stricter
// reading of the schema (a table rejects keys it does not declare; a required table whose keys all
// have defaults may be left out), and the messages, which name the dotted key, what was expected and
// what was found.

type Schema = Record<string, unknown> & {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minItems?: number;
  maxItems?: number;
};

type Path = (string | number)[];

// ajv-formats is CommonJS with a `default` export (as in server.ts).
const ajvFormats = ((ajvFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  ajvFormatsModule) as unknown as FormatsPlugin;
const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false, strict: false, verbose: true });
ajvFormats(ajv);
const compiled = new WeakMap<object, ValidateFunction>();

function validatorOf(schema: TSchema): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    v = ajv.compile(strict(schema as unknown as Schema));
    compiled.set(schema, v);
  }
  return v;
}

/**
 * A copy of `s` read the way configuration files are: a table without `additionalProperties` rejects
 * unknown keys, and a required table without a default defaults to `{}` (its own keys' defaults then
 * fill it in, and its missing required keys are reported by name).
 */
function strict(s: Schema): Schema {
  const out: Schema = { ...s };
  if (s.type === 'object' && s.additionalProperties === undefined) out.additionalProperties = false;
  if (typeof s.additionalProperties === 'object') out.additionalProperties = strict(s.additionalProperties);
  if (s.items) out.items = strict(s.items);
  if (s.anyOf) out.anyOf = s.anyOf.map(strict);
  if (s.oneOf) out.oneOf = s.oneOf.map(strict);
  if (s.patternProperties)
    out.patternProperties = Object.fromEntries(
      Object.entries(s.patternProperties).map(([k, v]) => [k, strict(v)]),
    );
  if (s.properties) {
    const required = new Set(s.required ?? []);
    out.properties = Object.fromEntries(
      Object.entries(s.properties).map(([k, v]) => {
        const sub = strict(v);
        if (required.has(k) && sub.type === 'object' && !('default' in sub)) sub.default = {};
        return [k, sub];
      }),
    );
  }
  return out;
}

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function dotted(path: Path): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const key = BARE_KEY.test(seg) ? seg : JSON.stringify(seg);
      out += out === '' ? key : `.${key}`;
    }
  }
  return out;
}

/** Ajv's JSON pointer (`/peers/2/url`) as a path; array indexes are numbers where the data is an array. */
function pathOf(pointer: string, doc: unknown): Path {
  const path: Path = [];
  let at = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const key = Array.isArray(at) ? Number(seg) : seg;
    path.push(key);
    at = (at as Record<string | number, unknown> | undefined)?.[key];
  }
  return path;
}

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function quoteValue(s: string): string {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
}

/** How a TOML value is described in messages ("got string \"x\""). */
function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return `string ${quoteValue(v)}`;
  if (typeof v === 'bigint') return `integer ${v}`;
  if (typeof v === 'number') {
    if (Number.isInteger(v)) return `integer ${v}`;
    return `float ${v}`;
  }
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (v instanceof Date) return `datetime ${String(v)}`;
  if (Array.isArray(v)) return `array of ${v.length} item${v.length === 1 ? '' : 's'}`;
  if (v === null) return 'null';
  if (isTable(v)) return 'table';
  return typeof v;
}

function range(kind: string, s: Schema): string {
  const lo = s.minimum;
  const hi = s.maximum;
  if (lo !== undefined && hi !== undefined) return `${kind} in ${lo}..${hi}`;
  const parts: string[] = [];
  if (lo !== undefined) parts.push(`>= ${lo}`);
  if (s.exclusiveMinimum !== undefined) parts.push(`> ${s.exclusiveMinimum}`);
  if (hi !== undefined) parts.push(`<= ${hi}`);
  if (s.exclusiveMaximum !== undefined) parts.push(`< ${s.exclusiveMaximum}`);
  return parts.length ? `${kind} ${parts.join(' and ')}` : kind;
}

/** How an expected schema is described in messages ("must be integer in 1..65535"). */
export function describeSchema(s: Schema): string {
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return `one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts)) {
    if (alts.every((a) => 'const' in a))
      return `one of ${alts.map((a) => JSON.stringify(a.const)).join(', ')}`;
    return alts.map(describeSchema).join(' or ');
  }
  const t = s.type;
  if (Array.isArray(t)) return t.join(' or ');
  switch (t) {
    case 'integer':
      return range('integer', s);
    case 'number':
      return range('number', s);
    case 'boolean':
      return 'boolean';
    case 'string': {
      const bits: string[] = [];
      if (s.minLength === 1 && s.maxLength === undefined) return withStringExtras('non-empty string', s);
      if (s.minLength !== undefined) bits.push(`at least ${s.minLength}`);
      if (s.maxLength !== undefined) bits.push(`at most ${s.maxLength}`);
      const base = bits.length ? `string of ${bits.join(' and ')} characters` : 'string';
      return withStringExtras(base, s);
    }
    case 'array': {
      let d = s.items ? `array of ${describeSchema(s.items)}` : 'array';
      if (s.minItems !== undefined) d += ` with at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`;
      if (s.maxItems !== undefined)
        d += `${s.minItems !== undefined ? ' and' : ' with'} at most ${s.maxItems}`;
      return d;
    }
    case 'object':
      return 'table';
    case 'null':
      return 'null';
    default:
      return 'a valid value';
  }
}

function withStringExtras(base: string, s: Schema): string {
  let d = base;
  if (s.pattern !== undefined) d += ` matching /${s.pattern}/`;
  if (s.format !== undefined) d += ` in ${s.format} format`;
  return d;
}

function mismatch(path: Path, s: Schema, v: unknown): ConfigIssue {
  // An integer outside the safe range (smol-toml gives a bigint) is never silently rounded.
  const expected =
    typeof v === 'bigint' && (s.type === 'integer' || s.type === 'number')
      ? { ...s, maximum: s.maximum ?? Number.MAX_SAFE_INTEGER }
      : s;
  return {
    path: dotted(path),
    message: `"${dotted(path)}" must be ${describeSchema(expected)}, got ${describeValue(v)}`,
  };
}

// --- the `${ENV}` pre-pass --------------------------------------------------------------------

const ENV_REF = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE_ENV_REF = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

interface EnvCtx {
  issues: ConfigIssue[];
  env: Record<string, string | undefined>;
}

function interpolate(s: string, path: Path, ctx: EnvCtx): string {
  if (!s.includes('${')) return s;
  return s.replace(ENV_REF, (whole, escaped: string, name: string, fallback: string | undefined) => {
    if (escaped) return whole.slice(1);
    const v = ctx.env[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    ctx.issues.push({
      path: dotted(path),
      message: `"${dotted(path)}" references environment variable ${name}, which is not set`,
    });
    return '';
  });
}

/** A string that was only an env reference may feed a number/boolean key (the first alternative that takes it). */
function coerceFromEnv(raw: string, resolved: string, s: Schema | undefined): unknown {
  if (!s || !WHOLE_ENV_REF.test(raw)) return resolved;
  for (const alt of s.anyOf ?? s.oneOf ?? [s]) {
    const t = alt.type;
    const r = resolved.trim();
    if (t === 'integer' && /^[+-]?\d+$/.test(r)) return Number(r);
    if (t === 'number' && r !== '' && Number.isFinite(Number(resolved))) return Number(resolved);
    if (t === 'boolean' && (resolved === 'true' || resolved === 'false')) return resolved === 'true';
    if (t === 'string' || 'const' in alt) return resolved;
  }
  return resolved;
}

function subschema(s: Schema | undefined, key: string | number): Schema | undefined {
  if (!s) return undefined;
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.map((a) => subschema(a, key)).find((x) => x !== undefined);
  if (typeof key === 'number') return s.items;
  if (s.properties && Object.hasOwn(s.properties, key)) return s.properties[key];
  for (const [re, sub] of Object.entries(s.patternProperties ?? {}))
    if (new RegExp(re, 'u').test(key)) return sub;
  return typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
}

/**
 * Resolves `${NAME}` references in every string of `v` (in place), and turns a TOML datetime where the
 * schema wants a string into its ISO text.
 */
function resolveEnv(v: unknown, s: Schema | undefined, path: Path, ctx: EnvCtx): unknown {
  if (typeof v === 'string') return coerceFromEnv(v, interpolate(v, path, ctx), s);
  if (v instanceof Date) return s?.type === 'string' ? v.toISOString() : v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = resolveEnv(v[i], subschema(s, i), [...path, i], ctx);
  } else if (isTable(v)) {
    for (const key of Object.keys(v)) v[key] = resolveEnv(v[key], subschema(s, key), [...path, key], ctx);
  }
  return v;
}

// --- Ajv's errors as messages -------------------------------------------------------------------

/**
 * One issue per failing key. A union's failure is one "must be A or B" unless exactly one of its
 * alternatives is a table and the value is a table: then that alternative's own findings (unknown key,
 * nested type) say more.
 */
function issuesOf(errors: ErrorObject[], doc: unknown): ConfigIssue[] {
  let remaining = [...errors];
  const unions = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  const replaced = new Map<ErrorObject, ConfigIssue>();
  for (const u of unions) {
    if (!remaining.includes(u)) continue; // inside an alternative already set aside
    const prefix = `${u.schemaPath}/`;
    const inside = remaining.filter((e) => e.schemaPath.startsWith(prefix));
    remaining = remaining.filter((e) => !inside.includes(e));
    const alts = u.schema as Schema[];
    const tables = alts.map((a, i) => [a, i] as const).filter(([a]) => a.type === 'object');
    if (tables.length === 1 && isTable(u.data)) {
      const keep = `${prefix}${tables[0]![1]}/`;
      remaining = remaining.filter((e) => e !== u);
      remaining.push(...inside.filter((e) => e.schemaPath.startsWith(keep)));
    } else {
      replaced.set(u, mismatch(pathOf(u.instancePath, doc), u.parentSchema as Schema, u.data));
    }
  }
  const out: ConfigIssue[] = [];
  const seen = new Set<string>();
  const add = (issue: ConfigIssue) => {
    if (seen.has(issue.message)) return;
    seen.add(issue.message);
    out.push(issue);
  };
  const mismatched = new Set<string>();
  for (const e of remaining) {
    const at = pathOf(e.instancePath, doc);
    const fromUnion = replaced.get(e);
    if (fromUnion) {
      add(fromUnion);
      continue;
    }
    if (e.keyword === 'additionalProperties') {
      const key = [...at, (e.params as { additionalProperty: string }).additionalProperty];
      const allowed = Object.keys((e.parentSchema as Schema).properties ?? {});
      add({
        path: dotted(key),
        message: `unknown key "${dotted(key)}" (allowed: ${allowed.length ? allowed.join(', ') : 'none'})`,
      });
    } else if (e.keyword === 'required') {
      const name = (e.params as { missingProperty: string }).missingProperty;
      const key = [...at, name];
      const sub = (e.parentSchema as Schema).properties?.[name];
      add({
        path: dotted(key),
        message: `missing required key "${dotted(key)}"${sub ? ` (expected ${describeSchema(sub)})` : ''}`,
      });
    } else if (!mismatched.has(e.instancePath)) {
      // type, range, length, pattern, const/enum…: one "must be …, got …" per key.
      mismatched.add(e.instancePath);
      add(mismatch(at, e.parentSchema as Schema, e.data));
    }
  }
  return out;
}

/**
 * TOML text of a document (smol-toml's writer: strings escaped, arrays and tables written as TOML), after
 * optional `#` comment lines. For config files one of our processes writes for another.
 *
 * @example
 * ```ts
 * writeToml({ api: { port: 3001 } }, ['written by the cloud']); // '# written by the cloud\n[api]\nport = 3001\n'
 * ```
 */
export function writeToml(doc: Record<string, unknown>, comments: string[] = []): string {
  const head = comments.map((c) => `# ${c}\n`).join('');
  return `${head}${stringify(doc)}`;
}

/** The document of a TOML text (smol-toml's parser); a syntax error throws smol-toml's `TomlError`. */
export function readToml(text: string): Record<string, unknown> {
  return parse(text) as Record<string, unknown>;
}
