/**
 * Reads the wallet node's answers with each client's own declared types:
 *
 * - rgb-sdk: its response interfaces (`fixtures/wallet-clients/rgb-sdk/rgb-model.ts`, vendored unchanged) are
 *   compiled with the TypeScript compiler together with one declaration per answer whose type is the answer's
 *   exact JSON (every number, string and boolean a literal type, arrays as tuples), assigned to the type the
 *   client's method declares. Strict, as rgb-sdk's own tsconfig.json. A diagnostic is a mismatch.
 * - BTCPay plugin: its model classes as a schema (`fixtures/wallet-clients/btcpay-models.schema.json`, derived
 *   by hand with provenance), read the way System.Text.Json's web defaults bind JSON (case-insensitive names,
 *   numeric strings for numbers, null only into nullable types), and stricter on one point: a declared property
 *   of a non-nullable type that is missing is a mismatch (.NET would leave its default, e.g. amount 0).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { FIXTURE_DIR } from './client-requests.ts';

export const RGB_SDK_MODEL = join(FIXTURE_DIR, 'rgb-sdk/rgb-model.ts');
const MARKER = '// ---- rgb-sdk src/types/rgb-model.ts below ----\n';

/** The vendored file's body below its header, and its git blob id (to compare with the recorded one). */
export function vendoredModel(): { body: string; blob: string; recorded: string } {
  const text = readFileSync(RGB_SDK_MODEL, 'utf8');
  const at = text.indexOf(MARKER);
  if (at < 0) throw new Error(`${RGB_SDK_MODEL}: no marker line`);
  const body = text.slice(at + MARKER.length);
  const bytes = Buffer.from(body, 'utf8');
  const blob = createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${bytes.length}\0`), bytes]))
    .digest('hex');
  const recorded = /git blob ([0-9a-f]{40})/.exec(text.slice(0, at))?.[1] ?? '';
  return { body, blob, recorded };
}

/** One answer a client read: which recorded request, the type its source declares, the parsed JSON. */
export interface Answer {
  fixtureId: string;
  declared: string;
  json: unknown;
}

/** The TypeScript type of exactly this JSON value: literals, tuples, object types with every key. */
export function literalType(v: unknown, indent = ''): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return v < 0 ? `(${v})` : String(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map((x) => literalType(x, indent)).join(', ')}]`;
  if (typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 0) return '{}';
    return `{ ${entries.map(([k, x]) => `${JSON.stringify(k)}: ${literalType(x, indent)}`).join('; ')} }`;
  }
  throw new Error(`not JSON: ${typeof v}`);
}

/** `Promise<RgbTransfer[]>` → `RgbTransfer[]`; a trailing ` = …` note is dropped. */
export function declaredType(declared: string): string {
  const t = declared.split(' = ')[0]!.trim();
  const m = /^Promise<(.*)>$/s.exec(t);
  return m ? m[1]! : t;
}

export interface TypeCheckResult {
  /** problems per answer index (flattened compiler messages) */
  problems: string[][];
  /** top-level names the model exports (all imported into the check) */
  names: string[];
}

/**
 * Type-checks every answer against the rgb-sdk type its method declares. Each answer becomes
 * `declare const aN: <its literal type>; export const cN: <declared> = aN;` — an assignment, not a fresh object
 * literal, so extra fields are allowed (as for any value a TypeScript client receives) while every declared field
 * must be there with its declared type (enums: only their members' values).
 */
export function typeCheckRgbSdk(answers: Answer[]): TypeCheckResult {
  const model = readFileSync(RGB_SDK_MODEL, 'utf8');
  const names = [...model.matchAll(/^export (?:interface|type|enum) (\w+)/gm)].map((m) => m[1]!);
  const lines = [`import type { ${names.join(', ')} } from './rgb-model';`];
  const start: number[] = [];
  for (const [i, a] of answers.entries()) {
    start.push(lines.length);
    const type = declaredType(a.declared);
    // A list is checked element by element: the compiler reports only the first element it cannot assign.
    const items = Array.isArray(a.json) && type.endsWith('[]') ? a.json : undefined;
    if (items) {
      for (const [k, x] of items.entries()) {
        lines.push(`declare const a${i}_${k}: ${literalType(x)};`);
        lines.push(`export const c${i}_${k}: ${type.slice(0, -2)} = a${i}_${k};`);
      }
    } else {
      lines.push(`declare const a${i}: ${literalType(a.json)};`);
      lines.push(`export const c${i}: ${type} = a${i};`);
    }
  }
  const checkFile = join(FIXTURE_DIR, 'rgb-sdk/answers.check.ts');
  const source = `${lines.join('\n')}\n`;
  // rgb-sdk's tsconfig.json: strict, ES2020, esModuleInterop (module resolution for TypeScript 6).
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2020,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
    typeRoots: [join(import.meta.dirname, '../../node_modules/@types')],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (f) => (f === checkFile ? source : readFile(f));
  host.fileExists = (f) => f === checkFile || fileExists(f);
  host.getSourceFile = (f, lang, onError, create) =>
    f === checkFile ? ts.createSourceFile(f, source, lang) : getSourceFile(f, lang, onError, create);
  const program = ts.createProgram([RGB_SDK_MODEL, checkFile], options, host);
  const problems: string[][] = answers.map(() => []);
  const general: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(d.messageText, ' / ');
    if (d.file?.fileName !== checkFile || d.start === undefined) {
      general.push(`${d.file?.fileName ?? '(program)'}: ${text}`);
      continue;
    }
    const line = d.file.getLineAndCharacterOfPosition(d.start).line;
    let i = start.length - 1;
    while (i > 0 && start[i]! > line) i--;
    problems[i]?.push(text);
  }
  if (general.length > 0) throw new Error(`the rgb-sdk model does not compile as-is: ${general.join('\n')}`);
  return { problems, names };
}

// ---------- the BTCPay plugin's models, as System.Text.Json (web defaults) binds them ----------

interface DotnetModel {
  'x-source': string;
  properties: Record<string, { 'x-dotnet': string }>;
}
interface DotnetSchema {
  'x-responses': Record<string, string>;
  $defs: Record<string, DotnetModel>;
}

let schemaCache: DotnetSchema | undefined;
export function btcpaySchema(): DotnetSchema {
  schemaCache ??= JSON.parse(
    readFileSync(join(FIXTURE_DIR, 'btcpay-models.schema.json'), 'utf8'),
  ) as DotnetSchema;
  return schemaCache;
}

const INT_RANGE = { int: [-(2n ** 31n), 2n ** 31n - 1n], long: [-(2n ** 63n), 2n ** 63n - 1n] } as const;

export interface DotnetReadResult {
  problems: string[];
  /** declared properties read (each one a field the check looked at) */
  fields: number;
}

/**
 * Reads `json` as System.Text.Json would bind it to the C# type `type` (a model class, `List<…>`, `int`,
 * `long`, `bool`, `string`, with `?` for a nullable annotation).
 */
export function readAsDotnet(type: string, json: unknown, path = '$'): DotnetReadResult {
  const out: DotnetReadResult = { problems: [], fields: 0 };
  read(type, json, path, out);
  return out;
}

function read(type: string, v: unknown, path: string, out: DotnetReadResult): void {
  const nullable = type.endsWith('?');
  const t = nullable ? type.slice(0, -1) : type;
  const bad = (why: string) => out.problems.push(`${path}: ${why} (declared ${type})`);
  if (v === null) {
    if (!nullable)
      bad(t === 'int' || t === 'long' || t === 'bool' ? 'null into a value type throws' : 'null');
    return;
  }
  const list = /^List<(\w+)>$/.exec(t);
  if (list) {
    if (!Array.isArray(v)) {
      bad(`expected a JSON array, got ${kind(v)}`);
      return;
    }
    for (const [i, x] of v.entries()) read(list[1]!, x, `${path}[${i}]`, out);
    return;
  }
  switch (t) {
    case 'int':
    case 'long': {
      // AllowReadingFromString: "123" is read as 123.
      const text = typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
      if (text === undefined || !/^-?\d+$/.test(text)) {
        bad(`expected an integer, got ${kind(v)}`);
        return;
      }
      if (typeof v === 'number' && !Number.isSafeInteger(v)) {
        bad('an integer beyond 2^53 loses digits');
        return;
      }
      const [lo, hi] = INT_RANGE[t];
      const n = BigInt(text);
      if (n < lo || n > hi) bad(`${text} is outside the ${t} range`);
      return;
    }
    case 'bool':
      if (typeof v !== 'boolean') bad(`expected true/false, got ${kind(v)}`);
      return;
    case 'string':
      if (typeof v !== 'string') bad(`expected a JSON string, got ${kind(v)}`);
      return;
  }
  const model = btcpaySchema().$defs[t];
  if (!model) throw new Error(`btcpay-models.schema.json has no model ${t}`);
  if (typeof v !== 'object' || Array.isArray(v)) {
    bad(`expected a JSON object, got ${kind(v)}`);
    return;
  }
  // PropertyNameCaseInsensitive: the last property whose name matches case-insensitively wins.
  const byName = new Map<string, unknown>();
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) byName.set(k.toLowerCase(), x);
  for (const [name, p] of Object.entries(model.properties)) {
    out.fields++;
    const at = `${path}.${name}`;
    if (!byName.has(name.toLowerCase())) {
      // Absent reads as null into a nullable type (the same as null); anything else silently gets a default.
      if (!p['x-dotnet'].endsWith('?')) {
        out.problems.push(`${at}: missing (declared ${p['x-dotnet']}; .NET would read its default)`);
      }
      continue;
    }
    read(p['x-dotnet'], byName.get(name.toLowerCase()), at, out);
  }
}

function kind(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 30 ? `${v.slice(0, 30)}…` : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}
