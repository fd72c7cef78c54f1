import { Socket } from 'node:net';

export interface Notification {
  method: string;
  params: unknown[];
}

/** An Electrum JSON-RPC error reply. */
export class ElectrumReplyError extends Error {
  override readonly name = 'ElectrumReplyError';
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Minimal newline-delimited JSON-RPC Electrum client (tests, benchmarks, health checks).
 *
 * @example
 * const c = await ElectrumClient.connect('tcp://127.0.0.1:50001');
 * const [software, version] = await c.request('server.version', ['me', ['1.4', '1.6']]);
 */
export class ElectrumClient {
  readonly notifications: Notification[] = [];
  readonly #socket: Socket;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly #waiters: Array<{ pred: (n: Notification) => boolean; resolve: (n: Notification) => void }> = [];
  /** Raw reply lines, for tests that check exact bytes. */
  readonly lines: string[] = [];
  #nextId = 1;
  #buf = '';

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => this.#onData(d));
    socket.on('close', () => {
      for (const p of this.#pending.values()) p.reject(new Error('connection closed'));
      this.#pending.clear();
    });
  }

  static connect(url: string): Promise<ElectrumClient> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const s = new Socket();
      s.setNoDelay(true);
      s.once('error', reject);
      s.connect(Number(u.port), u.hostname, () => {
        s.off('error', reject);
        s.on('error', () => {});
        resolve(new ElectrumClient(s));
      });
    });
  }

  #onData(d: string): void {
    this.#buf += d;
    for (let nl = this.#buf.indexOf('\n'); nl !== -1; nl = this.#buf.indexOf('\n')) {
      const line = this.#buf.slice(0, nl);
      this.#buf = this.#buf.slice(nl + 1);
      this.lines.push(line);
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue; // not JSON: kept in `lines` for tests, ignored otherwise
      }
      const msg = parsed as {
        id?: number;
        result?: unknown;
        error?: { code: number; message: string };
        method?: string;
        params?: unknown[];
      };
      if (msg.method) {
        const n = { method: msg.method, params: msg.params ?? [] };
        const i = this.#waiters.findIndex((w) => w.pred(n));
        if (i >= 0) this.#waiters.splice(i, 1)[0]!.resolve(n);
        else this.notifications.push(n);
        continue;
      }
      const p = typeof msg.id === 'number' ? this.#pending.get(msg.id) : undefined;
      if (!p) continue;
      this.#pending.delete(msg.id!);
      if (msg.error) p.reject(new ElectrumReplyError(msg.error.code, msg.error.message));
      else p.resolve(msg.result);
    }
  }

  request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    if (this.#socket.destroyed) return Promise.reject(new Error('connection closed'));
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  /** Sends raw bytes (for malformed-input tests). */
  writeRaw(data: string | Buffer): void {
    this.#socket.write(data);
  }

  /** Resolves with the next notification matching `pred` (including ones already received). */
  nextNotification(pred: (n: Notification) => boolean, timeoutMs = 10_000): Promise<Notification> {
    const i = this.notifications.findIndex(pred);
    if (i >= 0) return Promise.resolve(this.notifications.splice(i, 1)[0]!);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve };
      this.#waiters.push(w);
      setTimeout(() => {
        const j = this.#waiters.indexOf(w);
        if (j >= 0) {
          this.#waiters.splice(j, 1);
          reject(new Error(`no matching notification within ${timeoutMs} ms`));
        }
      }, timeoutMs).unref();
    });
  }

  /** Waits for the next raw line after `count` lines (raw-protocol tests). */
  async waitLines(count: number, timeoutMs = 5000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return this.lines;
  }

  get closed(): boolean {
    return this.#socket.destroyed;
  }

  close(): void {
    this.#socket.destroy();
  }
}
