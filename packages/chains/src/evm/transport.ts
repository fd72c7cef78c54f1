/**
 * The JSON-RPC transport under the EVM/Tron reads: one POST per call through the kit's shared HTTP
 * client (kept-alive `node:http(s)` sockets), handed to viem as a `custom` transport (viem still
 * encodes, decodes and formats).
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
import { HttpClient, HttpReplyTooLargeError, HttpTimeoutError } from '@rgbx/service-kit/http-client';
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
 * A JSON-RPC client for `url` with a per-call deadline of `timeoutMs`, on the kit's {@link HttpClient}
 * (its own pool of kept-alive sockets). Credentials in the URL (`https://user:pass@node/…`) become a
 * Basic `Authorization` header. A call on a reused socket that the server closed meanwhile
 * (ECONNRESET before any answer) is sent once more on a new one; reads are idempotent.
 *
 * @example
 * const client = createPublicClient({ transport: custom(jsonRpcTransport(url, 10_000), { retryCount: 0 }) });
 */
export function jsonRpcTransport(url: string, timeoutMs: number): JsonRpcTransport {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new RpcReadError('unreachable', 'connect', `expected an http(s) URL, received ${preview(url)}`);
  const http = new HttpClient({ maxSockets: 64, maxFreeSockets: 16 });
  const auth =
    u.username || u.password
      ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
      : undefined;
  const target = new URL(u);
  target.username = '';
  target.password = '';
  // Shown in messages without credentials.
  const shown = `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  const headers = { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) };
  let nextId = 0;

  async function post(method: string, body: string): Promise<unknown> {
    let status: number;
    let text: string;
    try {
      const reply = await http.request(target, {
        headers,
        body,
        timeoutMs,
        maxReplyBytes: MAX_BODY_BYTES,
        retryStaleSocket: true,
      });
      status = reply.status;
      text = reply.body.toString('utf8');
    } catch (e) {
      if (e instanceof HttpTimeoutError)
        throw new RpcReadError('timeout', method, `no answer from ${shown} within ${timeoutMs} ms`);
      if (e instanceof HttpReplyTooLargeError)
        throw new RpcReadError(
          'bad_response',
          method,
          `response from ${shown} is over ${MAX_BODY_BYTES} bytes`,
        );
      const err = e as NodeJS.ErrnoException;
      throw new RpcReadError('unreachable', method, `cannot reach ${shown}: ${err.code ?? err.message}`, {
        cause: e,
      });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const err = (json as { error?: { code?: unknown; message?: unknown; data?: unknown } } | undefined)
      ?.error;
    if (err && typeof err.code === 'number' && typeof err.message === 'string')
      throw new JsonRpcAnswerError(err.code, err.message, err.data);
    if (status < 200 || status > 299)
      throw new RpcReadError('http', method, `HTTP ${status} from ${shown}: ${preview(text)}`);
    if (!json || typeof json !== 'object' || !('result' in json))
      throw new RpcReadError(
        'bad_response',
        method,
        `expected a JSON-RPC response from ${shown}, received ${preview(text)}`,
      );
    return (json as { result: unknown }).result;
  }

  return {
    request({ method, params }) {
      const body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params: params ?? [] });
      return post(method, body);
    },
  };
}
