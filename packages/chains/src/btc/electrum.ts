/**
 * A small Electrum protocol client: newline-delimited JSON-RPC 2.0 over plain TCP (`tcp://host:port`).
 * Every connection starts with `server.version` (Electrum servers refuse other calls before it), requests
 * are matched to replies by id, each request has its own timeout, and `close()` ends the socket.
 *
 * Two error classes: {@link ElectrumServerError} when the server answered with a JSON-RPC error (its
 * message is passed through: a broadcast rejected by bitcoind, a missing transaction…), and
 * {@link ElectrumUnavailableError} when no usable answer came (refused, timed out, closed, garbled).
 */
import { Socket } from 'node:net';

/** The server answered the request with a JSON-RPC `error`; `serverMessage` is its text, unchanged. */
export class ElectrumServerError extends Error {
  override readonly name = 'ElectrumServerError';
  readonly method: string;
  /** The error's `code`, when the server sent a numeric one. */
  readonly code: number | undefined;
  readonly serverMessage: string;
  constructor(method: string, code: number | undefined, serverMessage: string) {
    super(`Electrum ${method}: ${serverMessage}${code === undefined ? '' : ` (code ${code})`}`);
    this.method = method;
    this.code = code;
    this.serverMessage = serverMessage;
  }
}

/** The server could not be reached or gave no usable answer (connection refused, timeout, closed, not JSON-RPC). */
export class ElectrumUnavailableError extends Error {
  override readonly name = 'ElectrumUnavailableError';
  readonly url: string;
  constructor(url: string, reason: string, cause?: unknown) {
    super(`Electrum server ${url}: ${reason}`, cause === undefined ? undefined : { cause });
    this.url = url;
  }
}

export interface ElectrumOptions {
  /** Connect timeout and per-request timeout, ms. Default 10 000 (rgb-lib's own Electrum timeout). */
  timeoutMs?: number;
  /** Client name sent in `server.version`. Default `rgbx`. */
  clientName?: string;
  /** Protocol versions offered in `server.version`. Default `['1.4', '1.6']`. */
  protocol?: [string, string];
  /** Largest reply line accepted, bytes; a longer one closes the connection. Default 32 MiB. */
  maxLineBytes?: number;
}

/** `tcp://host:port` → host and port; anything else (ssl://, http://, no port) is refused. */
export function parseElectrumUrl(url: string): { host: string; port: number } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ElectrumUnavailableError(url, 'expected tcp://host:port');
  }
  const port = Number(u.port);
  if (u.protocol !== 'tcp:' || !u.hostname || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new ElectrumUnavailableError(url, 'expected tcp://host:port');
  // `new URL` keeps IPv6 literals bracketed; net.connect wants them bare.
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One connection to an Electrum server.
 *
 * @example
 * const c = await ElectrumConnection.connect('tcp://127.0.0.1:50001');
 * try {
 *   const raw = await c.request<string>('blockchain.transaction.get', [txid]);
 * } finally {
 *   c.close();
 * }
 */
export class ElectrumConnection {
  readonly url: string;
  /** `[software, protocol]` as the server answered `server.version`. */
  serverVersion: [string, string] = ['', ''];
  readonly #socket: Socket;
  readonly #timeoutMs: number;
  readonly #maxLine: number;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #buf = '';
  #closed: Error | undefined;

  private constructor(url: string, socket: Socket, opts: ElectrumOptions) {
    this.url = url;
    this.#socket = socket;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#maxLine = opts.maxLineBytes ?? 32 * 1024 * 1024;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.#onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      this.#fail(new ElectrumUnavailableError(url, err.code ?? err.message, err)),
    );
    socket.on('close', () => this.#fail(new ElectrumUnavailableError(url, 'connection closed')));
  }

  /** Connects and negotiates `server.version`; rejects with {@link ElectrumUnavailableError} if that fails. */
  static async connect(url: string, opts: ElectrumOptions = {}): Promise<ElectrumConnection> {
    const { host, port } = parseElectrumUrl(url);
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = new Socket();
      const timer = setTimeout(() => {
        s.destroy();
        reject(new ElectrumUnavailableError(url, `no connection within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        s.destroy();
        reject(new ElectrumUnavailableError(url, err.code ?? err.message, err));
      });
      s.connect(port, host, () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        s.setNoDelay(true);
        resolve(s);
      });
    });
    const c = new ElectrumConnection(url, socket, opts);
    try {
      const v = await c.request<unknown>('server.version', [
        opts.clientName ?? 'rgbx',
        opts.protocol ?? ['1.4', '1.6'],
      ]);
      if (!Array.isArray(v) || typeof v[0] !== 'string' || typeof v[1] !== 'string')
        throw new ElectrumUnavailableError(url, 'not an Electrum server (server.version answered no pair)');
      c.serverVersion = [v[0], v[1]];
    } catch (err) {
      c.close();
      if (err instanceof ElectrumServerError)
        throw new ElectrumUnavailableError(url, `server.version refused: ${err.serverMessage}`, err);
      throw err;
    }
    return c;
  }

  /**
   * Sends one request and resolves with its `result`.
   * @throws ElectrumServerError when the server answers with an error, ElectrumUnavailableError on
   *   timeout, a closed connection or a garbled reply.
   */
  request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new ElectrumUnavailableError(this.url, `no answer to ${method} within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      this.#pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject, timer });
      this.#socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  /** Closes the connection; requests still waiting reject with ElectrumUnavailableError. */
  close(): void {
    this.#fail(new ElectrumUnavailableError(this.url, 'connection closed by the client'));
  }

  #fail(err: Error): void {
    if (!this.#closed) this.#closed = err;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.#pending.clear();
    this.#socket.destroy();
  }

  #onData(chunk: string): void {
    this.#buf += chunk;
    let nl = this.#buf.indexOf('\n');
    while (nl >= 0) {
      const line = this.#buf.slice(0, nl).trim();
      this.#buf = this.#buf.slice(nl + 1);
      if (line.length > 0) this.#onLine(line);
      nl = this.#buf.indexOf('\n');
    }
    if (this.#buf.length > this.#maxLine)
      this.#fail(new ElectrumUnavailableError(this.url, `reply line longer than ${this.#maxLine} bytes`));
  }

  #onLine(line: string): void {
    let msg: { id?: unknown; result?: unknown; error?: unknown };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      this.#fail(new ElectrumUnavailableError(this.url, 'garbled reply (not JSON)'));
      return;
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
      this.#fail(new ElectrumUnavailableError(this.url, 'garbled reply (not a JSON-RPC object)'));
      return;
    }
    // Some servers echo the id as a string; notifications carry none.
    const id = typeof msg.id === 'string' ? Number(msg.id) : msg.id;
    if (typeof id !== 'number') return;
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    if (msg.error !== undefined && msg.error !== null) {
      const e = msg.error as { code?: unknown; message?: unknown } | string;
      const text =
        typeof e === 'string' ? e : typeof e.message === 'string' ? e.message : JSON.stringify(msg.error);
      const code = typeof e === 'object' && typeof e.code === 'number' ? e.code : undefined;
      p.reject(new ElectrumServerError(p.method, code, text));
      return;
    }
    if (!('result' in msg)) {
      p.reject(new ElectrumUnavailableError(this.url, `garbled reply to ${p.method} (no result)`));
      return;
    }
    p.resolve(msg.result);
  }
}

/**
 * Connects, negotiates, sends one request and closes.
 *
 * @example
 * const txid = await electrumRequest<string>('tcp://127.0.0.1:50001', 'blockchain.transaction.broadcast', [hex]);
 */
export async function electrumRequest<T = unknown>(
  url: string,
  method: string,
  params: unknown[] = [],
  opts: ElectrumOptions = {},
): Promise<T> {
  const c = await ElectrumConnection.connect(url, opts);
  try {
    return await c.request<T>(method, params);
  } finally {
    c.close();
  }
}
