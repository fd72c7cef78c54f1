import { type BitcoindRpc, BitcoindRpcError, BitcoindUnavailableError } from '@rgbx/chains/btc';
import { HttpClient } from '@rgbx/service-kit/http-client';
import type { Logger } from './server.ts';
import { parseZmqAddress, ZmqSubscriber } from './zmq.ts';

/** What made the follower ask for a sync. */
export type FollowReason = 'block' | 'timeout' | 'recovered' | 'error' | 'mempool' | 'zmq-ready';

export interface FollowerOptions {
  /** Node-level RPC URL (credentials separate: BitcoindRpc keeps its own private). */
  url: string;
  user: string;
  password: string;
  /** For the quick calls (getzmqnotifications). */
  rpc: BitcoindRpc;
  /** `waitfornewblock` timeout; a return with a new tip syncs, a timeout costs nothing more. */
  waitMs: number;
  /**
   * First retry delay after a failure (doubles up to 1 s), and the least time between two syncs started
   * by ZMQ messages: under a burst the mempool is read at most this often (the first message at once).
   */
  retryMs: number;
  /** Look for bitcoind's ZMQ feed (else the mempool is left to the server's poll). */
  zmq: boolean;
  /** Our index tip; the long-poll returns as soon as bitcoind's differs. */
  tip: () => string | undefined;
  /** Sync and notify; resolves false when the sync failed. */
  sync: (why: FollowReason) => Promise<boolean>;
  /** Something stopped being pushed (long-poll failing, ZMQ feed lost or absent): the owner polls it. */
  onDegraded: () => void;
  logger: Logger;
}

/** ZMQ topics of bitcoind that tell of mempool changes, best first. */
const ZMQ_TOPICS: ReadonlyArray<[type: string, topic: string]> = [
  ['pubsequence', 'sequence'],
  ['pubhashtx', 'hashtx'],
];

/**
 * Follows bitcoind without polling: new blocks by a `waitfornewblock <ms> <our tip>` long-poll on its
 * own keep-alive connection (passing our tip closes the race between one return and the next call), and
 * mempool changes by bitcoind's ZMQ `sequence` (or `hashtx`) feed when bitcoind publishes one (found by
 * `getzmqnotifications`). `blocksPushed`/`mempoolPushed` say what is currently covered; the server polls
 * whatever is not. `stop()` aborts the long-poll and closes both sockets at once.
 */
export class BitcoindFollower {
  readonly #o: FollowerOptions;
  /** The kit's HTTP client with one socket of its own, kept alive between long-polls. */
  readonly #http = new HttpClient({ maxSockets: 1, maxFreeSockets: 1 });
  readonly #auth: string;
  /** Aborts the open long-poll (stop()). */
  #pending: AbortController | null = null;
  #zmq: ZmqSubscriber | null = null;
  #zmqTimer: NodeJS.Timeout | null = null;
  #sleep: { timer: NodeJS.Timeout; wake: () => void } | null = null;
  #stopped = false;
  #failures = 0;
  /** bitcoind refuses waitfornewblock (rpcwhitelist, old version): blocks must be polled. */
  #unsupported = false;
  #loop: Promise<void> | null = null;

  constructor(opts: FollowerOptions) {
    this.#o = opts;
    this.#auth = `Basic ${Buffer.from(`${opts.user}:${opts.password}`).toString('base64')}`;
  }

  /** True while the long-poll works: block notifications need no polling. */
  get blocksPushed(): boolean {
    return !this.#stopped && !this.#unsupported && this.#failures === 0;
  }

  /** True while a ZMQ feed is subscribed: mempool notifications need no polling. */
  get mempoolPushed(): boolean {
    return this.#zmqReady;
  }
  #zmqReady = false;
  #zmqConnecting = false;
  /** Next reconnect delay; grows while bitcoind publishes nothing we can reach (a path too long…). */
  #zmqRetryMs = 1000;
  #lastMempoolSync = -Infinity;
  #mempoolTimer: NodeJS.Timeout | null = null;

  /** True while a long-poll request is open (for tests). */
  get waiting(): boolean {
    return this.#pending !== null;
  }

  start(): void {
    if (this.#loop) return;
    this.#loop = this.#run();
    if (this.#o.zmq) void this.#connectZmq();
  }

  /** Aborts at once; a sync already running finishes on its own (its result is then ignored). */
  stop(): void {
    this.#stopped = true;
    this.#pending?.abort(new Error('stopped'));
    this.#pending = null;
    this.#sleep?.wake();
    if (this.#zmqTimer) clearTimeout(this.#zmqTimer);
    if (this.#mempoolTimer) clearTimeout(this.#mempoolTimer);
    this.#zmq?.close();
    this.#zmqReady = false;
    this.#http.close();
  }

  async #run(): Promise<void> {
    while (!this.#stopped && !this.#unsupported) {
      const tip = this.#o.tip();
      let hash: string;
      try {
        const r = (await this.#call('waitfornewblock', tip ? [this.#o.waitMs, tip] : [this.#o.waitMs])) as {
          hash: string;
        };
        hash = r.hash;
      } catch (err) {
        if (this.#stopped) return;
        if (isUnsupported(err)) {
          this.#unsupported = true;
          this.#o.logger.warn(
            { err: (err as Error).message },
            'bitcoind refuses waitfornewblock; polling for blocks',
          );
          this.#o.onDegraded();
          return;
        }
        if (this.#failures++ === 0) {
          this.#o.logger.warn({ err: (err as Error).message }, 'bitcoind long-poll failed; retrying');
          this.#o.onDegraded();
        }
        await this.#o.sync('error'); // records the outage, so index answers are refused meanwhile
        await this.#pause(Math.min(this.#o.retryMs * 2 ** Math.min(this.#failures - 1, 10), 1000));
        continue;
      }
      if (this.#stopped) return;
      let why: FollowReason = hash !== tip ? 'block' : 'timeout';
      if (this.#failures > 0) {
        this.#failures = 0;
        why = 'recovered';
        this.#o.logger.info({}, 'bitcoind long-poll recovered');
        if (this.#o.zmq && !this.#zmq) void this.#connectZmq();
      }
      // Same tip after the whole wait: nothing to do (the mempool is ZMQ's or the poll's business).
      if (why === 'timeout') continue;
      // Awaited: the next wait must carry the new tip, or it would return at once (a busy loop).
      if (!(await this.#o.sync(why)) && !this.#stopped) await this.#pause(this.#o.retryMs);
    }
  }

  #pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#sleep = null;
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#sleep = { timer, wake };
    });
  }

  /** One JSON-RPC call on the dedicated connection; aborted by stop(). */
  async #call(method: string, params: unknown[]): Promise<unknown> {
    const pending = new AbortController();
    this.#pending = pending;
    try {
      let status: number;
      let text: string;
      try {
        const reply = await this.#http.request(this.#o.url, {
          headers: { authorization: this.#auth, 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
          // Longer than the wait itself: only a dead connection trips it.
          timeoutMs: this.#o.waitMs + 30_000,
          maxReplyBytes: 1 << 20,
          retryStaleSocket: true,
          signal: pending.signal,
        });
        status = reply.status;
        text = reply.body.toString('utf8');
      } catch (err) {
        throw new BitcoindUnavailableError(method, err, this.#o.url);
      }
      if (status === 401 || status === 403 || !text.startsWith('{'))
        throw new BitcoindUnavailableError(method, new Error(`HTTP ${status}: ${text.slice(0, 200)}`));
      let reply: { result: unknown; error: { code: number; message: string } | null };
      try {
        reply = JSON.parse(text) as typeof reply;
      } catch (err) {
        throw new BitcoindUnavailableError(method, err, this.#o.url);
      }
      if (reply.error) throw new BitcoindRpcError(method, reply.error.code, reply.error.message);
      return reply.result;
    } finally {
      if (this.#pending === pending) this.#pending = null;
    }
  }

  /** Finds bitcoind's ZMQ feed and subscribes; retried every second while it is lost. */
  async #connectZmq(): Promise<void> {
    if (this.#stopped || this.#zmq || this.#zmqConnecting) return;
    this.#zmqConnecting = true;
    try {
      await this.#connectZmqOnce();
    } finally {
      this.#zmqConnecting = false;
    }
  }

  async #connectZmqOnce(): Promise<void> {
    let found: { address: string; topic: string } | undefined;
    try {
      const list = await this.#o.rpc.call<Array<{ type: string; address: string }>>('getzmqnotifications');
      for (const [type, topic] of ZMQ_TOPICS) {
        const n = list.find((x) => x.type === type);
        if (n) {
          found = { address: n.address, topic };
          break;
        }
      }
    } catch (err) {
      if (err instanceof BitcoindRpcError) return; // built without ZMQ: the mempool is polled
      return this.#retryZmq();
    }
    if (!found || this.#stopped) return; // none configured: the mempool is polled
    const endpoint = parseZmqAddress(found.address, new URL(this.#o.url).hostname);
    if (!endpoint) {
      this.#o.logger.warn({ address: found.address }, 'unsupported ZMQ address; polling the mempool');
      return;
    }
    const topic = found.topic;
    const sub = new ZmqSubscriber(
      endpoint,
      topic,
      (frames) => {
        if (frames[0]?.toString('ascii') !== topic) return;
        // `sequence` also tells of blocks (C/D): the long-poll has those; a second sync would only delay.
        const label = topic === 'sequence' ? frames[1]?.[32] : undefined;
        if (label === 0x43 || label === 0x44) return;
        this.#onMempoolEvent();
      },
      (err) => {
        if (this.#zmq === sub) this.#zmq = null;
        if (this.#stopped) return;
        if (this.#zmqReady) {
          this.#o.logger.warn({ err: err.message }, 'ZMQ feed lost; polling the mempool');
          this.#zmqReady = false;
          this.#o.onDegraded();
        }
        this.#retryZmq();
      },
    );
    this.#zmq = sub;
    try {
      await sub.ready;
    } catch {
      return; // onClose retries
    }
    if (this.#stopped) return;
    this.#zmqReady = true;
    this.#zmqRetryMs = 1000;
    this.#o.logger.info({ address: found.address, topic }, 'following the mempool by ZMQ');
    // Anything published before the subscription took effect is caught by one sync now.
    void this.#o.sync('zmq-ready');
  }

  #retryZmq(): void {
    if (this.#stopped || this.#zmqTimer) return;
    this.#zmqTimer = setTimeout(() => {
      this.#zmqTimer = null;
      void this.#connectZmq();
    }, this.#zmqRetryMs);
    this.#zmqRetryMs = Math.min(this.#zmqRetryMs * 2, 30_000);
    this.#zmqTimer.unref();
  }

  /** Leading-edge throttle: the first message syncs at once, a burst at most every retryMs. */
  #onMempoolEvent(): void {
    if (this.#stopped || this.#mempoolTimer) return;
    const wait = this.#lastMempoolSync + this.#o.retryMs - performance.now();
    const fire = () => {
      this.#mempoolTimer = null;
      this.#lastMempoolSync = performance.now();
      void this.#o.sync('mempool');
    };
    if (wait <= 0) fire();
    else this.#mempoolTimer = setTimeout(fire, wait);
  }
}

function isUnsupported(err: unknown): boolean {
  if (err instanceof BitcoindRpcError) return err.code === -32601; // method not found / not whitelisted
  return err instanceof BitcoindUnavailableError && /HTTP 403/.test(err.message);
}
