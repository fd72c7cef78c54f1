/**
 * The test and benchmark client of this server: the one Electrum client of `@rgbx/chains/btc`
 * ({@link ElectrumConnection}) opened without its own `server.version` (the tests negotiate themselves),
 * keeping every reply line and every notification, with the server's error text as the error's message.
 */
import { ElectrumConnection, type ElectrumNotification, ElectrumServerError } from '@rgbx/chains/btc';

export type Notification = ElectrumNotification;

/** An Electrum JSON-RPC error reply; `message` is the server's own text, unchanged. */
export class ElectrumReplyError extends ElectrumServerError {
  constructor(err: ElectrumServerError) {
    super(err.method, err.code, err.serverMessage);
    this.message = err.serverMessage;
  }
}

/**
 * @example
 * const c = await ElectrumClient.connect('tcp://127.0.0.1:50001');
 * const [software, version] = await c.request('server.version', ['me', ['1.4', '1.6']]);
 */
export class ElectrumClient {
  /** Raw reply lines, for tests that check exact bytes. */
  readonly lines: string[];
  readonly #c: ElectrumConnection;

  private constructor(c: ElectrumConnection, lines: string[]) {
    this.#c = c;
    this.lines = lines;
  }

  static async connect(url: string): Promise<ElectrumClient> {
    const lines: string[] = [];
    const c = await ElectrumConnection.connect(url, {
      handshake: false,
      bufferNotifications: true,
      onLine: (line) => lines.push(line),
      timeoutMs: 120_000, // the tests' and benchmarks' own timeouts decide
    });
    return new ElectrumClient(c, lines);
  }

  /** Notifications not yet taken by {@link nextNotification}. */
  get notifications(): Notification[] {
    return this.#c.notifications;
  }

  async request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    try {
      return await this.#c.request<T>(method, params);
    } catch (err) {
      throw err instanceof ElectrumServerError ? new ElectrumReplyError(err) : err;
    }
  }

  /** Sends raw bytes (for malformed-input tests). */
  writeRaw(data: string | Buffer): void {
    this.#c.writeRaw(data);
  }

  /** Resolves with the next notification matching `pred` (including ones already received). */
  nextNotification(pred: (n: Notification) => boolean, timeoutMs = 10_000): Promise<Notification> {
    return this.#c.nextNotification(pred, timeoutMs);
  }

  /** Waits until at least `count` lines have arrived (raw-protocol tests). */
  async waitLines(count: number, timeoutMs = 5000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return this.lines;
  }

  get closed(): boolean {
    return this.#c.closed;
  }

  close(): void {
    this.#c.close();
  }
}
