/**
 * The budget of wallets open and online at once, across every rgb-lib child.
 *
 * Why: every online rgb-lib wallet holds its own indexer connections (two with rgb-lib 0.3: BDK's Electrum
 * client and the RGB resolver's) for as long as it stays open, so without a bound the node's capacity is the
 * indexer's connection limit (1,024 connections = 512 wallets on the devnet's Electrum server; then every new
 * wallet failed with `InvalidIndexer`). And every open wallet (online or not) holds ~3 file descriptors, 2 threads
 * and ~0.5 MiB in its child. So a wallet takes a seat before it is opened ("open" seat) and another before it goes
 * online ("online" seat); when a seat is needed and none is free, the least recently used idle wallet holding one is
 * closed first (its wallet dropped in its child, its lock released), and the call waits until the close is done.
 *
 * Rules:
 * - Seats are taken before the call is queued in the wallet's child, never inside it (a child waiting for
 *   another child's close could deadlock), and held while any call of the wallet is queued or running.
 * - A wallet with a call queued, running or waiting here, or that the caller says must stay (a background refresh
 *   in flight), is never the one closed (`evictable`).
 * - Waiting calls are served in order, client calls before background work; a client call that gets no seat
 *   within its timeout fails with {@link BudgetWaitTimeout} (503 `wallets_busy`).
 * - A seat being freed by a close still counts as used until the close is done: the limits are never exceeded,
 *   not even for a moment. So do handles abandoned in a busy child (isolation) until that child exits; a wallet is
 *   moved off a busy child only while the budget has room for its abandoned handle (`canAbandon`).
 *
 * This module is the bookkeeping only (no processes): `close` is given by the wallet registry.
 */

export type BudgetPriority = 'foreground' | 'background';

export interface BudgetOptions<M> {
  /** Wallets open at once (online or not). */
  maxOpen: number;
  /** Wallets online at once (each holds the indexer connections of one rgb-lib wallet). */
  maxOnline: number;
  /**
   * Closes `m`'s wallet to free its seats (queued in its child: synchronously, before this returns its promise, so a
   * call of `m` arriving later runs after the close). Resolves once closed; a rejection counts as closed too (a child
   * that died took the wallet with it).
   */
  close(m: M): Promise<void>;
  /** May `m` be closed now? False while a call of it is queued, running or waiting for a seat. */
  evictable(m: M): boolean;
  /** How long a client call waits for a seat before {@link BudgetWaitTimeout} (ms). Default 30 s. */
  waitTimeoutMs?: number;
  /**
   * Background work waiting this long (ms) is served with the client calls, in arrival order, so a node busy with
   * clients still refreshes its transfers in turn. Default 10 s.
   */
  backgroundAgingMs?: number;
}

/** What a member holds. */
export interface Seats {
  open: boolean;
  online: boolean;
}

/** A client call got no seat in time: more wallets than the budget have calls in flight. */
export class BudgetWaitTimeout extends Error {
  override readonly name = 'BudgetWaitTimeout';
  readonly waitedMs: number;
  readonly online: boolean;
  constructor(waitedMs: number, online: boolean) {
    super(`no ${online ? 'online' : 'open'} wallet seat free within ${waitedMs} ms`);
    this.waitedMs = waitedMs;
    this.online = online;
  }
}

interface Waiter<M> {
  m: M;
  online: boolean;
  since: number;
  resolve: () => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

export interface BudgetStats {
  /** Seats in use, including those of closes in progress and of abandoned handles. */
  open: number;
  online: number;
  max_open: number;
  max_online: number;
  /** Wallets being closed to make room right now. */
  closing: number;
  /** Calls waiting for a seat (client, background). */
  waiting: number;
  waiting_background: number;
  /** Wallets closed to make room since start. */
  closed_for_room: number;
}

export class WalletBudget<M> {
  readonly maxOpen: number;
  readonly maxOnline: number;
  readonly #close: (m: M) => Promise<void>;
  readonly #evictable: (m: M) => boolean;
  readonly #waitMs: number;
  readonly #agingMs: number;
  /** Seat holders, least recently used first (Map insertion order; `touch` moves a member to the end). */
  readonly #open = new Map<M, true>();
  readonly #online = new Map<M, true>();
  /** Seats of closes in progress (still used until the close is done). */
  #closingOpen = 0;
  #closingOnline = 0;
  /** Seats of handles abandoned in busy children, by child: used until that child exits. */
  readonly #abandoned = new Map<number, { nOpen: number; nOnline: number }>();
  readonly #fg: Waiter<M>[] = [];
  readonly #bg: Waiter<M>[] = [];
  #closedForRoom = 0;

  constructor(opts: BudgetOptions<M>) {
    if (!(opts.maxOnline >= 1 && opts.maxOpen >= opts.maxOnline))
      throw new RangeError(`budget: need 1 <= maxOnline <= maxOpen, got ${opts.maxOnline}/${opts.maxOpen}`);
    this.maxOpen = opts.maxOpen;
    this.maxOnline = opts.maxOnline;
    this.#close = opts.close;
    this.#evictable = opts.evictable;
    this.#waitMs = opts.waitTimeoutMs ?? 30_000;
    this.#agingMs = opts.backgroundAgingMs ?? 10_000;
  }

  /** The seats `m` holds now. */
  holds(m: M): Seats {
    return { open: this.#open.has(m), online: this.#online.has(m) };
  }

  get usedOpen(): number {
    let n = this.#open.size + this.#closingOpen;
    for (const a of this.#abandoned.values()) n += a.nOpen;
    return n;
  }

  get usedOnline(): number {
    let n = this.#online.size + this.#closingOnline;
    for (const a of this.#abandoned.values()) n += a.nOnline;
    return n;
  }

  /** `m` was used by a client: it becomes the most recently used of the holders (closed last). */
  touch(m: M): void {
    if (this.#open.delete(m)) this.#open.set(m, true);
    if (this.#online.delete(m)) this.#online.set(m, true);
  }

  /**
   * Resolves once `m` holds an open seat, and an online seat too if `online`: at once when it holds them or they
   * are free, else after closing least recently used idle wallets (or after other calls end). Client calls are
   * served before background work and time out ({@link BudgetWaitTimeout}); background work waits.
   * The caller must keep `m` from being evicted meanwhile (`evictable(m)` false).
   */
  acquire(m: M, online: boolean, priority: BudgetPriority = 'foreground'): Promise<void> {
    const held = this.#open.has(m) && (!online || this.#online.has(m));
    // Free seats go to earlier waiters first (the queue is served in order by #pump).
    if (held || (this.#fg.length + this.#bg.length === 0 && this.tryTake(m, online)))
      return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const w: Waiter<M> = { m, online, since: Date.now(), resolve, reject, timer: undefined };
      if (priority === 'foreground') {
        w.timer = setTimeout(() => {
          const i = this.#fg.indexOf(w);
          if (i < 0) return;
          this.#fg.splice(i, 1);
          reject(new BudgetWaitTimeout(Date.now() - w.since, online));
          this.#pump(); // what it was owed may now serve someone behind it
        }, this.#waitMs);
        w.timer.unref?.();
        this.#fg.push(w);
      } else {
        this.#bg.push(w);
      }
      this.#pump();
    });
  }

  /** Takes what `m` needs if it is free now (no waiting, no closing); true if `m` then holds it. */
  tryTake(m: M, online: boolean): boolean {
    const needOpen = !this.#open.has(m);
    const needOnline = online && !this.#online.has(m);
    if (!needOpen && !needOnline) return true;
    if (needOpen && this.usedOpen >= this.maxOpen) return false;
    if (needOnline && this.usedOnline >= this.maxOnline) return false;
    if (needOpen) this.#open.set(m, true);
    if (needOnline) this.#online.set(m, true);
    return true;
  }

  /**
   * `m`'s wallet is now in state `now` and no call of it is queued or running: seats it no longer uses are freed
   * (an online seat when it is not online, both when it is not open).
   */
  settle(m: M, now: Seats): void {
    let freed = false;
    if (!now.online && this.#online.delete(m)) freed = true;
    if (!now.open && this.#open.delete(m)) {
      this.#online.delete(m);
      freed = true;
    }
    if (freed) this.#pump();
  }

  /** Hands `from`'s seats to `to` (a call of a dropped context continues on the wallet's new context). */
  transfer(from: M, to: M): void {
    if (this.#open.delete(from) && !this.#open.has(to)) this.#open.set(to, true);
    if (this.#online.delete(from) && !this.#online.has(to)) this.#online.set(to, true);
  }

  /**
   * Whether a handle of an open (and, if `online`, online) wallet can be abandoned now within the limits: its seats
   * keep counting beside the ones its wallet keeps for reopening elsewhere, so one more of each must be free.
   */
  canAbandon(online: boolean): boolean {
    return this.usedOpen < this.maxOpen && (!online || this.usedOnline < this.maxOnline);
  }

  /**
   * A handle of an open (and maybe online) wallet was abandoned in busy child `child` (isolation moved its wallet):
   * its connections and memory stay until that child exits, so they keep counting ({@link childExited}).
   */
  abandon(child: number, online: boolean): void {
    const a = this.#abandoned.get(child) ?? { nOpen: 0, nOnline: 0 };
    a.nOpen++;
    if (online) a.nOnline++;
    this.#abandoned.set(child, a);
  }

  /** Child `child` exited: whatever was abandoned in it is gone. */
  childExited(child: number): void {
    if (this.#abandoned.delete(child)) this.#pump();
  }

  /** Something changed that may let a waiter through (a wallet became idle, so it may be closed). */
  kick(): void {
    if (this.#fg.length + this.#bg.length > 0) this.#pump();
  }

  stats(): BudgetStats {
    return {
      open: this.usedOpen,
      online: this.usedOnline,
      max_open: this.maxOpen,
      max_online: this.maxOnline,
      closing: this.#closingOpen,
      waiting: this.#fg.length,
      waiting_background: this.#bg.length,
      closed_for_room: this.#closedForRoom,
    };
  }

  /** Rejects every waiter (shutdown). */
  rejectAll(err: Error): void {
    for (const w of [...this.#fg.splice(0), ...this.#bg.splice(0)]) {
      if (w.timer) clearTimeout(w.timer);
      w.reject(err);
    }
  }

  /**
   * Serves waiters in order (client calls first) as far as seats are free, then starts as many closes as the ones
   * still waiting need, beyond those already in progress.
   */
  #pump(): void {
    // Background work waiting too long joins the client calls (never starved by a busy node).
    const now = Date.now();
    while (this.#bg.length > 0 && now - this.#bg[0]!.since >= this.#agingMs) this.#fg.push(this.#bg.shift()!);
    for (const q of [this.#fg, this.#bg]) {
      for (let i = 0; i < q.length; ) {
        const w = q[i]!;
        if (this.tryTake(w.m, w.online)) {
          q.splice(i, 1);
          if (w.timer) clearTimeout(w.timer);
          w.resolve();
        } else i++;
      }
    }
    let wantOpen = 0;
    let wantOnline = 0;
    for (const w of [...this.#fg, ...this.#bg]) {
      if (!this.#open.has(w.m)) wantOpen++;
      if (w.online && !this.#online.has(w.m)) wantOnline++;
    }
    // Closes in progress free seats soon; an online victim frees an open seat too.
    wantOnline -= this.#closingOnline;
    wantOpen -= this.#closingOpen;
    while (wantOnline > 0) {
      const v = this.#victim(this.#online);
      if (!v) break;
      this.#startClose(v);
      wantOnline--;
      wantOpen--;
    }
    while (wantOpen > 0) {
      const v = this.#victim(this.#open);
      if (!v) break;
      this.#startClose(v);
      wantOpen--;
    }
  }

  /** The least recently used holder in `pool` that may be closed now. */
  #victim(pool: Map<M, true>): M | undefined {
    for (const m of pool.keys()) if (this.#evictable(m)) return m;
    return undefined;
  }

  #startClose(m: M): void {
    const online = this.#online.delete(m);
    this.#open.delete(m);
    this.#closingOpen++;
    if (online) this.#closingOnline++;
    this.#closedForRoom++;
    let p: Promise<void>;
    try {
      p = this.#close(m);
    } catch (err) {
      p = Promise.reject(err);
    }
    void p
      .catch(() => {})
      .finally(() => {
        this.#closingOpen--;
        if (online) this.#closingOnline--;
        this.#pump();
      });
  }
}
