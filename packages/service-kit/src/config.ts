/**
 * TOML configuration: parse with smol-toml, check against a TypeBox schema, apply defaults, and
 * reject unknown keys and mistyped values with messages naming the full dotted key, what was
 * expected and what was found.
 *
 * String values may reference environment variables: `${NAME}` or `${NAME:-fallback}`
 * (`$${...}` stays literal). A value that was entirely a reference is converted when the schema
 * wants an integer, number or boolean, so `port = "${PORT}"` works.
 */
import { readFileSync } from 'node:fs';
import { parse, stringify, TomlError } from 'smol-toml';
import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';

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
  const ctx: Ctx = { issues: [], env: opts.env ?? process.env };
  const value = walk(schema as unknown as Schema, doc, [], ctx);
  if (ctx.issues.length > 0) {
    throw new ConfigError(ctx.issues, file === undefined ? {} : { file });
  }
  return value as Static<T>;
}

// ---------------------------------------------------------------------------------------------

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

interface Ctx {
  issues: ConfigIssue[];
  env: Record<string, string | undefined>;
}

type Path = (string | number)[];

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

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function clone<V>(v: V): V {
  return structuredClone(v);
}

function quoteValue(s: string): string {
  const q = JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
  return q;
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
function describeSchema(s: Schema): string {
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

function mismatch(ctx: Ctx, path: Path, s: Schema, v: unknown): void {
  ctx.issues.push({
    path: dotted(path),
    message: `"${dotted(path)}" must be ${describeSchema(s)}, got ${describeValue(v)}`,
  });
}

const ENV_REF = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE_ENV_REF = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

function interpolate(s: string, path: Path, ctx: Ctx): string {
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

/** A string that was only an env reference may feed a number/boolean key. */
function coerceFromEnv(raw: string, resolved: string, s: Schema): unknown {
  if (!WHOLE_ENV_REF.test(raw)) return resolved;
  const t = s.type;
  if (t === 'integer' && /^[+-]?\d+$/.test(resolved.trim())) return Number(resolved.trim());
  if (t === 'number' && resolved.trim() !== '' && Number.isFinite(Number(resolved))) return Number(resolved);
  if (t === 'boolean' && (resolved === 'true' || resolved === 'false')) return resolved === 'true';
  return resolved;
}

function walk(s: Schema, value: unknown, path: Path, ctx: Ctx): unknown {
  let v = value;
  if (typeof v === 'string') v = coerceFromEnv(v, interpolate(v, path, ctx), s);

  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts)) return walkUnion(s, alts, v, path, ctx);
  if ('const' in s) {
    if (!Value.Equal(v, s.const)) mismatch(ctx, path, s, v);
    return v;
  }
  if (Array.isArray(s.enum)) {
    if (!s.enum.some((e) => Value.Equal(e, v))) mismatch(ctx, path, s, v);
    return v;
  }

  switch (s.type) {
    case 'object':
      return walkObject(s, v, path, ctx);
    case 'array': {
      if (!Array.isArray(v)) {
        mismatch(ctx, path, s, v);
        return v;
      }
      if (
        (s.minItems !== undefined && v.length < s.minItems) ||
        (s.maxItems !== undefined && v.length > s.maxItems)
      ) {
        mismatch(ctx, path, s, v);
      }
      return s.items ? v.map((item, i) => walk(s.items!, item, [...path, i], ctx)) : v;
    }
    case 'string': {
      let str = v;
      if (str instanceof Date) str = str.toISOString();
      if (typeof str !== 'string') {
        mismatch(ctx, path, s, v);
        return v;
      }
      const ok =
        (s.minLength === undefined || [...str].length >= s.minLength) &&
        (s.maxLength === undefined || [...str].length <= s.maxLength) &&
        (s.pattern === undefined || new RegExp(s.pattern, 'u').test(str)) &&
        (s.format === undefined || Value.Check(s as TSchema, str));
      if (!ok) mismatch(ctx, path, s, str);
      return str;
    }
    case 'integer':
    case 'number': {
      const isNum = typeof v === 'number' && Number.isFinite(v);
      const isInt = (isNum && Number.isInteger(v)) || typeof v === 'bigint';
      if ((s.type === 'integer' && !isInt) || (s.type === 'number' && !isNum)) {
        mismatch(ctx, path, s, v);
        return v;
      }
      if (typeof v === 'bigint') {
        // Outside the safe range: only acceptable if no bound rules it out, and never silently rounded.
        mismatch(ctx, path, { ...s, maximum: s.maximum ?? Number.MAX_SAFE_INTEGER }, v);
        return v;
      }
      const n = v as number;
      const ok =
        (s.minimum === undefined || n >= s.minimum) &&
        (s.maximum === undefined || n <= s.maximum) &&
        (s.exclusiveMinimum === undefined || n > s.exclusiveMinimum) &&
        (s.exclusiveMaximum === undefined || n < s.exclusiveMaximum) &&
        (typeof s.multipleOf !== 'number' || Number.isInteger(n / s.multipleOf));
      if (!ok) mismatch(ctx, path, s, v);
      return n;
    }
    case 'boolean':
      if (typeof v !== 'boolean') mismatch(ctx, path, s, v);
      return v;
    case 'null':
      if (v !== null) mismatch(ctx, path, s, v);
      return v;
    case undefined:
      // Unknown/Any, or a schema built from keywords this walker does not know: let TypeBox judge.
      if (Object.keys(s).some((k) => !['description', 'title', 'default', 'examples', '$id'].includes(k))) {
        return fallbackCheck(s, v, path, ctx);
      }
      return v;
    default:
      return fallbackCheck(s, v, path, ctx);
  }
}

function fallbackCheck(s: Schema, v: unknown, path: Path, ctx: Ctx): unknown {
  if (!Value.Check(s as TSchema, v)) {
    const first = [...Value.Errors(s as TSchema, v)][0];
    ctx.issues.push({
      path: dotted(path),
      message: `"${dotted(path)}" ${first?.message ?? 'is invalid'}, got ${describeValue(v)}`,
    });
  }
  return v;
}

function walkUnion(s: Schema, alts: Schema[], v: unknown, path: Path, ctx: Ctx): unknown {
  for (const alt of alts) {
    const trial: Ctx = { issues: [], env: ctx.env };
    const out = walk(alt, v, path, trial);
    if (trial.issues.length === 0) return out;
  }
  // With a single table alternative, its own messages (unknown key, nested type) are more useful.
  const tables = alts.filter((a) => a.type === 'object');
  if (tables.length === 1 && isTable(v)) return walk(tables[0]!, v, path, ctx);
  mismatch(ctx, path, s, v);
  return v;
}

function walkObject(s: Schema, v: unknown, path: Path, ctx: Ctx): unknown {
  if (!isTable(v)) {
    mismatch(ctx, path, s, v);
    return v;
  }
  const props = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const out: Record<string, unknown> = {};
  const patterns = Object.entries(s.patternProperties ?? {}).map(
    ([re, sub]) => [new RegExp(re, 'u'), sub] as const,
  );

  for (const key of Object.keys(v)) {
    if (Object.hasOwn(props, key)) continue;
    const sub = patterns.find(([re]) => re.test(key))?.[1];
    if (sub) {
      out[key] = walk(sub, v[key], [...path, key], ctx);
      continue;
    }
    if (typeof s.additionalProperties === 'object') {
      out[key] = walk(s.additionalProperties, v[key], [...path, key], ctx);
      continue;
    }
    if (s.additionalProperties === true) {
      out[key] = v[key];
      continue;
    }
    const allowed = Object.keys(props);
    ctx.issues.push({
      path: dotted([...path, key]),
      message: `unknown key "${dotted([...path, key])}" (allowed: ${allowed.length ? allowed.join(', ') : 'none'})`,
    });
  }

  for (const [key, sub] of Object.entries(props)) {
    const childPath = [...path, key];
    const given = v[key];
    if (given !== undefined) {
      out[key] = walk(sub, given, childPath, ctx);
      continue;
    }
    if ('default' in sub) {
      out[key] = walk(sub, clone(sub.default), childPath, ctx);
      continue;
    }
    if (!required.has(key)) continue;
    if (sub.type === 'object') {
      // A missing section whose keys all have defaults is filled in; otherwise the nested
      // missing keys are reported by name.
      out[key] = walk(sub, {}, childPath, ctx);
      continue;
    }
    ctx.issues.push({
      path: dotted(childPath),
      message: `missing required key "${dotted(childPath)}" (expected ${describeSchema(sub)})`,
    });
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
