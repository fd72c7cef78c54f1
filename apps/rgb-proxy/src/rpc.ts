/**
 * JSON-RPC 2.0 framing, independent of HTTP: request checks, method dispatch, response objects.
 *
 * Behaviour follows rgb-proxy-server (built on json-rpc-2.0) where clients can see it:
 * - the id is echoed exactly as sent (null, string, number); a request without an `id` member is
 *   a notification and gets no response;
 * - `params` given as a JSON string (multipart uploads send it that way) is parsed first;
 * - a method's result of `undefined` is sent as `null`;
 * - error `data` is only sent when truthy.
 * Where the reference crashes or answers HTML (non-object bodies, unparsable params, odd ids),
 * this answers a proper JSON-RPC error instead.
 */
import { E, RpcError, type RpcErrorObject } from './errors.ts';

export type RpcId = string | number | null;

/** A `params` value the transport could not read (answered -32602 once the request itself is valid). */
export const UNREADABLE_PARAMS: unique symbol = Symbol('unreadable-params');

export interface RpcSuccess {
  jsonrpc: '2.0';
  id: RpcId;
  result: unknown;
}

export interface RpcFailure {
  jsonrpc: '2.0';
  id: RpcId;
  error: RpcErrorObject;
}

export type RpcResponse = RpcSuccess | RpcFailure;

export type RpcMethod<C> = (params: unknown, ctx: C) => unknown;

/**
 * A method result that is already JSON text. Large base64 payloads are built straight into a
 * Buffer this way, which avoids a JSON.stringify pass and a string-to-bytes copy of ~13 MB.
 */
export class RawJson {
  readonly bytes: Buffer;
  constructor(parts: (string | Buffer)[]) {
    this.bytes = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
  }
  toJSON(): unknown {
    return JSON.parse(this.bytes.toString('utf8'));
  }
}

/** A base64 JSON string literal (with quotes) as bytes: base64 never needs escaping. */
export function base64JsonString(data: Uint8Array): Buffer {
  return Buffer.from(
    `"${Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')}"`,
    'latin1',
  );
}

function encodeOne(r: RpcResponse): Buffer {
  if ('result' in r && r.result instanceof RawJson) {
    return Buffer.concat([
      Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":`),
      r.result.bytes,
      Buffer.from('}'),
    ]);
  }
  return Buffer.from(JSON.stringify(r), 'utf8');
}

/** Serializes a response (or batch) to the bytes sent on the wire. */
export function encodeResponse(r: RpcResponse | RpcResponse[]): Buffer {
  if (!Array.isArray(r)) return encodeOne(r);
  const parts: Buffer[] = [Buffer.from('[')];
  r.forEach((one, i) => {
    if (i > 0) parts.push(Buffer.from(','));
    parts.push(encodeOne(one));
  });
  parts.push(Buffer.from(']'));
  return Buffer.concat(parts);
}

export function isRpcId(v: unknown): v is RpcId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || v === null;
}

export function failure(id: RpcId, err: RpcError): RpcFailure {
  return { jsonrpc: '2.0', id, error: err.toJSON() };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface DispatcherOptions {
  /** Called with unexpected (non-RpcError) failures; they are answered as -32603. */
  onInternalError?: (err: unknown, method: string) => void;
  /** Told of each answered call: its `method` member as sent, and the error code (undefined: ok). */
  onCall?: (method: unknown, code: number | undefined) => void;
}

export class RpcDispatcher<C> {
  readonly #methods: Map<string, RpcMethod<C>>;
  readonly #onInternalError: (err: unknown, method: string) => void;
  readonly #onCall: DispatcherOptions['onCall'];

  constructor(methods: Record<string, RpcMethod<C>>, opts: DispatcherOptions = {}) {
    this.#methods = new Map(Object.entries(methods));
    this.#onInternalError = opts.onInternalError ?? (() => {});
    this.#onCall = opts.onCall;
  }

  /**
   * Handles a parsed request body: one request or a batch. Returns `null` when nothing is to be
   * sent back (notifications only).
   */
  async handle(payload: unknown, ctx: C): Promise<RpcResponse | RpcResponse[] | null> {
    if (Array.isArray(payload)) {
      if (payload.length === 0) return failure(null, E.INVALID_REQUEST());
      const out: RpcResponse[] = [];
      // Sequential on purpose: calls of one batch may depend on each other's writes.
      for (const item of payload) {
        const r = await this.handleOne(item, ctx);
        if (r) out.push(r);
      }
      return out.length > 0 ? out : null;
    }
    return this.handleOne(payload, ctx);
  }

  async handleOne(req: unknown, ctx: C): Promise<RpcResponse | null> {
    if (!this.#onCall) return this.#handleOne(req, ctx);
    const code: { value?: number } = {};
    const r = await this.#handleOne(req, ctx, code);
    this.#onCall(isObject(req) ? req.method : undefined, code.value);
    return r;
  }

  async #handleOne(req: unknown, ctx: C, code?: { value?: number }): Promise<RpcResponse | null> {
    const fail = (id: RpcId, err: RpcError): RpcFailure => {
      if (code) code.value = err.code;
      return failure(id, err);
    };
    if (!isObject(req)) return fail(null, E.INVALID_REQUEST());
    const hasId = Object.hasOwn(req, 'id');
    if (hasId && !isRpcId(req.id)) return fail(null, E.INVALID_REQUEST());
    const id: RpcId = hasId ? (req.id as RpcId) : null;
    if (
      req.jsonrpc !== '2.0' ||
      typeof req.method !== 'string' ||
      Object.hasOwn(req, 'result') ||
      Object.hasOwn(req, 'error')
    ) {
      return fail(id, E.INVALID_REQUEST());
    }
    const reply = (r: RpcResponse): RpcResponse | null => (hasId ? r : null);

    let params = req.params;
    if (params === UNREADABLE_PARAMS) return reply(fail(id, E.INVALID_PARAMS()));
    if (typeof params === 'string') {
      try {
        params = JSON.parse(params);
      } catch {
        return reply(fail(id, E.INVALID_PARAMS()));
      }
    }
    const method = this.#methods.get(req.method);
    if (!method) return reply(fail(id, E.METHOD_NOT_FOUND()));
    try {
      const result = await method(params, ctx);
      return reply({ jsonrpc: '2.0', id, result: result ?? null });
    } catch (err) {
      if (err instanceof RpcError) return reply(fail(id, err));
      this.#onInternalError(err, req.method);
      return reply(fail(id, E.INTERNAL_ERROR()));
    }
  }
}
