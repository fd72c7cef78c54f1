/**
 * The JSON-RPC transport under the EVM/Tron reads: one POST per call on kept-alive `node:http(s)`
 * sockets, handed to viem as a `custom` transport (viem still encodes, decodes and formats).
 *
 * Why not viem's `http` transport: per call it builds a WHATWG `Request`, an eagerly constructed
 * `TimeoutError`, an `AbortController` and an undici `fetch` with web streams. Measured on the
 * devnode's `eth_call` allowance read (8 in flight, 2 cores), that client side cost 1.5–2.3 ms of
 * CPU per call against 0.5–0.7 ms here; the swap pays it on every Permit2 approval.
 *
 * Failures are {@link RpcReadError}s: no answer within the timeout (`timeout`), no connection
 * (`unreachable`), a non-2xx status without a JSON-RPC error body (`http`), a body that is not a
 * JSON-RPC response or is over 10 MiB (`bad_response`). A JSON-RPC error answer is thrown as a
 * {@link JsonRpcAnswerError} carrying the node's `code` and `data`, which viem maps to its own
 * errors (a revert's data included) and the readers turn into `rpc`.
 */
import http from 'node:http';
import https from 'node:https';
import { preview } from '../bytes.ts';
import { RpcReadError } from '../errors.ts';

/** The most a response body may be (viem's `http` transport default too). */
const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** A node's JSON-RPC error answer: `{ code, message, data? }`. */
export class JsonRpcAnswerError extends Error {
  override readonly name = 'JsonRpcAnswerError';
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export interface JsonRpcTransport {
  /** viem's EIP-1193 `request` shape. */
  request(args: { method: string; params?: unknown }): Promise<unknown>;
}

/**
 * A JSON-RPC client for `url` with a per-call deadline of `timeoutMs`. Credentials in the URL
 * (`https://user:pass@node/…`) become a Basic `Authorization` header. A call on a reused socket that
 * the server closed meanwhile (ECONNRESET before any answer) is sent once more on a new one; reads
 * are idempotent.
 *
 * @example
 * const client = createPublicClient({ transport: custom(jsonRpcTransport(url, 10_000), { retryCount: 0 }) });
 */
export function jsonRpcTransport(url: string, timeoutMs: number): JsonRpcTransport {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new RpcReadError('unreachable', 'connect', `expected an http(s) URL, received ${preview(url)}`);
  const agent = new mod.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 16 });
  const auth =
    u.username || u.password
      ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
      : undefined;
  const target = {
    protocol: u.protocol,
    hostname: u.hostname,
    port: u.port,
    path: `${u.pathname}${u.search}`,
  };
  // Shown in messages without credentials.
  const shown = `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  let nextId = 0;

  function post(method: string, body: string, deadline: number, retried: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let answered = false;
      const req = mod.request(
        {
          ...target,
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            ...(auth ? { authorization: auth } : {}),
          },
        },
        (res) => {
          answered = true;
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_BODY_BYTES) {
              fail(
                new RpcReadError(
                  'bad_response',
                  method,
                  `response from ${shown} is over ${MAX_BODY_BYTES} bytes`,
                ),
              );
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            const err = (
              json as { error?: { code?: unknown; message?: unknown; data?: unknown } } | undefined
            )?.error;
            if (err && typeof err.code === 'number' && typeof err.message === 'string') {
              reject(new JsonRpcAnswerError(err.code, err.message, err.data));
              return;
            }
            if (status < 200 || status > 299) {
              reject(new RpcReadError('http', method, `HTTP ${status} from ${shown}: ${preview(text)}`));
              return;
            }
            if (!json || typeof json !== 'object' || !('result' in json)) {
              reject(
                new RpcReadError(
                  'bad_response',
                  method,
                  `expected a JSON-RPC response from ${shown}, received ${preview(text)}`,
                ),
              );
              return;
            }
            resolve((json as { result: unknown }).result);
          });
          res.on('error', () => {}); // a destroyed request: already settled by fail()
        },
      );
      /** Settles with `e` and drops the socket (a late answer on it must not be read as the next call's). */
      const fail = (e: RpcReadError) => {
        clearTimeout(timer);
        reject(e);
        req.destroy();
      };
      const timer = setTimeout(
        () => fail(new RpcReadError('timeout', method, `no answer from ${shown} within ${timeoutMs} ms`)),
        Math.max(0, deadline - Date.now()),
      );
      req.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (!answered && !retried && req.reusedSocket && e.code === 'ECONNRESET')
          return resolve(post(method, body, deadline, true));
        reject(
          new RpcReadError('unreachable', method, `cannot reach ${shown}: ${e.code ?? e.message}`, {
            cause: e,
          }),
        );
      });
      req.end(body);
    });
  }

  return {
    request({ method, params }) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params: params ?? [] });
      return post(method, body, Date.now() + timeoutMs, false);
    },
  };
}
