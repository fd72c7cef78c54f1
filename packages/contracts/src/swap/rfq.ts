/**
 * Request for quote (RFQ) with remote resolvers: the wire exchange between the swap service and a
 * resolver's `quote_url`, defined once (the service's client, the SDK's `rfqHandler` and the
 * `specs/swap-rfq.openapi.json` document use these schemas and helpers).
 *
 * The exchange, authenticated both ways with a secret shared by the service and the resolver:
 *
 * - the service sends `POST {quote_url}` with an {@link RfqRequest} as JSON, the headers
 *   `x-rgbx-timestamp: <unix seconds>` (the body's `timestamp`) and
 *   `x-rgbx-signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`;
 * - the resolver answers 200 with an {@link RfqAnswer} (`dest_amount_lots` null: no quote) and
 *   `x-rgbx-signature: v1=<hex HMAC-SHA256(secret, "<request_id>.<raw answer body>")>`, which binds
 *   the answer to the request it answers.
 *
 * A resolver refuses a request whose signature does not verify, whose timestamp is more than
 * `toleranceSecs` (default 30) away from its clock, or whose `request_id` it has already seen within
 * twice that window ({@link RfqReplayCache}): a captured request cannot be replayed.
 *
 * Pure TypeScript (no Node built-in): HMAC-SHA256 from `@noble/hashes`, compared in constant time.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { type Static, type TSchema, Type } from 'typebox';
import { Value } from 'typebox/value';
import { NetworkType } from './common.ts';

/** Header names of the exchange (lower case, as `node:http` presents them). */
export const RFQ_HEADERS = {
  timestamp: 'x-rgbx-timestamp',
  signature: 'x-rgbx-signature',
} as const;

/** The signature scheme tag in `x-rgbx-signature: v1=<hex>`. */
export const RFQ_SIGNATURE_VERSION = 'v1';
/** Default clock tolerance of a resolver, in seconds. */
export const RFQ_DEFAULT_TOLERANCE_SECS = 30;
/** The shortest accepted shared secret, in bytes (UTF-8, after trimming). */
export const RFQ_MIN_SECRET_BYTES = 32;

const LotsString = Type.String({
  pattern: '^[1-9][0-9]{0,77}$',
  description: 'A positive integer amount in the token’s smallest unit, as a decimal string',
});

export const RfqNetwork = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'The network id of the swap service' }),
  type: NetworkType,
  chain_id: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
    description:
      'EVM/Tron: the chain id in decimal; Bitcoin: mainnet, testnet, signet or regtest; null when the service has none configured',
  }),
});
export type RfqNetwork = Static<typeof RfqNetwork>;

export const RfqToken = Type.Object({
  address: Type.String({
    minLength: 1,
    description: 'Contract address, mint, or the fixed identifier of a native coin (e.g. BTC)',
  }),
  symbol: Type.String({ minLength: 1 }),
  decimals: Type.Integer({ minimum: 0, maximum: 36 }),
});
export type RfqToken = Static<typeof RfqToken>;

export const RfqRequest = Type.Object(
  {
    request_id: Type.String({ format: 'uuid', description: 'Unique per request; echoed in the answer' }),
    resolver_id: Type.String({ minLength: 1, description: 'The id the service knows this resolver by' }),
    timestamp: Type.Integer({
      minimum: 0,
      description: 'Unix seconds when the service signed the request; equal to x-rgbx-timestamp',
    }),
    source_network: RfqNetwork,
    source_token: RfqToken,
    dest_network: RfqNetwork,
    dest_token: RfqToken,
    amount_lots: LotsString,
  },
  { description: 'What the service asks: the destination amount for this source amount of this pair' },
);
export type RfqRequest = Static<typeof RfqRequest>;

export const RfqAnswer = Type.Object(
  {
    request_id: Type.String({ format: 'uuid', description: 'The request_id of the request answered' }),
    dest_amount_lots: Type.Union([LotsString, Type.Null()], {
      description:
        'What the resolver commits to deliver for the full source amount, after its own fee; null: no quote',
    }),
  },
  { description: 'The resolver’s answer' },
);
export type RfqAnswer = Static<typeof RfqAnswer>;

export const RfqErrorBody = Type.Object({
  error: Type.String({ description: 'A human-readable reason' }),
  code: Type.String({ description: 'bad_signature, stale, replayed, malformed, too_large, …' }),
});
export type RfqErrorBody = Static<typeof RfqErrorBody>;

export type RfqErrorCode = 'bad_signature' | 'stale' | 'replayed' | 'malformed' | 'request_id_mismatch';

/** A refused request or answer; `code` says why. */
export class RfqError extends Error {
  override readonly name = 'RfqError';
  readonly code: RfqErrorCode;
  constructor(code: RfqErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** A signed message ready to send: the exact body bytes (as a string) and the headers to send with it. */
export interface SignedRfqMessage {
  body: string;
  headers: Record<string, string>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function bytesOf(v: string | Uint8Array): Uint8Array {
  return typeof v === 'string' ? encoder.encode(v) : v;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** The bytes a request is signed over: `"<timestamp>.<raw body>"`. */
export function rfqRequestSigningBytes(timestamp: number | string, rawBody: string | Uint8Array): Uint8Array {
  return concat(encoder.encode(`${timestamp}.`), bytesOf(rawBody));
}

/** The bytes an answer is signed over: `"<request_id>.<raw answer body>"`. */
export function rfqAnswerSigningBytes(requestId: string, rawBody: string | Uint8Array): Uint8Array {
  return concat(encoder.encode(`${requestId}.`), bytesOf(rawBody));
}

/** `v1=<hex HMAC-SHA256(secret, message)>`. */
export function rfqSignature(secret: string | Uint8Array, message: string | Uint8Array): string {
  return `${RFQ_SIGNATURE_VERSION}=${bytesToHex(hmac(sha256, bytesOf(secret), bytesOf(message)))}`;
}

/** Compares two byte strings in time independent of where they differ (only their lengths show). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** One header value (the first of a repeated header), or undefined. */
function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Whether `header` carries the `v1` signature of `message` (several may be sent comma-separated). */
function signatureMatches(
  secret: string | Uint8Array,
  message: Uint8Array,
  header: string | string[] | undefined,
): boolean {
  const value = headerValue(header);
  if (value === undefined) return false;
  const expected = encoder.encode(rfqSignature(secret, message));
  let ok = false;
  for (const part of value.split(',')) ok = constantTimeEqual(encoder.encode(part.trim()), expected) || ok;
  return ok;
}

function parseJson(raw: string | Uint8Array): unknown {
  try {
    return JSON.parse(typeof raw === 'string' ? raw : decoder.decode(raw));
  } catch {
    throw new RfqError('malformed', 'the body is not JSON');
  }
}

/** The first schema error of `value`, as `path: message`. */
function schemaError(schema: TSchema, value: unknown): string | undefined {
  if (Value.Check(schema, value)) return undefined;
  const [first] = Value.Errors(schema, value);
  return first ? `${first.instancePath || '/'}: ${first.message}` : 'does not match the schema';
}

/**
 * The service side: the request as it is sent. The body is serialized once here; send exactly this
 * string (the signature covers its bytes).
 */
export function signRfqRequest(secret: string | Uint8Array, body: RfqRequest): SignedRfqMessage {
  const text = JSON.stringify(body);
  return {
    body: text,
    headers: {
      'content-type': 'application/json',
      [RFQ_HEADERS.timestamp]: String(body.timestamp),
      [RFQ_HEADERS.signature]: rfqSignature(secret, rfqRequestSigningBytes(body.timestamp, text)),
    },
  };
}

/**
 * The service side: checks an answer to request `requestId` and returns it. Throws {@link RfqError}:
 * `bad_signature` (not signed with the secret for this request), `request_id_mismatch` (signed, but
 * for another request: a replayed answer), `malformed` (not JSON, or not an {@link RfqAnswer}).
 */
export function verifyRfqAnswer(
  secret: string | Uint8Array,
  requestId: string,
  rawBody: string | Uint8Array,
  signatureHeader: string | string[] | undefined,
): RfqAnswer {
  if (!signatureMatches(secret, rfqAnswerSigningBytes(requestId, rawBody), signatureHeader)) {
    // Signed for the request id it names? Then it is a genuine answer to another request.
    let named: unknown;
    try {
      named = (parseJson(rawBody) as { request_id?: unknown } | null)?.request_id;
    } catch {}
    if (
      typeof named === 'string' &&
      named !== requestId &&
      signatureMatches(secret, rfqAnswerSigningBytes(named, rawBody), signatureHeader)
    )
      throw new RfqError('request_id_mismatch', `the answer is for request ${named}, not ${requestId}`);
    throw new RfqError('bad_signature', 'the answer signature does not verify');
  }
  const answer = parseJson(rawBody);
  const err = schemaError(RfqAnswer, answer);
  if (err) throw new RfqError('malformed', `not an RFQ answer: ${err}`);
  const a = answer as RfqAnswer;
  if (a.request_id !== requestId)
    throw new RfqError('request_id_mismatch', `the answer is for request ${a.request_id}, not ${requestId}`);
  return { request_id: a.request_id, dest_amount_lots: a.dest_amount_lots };
}

/** The resolver side: the answer as it is sent (send exactly `body`, with `headers`). */
export function signRfqAnswer(secret: string | Uint8Array, answer: RfqAnswer): SignedRfqMessage {
  const text = JSON.stringify({ request_id: answer.request_id, dest_amount_lots: answer.dest_amount_lots });
  return {
    body: text,
    headers: {
      'content-type': 'application/json',
      [RFQ_HEADERS.signature]: rfqSignature(secret, rfqAnswerSigningBytes(answer.request_id, text)),
    },
  };
}

/**
 * Request ids seen recently, for refusing replays. An id is remembered for `2 × toleranceSecs` (a
 * request accepted now is stale by then), and at most `maxEntries` are kept. When full, the oldest
 * entry is dropped and every request signed at or before its timestamp is refused from then on (as a
 * possible replay): memory stays bounded and a dropped id still cannot be replayed.
 */
export class RfqReplayCache {
  readonly ttlSecs: number;
  readonly maxEntries: number;
  /** id → [expiry (unix secs), the request's timestamp]; insertion order is arrival order. */
  readonly #seen = new Map<string, [number, number]>();
  #floor = Number.NEGATIVE_INFINITY;

  constructor(opts: { toleranceSecs?: number; maxEntries?: number } = {}) {
    this.ttlSecs = 2 * (opts.toleranceSecs ?? RFQ_DEFAULT_TOLERANCE_SECS);
    this.maxEntries = Math.max(1, opts.maxEntries ?? 100_000);
  }

  get size(): number {
    return this.#seen.size;
  }

  /**
   * Records `id` (a request signed at `timestamp`) at `nowSecs`; false when it was seen within the
   * window (or cannot be told apart from one dropped when the cache was full).
   */
  remember(id: string, timestamp: number, nowSecs: number): boolean {
    this.#expire(nowSecs);
    if (this.#seen.has(id) || timestamp <= this.#floor) return false;
    while (this.#seen.size >= this.maxEntries) {
      const [oldId, [, ts]] = this.#seen.entries().next().value as [string, [number, number]];
      this.#seen.delete(oldId);
      this.#floor = Math.max(this.#floor, ts);
    }
    this.#seen.set(id, [nowSecs + this.ttlSecs, timestamp]);
    return true;
  }

  #expire(nowSecs: number): void {
    for (const [id, [expiry]] of this.#seen) {
      if (expiry > nowSecs) break;
      this.#seen.delete(id);
    }
  }
}

export interface VerifyRfqRequestOptions {
  secret: string | Uint8Array;
  /** The request headers (`node:http`'s `IncomingHttpHeaders` fits). */
  headers: Record<string, string | string[] | undefined>;
  /** The body exactly as received. */
  rawBody: string | Uint8Array;
  /** Milliseconds since the epoch (default `Date.now`). */
  now?: () => number;
  /** How far the timestamp may be from `now`, in seconds (default 30). */
  toleranceSecs?: number;
  /** The ids already accepted (keep one per secret, for the life of the server). */
  seen: RfqReplayCache;
}

/**
 * The resolver side: authenticates a request and returns it. In order: the signature over
 * `"<x-rgbx-timestamp>.<raw body>"` (`bad_signature`), the timestamp within `toleranceSecs` of `now`
 * (`stale`), the body an {@link RfqRequest} whose `timestamp` is the header's (`malformed`), and its
 * `request_id` not seen before (`replayed`; it is then remembered). Throws {@link RfqError}.
 */
export function verifyRfqRequest(opts: VerifyRfqRequestOptions): RfqRequest {
  const tolerance = opts.toleranceSecs ?? RFQ_DEFAULT_TOLERANCE_SECS;
  const tsHeader = headerValue(opts.headers[RFQ_HEADERS.timestamp]);
  if (
    tsHeader === undefined ||
    !signatureMatches(
      opts.secret,
      rfqRequestSigningBytes(tsHeader, opts.rawBody),
      opts.headers[RFQ_HEADERS.signature],
    )
  )
    throw new RfqError('bad_signature', 'the request signature does not verify');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(tsHeader))
    throw new RfqError('malformed', `${RFQ_HEADERS.timestamp} is not unix seconds`);
  const ts = Number(tsHeader);
  const nowSecs = Math.floor((opts.now ?? Date.now)() / 1000);
  if (Math.abs(nowSecs - ts) > tolerance)
    throw new RfqError('stale', `the request timestamp is more than ${tolerance} s from now`);
  const body = parseJson(opts.rawBody);
  const err = schemaError(RfqRequest, body);
  if (err) throw new RfqError('malformed', `not an RFQ request: ${err}`);
  const req = body as RfqRequest;
  if (req.timestamp !== ts)
    throw new RfqError('malformed', `timestamp differs from ${RFQ_HEADERS.timestamp}`);
  if (!opts.seen.remember(req.request_id, ts, nowSecs))
    throw new RfqError('replayed', `request ${req.request_id} was already received`);
  return req;
}
