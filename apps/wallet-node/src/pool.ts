import { join } from 'node:path';
import { RgbHost, type RgbHostOptions, type WalletFunction } from '@rgbx/rgb';
import type { WalletNodeConfig } from './config.ts';

/** How long a clean stop waits for a child to end its calls and exit before SIGKILL (below the kit's 10 s). */
const CHILD_CLOSE_TIMEOUT_MS = 5_000;

export type Priority = 'foreground' | 'background';

interface Task {
  fn: () => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** The wallet (fingerprint) the task runs for; '' for calls that read no wallet. */
  owner: string;
  /** Talks to RGB proxies (a counterparty's endpoint may never answer): the short isolation budget applies. */
  transport: boolean;
}

/**
 * One rgb-lib child process and the queue in front of it. rgb-lib calls block their process, so a
 * slot runs one call at a time; foreground (HTTP) calls always go before queued background work
 * (refresh, idle drops), so background work never delays a client call that is waiting.
 *
 * Isolation (see `WalletRegistry`): a call running longer than the budget makes the slot "stuck" for the
 * other wallets; they are moved to another child (their stale handles here abandoned), the slot is tainted,
 * and a tainted slot restarts its child as soon as its running call ends, before it runs anything else, so
 * no stale wallet object ever runs again.
 */
export class Slot {
  readonly index: number;
  readonly host: RgbHost;
  /** Wallet keys owned by this slot's child. */
  readonly wallets = new Set<string>();
  readonly #fg: Task[] = [];
  readonly #bg: Task[] = [];
  #running: { owner: string; since: number; transport: boolean } | null = null;
  /** Wallets were moved off this child while it was busy: restart it before the next task. */
  tainted = false;
  /** This spare's child is being stopped (it holds no wallet): its exit is no restart (metrics). */
  stoppingSpare = false;

  constructor(index: number, host: RgbHost) {
    this.index = index;
    this.host = host;
  }

  get queued(): number {
    return this.#fg.length + this.#bg.length + (this.#running ? 1 : 0);
  }

  /** Calls waiting (not running), by priority. */
  get waiting(): { foreground: number; background: number } {
    return { foreground: this.#fg.length, background: this.#bg.length };
  }

  /** The wallet whose call runs now, and for how long (ms); null when idle. */
  running(now = Date.now()): { owner: string; forMs: number; transport: boolean } | null {
    const r = this.#running;
    return r ? { owner: r.owner, forMs: now - r.since, transport: r.transport } : null;
  }

  /**
   * Queues `fn`. `urgent` goes before every queued call: only for a wallet's close that another call waits for
   * (budget.ts), a ~1 ms drop of a wallet with nothing queued, which must not wait behind the whole queue.
   */
  run<T>(priority: Priority | 'urgent', fn: () => Promise<T>, owner = '', transport = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const task = { fn, resolve: resolve as (v: unknown) => void, reject, owner, transport };
      if (priority === 'urgent') {
        this.#fg.unshift(task);
        this.#pump();
      } else this.#push(priority, task);
    });
  }

  #push(priority: Priority, task: Task): void {
    (priority === 'foreground' ? this.#fg : this.#bg).push(task);
    this.#pump();
  }

  /** The wallets with calls waiting (not running) in this slot's queues. */
  queuedOwners(): Set<string> {
    return new Set([...this.#fg, ...this.#bg].map((t) => t.owner));
  }

  /** Removes and returns the queued (not running) tasks of wallet `owner`, in order, with their priority. */
  takeQueuedOf(owner: string): Array<{ priority: Priority; task: Task }> {
    const out: Array<{ priority: Priority; task: Task }> = [];
    for (const [priority, q] of [
      ['foreground', this.#fg],
      ['background', this.#bg],
    ] as const) {
      for (let i = 0; i < q.length; ) {
        if (q[i]!.owner === owner) out.push({ priority, task: q.splice(i, 1)[0]! });
        else i++;
      }
    }
    return out;
  }

  /** Queues tasks taken from another slot (their wallets were moved here). */
  adopt(tasks: Array<{ priority: Priority; task: Task }>): void {
    for (const { priority, task } of tasks) this.#push(priority, task);
  }

  #pump(): void {
    if (this.#running) return;
    const task = this.#fg.shift() ?? this.#bg.shift();
    if (!task) return;
    this.#running = { owner: task.owner, since: Date.now(), transport: task.transport };
    task
      .fn()
      .then(task.resolve, task.reject)
      .finally(() => this.#afterTask());
  }

  /**
   * A slot is only tainted while it runs a call (wallets move off a busy child), so right after that call is the
   * one place its child is restarted, before anything else runs here.
   */
  #afterTask(): void {
    if (!this.tainted) {
      this.#running = null;
      this.#pump();
      return;
    }
    this.#running = { owner: '', since: Date.now(), transport: false };
    void this.host
      .restartChild()
      .catch(() => {})
      .finally(() => {
        this.tainted = false;
        this.#running = null;
        this.#pump();
      });
  }
}

/**
 * Where the pool's children are recorded (`<data_dir>/.children/child-<pid>.pid`): `main.ts` kills the ones
 * a killed predecessor left running (`killLeftoverChildren`) before anything opens a wallet.
 */
export function childPidDir(dataDir: string): string {
  return join(dataDir, '.children');
}

/** Told of every rgb-lib call a pool's children make: its name, seconds (IPC included) and whether it succeeded. */
export type RgbCallObserver = (call: string, seconds: number, ok: boolean) => void;

/**
 * An {@link RgbHost} that times its calls (the metrics' `rgblib_call_duration_seconds`): wallet functions by
 * their rgb-lib name, opening and freeing a wallet, and the few stateless operations by theirs.
 */
class TimedHost extends RgbHost {
  readonly #observe: RgbCallObserver;

  constructor(opts: RgbHostOptions, observe: RgbCallObserver) {
    super(opts);
    this.#observe = observe;
    // The stateless operations (invoiceData, generateKeys, restoreBackup, …), by their operation name.
    const request = this.request.bind(this) as (op: string, ...args: unknown[]) => Promise<unknown>;
    this.request = ((op: string, ...args: unknown[]) =>
      this.#timed(op, performance.now(), request(op, ...args))) as RgbHost['request'];
  }

  /** Reports `p` (started at `t0`) when it settles; returns it unchanged (no await, no wrapper promise). */
  #timed<T>(call: string, t0: number, p: Promise<T>): Promise<T> {
    p.then(
      () => this.#observe(call, (performance.now() - t0) / 1000, true),
      () => this.#observe(call, (performance.now() - t0) / 1000, false),
    );
    return p;
  }

  override callWallet(
    handle: string,
    fn: WalletFunction,
    args: Parameters<RgbHost['callWallet']>[2],
    timeoutMs?: number,
  ): Promise<string | null> {
    return this.#timed(fn, performance.now(), super.callWallet(handle, fn, args, timeoutMs));
  }

  override newWallet(
    dataDir: string,
    masterFingerprint: string,
    walletDataJson: string,
    keysJson: string,
  ): Promise<string> {
    return this.#timed(
      'rgblib_new_wallet',
      performance.now(),
      super.newWallet(dataDir, masterFingerprint, walletDataJson, keysJson),
    );
  }

  override freeWallet(handle: string): Promise<void> {
    // A handle already closed is a no-op that never reaches rgb-lib: not a call.
    if (!this.isOpen(handle)) return super.freeWallet(handle);
    return this.#timed('rgblib_free_wallet', performance.now(), super.freeWallet(handle));
  }
}

/**
 * The rgb-lib process pool: `size` children, each owning a disjoint set of wallets. The HTTP process
 * never loads the addon. A new wallet goes to the child owning the fewest wallets.
 */
export class ChildPool {
  readonly slots: Slot[];

  /** `pidDir`: record each child there while it runs (see `RgbHostOptions.pidDir`). */
  readonly #hostOpts: { callTimeoutMs: number; closeTimeoutMs: number; pidDir?: string };
  /** Times every rgb-lib call (metrics on), else undefined: plain hosts, nothing timed. */
  readonly #observe: RgbCallObserver | undefined;
  /** Set by {@link close}: children exiting now are not restarts. */
  closing = false;
  /** Children the pool may grow to while some are stuck (isolation); `size` are started up front. */
  readonly maxSize: number;
  /**
   * A slot running one call longer than this (ms) counts as stuck for the other wallets: `budgetMs` for calls
   * that talk to RGB proxies (a counterparty's endpoint can hang one wallet's call), `otherBudgetMs` (10×) for the
   * rest (an indexer sync is slow for every wallet alike, so moving them would only add churn).
   */
  readonly budgetMs: number;
  readonly otherBudgetMs: number;
  /** The children started up front; the ones above it are spares, stopped again when they hold no wallet. */
  readonly baseSize: number;

  constructor(
    size: number,
    opts: {
      callTimeoutMs: number;
      pidDir?: string;
      maxSize?: number;
      budgetMs?: number;
      observe?: RgbCallObserver;
    },
  ) {
    // A child still busy at shutdown is SIGKILLed after 5 s: within the service's 10 s shutdown budget, so the node
    // reaps it and removes its pid file before it exits (at 10 s both timers raced and the file could stay).
    this.#hostOpts = {
      callTimeoutMs: opts.callTimeoutMs,
      closeTimeoutMs: CHILD_CLOSE_TIMEOUT_MS,
      pidDir: opts.pidDir,
    };
    this.maxSize = Math.max(size, opts.maxSize ?? size * 2);
    this.budgetMs = opts.budgetMs ?? 250;
    this.otherBudgetMs = this.budgetMs * 10;
    this.baseSize = size;
    this.#observe = opts.observe;
    this.slots = Array.from({ length: size }, (_, i) => new Slot(i, this.#host()));
  }

  #host(): RgbHost {
    return this.#observe ? new TimedHost(this.#hostOpts, this.#observe) : new RgbHost(this.#hostOpts);
  }

  /**
   * A slot to move a wallet to, away from `from`: an idle child, else the least busy child that is not stuck,
   * else a new child while the pool is below `maxSize`; undefined when every slot is stuck and the pool is full.
   */
  spareFor(from: Slot, now = Date.now()): Slot | undefined {
    const free = this.slots.filter((s) => s !== from && !this.isStuck(s, now));
    const byLoad = (a: Slot, b: Slot) =>
      b.queued < a.queued || (b.queued === a.queued && b.wallets.size < a.wallets.size) ? b : a;
    // An idle child first (one is kept warm while a slot is stuck, see ensureSpare); else the least busy child
    // that is not stuck (a cold start costs more than queueing behind a short call); else a new child while the
    // pool may grow.
    const idle = free.filter((s) => s.queued === 0);
    if (idle.length > 0) return idle.reduce(byLoad);
    if (free.length > 0) return free.reduce(byLoad);
    if (this.slots.length >= this.maxSize) return undefined;
    return this.#add();
  }

  /**
   * While a slot is stuck, keep `want` idle children warm (started, within `maxSize`) to move wallets to, so the
   * first call of a moved wallet does not also pay for a child start (~0.2–0.3 s) and moved wallets reopen in
   * parallel.
   */
  ensureSpare(now = Date.now(), want = 2): void {
    let idle = this.slots.filter((s) => s.queued === 0 && !this.isStuck(s, now)).length;
    while (idle < want && this.slots.length < this.maxSize) {
      const slot = this.#add();
      slot.host.start().catch(() => {}); // a failed start is retried by the first call
      idle++;
    }
  }

  #add(): Slot {
    const slot = new Slot(this.slots.length, this.#host());
    this.slots.push(slot);
    for (const cb of this.#onSlot) cb(slot);
    return slot;
  }

  readonly #onSlot: Array<(slot: Slot) => void> = [];

  /** Calls `cb` for every slot, now and when the pool grows. */
  onSlot(cb: (slot: Slot) => void): void {
    for (const s of this.slots) cb(s);
    this.#onSlot.push(cb);
  }

  isStuck(slot: Slot, now = Date.now()): boolean {
    const r = slot.running(now);
    return r !== null && r.forMs > (r.transport ? this.budgetMs : this.otherBudgetMs);
  }

  /** The pool of a wallet node: `workers` children, `call_timeout_secs`, recorded in {@link childPidDir}. */
  static forConfig(wallet: WalletNodeConfig['wallet'], observe?: RgbCallObserver): ChildPool {
    return new ChildPool(wallet.workers, {
      callTimeoutMs: wallet.call_timeout_secs * 1000,
      pidDir: childPidDir(wallet.data_dir),
      maxSize: wallet.max_workers ?? wallet.workers * 2,
      budgetMs: wallet.isolation_budget_ms,
      ...(observe ? { observe } : {}),
    });
  }

  async start(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.host.start()));
  }

  /** Where a wallet opening now goes: the slot owning the fewest wallets, preferring ones not stuck. */
  leastLoaded(now = Date.now()): Slot {
    const free = this.slots.filter((s) => !this.isStuck(s, now));
    const base = free.filter((s) => s.index < this.baseSize);
    const pick = base.length > 0 ? base : free.length > 0 ? free : this.slots;
    return pick.reduce((a, b) => (b.wallets.size < a.wallets.size ? b : a));
  }

  /**
   * Stops the child of every spare slot that holds no wallet and has nothing to do (no process for nothing), once
   * no slot is stuck: while one is, the idle spares are the warm ones `ensureSpare` keeps.
   */
  stopIdleSpares(now = Date.now()): void {
    if (this.slots.some((s) => this.isStuck(s, now))) return;
    for (const s of this.slots) {
      if (s.index >= this.baseSize && s.wallets.size === 0 && s.queued === 0 && s.host.pid !== undefined) {
        s.stoppingSpare = true;
        void s.host
          .restartChild()
          .catch(() => {})
          .finally(() => {
            s.stoppingSpare = false;
          });
      }
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.slots.map((s) => s.host.close()));
  }
}
