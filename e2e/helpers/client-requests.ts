/**
 * The requests two real wallet-node clients send (RGB-OS/rgb-sdk over axios, the UTEXO BTCPay plugin over
 * .NET HttpClient), recorded as data in `e2e/fixtures/wallet-clients/` (provenance in its README), and a
 * replayer that puts the same bytes on the wire as the client library does.
 *
 * The replayer uses `node:http`, not `fetch`: fetch always adds `accept: *\/*`, `accept-language`,
 * `sec-fetch-mode` and `user-agent: node`, and a `body: ''` gets `content-type: text/plain;charset=UTF-8`,
 * so it cannot send the plugin's body-less POST (no content type, no Accept, `Content-Length: 0`).
 * Not reproduced: the hop-by-hop `Connection` header (sent here as `close`) and header order.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

export const FIXTURE_DIR = join(import.meta.dirname, '../fixtures/wallet-clients');

export type ClientName = 'rgb-sdk' | 'btcpay';
export type BodyKind = 'none' | 'empty-form' | 'json' | 'multipart';

export type ShapeType =
  | 'string'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'object'
  | 'array'
  | 'oneOf'
  | 'any'
  | 'bytes';

/** What the client reads back, as typed in its source. */
export interface Shape {
  type: ShapeType;
  /** object: the properties the client binds or declares. */
  fields?: FieldShape[];
  /** object used as a map: every own value must match. */
  values?: Shape;
  /** array: every element must match. */
  items?: Shape;
  /** oneOf: at least one must match. */
  options?: Shape[];
  enum?: (string | number)[];
  note?: string;
}

export interface FieldShape extends Shape {
  name: string;
  /** the client's type allows the key to be absent (TS `?`, C# nullable) */
  optional?: boolean;
  /** the client's type allows JSON null (TS `| null`, C# `T?`) */
  nullable?: boolean;
}

export interface ResponseShape extends Shape {
  /**
   * json: parsed as JSON; text: raw text (the plugin's PostRawAsync); bytes: binary download;
   * ignored: parsed then discarded (axios, `Promise<void>`); status-only: only the 2xx status matters.
   */
  read: 'json' | 'text' | 'bytes' | 'ignored' | 'status-only';
  /** the response type exactly as the client's source declares it */
  declared: string;
}

export interface MultipartPart {
  name: string;
  /** a `$PLACEHOLDER` (string or bytes) or literal text */
  value: string;
  filename?: string;
  contentType?: string;
}

export interface ClientRequestRecord {
  id: string;
  /** `/wallet/…`; may hold `$PLACEHOLDER` path segments */
  route: string;
  method: 'GET' | 'POST';
  /** whether the client sends xpub-van / xpub-col / master-fingerprint on this call */
  identityHeaders: boolean;
  /** content-type and accept exactly as the client library sends them (absent = not sent) */
  headers: { 'content-type'?: string; accept?: string };
  bodyKind: BodyKind;
  /** json only: JSON.stringify (axios) or System.Text.Json default escaping (.NET) */
  serializer?: 'json-stringify' | 'system-text-json';
  /** multipart only: boundary generator of the `form-data` npm package */
  boundaryStyle?: 'form-data';
  /** json: the body template; multipart: `{ parts }`; otherwise null */
  body: unknown;
  /** values a placeholder takes when the caller gives none (the client's own defaults) */
  defaults?: Record<string, string | number>;
  /** file#Lxx (method) in the client repository */
  source: string;
  /** where the client calls it; empty = defined but not called at the recorded commit */
  calledFrom: string[];
  /** false: the wallet node does not serve this route (see reason) */
  served?: boolean;
  reason?: string;
  notes?: string;
  responseShape: ResponseShape;
}

export interface IdentityHeaders {
  'xpub-van': string;
  'xpub-col': string;
  'master-fingerprint': string;
}

export type ReplayVars = Record<string, string | number | Uint8Array>;

/**
 * Headers each library adds on every request, besides content-type and accept (see the README).
 * rgb-sdk: axios's Node adapter (`axios/<version>`; the SDK pins `axios ^1.8.4`, so the exact version
 * depends on the install). btcpay: a bare IHttpClientFactory client adds none.
 */
export const CLIENT_AMBIENT_HEADERS: Record<ClientName, Record<string, string>> = {
  'rgb-sdk': { 'user-agent': 'axios/1.8.4', 'accept-encoding': 'gzip, compress, deflate, br' },
  btcpay: {},
};

const BODY_KINDS: readonly BodyKind[] = ['none', 'empty-form', 'json', 'multipart'];
const cache = new Map<ClientName, ClientRequestRecord[]>();
const clientOf = new WeakMap<ClientRequestRecord, ClientName>();

/** All request records of one client, validated for structure. */
export function loadClientFixtures(client: ClientName): ClientRequestRecord[] {
  const hit = cache.get(client);
  if (hit) return hit;
  const file = join(FIXTURE_DIR, `${client}.json`);
  const records = JSON.parse(readFileSync(file, 'utf8')) as ClientRequestRecord[];
  if (!Array.isArray(records)) throw new Error(`${file}: expected an array of request records`);
  const seen = new Set<string>();
  for (const r of records) {
    const where = `${file}#${r.id}`;
    if (typeof r.id !== 'string' || seen.has(r.id)) throw new Error(`${where}: missing or duplicate id`);
    seen.add(r.id);
    if (!r.route?.startsWith('/wallet/')) throw new Error(`${where}: route must start with /wallet/`);
    if (r.method !== 'GET' && r.method !== 'POST') throw new Error(`${where}: method ${r.method}`);
    if (!BODY_KINDS.includes(r.bodyKind)) throw new Error(`${where}: bodyKind ${r.bodyKind}`);
    if (r.bodyKind === 'json' && (!r.serializer || !r.headers['content-type'])) {
      throw new Error(`${where}: a json record needs serializer and content-type`);
    }
    if (r.bodyKind === 'none' && r.headers['content-type']) {
      throw new Error(`${where}: bodyKind none sends no content-type`);
    }
    if (r.served === false && !r.reason) throw new Error(`${where}: served false needs a reason`);
    if (!r.responseShape?.read) throw new Error(`${where}: responseShape.read missing`);
    clientOf.set(r, client);
  }
  cache.set(client, records);
  return records;
}

/** One record by id; throws listing the ids when there is none. */
export function fixture(client: ClientName, id: string): ClientRequestRecord {
  const records = loadClientFixtures(client);
  const r = records.find((x) => x.id === id);
  if (!r) throw new Error(`no ${client} fixture "${id}"; have: ${records.map((x) => x.id).join(', ')}`);
  return r;
}

const PLACEHOLDER = /^\$([A-Z][A-Z0-9_]*)$/;
const PLACEHOLDER_IN_TEXT = /\$([A-Z][A-Z0-9_]*)/g;

function lookup(record: ClientRequestRecord, vars: ReplayVars, name: string): string | number | Uint8Array {
  const v = vars[name] ?? vars[`$${name}`] ?? record.defaults?.[name];
  if (v === undefined) throw new Error(`${record.id}: no value for $${name} (pass it in vars)`);
  return v;
}

/** The template with every `"$NAME"` string replaced by its value (numbers stay JSON numbers). */
export function fillTemplate(record: ClientRequestRecord, template: unknown, vars: ReplayVars): unknown {
  if (typeof template === 'string') {
    const m = PLACEHOLDER.exec(template);
    if (!m) return template;
    const v = lookup(record, vars, m[1]!);
    if (v instanceof Uint8Array) throw new Error(`${record.id}: $${m[1]} is bytes, which JSON cannot carry`);
    return v;
  }
  if (Array.isArray(template)) return template.map((x) => fillTemplate(record, x, vars));
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(
      Object.entries(template).map(([k, x]) => [k, fillTemplate(record, x, vars)] as const),
    );
  }
  return template;
}

/** Characters System.Text.Json's default encoder writes as \uXXXX although they are printable ASCII. */
const DOTNET_HEX_ESCAPED = new Set(['"', '&', "'", '+', '<', '>', '`']);
const SHORT_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

function dotnetString(s: string): string {
  let out = '"';
  for (let k = 0; k < s.length; k++) {
    const ch = s[k]!;
    const code = s.charCodeAt(k);
    const short = SHORT_ESCAPES[ch];
    if (short) out += short;
    else if (code >= 0x20 && code <= 0x7e && !DOTNET_HEX_ESCAPED.has(ch)) out += ch;
    else out += `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return `${out}"`;
}

/**
 * JSON as System.Text.Json writes it with default options: compact; non-ASCII, control characters, DEL and
 * `" & ' + < > \`` as \uXXXX (uppercase hex, UTF-16 units); `\\ \b \f \n \r \t` as short escapes.
 */
export function dotnetJson(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return dotnetString(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`System.Text.Json cannot write ${value}`);
    return String(value);
  }
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value))
    return `[${value.map((x) => (x === undefined ? 'null' : dotnetJson(x))).join(',')}]`;
  if (typeof value === 'object') {
    const parts = Object.entries(value)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => `${dotnetString(k)}:${dotnetJson(x)}`);
    return `{${parts.join(',')}}`;
  }
  throw new Error(`cannot serialize a ${typeof value}`);
}

/** A boundary as the `form-data` package makes one: 26 dashes and 24 random hex digits. */
export function formDataBoundary(): string {
  return '-'.repeat(26) + randomBytes(12).toString('hex');
}

function multipartBody(record: ClientRequestRecord, vars: ReplayVars, boundary: string): Buffer {
  const { parts } = record.body as { parts: MultipartPart[] };
  const chunks: Buffer[] = [];
  const text = (t: string) => chunks.push(Buffer.from(t, 'utf8'));
  for (const p of parts) {
    const filled = fillPart(record, vars, p);
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (filled.filename !== undefined) head += `; filename="${filled.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    text(`${head}\r\n`);
    chunks.push(filled.value);
    text('\r\n');
  }
  text(`--${boundary}--\r\n`);
  return Buffer.concat(chunks);
}

function fillPart(
  record: ClientRequestRecord,
  vars: ReplayVars,
  p: MultipartPart,
): { value: Buffer; filename?: string } {
  const resolve = (s: string): string | number | Uint8Array => {
    const m = PLACEHOLDER.exec(s);
    return m ? lookup(record, vars, m[1]!) : s;
  };
  const v = resolve(p.value);
  const value = v instanceof Uint8Array ? Buffer.from(v) : Buffer.from(String(v), 'utf8');
  if (p.filename === undefined) return { value };
  const fn = resolve(p.filename);
  if (fn instanceof Uint8Array) throw new Error(`${record.id}: a filename cannot be bytes`);
  return { value, filename: String(fn) };
}

export interface BuiltRequest {
  method: 'GET' | 'POST';
  /** route with placeholders filled (URI-encoded) */
  path: string;
  /** every header this helper sets (Node adds Host and Connection) */
  headers: Record<string, string>;
  body: Buffer;
}

export interface ReplayOptions {
  /** add the library's ambient headers (CLIENT_AMBIENT_HEADERS); default true */
  ambient?: boolean;
  /** fixed multipart boundary (tests); default a fresh form-data style one */
  boundary?: string;
  timeoutMs?: number;
}

/** The request exactly as the client would send it, without sending it. */
export function buildRequest(
  record: ClientRequestRecord,
  identity: IdentityHeaders | null,
  vars: ReplayVars = {},
  opts: ReplayOptions = {},
): BuiltRequest {
  const path = record.route.replace(PLACEHOLDER_IN_TEXT, (_, name: string) => {
    const v = lookup(record, vars, name);
    if (v instanceof Uint8Array) throw new Error(`${record.id}: $${name} in the route cannot be bytes`);
    return encodeURIComponent(String(v));
  });
  const headers: Record<string, string> = {};
  if (record.identityHeaders) {
    if (!identity) throw new Error(`${record.id}: the client sends identity headers; pass them`);
    headers['xpub-van'] = identity['xpub-van'];
    headers['xpub-col'] = identity['xpub-col'];
    headers['master-fingerprint'] = identity['master-fingerprint'];
  }
  if (record.headers.accept) headers.accept = record.headers.accept;

  let body: Buffer = Buffer.alloc(0);
  switch (record.bodyKind) {
    case 'none':
      break;
    case 'empty-form':
      headers['content-type'] = record.headers['content-type'] ?? 'application/x-www-form-urlencoded';
      break;
    case 'json': {
      const value = fillTemplate(record, record.body, vars);
      const json = record.serializer === 'system-text-json' ? dotnetJson(value) : JSON.stringify(value);
      body = Buffer.from(json, 'utf8');
      headers['content-type'] = record.headers['content-type']!;
      break;
    }
    case 'multipart': {
      const boundary = opts.boundary ?? formDataBoundary();
      body = multipartBody(record, vars, boundary);
      headers['content-type'] = (
        record.headers['content-type'] ?? 'multipart/form-data; boundary=$BOUNDARY'
      ).replace('$BOUNDARY', boundary);
      break;
    }
  }
  // A POST always carries its length (axios + Node and .NET both write Content-Length: 0 when there is no
  // body); a body-less GET carries none.
  if (record.method === 'POST') headers['content-length'] = String(body.length);
  if (opts.ambient !== false) {
    const client = clientOf.get(record);
    if (client) Object.assign(headers, CLIENT_AMBIENT_HEADERS[client]);
  }
  return { method: record.method, path, headers, body };
}

export interface ReplayResult {
  status: number;
  contentType: string | undefined;
  text: string;
  /** the body parsed as JSON when it parses (both clients parse regardless of content type) */
  json?: unknown;
  bytes: Buffer;
  headers: IncomingHttpHeaders;
  sent: BuiltRequest;
}

function decode(bytes: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
      return gunzipSync(bytes);
    case 'deflate':
      return inflateSync(bytes);
    case 'br':
      return brotliDecompressSync(bytes);
    default:
      return bytes;
  }
}

/** Sends the record to `baseUrl` exactly as the client would and reads the reply. */
export function replay(
  baseUrl: string,
  record: ClientRequestRecord,
  identityHeaders: IdentityHeaders | null,
  vars: ReplayVars = {},
  opts: ReplayOptions = {},
): Promise<ReplayResult> {
  const sent = buildRequest(record, identityHeaders, vars, opts);
  // Both clients join base and route keeping any base path (axios combineURLs; new Uri(base + "/", path)).
  const url = new URL(baseUrl.replace(/\/+$/, '') + sent.path);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      { method: sent.method, headers: sent.headers, agent: false, timeout: opts.timeoutMs ?? 60_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          try {
            const bytes = decode(Buffer.concat(chunks), res.headers['content-encoding']);
            const text = bytes.toString('utf8');
            const out: ReplayResult = {
              status: res.statusCode ?? 0,
              contentType: res.headers['content-type'],
              text,
              bytes,
              headers: res.headers,
              sent,
            };
            if (text.length > 0) {
              try {
                out.json = JSON.parse(text);
              } catch {
                // not JSON: text and bytes carry it
              }
            }
            resolve(out);
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${record.id}: no reply within the timeout`)));
    req.on('error', reject);
    req.end(sent.body);
  });
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

function validate(shape: Shape, v: unknown, path: string, problems: string[]): void {
  const bad = (what: string) => problems.push(`${path}: expected ${what}, got ${describeValue(v)}`);
  switch (shape.type) {
    case 'any':
    case 'bytes':
      return;
    case 'string':
    case 'number':
    case 'integer':
    case 'boolean': {
      const fits =
        shape.type === 'string'
          ? typeof v === 'string'
          : shape.type === 'number'
            ? typeof v === 'number' && Number.isFinite(v)
            : shape.type === 'integer'
              ? Number.isInteger(v)
              : typeof v === 'boolean';
      if (!fits) bad(shape.type === 'integer' ? 'an integer' : `a ${shape.type}`);
      else if (shape.enum && !shape.enum.includes(v as string | number))
        bad(`one of ${shape.enum.join(', ')}`);
      return;
    }
    case 'array':
      if (!Array.isArray(v)) {
        bad('an array');
        return;
      }
      if (shape.items) {
        for (const [k, x] of v.entries()) validate(shape.items, x, `${path}[${k}]`, problems);
      }
      return;
    case 'object': {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) {
        bad('an object');
        return;
      }
      const o = v as Record<string, unknown>;
      for (const field of shape.fields ?? []) {
        const at = `${path}.${field.name}`;
        if (!Object.hasOwn(o, field.name)) {
          if (!field.optional) problems.push(`${at}: missing`);
        } else if (o[field.name] === null) {
          if (!field.nullable) problems.push(`${at}: null, the client's type does not allow null`);
        } else {
          validate(field, o[field.name], at, problems);
        }
      }
      if (shape.values) {
        for (const [k, x] of Object.entries(o)) validate(shape.values, x, `${path}.${k}`, problems);
      }
      return;
    }
    case 'oneOf': {
      const options = shape.options ?? [];
      const fits = options.some((opt) => {
        const p: string[] = [];
        validate(opt, v, path, p);
        return p.length === 0;
      });
      if (!fits) bad(`one of ${options.map((o) => o.type).join(' | ')}`);
      return;
    }
  }
}

/**
 * Problems with a response body against what the client reads back (empty = the client gets what its
 * types say). `json` is the parsed body (undefined when it was not JSON); `text` the raw body, used for
 * clients that read raw text.
 */
export function checkShape(record: ClientRequestRecord, json: unknown, text?: string): string[] {
  const shape = record.responseShape;
  const problems: string[] = [];
  switch (shape.read) {
    case 'ignored':
    case 'status-only':
    case 'bytes':
      return problems;
    case 'text':
      if (shape.type === 'any') return problems;
      if (typeof json === 'string') return problems;
      if (json === undefined) {
        if (!text) problems.push(`${record.id}: expected raw text, got an empty body`);
        return problems;
      }
      problems.push(`${record.id}: expected raw text (or a JSON string), got JSON ${describeValue(json)}`);
      return problems;
    case 'json':
      if (json === undefined) {
        problems.push(`${record.id}: the client parses JSON, the body is not JSON`);
        return problems;
      }
      validate(shape, json, '$', problems);
      return problems;
  }
}
