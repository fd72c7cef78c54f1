/**
 * Connection-level protection every service shares: HTTP timeouts (slow headers, slow bodies, idle
 * sockets), the mapping of errors raised by Node's HTTP parser (before Fastify sees a request) to
 * kit error information, and a nesting-depth limit on JSON request bodies.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type ErrorInfo, KitErrors } from './errors.ts';

/**
 * HTTP/1.1 timeouts of a service's server, in milliseconds; 0 turns one off.
 *
 * - `requestTimeout`: the whole request (headers and body) must arrive within this time, counted
 *   from its first byte. Otherwise the client gets 408 in the service's envelope and the connection
 *   is closed (the guard against bodies sent a byte at a time). Handler time is not counted.
 * - `headersTimeout`: the request headers must arrive within this time (at most `requestTimeout`);
 *   otherwise 408 as above (the guard against headers sent a byte at a time).
 * - `connectionTimeout`: a socket on which nothing was received or sent for this long is closed,
 *   unless a request on it is being handled (a long handler is never cut by this timer).
 * - `keepAliveTimeout`: an idle keep-alive connection is closed this long after its last response.
 */
export interface HttpTimeouts {
  requestTimeout: number;
  headersTimeout: number;
  connectionTimeout: number;
  keepAliveTimeout: number;
}

/**
 * The kit's defaults. `headersTimeout` defaults to the smaller of 10 s and `requestTimeout` when only
 * `requestTimeout` is given.
 */
export const DEFAULT_HTTP_TIMEOUTS: Readonly<HttpTimeouts> = Object.freeze({
  requestTimeout: 30_000,
  headersTimeout: 10_000,
  connectionTimeout: 60_000,
  keepAliveTimeout: 5_000,
});

/** Deepest `{`/`[` nesting accepted in a JSON request body by default. */
export const DEFAULT_JSON_MAX_DEPTH = 64;

/** Fills in defaults and checks values: non-negative integers, `headersTimeout` ≤ `requestTimeout`. */
export function resolveHttpTimeouts(given: Partial<HttpTimeouts> = {}): HttpTimeouts {
  const requestTimeout = given.requestTimeout ?? DEFAULT_HTTP_TIMEOUTS.requestTimeout;
  const headersTimeout =
    given.headersTimeout ??
    (requestTimeout > 0
      ? Math.min(DEFAULT_HTTP_TIMEOUTS.headersTimeout, requestTimeout)
      : DEFAULT_HTTP_TIMEOUTS.headersTimeout);
  const out: HttpTimeouts = {
    requestTimeout,
    headersTimeout,
    connectionTimeout: given.connectionTimeout ?? DEFAULT_HTTP_TIMEOUTS.connectionTimeout,
    keepAliveTimeout: given.keepAliveTimeout ?? DEFAULT_HTTP_TIMEOUTS.keepAliveTimeout,
  };
  for (const [name, value] of Object.entries(out)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`${name} must be a non-negative integer (ms), got ${value}`);
    }
  }
  if (out.requestTimeout > 0 && out.headersTimeout > out.requestTimeout) {
    throw new RangeError(
      `headersTimeout (${out.headersTimeout} ms) must not exceed requestTimeout (${out.requestTimeout} ms)`,
    );
  }
  return out;
}

/**
 * How often Node looks for requests over `headersTimeout`/`requestTimeout` (its default is 30 s,
 * which would let a 1 s timeout run for 30 s): a tenth of the shortest, between 25 ms and 1 s.
 */
function checkingInterval(t: HttpTimeouts): number {
  const active = [t.headersTimeout, t.requestTimeout].filter((v) => v > 0);
  if (active.length === 0) return 30_000;
  return Math.min(1_000, Math.max(25, Math.floor(Math.min(...active) / 10)));
}

const GIVEN = new WeakMap<Server, Partial<HttpTimeouts>>();
const TRACKED = new WeakSet<Server>();
/** The last request Node handed to the app on each socket, with its response. */
const CURRENT = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();

/** Keeps a socket open on inactivity while its response is in progress (see `connectionTimeout`). */
function keepInFlight(): void {}

/**
 * Installed once per server: every response marks its socket as busy for the inactivity timer
 * (Node destroys a silent socket unless the request, the response or the server listens to
 * 'timeout'; listening on the response leaves sockets without a request in progress to Node), and
 * the last request of each socket is remembered for `responseStarted`.
 */
function trackRequests(server: Server): void {
  if (TRACKED.has(server)) return;
  TRACKED.add(server);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    res.on('timeout', keepInFlight);
    CURRENT.set(req.socket, { req, res });
  });
}

/**
 * True when an answer is already on the wire for the request the socket is busy with: a response
 * still being written, or a complete response to a request whose body is still arriving (answered
 * before it was read). A second response must not follow it; the connection is only closed.
 */
export function responseStarted(socket: Socket): boolean {
  const cur = CURRENT.get(socket);
  if (!cur?.res.headersSent) return false;
  return !cur.res.writableFinished || !cur.req.complete;
}

/**
 * Sets the timeouts of an app's HTTP server; fields not given keep what was set before (at
 * `createServer` or by an earlier call), then the kit's defaults. Call it before `listen`: Node
 * reads the checking interval when the server starts listening. Returns the values in force.
 *
 * @example
 * const app = createServer({ ..., timeouts: { requestTimeout: 10_000 } });
 * setHttpTimeouts(app, { keepAliveTimeout: 65_000 }); // behind a proxy with a 60 s idle timeout
 */
export function setHttpTimeouts(app: { server: Server }, timeouts: Partial<HttpTimeouts>): HttpTimeouts {
  const server = app.server;
  const given = { ...GIVEN.get(server) };
  for (const [k, v] of Object.entries(timeouts)) if (v !== undefined) given[k as keyof HttpTimeouts] = v;
  const t = resolveHttpTimeouts(given);
  GIVEN.set(server, given);
  server.requestTimeout = t.requestTimeout;
  server.headersTimeout = t.headersTimeout;
  server.keepAliveTimeout = t.keepAliveTimeout;
  server.setTimeout(t.connectionTimeout);
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    checkingInterval(t);
  trackRequests(server);
  return t;
}

/** An error Node's HTTP server hands to `clientError` (llhttp codes, or ERR_HTTP_REQUEST_TIMEOUT). */
export interface ClientErrorLike {
  code?: string;
  /** llhttp's description, e.g. `Invalid character in Content-Length`. */
  reason?: string;
  message?: string;
}

/** True for errors about the request itself (llhttp's `HPE_*`, the headers/request timeout), not the socket. */
export function isHttpClientError(err: ClientErrorLike): boolean {
  const code = err.code ?? '';
  return code.startsWith('HPE_') || code === 'ERR_HTTP_REQUEST_TIMEOUT';
}

const CONTENT_LENGTH_CODES = new Set(['HPE_INVALID_CONTENT_LENGTH', 'HPE_UNEXPECTED_CONTENT_LENGTH']);
const CHUNKED_CODES = new Set([
  'HPE_INVALID_CHUNK_SIZE',
  'HPE_INVALID_TRANSFER_ENCODING',
  'HPE_CR_EXPECTED',
  'HPE_LF_EXPECTED',
  'HPE_STRICT',
]);

/**
 * The error information for a request Node's HTTP server rejected before Fastify saw it (or while
 * it was reading its body): 408 for a timeout, 431 for oversized headers, 413 for oversized chunk
 * extensions, 400 for anything malformed.
 */
export function clientErrorInfo(err: ClientErrorLike): ErrorInfo {
  const code = err.code ?? '';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    const e = KitErrors.REQUEST_TIMEOUT.create();
    return { statusCode: e.statusCode, code: e.code, message: e.message };
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    const e = KitErrors.HEADERS_TOO_LARGE.create();
    return { statusCode: e.statusCode, code: e.code, message: e.message };
  }
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') {
    return { statusCode: 413, code: 'PAYLOAD_TOO_LARGE', message: 'Chunk extensions are too large' };
  }
  let what: string;
  if (CONTENT_LENGTH_CODES.has(code)) what = 'invalid Content-Length';
  else if (CHUNKED_CODES.has(code) && /chunk|transfer-encoding/i.test(err.reason ?? code)) {
    what = 'invalid chunked encoding';
  } else what = (err.reason ?? '').trim() || 'unparsable request';
  const e = KitErrors.MALFORMED_REQUEST.create(what);
  return { statusCode: e.statusCode, code: e.code, message: e.message };
}

/** Media types whose bodies are JSON: `application/json` and `…/…+json`. */
function isJsonType(header: unknown): boolean {
  if (typeof header !== 'string') return false;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Passes a JSON body through unchanged while counting `{`/`[` nesting outside strings (the bytes
 * involved are ASCII, so chunk boundaries inside UTF-8 sequences do not matter); fails with
 * INVALID_JSON as soon as the nesting goes deeper than `maxDepth`, before anything is parsed.
 */
class JsonDepthGuard extends Transform {
  #depth = 0;
  #inString = false;
  #escaped = false;
  readonly #max: number;

  constructor(maxDepth: number) {
    super();
    this.#max = maxDepth;
  }

  override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let depth = this.#depth;
    let inString = this.#inString;
    let escaped = this.#escaped;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (b === BACKSLASH) escaped = true;
        else if (b === QUOTE) inString = false;
      } else if (b === QUOTE) {
        inString = true;
      } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
        if (++depth > this.#max) {
          cb(KitErrors.INVALID_JSON.create(`nested deeper than ${this.#max} levels`));
          return;
        }
      } else if ((b === CLOSE_OBJECT || b === CLOSE_ARRAY) && depth > 0) {
        depth--;
      }
    }
    this.#depth = depth;
    this.#inString = inString;
    this.#escaped = escaped;
    cb(null, bytes);
  }
}

/**
 * Limits the nesting of JSON request bodies for every parser of the instance (the kit's, and any a
 * service installs in its place): a `preParsing` hook streams `application/json` and `+json` bodies
 * (except on routes whose config says `bodyless: true`) through a depth counter, so a body nested deeper than `maxDepth` is refused with INVALID_JSON (400)
 * instead of reaching a recursive parser or validator. `createServer` installs it.
 */
export function installJsonDepthGuard(app: FastifyInstance, maxDepth: number): void {
  if (!Number.isSafeInteger(maxDepth) || maxDepth < 1) {
    throw new RangeError(`jsonMaxDepth must be a positive integer, got ${maxDepth}`);
  }
  app.addHook('preParsing', (request, _reply, payload, done) => {
    // A route that declares it takes no body (`config.bodyless`) never parses one: nothing to guard.
    const bodyless = (request.routeOptions.config as { bodyless?: boolean } | undefined)?.bodyless === true;
    if (bodyless || !isJsonType(request.headers['content-type'])) {
      done(null, payload);
      return;
    }
    const guard = new JsonDepthGuard(maxDepth);
    payload.on('error', (err) => guard.destroy(err));
    guard.on('error', () => {
      // The rest of the body is read and dropped, so the connection stays usable for the reply.
      payload.unpipe(guard);
      payload.resume();
    });
    payload.pipe(guard);
    done(null, guard);
  });
}
