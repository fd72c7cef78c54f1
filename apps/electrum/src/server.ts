import { createServer, type Server, type Socket } from 'node:net';
import type { BitcoindRpc } from '@rgbx/chains/btc';
import { ChainIndex } from './chain-index.ts';
import { ElectrumError, ErrorCode } from './errors.ts';
import { BitcoindFollower } from './follow.ts';
import type { ElectrumMetrics } from './metrics.ts';
import {
  handlers,
  INDEX_METHODS,
  type ProtocolContext,
  type ProtocolVersion,
  positionalParams,
  RawJson,
  type SessionState,
  statusHash,
} from './protocol.ts';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface ElectrumServerOptions {
  rpc: BitcoindRpc;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /**
   * 'events' (the default when `rpcAuth` is given): new blocks arrive by a `waitfornewblock` long-poll,
   * mempool changes by bitcoind's ZMQ feed when it publishes one; nothing is polled while idle.
   * 'poll' (the default without `rpcAuth`): tip and mempool are polled every `pollIntervalMs`.
   */
  follow?: 'events' | 'poll';
  /** bitcoind credentials for the long-poll connection (a BitcoindRpc does not reveal its own). */
  rpcAuth?: { user: string; password: string };
  /** `waitfornewblock` timeout (ms); it holds one bitcoind RPC thread while it waits. */
  longPollMs?: number;
  /** In 'events' mode, follow the mempool by bitcoind's ZMQ feed if it has one (default true). */
  zmq?: boolean;
  /**
   * Poll period (ms): in 'poll' mode for everything; in 'events' mode only for what is not pushed: the
   * mempool without ZMQ while a client is subscribed to a scripthash, the tip while the long-poll fails.
   */
  pollIntervalMs?: number;
  /**
   * Index-dependent requests first sync the index if its last sync began longer ago than this (ms).
   * 0 (default) = strict read-after-write: every such request sees at least bitcoind's state at the moment
   * it arrived (a sync started after it; concurrent requests share one sync).
   */
  freshnessMs?: number;
  /** BTC/kvB decimal string answered by `blockchain.estimatefee` when bitcoind has no estimate. */
  feeFallback?: string | null;
  /** Longest accepted request line in bytes; a longer line gets an error and the connection is closed. */
  maxLineBytes?: number;
  maxConnections?: number;
  banner?: string;
  protocolMax?: ProtocolVersion;
  logger?: Logger;
  /** Requests, syncs and the scrape-time gauges are reported here (metrics.ts). */
  metrics?: ElectrumMetrics;
}

export const SOFTWARE = 'rgbx-electrum 0.1.0';

const silent: Logger = { info() {}, warn() {}, error() {}, debug() {} };

interface Session extends SessionState {
  socket: Socket;
  queue: Promise<void>;
  /** Requests read but not yet answered; reading pauses above MAX_QUEUED. */
  queued: number;
  closing: boolean;
  /** Set by a reply after which the connection is closed (failed version negotiation). */
  closeAfterReply: boolean;
}

const MAX_QUEUED = 1000;

/**
 * Electrum protocol server (1.4 and 1.6) over newline-delimited JSON-RPC on TCP, backed by bitcoind.
 *
 * @example
 * const server = new ElectrumServer({ rpc, port: 0 });
 * const { port } = await server.start();
 */
export class ElectrumServer {
  readonly index: ChainIndex;
  readonly #opts: Required<Omit<ElectrumServerOptions, 'feeFallback' | 'logger' | 'rpcAuth' | 'metrics'>> & {
    feeFallback: string | null;
  };
  /** The event-driven follow ('events' mode); null in 'poll' mode. */
  readonly follower: BitcoindFollower | null;
  /** mempool_sequence of the last cheap mempool check ('events' mode without ZMQ). */
  #mempoolSeq: number | null = null;
  readonly #log: Logger;
  readonly #metrics: ElectrumMetrics | undefined;
  readonly #ctx: ProtocolContext;
  readonly #sessions = new Set<Session>();
  #server: Server | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** Start time of the newest sync known to have completed: state is at least that fresh. */
  #freshAsOf = -1;
  /** Why the latest sync failed; null once one succeeds. Index answers are refused meanwhile. */
  #syncError: string | null = null;
  #closing = false;

  constructor(opts: ElectrumServerOptions) {
    this.#opts = {
      rpc: opts.rpc,
      host: opts.host ?? '127.0.0.1',
      port: opts.port ?? 50001,
      follow: opts.follow ?? (opts.rpcAuth ? 'events' : 'poll'),
      longPollMs: opts.longPollMs ?? 10_000,
      zmq: opts.zmq ?? true,
      pollIntervalMs: opts.pollIntervalMs ?? 100,
      freshnessMs: opts.freshnessMs ?? 0,
      feeFallback: opts.feeFallback === undefined ? '0.00001' : opts.feeFallback,
      maxLineBytes: opts.maxLineBytes ?? 8 * 1024 * 1024,
      maxConnections: opts.maxConnections ?? 1024,
      banner: opts.banner ?? `Welcome to ${SOFTWARE}`,
      protocolMax: opts.protocolMax ?? '1.6',
    };
    this.#log = opts.logger ?? silent;
    this.#metrics = opts.metrics;
    opts.metrics?.watch({
      height: () => this.index.height,
      bitcoindHeight: () => opts.rpc.call<number>('getblockcount', []),
      bitcoindReachable: () => this.#syncError === null,
      sessions: () => this.#sessions.size,
      subscriptions: () => {
        let headers = 0;
        let scripthash = 0;
        for (const s of this.#sessions) {
          if (s.headersSubscribed) headers++;
          scripthash += s.scripthashes.size;
        }
        return { headers, scripthash };
      },
    });
    this.index = new ChainIndex(opts.rpc);
    if (this.#opts.follow === 'events' && !opts.rpcAuth)
      throw new TypeError("follow: 'events' needs rpcAuth (the long-poll's credentials)");
    this.follower =
      this.#opts.follow === 'events' && opts.rpcAuth
        ? new BitcoindFollower({
            url: opts.rpc.url,
            user: opts.rpcAuth.user,
            password: opts.rpcAuth.password,
            rpc: opts.rpc,
            waitMs: this.#opts.longPollMs,
            zmq: this.#opts.zmq,
            retryMs: this.#opts.pollIntervalMs,
            tip: () => this.index.tipHash,
            sync: () => this.#syncAndNotify(),
            onDegraded: () => this.#kickPoll(),
            logger: this.#log,
          })
        : null;
    this.#ctx = {
      index: this.index,
      rpc: opts.rpc,
      software: SOFTWARE,
      banner: this.#opts.banner,
      feeFallback: this.#opts.feeFallback,
      protocolMax: this.#opts.protocolMax,
      hosts: {},
      onBroadcast: () => void this.#syncAndNotify(),
    };
  }

  /** Builds the index up to bitcoind's tip, then listens. Resolves with the bound port. */
  async start(): Promise<{ host: string; port: number; indexMs: number; height: number }> {
    const t0 = performance.now();
    await this.#syncAndNotify(true);
    const indexMs = performance.now() - t0;
    this.#log.info({ height: this.index.height, indexMs: Math.round(indexMs) }, 'index built');
    const server = createServer({ noDelay: true }, (socket) => this.#accept(socket));
    server.maxConnections = this.#opts.maxConnections;
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#opts.port, this.#opts.host, () => resolve());
    });
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : this.#opts.port;
    this.#ctx.hosts = { [this.#opts.host]: { tcp_port: port, ssl_port: null } };
    this.follower?.start();
    this.#kickPoll();
    return { host: this.#opts.host, port, indexMs, height: this.index.height };
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.follower?.stop();
    for (const s of this.#sessions) s.socket.destroy();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  get connections(): number {
    return this.#sessions.size;
  }

  /**
   * Runs the poll timer while something is not pushed: in 'events' mode an idle server has no timer at
   * all (even a no-op tick every 100 ms costs ~0.4% of a core). Re-armed by the follower when it
   * degrades and by a scripthash subscription (the mempool may need polling from then on).
   */
  #kickPoll(): void {
    if (this.#closing || this.#timer || !this.#pollNeeded()) return;
    this.#timer = setTimeout(() => {
      void this.#pollOnce().finally(() => {
        this.#timer = null;
        this.#kickPoll();
      });
    }, this.#opts.pollIntervalMs);
    this.#timer.unref();
  }

  #pollNeeded(): boolean {
    const f = this.follower;
    if (!f?.blocksPushed) return true;
    return !f.mempoolPushed && this.#hasScripthashSubscribers();
  }

  /** One poll tick: everything in 'poll' mode, else only what the follower does not push right now. */
  async #pollOnce(): Promise<void> {
    const f = this.follower;
    if (!f?.blocksPushed) {
      await this.#syncAndNotify();
      return;
    }
    if (f.mempoolPushed || !this.#hasScripthashSubscribers()) return; // idle: no RPC at all
    // One cheap RPC; the full snapshot (3+ RPCs) only when the mempool actually changed.
    let seq: number;
    try {
      seq = (await this.#opts.rpc.call<{ mempool_sequence: number }>('getrawmempool', [false, true]))
        .mempool_sequence;
    } catch {
      await this.#syncAndNotify(); // records the failure
      return;
    }
    if (seq === this.#mempoolSeq) return;
    if (await this.#syncAndNotify()) this.#mempoolSeq = seq;
  }

  #hasScripthashSubscribers(): boolean {
    for (const s of this.#sessions) if (s.scripthashes.size > 0) return true;
    return false;
  }

  /** Syncs the index and sends the notifications it calls for; false (and the reason kept) if it failed. */
  async #syncAndNotify(throwOnError = false): Promise<boolean> {
    const started = performance.now();
    let result: Awaited<ReturnType<ChainIndex['sync']>>;
    try {
      // index.sync() coalesces, but always includes a pass that began after this call.
      result = await this.index.sync();
      this.#metrics?.syncs.inc({ result: 'ok' });
      this.#freshAsOf = Math.max(this.#freshAsOf, started);
      if (this.#syncError !== null) this.#log.info({ height: this.index.height }, 'index sync recovered');
      this.#syncError = null;
    } catch (err) {
      this.#metrics?.syncs.inc({ result: 'error' });
      if (throwOnError) throw err;
      const message = (err as Error).message;
      if (this.#syncError === null) this.#log.warn({ err: message }, 'index sync failed; will retry');
      this.#syncError = message;
      return false;
    }
    if (result.reorgDepth > 0) this.#metrics?.reorgs.inc();
    if (result.reorgDepth > 0)
      this.#log.info({ depth: result.reorgDepth, height: this.index.height }, 'reorg');
    if (result.newTip) {
      const header = {
        height: this.index.height,
        hex: this.index.headers[this.index.height]!.toString('hex'),
      };
      for (const s of this.#sessions) {
        if (s.headersSubscribed) this.#notify(s, 'blockchain.headers.subscribe', [header]);
      }
    }
    if (result.touched.size === 0) return true;
    const statuses = new Map<string, string | null>();
    for (const s of this.#sessions) {
      for (const [sh, last] of s.scripthashes) {
        if (!result.touched.has(sh)) continue;
        let status = statuses.get(sh);
        if (status === undefined) {
          status = statusHash(this.#ctx, sh);
          statuses.set(sh, status);
        }
        if (status !== last) {
          s.scripthashes.set(sh, status);
          this.#notify(s, 'blockchain.scripthash.subscribe', [sh, status]);
        }
      }
    }
    return true;
  }

  /**
   * Read-after-write: the answer must reflect bitcoind as of the request's arrival. A sync that began
   * after the arrival and has completed proves it, so pipelined requests share one sync. With a
   * freshness window, a snapshot begun at most `freshnessMs` ago is enough. Never a stale answer:
   * while the latest sync failed (bitcoind unreachable), or if the sync this request needs fails, the
   * request is refused with error 2.
   */
  async #ensureFresh(arrivedAt: number): Promise<void> {
    if (this.index.consistent && this.#syncError === null) {
      if (this.#freshAsOf >= arrivedAt) return;
      if (this.#opts.freshnessMs > 0 && performance.now() - this.#freshAsOf <= this.#opts.freshnessMs) return;
    }
    if (!(await this.#syncAndNotify())) {
      throw new ElectrumError(
        ErrorCode.DAEMON_ERROR,
        `bitcoind unreachable, index not synced: ${this.#syncError}`,
      );
    }
  }

  #accept(socket: Socket): void {
    socket.setNoDelay(true);
    const session: Session = {
      socket,
      queue: Promise.resolve(),
      queued: 0,
      closing: false,
      closeAfterReply: false,
      version: '1.4',
      versionNegotiated: false,
      headersSubscribed: false,
      scripthashes: new Map(),
    };
    this.#sessions.add(session);
    let pending: Buffer[] = [];
    let pendingLen = 0;
    socket.on('data', (chunk: Buffer) => {
      if (session.closing) return;
      let start = 0;
      for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
        pending.push(chunk.subarray(start, nl));
        const line = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
        pending = [];
        pendingLen = 0;
        start = nl + 1;
        if (line.length > this.#opts.maxLineBytes) return this.#tooLong(session);
        this.#enqueue(session, line, performance.now());
      }
      if (start < chunk.length) {
        pending.push(chunk.subarray(start));
        pendingLen += chunk.length - start;
        if (pendingLen > this.#opts.maxLineBytes) this.#tooLong(session);
      }
    });
    socket.on('error', (err) => this.#log.debug({ err: err.message }, 'client socket error'));
    socket.on('close', () => this.#sessions.delete(session));
  }

  #tooLong(session: Session): void {
    this.#write(session, {
      jsonrpc: '2.0',
      id: null,
      error: {
        code: ErrorCode.INVALID_REQUEST,
        message: `request line longer than ${this.#opts.maxLineBytes} bytes`,
      },
    });
    session.socket.end();
    session.socket.destroySoon?.();
  }

  /** Requests of one connection are answered in order; connections are independent. */
  #enqueue(session: Session, line: Buffer, arrivedAt: number): void {
    session.queued++;
    if (session.queued > MAX_QUEUED) session.socket.pause(); // back-pressure on a client that floods us
    session.queue = session.queue.then(async () => {
      try {
        await this.#process(session, line, arrivedAt);
      } finally {
        session.queued--;
        if (session.queued < MAX_QUEUED / 10 && session.socket.isPaused() && !session.closing)
          session.socket.resume();
      }
    });
  }

  async #process(session: Session, line: Buffer, arrivedAt: number): Promise<void> {
    {
      if (session.socket.destroyed || session.closing) return;
      const text = line.toString('utf8').trim();
      if (text.length === 0) return;
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch (err) {
        this.#metrics?.request('unknown', (performance.now() - arrivedAt) / 1000, ErrorCode.PARSE_ERROR);
        this.#write(session, {
          jsonrpc: '2.0',
          id: null,
          error: { code: ErrorCode.PARSE_ERROR, message: `parse error: ${(err as Error).message}` },
        });
        return;
      }
      if (Array.isArray(msg)) {
        if (msg.length === 0) {
          this.#write(session, {
            jsonrpc: '2.0',
            id: null,
            error: { code: ErrorCode.INVALID_REQUEST, message: 'empty batch' },
          });
          return;
        }
        const parts: string[] = [];
        for (const m of msg) {
          const r = await this.#handle(session, m, arrivedAt);
          if (r !== null) parts.push(r);
        }
        if (parts.length > 0) this.#writeLine(session, `[${parts.join(',')}]`);
      } else {
        const r = await this.#handle(session, msg, arrivedAt);
        if (r !== null) this.#writeLine(session, r);
      }
      if (session.closeAfterReply) {
        session.closing = true;
        session.socket.end();
      }
    }
  }

  /** Returns the serialized response, or null for a notification (no id member); counts it. */
  async #handle(session: Session, msg: unknown, arrivedAt: number): Promise<string | null> {
    if (!this.#metrics) return this.#answer(session, msg, arrivedAt, undefined);
    const outcome: { method: string; code?: number } = { method: 'unknown' };
    const r = await this.#answer(session, msg, arrivedAt, outcome);
    this.#metrics.request(outcome.method, (performance.now() - arrivedAt) / 1000, outcome.code);
    return r;
  }

  async #answer(
    session: Session,
    msg: unknown,
    arrivedAt: number,
    outcome: { method: string; code?: number } | undefined,
  ): Promise<string | null> {
    const isObj = typeof msg === 'object' && msg !== null && !Array.isArray(msg);
    const req = (isObj ? msg : {}) as { id?: unknown; method?: unknown; params?: unknown };
    const hasId = isObj && 'id' in req;
    const id =
      hasId && (typeof req.id === 'number' || typeof req.id === 'string' || req.id === null) ? req.id : null;
    const reply = (body: string) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},${body}}`;
    const fail = (code: number, message: string) => reply(`"error":${JSON.stringify({ code, message })}`);
    if (!isObj || typeof req.method !== 'string') {
      if (outcome) outcome.code = ErrorCode.INVALID_REQUEST;
      return fail(ErrorCode.INVALID_REQUEST, 'invalid request: expected an object with a string "method"');
    }
    const method = req.method;
    if (outcome) outcome.method = method;
    const handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined;
    if (!handler && outcome) outcome.code = ErrorCode.METHOD_NOT_FOUND;
    if (!handler) return hasId ? fail(ErrorCode.METHOD_NOT_FOUND, `unknown method "${method}"`) : null;
    try {
      let params: unknown[];
      if (req.params === undefined || req.params === null) params = [];
      else if (Array.isArray(req.params)) params = req.params;
      else if (typeof req.params === 'object')
        params = positionalParams(method, req.params as Record<string, unknown>);
      else
        throw new ElectrumError(ErrorCode.INVALID_PARAMS, `${method}: params must be an array or an object`);
      if (INDEX_METHODS.has(method)) await this.#ensureFresh(arrivedAt);
      const result = await handler(this.#ctx, session, params);
      if (method === 'blockchain.scripthash.subscribe') this.#kickPoll();
      if (!hasId) return null;
      const json = result instanceof RawJson ? result.text : JSON.stringify(result ?? null);
      return reply(`"result":${json}`);
    } catch (err) {
      if (outcome) outcome.code = err instanceof ElectrumError ? err.code : ErrorCode.INTERNAL;
      if (err instanceof ElectrumError) {
        if (err.closeConnection) session.closeAfterReply = true;
        return hasId ? fail(err.code, err.message) : null;
      }
      this.#log.error({ err: (err as Error).message, method }, 'request failed');
      return hasId ? fail(ErrorCode.INTERNAL, `internal error in ${method}`) : null;
    }
  }

  #notify(session: Session, method: string, params: unknown[]): void {
    this.#write(session, { jsonrpc: '2.0', method, params });
  }

  #write(session: Session, obj: unknown): void {
    this.#writeLine(session, JSON.stringify(obj));
  }

  #writeLine(session: Session, line: string): void {
    const s = session.socket;
    if (s.destroyed || !s.writable) return;
    // A client that stops reading must not make us buffer without bound.
    if (s.writableLength > 64 * 1024 * 1024) {
      this.#log.warn({ buffered: s.writableLength }, 'client not reading; closing');
      s.destroy();
      return;
    }
    s.write(`${line}\n`);
  }
}
