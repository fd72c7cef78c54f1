/**
 * A small Electrum protocol client (newline-delimited JSON-RPC over TCP) for the service's Bitcoin
 * needs: UTXOs of the user's address, broadcasts, and on-chain checks of reported transactions.
 * One lazily opened connection, re-opened after a failure; every request has a timeout.
 */
import { Socket } from 'node:net';

export class ElectrumError extends Error {
  override readonly name = 'ElectrumError';
  /** The server's JSON-RPC error code; undefined for transport failures (unreachable, timeout). */
  readonly code: number | undefined;
  constructor(message: string, code?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
  get isTransport(): boolean {
    return this.code === undefined;
  }
}

export interface ElectrumUtxo {
  tx_hash: string;
  tx_pos: number;
  height: number;
  value: number;
}

export interface ElectrumHistoryEntry {
  tx_hash: string;
  height: number;
}

const MAX_LINE = 16 * 1024 * 1024;

export class ElectrumClient {
  readonly url: string;
  readonly #timeoutMs: number;
  #socket: Socket | undefined;
  #connecting: Promise<Socket> | undefined;
  #buf = '';
  #nextId = 1;
  readonly #pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();

  constructor(url: string, opts: { timeoutMs?: number } = {}) {
    const u = new URL(url);
    if (u.protocol !== 'tcp:' || !u.port)
      throw new ElectrumError(`electrum url must be tcp://host:port, got ${url}`);
    this.url = url;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
  }

  #connect(): Promise<Socket> {
    if (this.#socket && !this.#socket.destroyed) return Promise.resolve(this.#socket);
    this.#connecting ??= new Promise<Socket>((resolve, reject) => {
      const u = new URL(this.url);
      const s = new Socket();
      s.setNoDelay(true);
      s.setEncoding('utf8');
      const timer = setTimeout(() => s.destroy(new Error('connect timeout')), this.#timeoutMs);
      s.once('error', (err) => {
        clearTimeout(timer);
        this.#connecting = undefined;
        reject(
          new ElectrumError(`electrum ${this.url} unreachable: ${err.message}`, undefined, { cause: err }),
        );
      });
      s.connect(Number(u.port), u.hostname, () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        s.on('error', () => {});
        s.on('data', (d: string) => this.#onData(d));
        s.on('close', () => this.#onClose(s));
        this.#socket = s;
        this.#buf = '';
        this.#connecting = undefined;
        resolve(s);
      });
    });
    return this.#connecting;
  }

  #onClose(s: Socket): void {
    if (this.#socket === s) this.#socket = undefined;
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new ElectrumError('electrum connection closed'));
      this.#pending.delete(id);
    }
  }

  #onData(d: string): void {
    this.#buf += d;
    if (this.#buf.length > MAX_LINE) {
      this.#socket?.destroy();
      return;
    }
    for (let nl = this.#buf.indexOf('\n'); nl !== -1; nl = this.#buf.indexOf('\n')) {
      const line = this.#buf.slice(0, nl);
      this.#buf = this.#buf.slice(nl + 1);
      let msg: { id?: unknown; result?: unknown; error?: { code?: number; message?: string } | null };
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof msg.id !== 'number') continue; // notifications: not subscribed to any
      const p = this.#pending.get(msg.id);
      if (!p) continue;
      this.#pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error)
        p.reject(new ElectrumError(String(msg.error.message ?? 'error'), Number(msg.error.code ?? -1)));
      else p.resolve(msg.result);
    }
  }

  async request<T>(method: string, params: unknown[] = []): Promise<T> {
    const socket = await this.#connect();
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new ElectrumError(`electrum ${method} timed out after ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  listUnspent(scripthash: string): Promise<ElectrumUtxo[]> {
    return this.request('blockchain.scripthash.listunspent', [scripthash]);
  }

  history(scripthash: string): Promise<ElectrumHistoryEntry[]> {
    return this.request('blockchain.scripthash.get_history', [scripthash]);
  }

  broadcast(txHex: string): Promise<string> {
    return this.request('blockchain.transaction.broadcast', [txHex]);
  }

  async ping(): Promise<void> {
    await this.request('server.ping');
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }
}
