/**
 * The one outbound HTTP client of the services: bitcoind's JSON-RPC, the EVM/Tron JSON-RPC reads and
 * the cloud's webhook POSTs all go through it. Requests run on kept-alive `node:http(s)` sockets (one
 * agent per scheme per client; idle sockets do not hold the process open), and every use states its own
 * limits:
 *
 * - `timeoutMs`: the whole exchange, from the request to the last byte of the reply;
 * - `connectTimeoutMs`: the TCP (and TLS) handshake of a new socket;
 * - `maxReplyBytes`: the most of a reply body read; beyond it the request fails with
 *   {@link HttpReplyTooLargeError}, or with `overflow: 'truncate'` resolves with what was read and
 *   `truncated: true`; either way the socket is dropped, never reused;
 * - `lookup`: the DNS lookup of the socket (the webhooks' SSRF guard refuses an address there);
 * - `retryStaleSocket`: a reused socket the server closed meanwhile (ECONNRESET before any answer) is
 *   tried once more on a new one; only for requests that are safe to send twice.
 *
 * Why not `fetch`: it reads a reply of any size, and per call it builds a WHATWG `Request`, an
 * `AbortController` and web streams; measured on the EVM devnode's allowance read (8 in flight, 2 cores)
 * that cost 1.5–2.3 ms of CPU per call against 0.5–0.7 ms on `node:http`. Why not undici's `Pool`: it
 * is not installed (Node 20 bundles it only behind `fetch`), and this keeps the dependency count where
 * it is for the same behaviour.
 *
 * Failures: a timeout is an {@link HttpTimeoutError}; an oversized reply an {@link HttpReplyTooLargeError};
 * anything the socket or `lookup` raised (ECONNREFUSED, ENOTFOUND, a refused destination) is rejected as
 * it was raised, so callers keep their own error types and codes. A non-2xx status is not a failure.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';

export interface HttpClientOptions {
  /** Sockets per destination (default 64). */
  maxSockets?: number;
  /** Idle sockets kept per destination (default 16). */
  maxFreeSockets?: number;
  /** A PEM certificate trusted for https besides Node's root certificates (a private CA). */
  extraCa?: string;
}

export interface HttpRequestOptions {
  /** Default `POST`. */
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange, request to last reply byte. */
  timeoutMs: number;
  /** The handshake of a new socket (default: `timeoutMs`). */
  connectTimeoutMs?: number;
  /** The most reply-body bytes read. */
  maxReplyBytes: number;
  /** Past `maxReplyBytes`: `fail` (default) rejects; `truncate` resolves with the bytes read so far. */
  overflow?: 'fail' | 'truncate';
  /** The socket's DNS lookup (not called for a literal IP address). */
  lookup?: LookupFunction;
  /** Send once more on a new socket when a reused one is reset before any answer. */
  retryStaleSocket?: boolean;
  /** Aborts the request (rejects with the signal's reason). */
  signal?: AbortSignal;
}

export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body was cut at `maxReplyBytes` (`overflow: 'truncate'`). */
  truncated: boolean;
}

export class HttpTimeoutError extends Error {
  override readonly name = 'HttpTimeoutError';
  /** `connect`: no socket within `connectTimeoutMs`; `total`: no complete reply within `timeoutMs`. */
  readonly phase: 'connect' | 'total';
  readonly timeoutMs: number;
  constructor(phase: 'connect' | 'total', timeoutMs: number) {
    super(
      phase === 'connect' ? `connect timed out after ${timeoutMs} ms` : `no response within ${timeoutMs} ms`,
    );
    this.phase = phase;
    this.timeoutMs = timeoutMs;
  }
}

export class HttpReplyTooLargeError extends Error {
  override readonly name = 'HttpReplyTooLargeError';
  readonly maxReplyBytes: number;
  constructor(maxReplyBytes: number) {
    super(`reply is over ${maxReplyBytes} bytes`);
    this.maxReplyBytes = maxReplyBytes;
  }
}

/** `[::1]` → `::1`: the form `isIP` and the socket take. */
function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * @example
 * const client = new HttpClient();
 * const reply = await client.request('http://127.0.0.1:18443', {
 *   body: '{"method":"getblockcount"}', timeoutMs: 30_000, maxReplyBytes: 1 << 20,
 * });
 */
export class HttpClient {
  readonly #http: HttpAgent;
  readonly #https: HttpsAgent;

  constructor(opts: HttpClientOptions = {}) {
    const pool = {
      keepAlive: true,
      maxSockets: opts.maxSockets ?? 64,
      maxFreeSockets: opts.maxFreeSockets ?? 16,
    };
    this.#http = new HttpAgent(pool);
    // An extra CA goes in through one secure context built here: given as `ca`, the agent would
    // concatenate every root certificate into its pool key on each request and build a context per socket.
    this.#https = new HttpsAgent({
      ...pool,
      ...(opts.extraCa
        ? { secureContext: createSecureContext({ ca: [...rootCertificates, opts.extraCa] }) }
        : {}),
    });
  }

  /** Closes every socket; requests in flight fail. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }

  request(url: string | URL, opts: HttpRequestOptions): Promise<HttpReply> {
    const u = typeof url === 'string' ? new URL(url) : url;
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      return Promise.reject(new TypeError(`expected an http(s) URL, received ${u.protocol}`));
    return this.#send(u, opts, Date.now() + opts.timeoutMs, false);
  }

  #send(u: URL, opts: HttpRequestOptions, deadline: number, retried: boolean): Promise<HttpReply> {
    const secure = u.protocol === 'https:';
    const host = bareHost(u.hostname);
    const body =
      opts.body === undefined
        ? undefined
        : typeof opts.body === 'string'
          ? Buffer.from(opts.body)
          : opts.body;
    return new Promise<HttpReply>((resolve, reject) => {
      let settled = false;
      let answered = false;
      const finish = (err: unknown, reply?: HttpReply) => {
        if (settled) return;
        settled = true;
        clearTimeout(total);
        opts.signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(reply!);
      };
      /** Settles with `err` and drops the socket: a late reply on it must not be read as the next request's. */
      const fail = (err: unknown) => {
        finish(err);
        req.destroy();
      };
      const req = (secure ? httpsRequest : httpRequest)({
        protocol: u.protocol,
        hostname: host,
        port: u.port === '' ? undefined : Number(u.port),
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? 'POST',
        headers: { ...opts.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
        agent: secure ? this.#https : this.#http,
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
        ...(secure && isIP(host) === 0 ? { servername: host } : {}),
      });
      const total = setTimeout(
        () => fail(new HttpTimeoutError('total', opts.timeoutMs)),
        Math.max(0, deadline - Date.now()),
      );
      const onAbort = () => fail(opts.signal?.reason);
      if (opts.signal?.aborted) return fail(opts.signal.reason);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.connectTimeoutMs !== undefined) {
        const connectMs = opts.connectTimeoutMs;
        req.once('socket', (socket) => {
          if (!socket.connecting) return;
          const t = setTimeout(() => fail(new HttpTimeoutError('connect', connectMs)), connectMs);
          socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(t));
          socket.once('close', () => clearTimeout(t));
        });
      }
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        if (opts.retryStaleSocket && !answered && !retried && req.reusedSocket && err.code === 'ECONNRESET') {
          settled = true;
          clearTimeout(total);
          opts.signal?.removeEventListener('abort', onAbort);
          resolve(this.#send(u, opts, deadline, true));
          return;
        }
        finish(err);
      });
      req.on('response', (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        const reply = (truncated: boolean): HttpReply => ({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          truncated,
        });
        res.on('data', (c: Buffer) => {
          if (settled) return;
          if (size + c.length > opts.maxReplyBytes) {
            if (opts.overflow === 'truncate') {
              chunks.push(c.subarray(0, opts.maxReplyBytes - size));
              finish(null, reply(true));
              req.destroy();
            } else fail(new HttpReplyTooLargeError(opts.maxReplyBytes));
            return;
          }
          size += c.length;
          chunks.push(c);
        });
        res.on('end', () => finish(null, reply(false)));
        res.on('error', (err) => finish(err)); // a destroyed request: usually settled already
      });
      req.end(body);
    });
  }
}
