import { HttpClient } from '@rgbx/service-kit/http-client';
import { isLosslessNumber, parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';

/** The largest reply read (a verbose block of a full 4 MB block is tens of MB; this only stops a runaway). */
export const BITCOIND_MAX_REPLY_BYTES = 256 * 1024 * 1024;

/** One pool of kept-alive sockets for every bitcoind client of the process (the agent keys it by host). */
let shared: HttpClient | undefined;

/** An error answered by bitcoind itself: its code and message are passed through unchanged. */
export class BitcoindRpcError extends Error {
  override readonly name = 'BitcoindRpcError';
  readonly code: number;
  readonly method: string;
  constructor(method: string, code: number, message: string) {
    super(message);
    this.code = code;
    this.method = method;
  }
}

/** bitcoind could not be reached or answered something that is not JSON-RPC. */
export class BitcoindUnavailableError extends Error {
  override readonly name = 'BitcoindUnavailableError';
  constructor(method: string, cause: unknown, url?: string) {
    // A socket error's code (ECONNREFUSED…) is what helps, also when wrapped (fetch's "fetch failed").
    const c = cause as { code?: unknown; cause?: { code?: string; message?: string } } | undefined;
    const inner = c?.cause;
    const reason =
      inner?.code ??
      inner?.message ??
      (typeof c?.code === 'string' ? c.code : undefined) ??
      (cause instanceof Error ? cause.message : String(cause));
    super(`bitcoind ${method}${url ? ` at ${url}` : ''}: ${reason}`, { cause });
  }
}

export interface BitcoindRpcOptions {
  /** e.g. `http://127.0.0.1:18443`; a wallet path may be appended (`/wallet/miner`). */
  url: string;
  user: string;
  password: string;
  /** Per-request timeout; default 30 s. */
  timeoutMs?: number;
  /** The largest reply read; default {@link BITCOIND_MAX_REPLY_BYTES}. */
  maxReplyBytes?: number;
}

export interface BatchItem {
  method: string;
  params?: unknown[];
}

/** JSON values whose numbers keep their exact decimal text (see {@link BitcoindRpc.callLossless}). */
export type LosslessValue = unknown;

/**
 * Minimal bitcoind JSON-RPC client over HTTP (the kit's {@link HttpClient}: kept-alive sockets, a
 * deadline per call, a bounded reply). `call` parses numbers as JS numbers
 * (heights, counts); `callLossless` keeps every number's exact text so amounts survive and objects can
 * be re-serialized byte-for-byte in bitcoind's own number format.
 *
 * @example
 * const rpc = new BitcoindRpc({ url: 'http://127.0.0.1:18443', user: 'u', password: 'p' });
 * const height = await rpc.call<number>('getblockcount');
 */
export class BitcoindRpc {
  readonly url: string;
  readonly #auth: string;
  readonly #timeoutMs: number;
  readonly #maxReplyBytes: number;
  #nextId = 1;

  constructor(opts: BitcoindRpcOptions) {
    this.url = opts.url;
    this.#auth = `Basic ${Buffer.from(`${opts.user}:${opts.password}`).toString('base64')}`;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
    this.#maxReplyBytes = opts.maxReplyBytes ?? BITCOIND_MAX_REPLY_BYTES;
  }

  /** Same credentials, another endpoint path (e.g. `/wallet/miner`). */
  withPath(path: string): BitcoindRpc {
    const u = new URL(this.url);
    u.pathname = path;
    const [user, password] = Buffer.from(this.#auth.slice(6), 'base64').toString().split(/:(.*)/s) as [
      string,
      string,
    ];
    return new BitcoindRpc({
      url: u.toString(),
      user,
      password,
      timeoutMs: this.#timeoutMs,
      maxReplyBytes: this.#maxReplyBytes,
    });
  }

  async call<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const body = await this.#post(
      method,
      JSON.stringify({ jsonrpc: '1.0', id: this.#nextId++, method, params }),
    );
    return unwrap(method, parseJson(method, body, false)) as T;
  }

  /** Like {@link call}, numbers kept as `LosslessNumber` (use {@link losslessToJson} to re-serialize). */
  async callLossless(method: string, params: unknown[] = []): Promise<LosslessValue> {
    const body = await this.#post(
      method,
      JSON.stringify({ jsonrpc: '1.0', id: this.#nextId++, method, params }),
    );
    return unwrap(method, parseJson(method, body, true));
  }

  /** One HTTP round trip for many calls; each item resolves to its result or its BitcoindRpcError. */
  async batch(items: readonly BatchItem[]): Promise<Array<unknown | BitcoindRpcError>> {
    if (items.length === 0) return [];
    const first = this.#nextId;
    this.#nextId += items.length;
    const payload = items.map((it, i) => ({
      jsonrpc: '1.0',
      id: first + i,
      method: it.method,
      params: it.params ?? [],
    }));
    const label = `batch(${items[0]!.method}×${items.length})`;
    const parsed = parseJson(label, await this.#post(label, JSON.stringify(payload)), false);
    if (!Array.isArray(parsed))
      throw new BitcoindUnavailableError(label, new Error('batch reply is not an array'));
    const out: Array<unknown | BitcoindRpcError> = new Array(items.length);
    for (const reply of parsed as Array<{
      id: number;
      result: unknown;
      error: { code: number; message: string } | null;
    }>) {
      const i = reply.id - first;
      const item = items[i];
      if (!item) continue;
      out[i] = reply.error
        ? new BitcoindRpcError(item.method, reply.error.code, reply.error.message)
        : reply.result;
    }
    return out;
  }

  async #post(method: string, body: string): Promise<string> {
    shared ??= new HttpClient();
    let status: number;
    let text: string;
    try {
      const reply = await shared.request(this.url, {
        headers: { authorization: this.#auth, 'content-type': 'application/json' },
        body,
        timeoutMs: this.#timeoutMs,
        maxReplyBytes: this.#maxReplyBytes,
        // bitcoind drops idle connections (rpcservertimeout): a reset before any answer was never read.
        retryStaleSocket: true,
      });
      status = reply.status;
      text = reply.body.toString('utf8');
    } catch (err) {
      // A timeout or an oversized reply (the kit's errors) is named by its message; a socket error by its code.
      throw new BitcoindUnavailableError(method, err, this.url);
    }
    // bitcoind answers RPC errors with HTTP 404/500 and a JSON body; only non-JSON is a transport failure.
    if (status === 401 || status === 403) {
      throw new BitcoindUnavailableError(method, new Error(`HTTP ${status}: check rpc_user/rpc_password`));
    }
    if (!text.startsWith('{') && !text.startsWith('[')) {
      throw new BitcoindUnavailableError(method, new Error(`HTTP ${status}: ${text.slice(0, 200)}`));
    }
    return text;
  }
}

function parseJson(method: string, text: string, lossless: boolean): unknown {
  try {
    return lossless ? parseLossless(text) : JSON.parse(text);
  } catch (err) {
    throw new BitcoindUnavailableError(method, err);
  }
}

function unwrap(method: string, reply: unknown): unknown {
  const r = reply as { result?: unknown; error?: { code: unknown; message: string } | null };
  if (r.error) {
    const code = isLosslessNumber(r.error.code) ? Number(r.error.code.value) : Number(r.error.code);
    throw new BitcoindRpcError(method, code, r.error.message);
  }
  return r.result;
}

/** Serializes a lossless value back to JSON text with every number exactly as bitcoind wrote it. */
export function losslessToJson(value: LosslessValue): string {
  return stringifyLossless(value) ?? 'null';
}
