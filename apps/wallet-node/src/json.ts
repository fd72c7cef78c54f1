/**
 * Exact u64 on the wire. Request bodies are parsed twice: first by Fastify's secure parser (syntax and
 * prototype-poisoning checks), then losslessly so integers above 2^53 keep every digit (they arrive in
 * handlers as decimal strings, which the contracts' `U64` schema accepts). Responses are written with a lossless
 * serializer so `bigint` values become exact JSON integers.
 */
import type { ServiceApp } from '@rgbx/service-kit';
import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';
import { E } from './errors.ts';

const U64_MAX = 2n ** 64n - 1n;

/** Converts a validated U64 request value to bigint; rejects values above 2^64−1 with a clear message. */
export function toU64(value: number | string, field: string): bigint {
  const v = BigInt(value);
  if (v > U64_MAX) throw E.BAD_INPUT.create(`${field} must be at most ${U64_MAX}, got ${value}`);
  return v;
}

/** Number parser for lossless-json: safe numbers as numbers, unsafe integers as digit strings. */
function parseNumber(text: string): number | string {
  const n = Number(text);
  if (Number.isSafeInteger(n) || !/^-?\d+$/.test(text)) return n;
  return text;
}

type JsonParser = (req: unknown, body: string, done: (err: Error | null, value?: unknown) => void) => void;

type RouteRequest = { routeOptions?: { config?: { bodyless?: boolean } }; headers: Record<string, unknown> };
const bodyless = (req: unknown) => (req as RouteRequest).routeOptions?.config?.bodyless === true;

/**
 * Installs the body parsers on `app`: the lossless `application/json` parser (replacing the kit's) and a
 * catch-all. Routes that take no body (`config.bodyless`) ignore whatever arrives, as the reference does:
 * axios posts them with an empty `application/x-www-form-urlencoded` body, .NET with no content type. Routes
 * with a body take JSON (any charset parameter), or an empty body of any type (then `{}`); anything else is
 * the spec's 422.
 */
export function installLosslessJson(app: ServiceApp, bodyLimit: number): void {
  const secure = app.getDefaultJsonParser('error', 'error') as unknown as JsonParser;
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (req, body, done) => {
    if (bodyless(req) || (body as Buffer).length === 0) {
      done(null, undefined);
      return;
    }
    const type = String((req as RouteRequest).headers['content-type'] ?? '(none)');
    done(
      E.BAD_INPUT.create(
        `Content type error: expected application/json, got ${type}${jsonHint(body as Buffer)}`,
      ),
    );
  });
  // text/plain goes to the catch-all above too: Fastify's own text parser would hand the route a string, which
  // then failed as "/ must be object" without naming the content type.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (req, body, done) => {
    const text = body as string;
    if (bodyless(req) || text.trim().length === 0) {
      done(null, undefined);
      return;
    }
    secure(req, text, (err) => {
      if (err) {
        done(E.BAD_INPUT.create(parsesAsJson(text) ? PROTO_REFUSED : err.message));
        return;
      }
      try {
        const value = losslessParse(text, undefined, parseNumber);
        const conflict = spellingConflict(value);
        done(conflict ? E.BAD_INPUT.create(conflict) : null, conflict ? undefined : value);
      } catch (e) {
        done(E.BAD_INPUT.create((e as Error).message));
      }
    });
  });
}

const PROTO_REFUSED =
  'a `__proto__` key (or `constructor` with `prototype`) is refused: such keys can poison object prototypes; rename or drop it';

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A hint for a JSON body sent with another content type. */
function jsonHint(body: Buffer): string {
  return parsesAsJson(body.toString('utf8'))
    ? ' (the body is JSON: send it with content-type: application/json)'
    : '';
}

const CAMEL_HAS_UPPER = /^[a-z][a-z0-9]*[A-Z][a-zA-Z0-9]*$/;

/**
 * Request bodies accept a field's snake_case name and its legacy camelCase spelling (`fee_rate`, `feeRate`).
 * Both with different values is refused, at any depth (a recipient's `recipient_id`/`recipientId` too), never
 * resolved silently; both with the same value is accepted. Returns the message, or undefined.
 */
export function spellingConflict(value: unknown, path = ''): string | undefined {
  if (Array.isArray(value)) {
    for (const [i, x] of value.entries()) {
      const c = spellingConflict(x, `${path}/${i}`);
      if (c) return c;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const o = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (CAMEL_HAS_UPPER.test(k)) {
      const snake = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      if (Object.hasOwn(o, snake) && toJson(o[snake]) !== toJson(v)) {
        return `${path}/${snake} and ${path}/${k} are two spellings of one field with different values (${toJson(o[snake])} and ${toJson(v)}): send one`;
      }
    }
    const c = spellingConflict(v, `${path}/${k}`);
    if (c) return c;
  }
  return undefined;
}

/** JSON text with bigint values as exact integers. */
export function toJson(value: unknown): string {
  return losslessStringify(value ?? null) ?? 'null';
}

const CAMEL_KEY = /^[a-z][a-zA-Z0-9]*$/;

/**
 * rgb-lib's camelCase keys → the reference's snake_case. Only keys that look like field names change:
 * enum tags (`Fungible`, `WaitingCounterparty`) start uppercase and map keys (asset ids `rgb:…`, indexes)
 * do not match, so they stay as they are.
 */
export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const key = CAMEL_KEY.test(k) ? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : k;
    out[key] = snakeKeys(v);
  }
  return out;
}
