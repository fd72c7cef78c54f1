/**
 * Exact u64 on the wire. Request bodies are parsed twice: first by Fastify's secure parser (syntax and
 * prototype-poisoning checks), then losslessly so integers above 2^53 keep every digit (they arrive in
 * handlers as decimal strings, which the contracts' `U64` schema accepts). Responses are written with a lossless
 * serializer so `bigint` values become exact JSON integers.
 */
import { AliasConflictError, normalizeAliases, WALLET_NODE_REFS } from '@rgbx/contracts/wallet-node';
import { toJson } from '@rgbx/rgb';
import type { ServiceApp } from '@rgbx/service-kit';
import { parse as losslessParse } from 'lossless-json';
import { E } from './errors.ts';

const U64_MAX = 2n ** 64n - 1n;

/**
 * A validated U64 request field as bigint; above 2^64−1 it is the client's error (400, naming the field).
 * (`@rgbx/rgb`'s `toU64` checks a binding argument and throws RangeError.)
 */
export function requestU64(value: bigint | number | string, field: string): bigint {
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
        done(null, losslessParse(text, undefined, parseNumber));
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

type SchemaRoute = { routeOptions: { schema?: { body?: unknown } }; body: unknown };

/** The JSON body schema of a route: its `body`, or the `application/json` entry of a `content` map. */
function jsonBodySchema(body: unknown): unknown {
  const content = (body as { content?: Record<string, { schema?: unknown }> } | undefined)?.content;
  return content ? content['application/json']?.schema : body;
}

/**
 * Request bodies accept a field's snake_case name and the legacy spellings its schema lists (`x-aliases`, e.g.
 * `feeRate` on `fee_rate`, at any depth: a recipient's `recipientId` too). This preValidation step rewrites
 * them to the snake_case name, so the schema and the handler see one spelling. Both spellings with different
 * values are refused naming both, never resolved silently; both with the same value are accepted.
 */
export function normalizeBodyAliases(req: SchemaRoute): void {
  const schema = jsonBodySchema(req.routeOptions.schema?.body);
  if (schema === undefined || req.body === null || typeof req.body !== 'object') return;
  try {
    normalizeAliases(req.body, schema, WALLET_NODE_REFS, replyJson);
  } catch (err) {
    if (err instanceof AliasConflictError) throw E.BAD_INPUT.create(err.message);
    throw err;
  }
}

/** A reply as JSON text, bigint values as exact integers (`@rgbx/rgb`'s `toJson`; nothing is `null`). */
export function replyJson(value: unknown): string {
  return toJson(value ?? null);
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
