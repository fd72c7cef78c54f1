/**
 * A small Electrum protocol client: newline-delimited JSON-RPC 2.0 over plain TCP (`tcp://host:port`).
 * Every connection starts with `server.version` (Electrum servers refuse other calls before it), requests
 * are matched to replies by id (batch replies too), each request has its own timeout, and `close()` ends
 * the socket. Server push notifications (after a `*.subscribe`) reach {@link ElectrumConnection.onNotification}
 * listeners and {@link ElectrumConnection.nextNotification}, and are queued in `notifications` when the
 * connection is opened with `bufferNotifications`.
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
  /** What went wrong, without the url: a socket error code (`ECONNREFUSED`), `connection closed`, a timeout… */
  readonly reason: string;
  constructor(url: string, reason: string, cause?: unknown) {
    super(`Electrum server ${url}: ${reason}`, cause === undefined ? undefined : { cause });
    this.url = url;
    this.reason = reason;
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
  /**
   * Send `server.version` on connect (default true). False leaves the negotiation to the caller (tests of a
   * server's own version handling); `serverVersion` then stays `['', '']`.
   */
  handshake?: boolean;
  /**
   * Queue server notifications nobody is waiting for in `notifications` (default false: they are only
   * passed to listeners and waiters, then dropped, so a long-lived subscribed connection does not grow).
   */
  bufferNotifications?: boolean;
  /** Called with every line the server sends, before it is parsed (protocol tests, debugging). */
  onLine?: (line: string) => void;
}

/** A server push: `{"method": …, "params": […]}` without an id, e.g. after `blockchain.headers.subscribe`. */
export interface ElectrumNotification {
  method: string;
  params: unknown[];
}

/** One entry of `blockchain.scripthash.listunspent`. */
export interface ElectrumUtxo {
  tx_hash: string;
  tx_pos: number;
  /** Confirmation height; 0 (or -1: unconfirmed parent) for mempool outputs. */
  height: number;
  /** Satoshis. */
  value: number;
}

/** One entry of `blockchain.scripthash.get_history`. */
export interface ElectrumHistoryEntry {
  tx_hash: string;
  height: number;
  /** Mempool entries only, satoshis. */
  fee?: number;
}

/** `blockchain.headers.subscribe`'s result and notification: the tip. */
export interface ElectrumHeader {
  height: number;
  /** The 80-byte header, hex. */
  hex: string;
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

interface Waiter {
  pred: (n: ElectrumNotification) => boolean;
  resolve: (n: ElectrumNotification) => void;
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
  /** Notifications no waiter took, oldest first; filled only with `bufferNotifications`. Callers may splice it. */
  readonly notifications: ElectrumNotification[] = [];
  readonly #socket: Socket;
  readonly #timeoutMs: number;
  readonly #maxLine: number;
  readonly #buffer: boolean;
  readonly #onLineHook: ((line: string) => void) | undefined;
  readonly #pending = new Map<number, Pending>();
  readonly #waiters: Waiter[] = [];
  readonly #listeners = new Set<(n: ElectrumNotification) => void>();
  #nextId = 1;
  #buf = '';
  #closed: Error | undefined;

  private constructor(url: string, socket: Socket, opts: ElectrumOptions) {
    this.url = url;
    this.#socket = socket;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#maxLine = opts.maxLineBytes ?? 32 * 1024 * 1024;
    this.#buffer = opts.bufferNotifications ?? false;
    this.#onLineHook = opts.onLine;
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
    if (opts.handshake === false) return c;
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

  /** `blockchain.scripthash.listunspent`: the unspent outputs paying `scripthash` (see `scriptHash`). */
  listUnspent(scripthash: string): Promise<ElectrumUtxo[]> {
    return this.request<ElectrumUtxo[]>('blockchain.scripthash.listunspent', [scripthash]);
  }

  /** `blockchain.scripthash.get_history`: confirmed then mempool transactions touching `scripthash`. */
  getHistory(scripthash: string): Promise<ElectrumHistoryEntry[]> {
    return this.request<ElectrumHistoryEntry[]>('blockchain.scripthash.get_history', [scripthash]);
  }

  /** `blockchain.transaction.broadcast`: resolves with the txid; a refusal is an {@link ElectrumServerError}. */
  broadcast(txHex: string): Promise<string> {
    return this.request<string>('blockchain.transaction.broadcast', [txHex]);
  }

  /** `blockchain.headers.subscribe`: the current tip; later tips arrive as notifications of that method. */
  headersSubscribe(): Promise<ElectrumHeader> {
    return this.request<ElectrumHeader>('blockchain.headers.subscribe');
  }

  /** `server.ping`. */
  async ping(): Promise<void> {
    await this.request('server.ping');
  }

  /**
   * Calls `listener` with every server notification from now on; returns the function that removes it.
   * A listener that throws does not disturb the connection.
   */
  onNotification(listener: (n: ElectrumNotification) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Resolves with the next notification matching `pred`: a queued one first (`bufferNotifications`), else
   * the next to arrive. Rejects with ElectrumUnavailableError after `timeoutMs` or when the connection closes.
   */
  nextNotification(
    pred: (n: ElectrumNotification) => boolean,
    timeoutMs = this.#timeoutMs,
  ): Promise<ElectrumNotification> {
    const i = this.notifications.findIndex(pred);
    if (i >= 0) return Promise.resolve(this.notifications.splice(i, 1)[0]!);
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        pred,
        resolve,
        reject,
        timer: setTimeout(() => {
          const j = this.#waiters.indexOf(w);
          if (j >= 0) this.#waiters.splice(j, 1);
          reject(new ElectrumUnavailableError(this.url, `no matching notification within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      w.timer.unref();
      this.#waiters.push(w);
    });
  }

  /** Writes raw bytes to the server, unframed and unchecked (malformed-input tests of a server). */
  writeRaw(data: string | Uint8Array): void {
    if (!this.#closed) this.#socket.write(data);
  }

  /** True once the connection is closed, by either side or after a failure. */
  get closed(): boolean {
    return this.#closed !== undefined;
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
    for (const w of this.#waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(err);
    }
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
    this.#onLineHook?.(line);
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      this.#fail(new ElectrumUnavailableError(this.url, 'garbled reply (not JSON)'));
      return;
    }
    // A JSON-RPC batch reply is an array of replies.
    const msgs = Array.isArray(parsed) ? parsed : [parsed];
    for (const msg of msgs) {
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
        this.#fail(new ElectrumUnavailableError(this.url, 'garbled reply (not a JSON-RPC object)'));
        return;
      }
      this.#onMessage(msg as { id?: unknown; result?: unknown; error?: unknown; method?: unknown });
    }
  }

  #onNotification(n: ElectrumNotification): void {
    for (const l of this.#listeners) {
      try {
        l(n);
      } catch {
        // a listener's failure is its own
      }
    }
    const i = this.#waiters.findIndex((w) => w.pred(n));
    if (i >= 0) {
      const [w] = this.#waiters.splice(i, 1);
      clearTimeout(w!.timer);
      w!.resolve(n);
    } else if (this.#buffer) this.notifications.push(n);
  }

  #onMessage(msg: {
    id?: unknown;
    result?: unknown;
    error?: unknown;
    method?: unknown;
    params?: unknown;
  }): void {
    if (typeof msg.method === 'string' && (msg.id === undefined || msg.id === null)) {
      const params = Array.isArray(msg.params) ? msg.params : msg.params === undefined ? [] : [msg.params];
      this.#onNotification({ method: msg.method, params });
      return;
    }
    // Some servers echo the id as a string.
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
 * A service's long-lived Electrum connection: opened when first needed, opened again after it failed or
 * closed; callers at the same moment share one connect.
 *
 * @example
 * const electrum = new ReconnectingElectrum('tcp://127.0.0.1:50001', { clientName: 'rgbx-swap' });
 * const tip = await (await electrum.get()).headersSubscribe();
 * await electrum.close();
 */
export class ReconnectingElectrum {
  readonly url: string;
  readonly #opts: ElectrumOptions;
  #conn: ElectrumConnection | undefined;
  #connecting: Promise<ElectrumConnection> | undefined;

  constructor(url: string, opts: ElectrumOptions = {}) {
    this.url = url;
    this.#opts = opts;
  }

  /** The open connection, or a new one. */
  get(): Promise<ElectrumConnection> {
    if (this.#conn && !this.#conn.closed) return Promise.resolve(this.#conn);
    this.#connecting ??= ElectrumConnection.connect(this.url, this.#opts).then(
      (c) => {
        this.#conn = c;
        this.#connecting = undefined;
        return c;
      },
      (err: unknown) => {
        this.#connecting = undefined;
        throw err;
      },
    );
    return this.#connecting;
  }

  /** Closes the connection; one still being opened is closed once it is up (a later `get()` opens anew). */
  async close(): Promise<void> {
    this.#conn?.close();
    this.#conn = undefined;
    await this.#connecting?.then((c) => c.close()).catch(() => {});
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
