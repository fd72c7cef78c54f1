import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  openWallet,
  type RgbHost,
  type RgbWallet,
  RgbWalletClosedError,
  type WalletFunction,
} from '@rgbx/rgb';
import type { Logger } from '@rgbx/service-kit';
import { pendingBegins, releaseBegin, syncSendRecords } from './begins.ts';
import { type BudgetStats, WalletBudget } from './budget.ts';
import { NETWORKS, type WalletNodeConfig, walletBudgetOf } from './config.ts';
import { E } from './errors.ts';
import type { WalletEvents } from './events/hub.ts';
import { readWalletState } from './events/state.ts';
import type { WalletIdentity } from './identity.ts';
import { InFlightIndex } from './in-flight.ts';
import { classifyIndexerError, IndexerDownError, IndexerHealth } from './indexer.ts';
import type { WalletNodeMetrics } from './metrics.ts';
import type { ChildPool, Priority, Slot } from './pool.ts';

type WitnessVersion = 'Taproot' | 'SegWitV0';

interface Manifest {
  bitcoin_network?: string;
  account_xpub_vanilla?: string;
  account_xpub_colored?: string;
  witness_version?: WitnessVersion;
}

/** A wallet context: which child owns it, its open handle (if any) and whether it went online. */
export interface WalletContext {
  readonly id: WalletIdentity;
  /** The child that owns the wallet; changes only when the wallet is moved off a stuck child (isolation). */
  slot: Slot;
  witnessVersion: WitnessVersion;
  wallet: RgbWallet | null;
  online: boolean;
  lastUsed: number;
  /** Set when the context is dropped; calls still queued for it move to the live context. */
  dropped: boolean;
  /**
   * Calls of this context waiting for a budget seat, queued or running: while > 0 it keeps its seats and is never
   * closed to make room (see budget.ts).
   */
  busy: number;
  /** A background refresh is queued or running for this wallet. */
  refreshPending: boolean;
  /** Moved to another child after going online once here: the next goOnline may skip the consistency check. */
  skipConsistencyOnce?: boolean;
  /** The opened wallet object whose unrecorded RGB send begins were last looked for (see begins.ts). */
  sendsChecked?: RgbWallet;
  /** A background release of expired begins is queued or running for this wallet. */
  beginSweepPending: boolean;
  /**
   * Transfers in flight (not Settled/Failed): `undefined` = not known (checked on the next background tick),
   * so a wallet is refreshed in the background only while it has something to move.
   */
  inFlight: boolean | undefined;
  /** Earliest time (ms) of the next background refresh, and the current back-off delay. */
  nextRefreshAt: number;
  refreshDelayMs: number;
  /**
   * Opened by the background refresh only (a wallet with transfers in flight on disk, see in-flight.ts), with no
   * client call since: closed again after each of its refreshes, so idle wallets never pile up open.
   */
  backgroundOnly?: boolean;
}

/** When a wallet that is not open is refreshed next, and its back-off delay (see `#refreshClosed`). */
interface ClosedSchedule {
  at: number;
  delayMs: number;
}

/**
 * Background refresh backs off to at most this many intervals while nothing changes (the counterparty is slow):
 * 30 s at the default 10 s, so a transfer is never left more than half a minute behind.
 */
const MAX_BACKOFF = 3;

/** Transfer statuses that no refresh can change any more. */
const FINAL_STATUSES = new Set(['Settled', 'Failed']);

/**
 * Retries of a call whose indexer connection was refused or dropped at once (a server at its connection limit, a
 * restart): only where a retry is safe (going online, or a call marked idempotent), only for failures that took
 * less than {@link QUICK_FAILURE_MS} (rgb-lib's own slow give-ups are not repeated), after these delays.
 */
const RETRY_DELAYS_MS = [100, 400];
const QUICK_FAILURE_MS = 2_000;

/** Where the time of one attempt went, for the retry decision. */
interface AttemptTrace {
  phase: 'open' | 'goOnline' | 'call';
  ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readManifest(dir: string): Manifest | undefined {
  const p = join(dir, 'wallet_manifest.json');
  if (!existsSync(p)) return undefined;
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/**
 * Wallet contexts by fingerprint. A wallet is the triple (fingerprint, xpub-van, xpub-col): a known
 * fingerprint asked for with other xpubs is refused (409), whether the wallet is in memory or only on disk.
 * Each wallet is owned by exactly one child; its calls go through that child's queue one at a time.
 */
export class WalletRegistry {
  readonly #cfg: WalletNodeConfig['wallet'];
  readonly #pool: ChildPool;
  readonly #log: Logger;
  readonly #contexts = new Map<string, WalletContext>();
  /**
   * A fingerprint's child never changes, even across drop/re-register: two contexts of one wallet can then
   * only meet in the same child's queue, which serializes them (never two owners at once).
   */
  readonly #slotOf = new Map<string, Slot>();
  readonly #deadlines: Partial<Record<WalletFunction, number>>;
  readonly #timers: NodeJS.Timeout[] = [];
  /** Wallets that may have transfers in flight, on disk (survives restarts); read on first use (see `#inFlight`). */
  #inFlightIndex: InFlightIndex | undefined;
  /** Calls that can start or move a transfer, accepted and not finished, per wallet: no unmarking meanwhile. */
  readonly #moving = new Map<string, number>();
  /** Background refreshes of wallets that were not open (bounded: at most one per base child at a time). */
  readonly #closedRefreshing = new Set<string>();
  readonly #closedSchedule = new Map<string, ClosedSchedule>();
  /** Wallets whose goOnline ran its consistency check in this process: a background reopen may skip it. */
  readonly #checkedOnline = new Set<string>();
  /** Marked wallets the background refresh cannot open (manifest unreadable, other network): logged once. */
  readonly #unopenable = new Set<string>();
  /** Wallets open and online at once, across all children (`max_open_wallets`, `max_online_wallets`). */
  readonly #budget: WalletBudget<WalletContext>;
  readonly health: IndexerHealth;
  /** Wallet events (events/hub.ts): fed by the background refresh, after moving calls and begin releases. */
  events: WalletEvents | undefined;
  /** Metrics (`[metrics] enabled`): told of moves, closes for room and background refreshes; else nothing is counted. */
  metrics: WalletNodeMetrics | undefined;

  constructor(cfg: WalletNodeConfig['wallet'], pool: ChildPool, log: Logger, health?: IndexerHealth) {
    this.#cfg = cfg;
    this.#pool = pool;
    this.#log = log;
    this.health = health ?? new IndexerHealth(cfg.indexer_address, log);
    const limits = walletBudgetOf(cfg);
    this.#budget = new WalletBudget<WalletContext>({
      maxOpen: limits.maxOpen,
      maxOnline: limits.maxOnline,
      close: (ctx) => this.#closeForRoom(ctx),
      // Never a wallet with a call in flight (or waiting), a background refresh or begin sweep pending, or whose
      // child is stuck in another wallet's long call (its close would wait behind it).
      evictable: (ctx) =>
        ctx.busy === 0 && !ctx.refreshPending && !ctx.beginSweepPending && !this.#pool.isStuck(ctx.slot),
    });
    // Calls that talk to RGB proxies (a recipient's transport endpoint may accept and never answer) get a
    // shorter deadline than a full sync; past it the child is killed and the call answers 504.
    const transportMs = cfg.transport_call_timeout_secs * 1000;
    this.#deadlines = {
      rgblib_send_begin: transportMs,
      rgblib_send_end: transportMs,
      rgblib_refresh: transportMs,
      rgblib_fail_transfers: transportMs,
    };
    pool.onSlot((slot) => {
      // A child that died (a Rust panic aborts it) took its wallets with it: they reopen on next use.
      slot.host.on('child-exit', (e) => {
        let n = 0;
        const closed: WalletContext[] = [];
        for (const ctx of this.#contexts.values()) {
          if (ctx.slot === slot && ctx.wallet) {
            // Restarted by us (stale objects of moved wallets), not crashed: nothing changed on disk, except
            // for a wallet whose call was cut short (a deadline), which is checked again.
            if (slot.tainted && ctx.online && ctx.id.fingerprint !== slot.running()?.owner)
              ctx.skipConsistencyOnce = true;
            // Not closed cleanly: a background reopen runs goOnline's consistency check again.
            else this.#checkedOnline.delete(ctx.id.fingerprint);
            ctx.wallet = null;
            ctx.online = false;
            closed.push(ctx);
            n++;
          }
        }
        // Their seats are free (the process took its connections with it), and so are those abandoned there; with
        // nothing queued they go back to a base child (a spare left with none is stopped).
        for (const ctx of closed) {
          if (ctx.busy > 0) continue;
          this.#budget.settle(ctx, { open: false, online: false });
          this.#rehome(ctx);
        }
        this.#budget.childExited(slot.index);
        this.#log.warn(
          { slot: slot.index, code: e.code, signal: e.signal, wallets: n },
          'rgb-lib child exited',
        );
      });
    });
  }

  /**
   * The in-flight index, opened on first use (the first transfer-moving call, or the background start), never by
   * merely building the node (the OpenAPI generator builds one on a data dir that does not exist).
   */
  get #inFlight(): InFlightIndex {
    this.#inFlightIndex ??= InFlightIndex.open(this.#cfg.data_dir);
    return this.#inFlightIndex;
  }

  /** Deletes `rgb_runtime.lock` left by a crashed process in every wallet dir (we hold the data_dir lock). */
  static clearStaleLocks(dataDir: string): number {
    let n = 0;
    for (const e of readdirSync(dataDir, { withFileTypes: true })) {
      const lock = join(dataDir, e.name, 'rgb_runtime.lock');
      if (e.isDirectory() && existsSync(join(dataDir, e.name, 'wallet_manifest.json')) && existsSync(lock)) {
        rmSync(lock, { force: true });
        n++;
      }
    }
    return n;
  }

  /** A child for a call that reads no wallet (decoding an invoice): the least loaded one. */
  statelessHost(): RgbHost {
    return this.#pool.leastLoaded().host;
  }

  /** The live context of these headers, if the wallet is in memory (409 if its xpubs differ); never creates one. */
  find(id: WalletIdentity): WalletContext | undefined {
    const known = this.#contexts.get(id.fingerprint);
    if (known && (known.id.xpubVanilla !== id.xpubVanilla || known.id.xpubColored !== id.xpubColored))
      throw E.WALLET_MISMATCH.create(id.fingerprint);
    return known;
  }

  get size(): number {
    return this.#contexts.size;
  }

  /**
   * The context for these headers; 409 if the fingerprint belongs to other xpubs. Only `create` (register,
   * restore) makes a context for a wallet that does not exist on disk yet; any other call on an unknown
   * identity is a 404 (1015) and creates nothing.
   */
  resolve(id: WalletIdentity, opts: { create?: boolean } = {}): WalletContext {
    const known = this.#contexts.get(id.fingerprint);
    if (known) {
      if (known.id.xpubVanilla !== id.xpubVanilla || known.id.xpubColored !== id.xpubColored) {
        throw E.WALLET_MISMATCH.create(id.fingerprint);
      }
      return known;
    }
    const manifest = readManifest(join(this.#cfg.data_dir, id.fingerprint));
    if (manifest) {
      if (
        manifest.account_xpub_vanilla !== id.xpubVanilla ||
        manifest.account_xpub_colored !== id.xpubColored
      ) {
        throw E.WALLET_MISMATCH.create(id.fingerprint);
      }
      if (manifest.bitcoin_network && manifest.bitcoin_network !== NETWORKS[this.#cfg.network]) {
        throw E.WALLET_MISMATCH.createWith(
          { details: { wallet_network: manifest.bitcoin_network, service_network: this.#cfg.network } },
          id.fingerprint,
        );
      }
    }
    if (!manifest && !opts.create) throw E.WALLET_NOT_FOUND.create(id.fingerprint);
    const slot = this.#slotOf.get(id.fingerprint) ?? this.#pool.leastLoaded();
    this.#slotOf.set(id.fingerprint, slot);
    slot.wallets.add(id.fingerprint);
    const ctx: WalletContext = {
      id,
      slot,
      // An existing wallet keeps the witness version its manifest pins; new ones get the configured one.
      witnessVersion: manifest?.witness_version ?? this.#cfg.witness_version,
      wallet: null,
      online: false,
      lastUsed: Date.now(),
      dropped: false,
      busy: 0,
      refreshPending: false,
      beginSweepPending: false,
      inFlight: undefined,
      nextRefreshAt: 0,
      refreshDelayMs: this.#cfg.refresh_interval_secs * 1000,
    };
    this.#contexts.set(id.fingerprint, ctx);
    return ctx;
  }

  /**
   * Runs `fn` on the wallet inside its child's queue: opens it if needed, goes online if `online`.
   * Calls on one wallet are serialized; wallets in different children run in parallel.
   *
   * Before the call is queued, the wallet takes its budget seats (an open seat, and an online one if `online`):
   * when none is free the least recently used idle wallet is closed first (budget.ts). An attempt that the indexer
   * refused or dropped at once is tried again after a short delay where that is safe (going online, or `idempotent`
   * calls): at most {@link RETRY_DELAYS_MS}. Indexer failures are reported to {@link health}.
   */
  async use<T>(
    ctx0: WalletContext,
    opts: { online: boolean; priority?: Priority; transport?: boolean; idempotent?: boolean },
    fn: (w: RgbWallet) => Promise<T>,
  ): Promise<T> {
    const priority = opts.priority ?? 'foreground';
    const foreground = priority === 'foreground';
    // A call accepted on a context dropped meanwhile continues on a new one (its wallet was allowed then).
    const first = ctx0.dropped ? this.resolve(ctx0.id, { create: true }) : ctx0;
    // Only client calls count as use: background refreshes must not keep a wallet from going idle.
    if (foreground) {
      first.lastUsed = Date.now();
      first.backgroundOnly = false;
      this.#budget.touch(first);
    }
    first.busy++;
    try {
      // A wallet already online whose indexer is known to be down: answered now, not after rgb-lib gives up.
      if (opts.online && first.online && this.health.knownDown())
        throw new IndexerDownError(this.health.downProblem());
      await this.#budget.acquire(first, opts.online, priority);
      for (let attempt = 0; ; attempt++) {
        const trace: AttemptTrace = { phase: 'open', ms: 0 };
        try {
          const out = await this.#attempt(first, opts, fn, trace);
          if (opts.online) this.health.ok();
          return out;
        } catch (err) {
          const problem = classifyIndexerError(err, trace.ms);
          if (!problem) throw err;
          this.health.fail(problem);
          const safe = trace.phase === 'goOnline' || opts.idempotent === true;
          const quick = problem.kind === 'refused' || problem.kind === 'dropped';
          if (!safe || !quick || trace.ms >= QUICK_FAILURE_MS || attempt >= RETRY_DELAYS_MS.length) throw err;
          await sleep(RETRY_DELAYS_MS[attempt]!);
        }
      }
    } finally {
      first.busy--;
      if (first.busy === 0) this.#settle(first);
    }
  }

  /** One attempt of {@link use} in the wallet's child queue; `trace` says which step failed, after how long. */
  #attempt<T>(
    first: WalletContext,
    opts: { online: boolean; priority?: Priority; transport?: boolean },
    fn: (w: RgbWallet) => Promise<T>,
    trace: AttemptTrace,
  ): Promise<T> {
    const priority = opts.priority ?? 'foreground';
    this.#isolate(first);
    return first.slot.run(
      priority,
      async () => {
        // Dropped while queued: continue on the live context. A fingerprint changes child only together with
        // all its queued tasks (isolation), so this is still its one queue: the wallet is never open twice.
        const ctx = first.dropped ? this.resolve(first.id, { create: true }) : first;
        if (ctx !== first) this.#budget.transfer(first, ctx);
        const w = await this.#ensure(ctx, opts.online, trace);
        trace.phase = 'call';
        const t0 = performance.now();
        try {
          return await fn(w);
        } catch (err) {
          if (err instanceof RgbWalletClosedError) {
            ctx.wallet = null;
            ctx.online = false;
          }
          throw err;
        } finally {
          trace.ms = performance.now() - t0;
          if (priority === 'foreground') ctx.lastUsed = Date.now();
        }
      },
      first.id.fingerprint,
      opts.transport === true,
    );
  }

  /** No call of `ctx` is queued or running any more: seats its wallet no longer uses go back to the budget. */
  #settle(ctx: WalletContext): void {
    const open = ctx.wallet !== null && !ctx.dropped;
    this.#budget.settle(ctx, { open, online: open && ctx.online });
    this.#budget.kick(); // it may be closed to make room now
  }

  /**
   * Closes an idle wallet to make room for another (the budget chose it): dropped in its child ahead of the calls
   * queued there (`urgent`: a call is waiting for its seat, the drop takes ~1 ms). Its context stays, so its next call reopens it (without goOnline's
   * full scan: it was checked and closed cleanly by this process). A wallet with transfers in flight keeps its
   * refresh schedule: the background refresh reopens it in turn.
   */
  #closeForRoom(ctx: WalletContext): Promise<void> {
    this.metrics?.closedForRoom();
    const slot = ctx.slot;
    const fp = ctx.id.fingerprint;
    const done = slot.run(
      'urgent',
      async () => {
        const w = ctx.wallet;
        ctx.wallet = null;
        ctx.online = false;
        if (w && slot.host.isOpen(w.handle)) await w.drop();
      },
      fp,
    );
    return done.then(() => {
      if (this.#inFlightIndex?.has(fp) && ctx.inFlight !== false)
        this.#closedSchedule.set(fp, { at: ctx.nextRefreshAt, delayMs: ctx.refreshDelayMs });
      this.#rehome(ctx);
    });
  }

  /**
   * A closed wallet with nothing queued goes back to the least loaded base child: wallets moved off a busy child
   * (isolation) would otherwise stay on the spare they moved to, and, rotating, pile up on a few children.
   * Nothing of it runs anywhere (closed, no call queued), so it is never open in two processes.
   */
  #rehome(ctx: WalletContext): void {
    if (ctx.busy > 0 || ctx.wallet || ctx.dropped || ctx.slot.queuedOwners().has(ctx.id.fingerprint)) return;
    const to = this.#pool.leastLoaded();
    const from = ctx.slot;
    if (to === from || (from.index < this.#pool.baseSize && from.wallets.size <= to.wallets.size + 1)) return;
    const fp = ctx.id.fingerprint;
    from.wallets.delete(fp);
    to.wallets.add(fp);
    ctx.slot = to;
    this.#slotOf.set(fp, to);
    this.metrics?.walletMoved('rehome');
  }

  /** Open and online wallets, and the budget's own counts (for `/readiness`). */
  stats(): { known: number; open: number; online: number; budget: BudgetStats } {
    let open = 0;
    let online = 0;
    for (const ctx of this.#contexts.values()) {
      if (ctx.wallet) open++;
      if (ctx.online) online++;
    }
    return { known: this.#contexts.size, open, online, budget: this.#budget.stats() };
  }

  /**
   * Isolation: a call must not wait behind another wallet's long call. If the wallet's child is running another
   * wallet's call for longer than the pool's budget, the wallet moves to another child before queueing.
   */
  #isolate(ctx: WalletContext): void {
    const r = ctx.slot.running();
    if (!r || r.owner === ctx.id.fingerprint || !this.#pool.isStuck(ctx.slot)) return;
    const to = this.#pool.spareFor(ctx.slot);
    if (to) this.#move(ctx, to);
  }

  /**
   * Moves a wallet (not running now) to `to`. Its open object in the old child cannot be freed while that child
   * is busy: the handle is abandoned there and the old slot tainted (it restarts its child before running
   * anything else), so the stale object never runs again.
   */
  #move(ctx: WalletContext, to: Slot): boolean {
    const from = ctx.slot;
    const fp = ctx.id.fingerprint;
    // The abandoned handle keeps its seats (its connections stay in the old child) beside the ones the wallet keeps
    // to reopen elsewhere: with no room for both, the wallet stays and waits behind the long call (the budget is a
    // limit, isolation only a latency bound).
    if (ctx.wallet && !this.#budget.canAbandon(ctx.online)) {
      // debug: checked at every call and tick while a child is stuck and the budget full.
      this.#log.debug(
        { wallet: fp, from: from.index },
        'wallet stays on a busy rgb-lib child: the budget is full',
      );
      return false;
    }
    if (ctx.wallet) {
      from.host.abandon(
        ctx.wallet.handle,
        `moved to another rgb-lib child while child ${from.index} was busy`,
      );
      // Its connections and memory stay in the old child until it restarts: they keep counting.
      this.#budget.abandon(from.index, ctx.online);
      from.tainted = true;
      ctx.wallet = null;
      // Nothing changed on disk: reopening elsewhere need not repeat goOnline's consistency check (full scan).
      if (ctx.online) ctx.skipConsistencyOnce = true;
      ctx.online = false;
    }
    from.wallets.delete(fp);
    to.wallets.add(fp);
    ctx.slot = to;
    this.#slotOf.set(fp, to);
    // Its calls already waiting go with it, in order: a wallet's calls only ever run in one queue.
    to.adopt(from.takeQueuedOf(fp));
    this.metrics?.walletMoved('isolation');
    this.#log.info({ wallet: fp, from: from.index, to: to.index }, 'wallet moved off a busy rgb-lib child');
    return true;
  }

  /** Calls already queued behind a call that became stuck move with their wallets (checked every tick). */
  #rebalanceStuck(): void {
    const now = Date.now();
    this.#pool.stopIdleSpares(now);
    for (const slot of [...this.#pool.slots]) {
      if (!this.#pool.isStuck(slot, now)) continue;
      if (slot.wallets.size > 1) this.#pool.ensureSpare(now, 1);
      const keep = slot.running(now)!.owner;
      for (const owner of slot.queuedOwners()) {
        if (owner === keep) continue;
        const ctx = this.#contexts.get(owner);
        // A wallet being dropped (no live context) stays: its drop must run where its object is.
        if (!ctx || ctx.slot !== slot) continue;
        const to = this.#pool.spareFor(slot, now);
        if (!to) break; // every child is stuck and the pool is full: they wait, as before
        if (!this.#move(ctx, to)) break; // the budget is full: they wait too
      }
    }
  }

  async #ensure(ctx: WalletContext, online: boolean, trace?: AttemptTrace): Promise<RgbWallet> {
    if (!ctx.wallet || !ctx.slot.host.isOpen(ctx.wallet.handle)) {
      ctx.online = false;
      // The seat was taken before queueing (use); should it be missing, never open beyond the budget.
      if (!this.#budget.tryTake(ctx, false)) throw E.WALLETS_BUSY.create('open wallet');
      ctx.wallet = await openWallet({
        dataDir: this.#cfg.data_dir,
        network: NETWORKS[this.#cfg.network],
        keys: {
          accountXpubVanilla: ctx.id.xpubVanilla,
          accountXpubColored: ctx.id.xpubColored,
          masterFingerprint: ctx.id.fingerprint,
          witnessVersion: ctx.witnessVersion,
        },
        maxAllocationsPerUtxo: 1,
        deadlines: this.#deadlines,
        supportedSchemas: ['Nia', 'Cfa', 'Uda', 'Ifa'],
        host: ctx.slot.host,
      });
    }
    if (online && !ctx.online) {
      if (!this.#budget.tryTake(ctx, true)) throw E.WALLETS_BUSY.create('online wallet');
      // Checked once by this process and every close since was clean (closed to make room, dropped, moved):
      // nothing else touched its data, so a reopen skips the full scan (~100–150 ms → ~10 ms).
      const skip = ctx.skipConsistencyOnce === true || this.#checkedOnline.has(ctx.id.fingerprint);
      ctx.skipConsistencyOnce = false;
      if (trace) trace.phase = 'goOnline';
      const t0 = performance.now();
      try {
        await ctx.wallet.goOnline({
          indexerUrl: this.#cfg.indexer_address,
          skipConsistencyCheck: skip,
          vanillaSyncLookback: 20,
        });
      } finally {
        if (trace) trace.ms = performance.now() - t0;
      }
      ctx.online = true;
      this.#checkedOnline.add(ctx.id.fingerprint);
    }
    return ctx.wallet;
  }

  /** The wallet's directory (`<data_dir>/<fingerprint>`). */
  walletDir(ctx: WalletContext): string {
    return join(this.#cfg.data_dir, ctx.id.fingerprint);
  }

  /** Removes the context from memory (the reference's drop); the data on disk stays. */
  async drop(ctx: WalletContext, priority: Priority = 'foreground'): Promise<void> {
    if (this.#contexts.get(ctx.id.fingerprint) === ctx) this.#contexts.delete(ctx.id.fingerprint);
    ctx.dropped = true;
    await ctx.slot.run(
      priority,
      async () => {
        const w = ctx.wallet;
        ctx.wallet = null;
        ctx.online = false;
        if (w && ctx.slot.host.isOpen(w.handle)) await w.drop();
      },
      ctx.id.fingerprint,
    );
    // Its seats go back, unless calls of it are still queued (they continue on its new context, with them).
    if (ctx.busy === 0) this.#budget.settle(ctx, { open: false, online: false });
    // Closed in its child and no new context meanwhile: the fingerprint may go to any child next time
    // (bounded bookkeeping: nothing is kept for wallets not in use).
    if (!this.#contexts.has(ctx.id.fingerprint)) {
      ctx.slot.wallets.delete(ctx.id.fingerprint);
      if (this.#slotOf.get(ctx.id.fingerprint) === ctx.slot) this.#slotOf.delete(ctx.id.fingerprint);
    }
  }

  /** Idle closing and the optional background refresh; both run at background priority. */
  startBackground(): void {
    // Read the in-flight index now: the background refresh resumes its wallets' transfers (see #refreshClosed).
    const index = this.#inFlight;
    if (index.size > 0 || index.migrated > 0) {
      this.#log.info(
        { wallets: index.size, indexed_now: index.migrated },
        'background refresh: wallets marked with transfers in flight',
      );
    }
    // Isolation: calls queued behind a call that outlives the budget move to another child.
    // Also lets calls waiting for a budget seat through once a wallet became closable (a child no longer stuck).
    const iso = setInterval(
      () => {
        this.#rebalanceStuck();
        this.#budget.kick();
      },
      Math.max(20, Math.floor(this.#pool.budgetMs / 2)),
    );
    iso.unref();
    this.#timers.push(iso);
    const idleMs = this.#cfg.idle_timeout_secs * 1000;
    if (idleMs > 0) {
      const t = setInterval(
        () => {
          const now = Date.now();
          for (const ctx of [...this.#contexts.values()]) {
            // Also forgets contexts that never opened (bounded memory however many fingerprints are seen).
            if (now - ctx.lastUsed > idleMs && ctx.busy === 0 && ctx.slot.queued === 0) {
              this.drop(ctx, 'background').catch((err: Error) =>
                this.#log.warn({ err: err.message }, 'idle drop failed'),
              );
            }
          }
        },
        Math.min(idleMs, 30_000),
      );
      t.unref();
      this.#timers.push(t);
    }
    const beginTtlMs = this.#cfg.begin_ttl_secs * 1000;
    if (beginTtlMs > 0) {
      const t = setInterval(() => this.#releaseExpiredBegins(beginTtlMs), Math.min(beginTtlMs, 60_000));
      t.unref();
      this.#timers.push(t);
    }
    const baseMs = this.#cfg.refresh_interval_secs * 1000;
    if (baseMs > 0) {
      const t = setInterval(() => this.#refreshTick(baseMs), Math.min(baseMs, 1000));
      t.unref();
      this.#timers.push(t);
    }
  }

  /** A call that may have started or moved a transfer: the wallet is looked at again on the next tick. */
  transfersChanged(ctx: WalletContext): void {
    ctx.inFlight = undefined;
    ctx.nextRefreshAt = 0;
    ctx.refreshDelayMs = this.#cfg.refresh_interval_secs * 1000;
  }

  /**
   * A call that can start or move a transfer was accepted: the wallet is marked on disk (before the call is queued,
   * so a crash at any point after leaves the mark) and cannot be unmarked until {@link endMove}.
   */
  beginMove(ctx: WalletContext): void {
    const fp = ctx.id.fingerprint;
    this.#moving.set(fp, (this.#moving.get(fp) ?? 0) + 1);
    this.#inFlight.mark(fp);
  }

  /** The call of {@link beginMove} ended (answered or failed): the background refresh looks at the wallet again. */
  endMove(ctx: WalletContext): void {
    const fp = ctx.id.fingerprint;
    const n = (this.#moving.get(fp) ?? 1) - 1;
    if (n > 0) this.#moving.set(fp, n);
    else this.#moving.delete(fp);
    this.transfersChanged(ctx);
    this.events?.request(ctx);
  }

  /** A wallet that arrived with history (a restored backup): marked, so the background refresh looks at it once. */
  markInFlight(ctx: WalletContext): void {
    this.#inFlight.mark(ctx.id.fingerprint);
    this.transfersChanged(ctx);
  }

  /** Wallets marked on disk as possibly having transfers in flight (for logs and tests). */
  get inFlightMarked(): number {
    return this.#inFlight.size;
  }

  /**
   * Background refresh (the reference refreshes every wallet every 10 s; we refresh only wallets with transfers
   * in flight): at most one queued per wallet, at background priority (behind every client call in its child),
   * and backing off (×2 up to 3 × the interval) while a refresh changes nothing. Open wallets are refreshed here;
   * wallets marked on disk but not open (after a restart, or closed when idle) by `#refreshClosed`.
   */
  #refreshTick(baseMs: number): void {
    const now = Date.now();
    for (const ctx of this.#contexts.values()) {
      if (!ctx.wallet) continue; // not open: #refreshClosed, if it is marked
      if (ctx.inFlight === false) {
        // Known to have nothing in flight (a mark left by a call that did not move anything): unmark.
        this.#unmarkIfIdle(ctx);
        continue;
      }
      if (ctx.refreshPending || now < ctx.nextRefreshAt) continue;
      // The indexer is down: one refresh per back-off period probes it, the rest wait (no failure per wallet).
      if (!this.health.backgroundTurn()) return;
      ctx.refreshPending = true;
      void this.#refreshOnce(ctx, baseMs).finally(() => this.#unpin(ctx));
    }
    this.#refreshClosed(baseMs, now);
  }

  /** A background refresh of `ctx` ended: it may be closed to make room again. */
  #unpin(ctx: WalletContext): void {
    ctx.refreshPending = false;
    this.#budget.kick();
  }

  /**
   * One background refresh of an open (or opening) wallet: rgb-lib's `refresh`, then whether anything is still in
   * flight. Never rejects (a failure is logged and backs off).
   */
  #refreshOnce(ctx: WalletContext, baseMs: number): Promise<void> {
    this.metrics?.refreshStarted();
    return this.use(ctx, { online: true, priority: 'background', transport: true }, async (w) => {
      const updated = await w.refresh(null, [], false);
      const state = await readWalletState(w);
      const transfers = state.transfers;
      this.events?.observed(ctx, this.walletDir(ctx), state, 'refresh');
      ctx.inFlight = transfers.some((tr) => !FINAL_STATUSES.has(tr.status));
      const moved = Object.entries(updated).filter(([, u]) => u.updatedStatus != null || u.failure != null);
      if (moved.length > 0) {
        this.#log.info(
          {
            wallet: ctx.id.fingerprint,
            transfers: Object.fromEntries(
              moved.map(([idx, u]) => [idx, u.updatedStatus ?? (u.failure == null ? null : 'Failed')]),
            ),
          },
          'background refresh moved transfers',
        );
      }
      ctx.refreshDelayMs = moved.length > 0 ? baseMs : Math.min(ctx.refreshDelayMs * 2, baseMs * MAX_BACKOFF);
      ctx.nextRefreshAt = Date.now() + ctx.refreshDelayMs;
      // Still in queue order: no call of this wallet runs now, so none can start a transfer unseen.
      if (ctx.inFlight) this.#inFlight.mark(ctx.id.fingerprint);
      else this.#unmarkIfIdle(ctx);
    }).catch((err: Error) => {
      this.metrics?.refreshFailed();
      ctx.refreshDelayMs = Math.min(ctx.refreshDelayMs * 2, baseMs * MAX_BACKOFF);
      ctx.nextRefreshAt = Date.now() + ctx.refreshDelayMs;
      // The indexer's failures are logged once by `health` (when it goes, while it stays away, when it is back).
      if (classifyIndexerError(err))
        this.#log.debug({ wallet: ctx.id.fingerprint }, 'background refresh: indexer unavailable');
      else this.#log.warn({ wallet: ctx.id.fingerprint, err: err.message }, 'background refresh failed');
    });
  }

  /** Unmarks a wallet with nothing in flight, unless a call that can start a transfer is accepted for it. */
  #unmarkIfIdle(ctx: WalletContext): void {
    const fp = ctx.id.fingerprint;
    if ((this.#moving.get(fp) ?? 0) > 0) return;
    if (this.#inFlight.clear(fp)) this.#log.info({ wallet: fp }, 'background refresh: no transfer in flight');
  }

  /**
   * Wallets marked on disk as having transfers in flight but not open (after a restart nothing is open; an idle
   * wallet is closed after `idle_timeout_secs`): opened in the background, at most one per base child at a time
   * (so a node with thousands of marked wallets never opens them all at once), refreshed like the open ones, and
   * closed again unless a client used them meanwhile. Each keeps its own back-off between these refreshes.
   */
  #refreshClosed(baseMs: number, now: number): void {
    const limit = this.#pool.baseSize;
    if (this.#closedRefreshing.size >= limit) return;
    for (const fp of this.#inFlight.list()) {
      if (this.#closedRefreshing.size >= limit) return;
      if (this.#closedRefreshing.has(fp) || this.#unopenable.has(fp)) continue;
      const live = this.#contexts.get(fp);
      if (live?.wallet || live?.refreshPending) continue; // open: #refreshTick's
      const due = this.#closedSchedule.get(fp);
      if (due && now < due.at) continue;
      if (!this.health.backgroundTurn()) return; // the indexer is down: see #refreshTick
      let ctx = live;
      if (!ctx) {
        const m = readManifest(this.#inFlight.walletDir(fp));
        if (!m?.account_xpub_vanilla || !m.account_xpub_colored) {
          this.#unopenable.add(fp);
          this.#log.warn({ wallet: fp }, 'background refresh: marked wallet has no readable manifest');
          continue;
        }
        try {
          ctx = this.resolve({
            fingerprint: fp,
            xpubVanilla: m.account_xpub_vanilla,
            xpubColored: m.account_xpub_colored,
          });
        } catch (err) {
          this.#unopenable.add(fp);
          this.#log.warn(
            { wallet: fp, err: (err as Error).message },
            'background refresh cannot open wallet',
          );
          continue;
        }
        ctx.backgroundOnly = true;
        // Already checked once by this process and closed cleanly since: nothing else touched it.
        if (this.#checkedOnline.has(fp)) ctx.skipConsistencyOnce = true;
      } else if (!ctx.wallet) {
        // Closed (to make room, or when idle) with no client call since: opened for this refresh only, again.
        ctx.backgroundOnly = true;
      }
      const c = ctx;
      c.refreshDelayMs = due?.delayMs ?? baseMs;
      this.#closedRefreshing.add(fp);
      // Once per wallet and process (later cycles of a slow transfer stay quiet).
      if (!this.#checkedOnline.has(fp)) {
        this.#log.info(
          { wallet: fp, opened_by_background: this.#closedRefreshing.size, limit },
          'background refresh: resuming a wallet with transfers in flight',
        );
      }
      c.refreshPending = true;
      this.#refreshOnce(c, baseMs)
        .then(async () => {
          if (c.inFlight !== false)
            this.#closedSchedule.set(fp, { at: c.nextRefreshAt, delayMs: c.refreshDelayMs });
          else this.#closedSchedule.delete(fp);
          // Opened for this refresh only: closed again, so marked wallets never pile up open.
          if (c.backgroundOnly && !c.dropped) await this.drop(c, 'background');
        })
        .catch((err: Error) => this.#log.warn({ wallet: fp, err: err.message }, 'background close failed'))
        .finally(() => {
          this.#closedRefreshing.delete(fp);
          this.#unpin(c);
        });
    }
  }

  /**
   * Releases begins older than `ttlMs` in the open wallets, at background priority in each wallet's queue (no
   * call of that wallet runs meanwhile, so rgb-lib's database is ours for the instant it takes). A wallet not
   * open now is looked at once it is opened again.
   */
  #releaseExpiredBegins(ttlMs: number): void {
    for (const ctx of this.#contexts.values()) {
      if (!ctx.wallet || ctx.beginSweepPending) continue;
      ctx.beginSweepPending = true;
      const dir = this.walletDir(ctx);
      const expiredNow = () => {
        const now = Date.now();
        return pendingBegins(dir, ttlMs, now).filter(
          (p) => p.expires_at !== null && p.expires_at * 1000 <= now,
        );
      };
      this.use(ctx, { online: false, priority: 'background' }, async (w) => {
        // Sends rgb-lib began without our record (a crash between the two) are looked for once per opening;
        // later ones are recorded by sendbegin itself.
        if (ctx.sendsChecked !== w) {
          await syncSendRecords(w, dir);
          ctx.sendsChecked = w;
        }
        return expiredNow().length > 0;
      })
        .then((any) =>
          !any
            ? undefined
            : this.use(ctx, { online: true, priority: 'background' }, async (w) => {
                await syncSendRecords(w, dir); // once, in this task: no end of this wallet runs until it is done
                for (const p of expiredNow()) {
                  const r = await releaseBegin(w, dir, p.txid);
                  if (r) this.#log.warn({ wallet: ctx.id.fingerprint, ...r }, 'released a begin never ended');
                  if (r) this.events?.released(ctx, dir, { reason: 'expired', ...r });
                }
                this.transfersChanged(ctx);
              }),
        )
        .catch((err: Error) =>
          this.#log.warn({ wallet: ctx.id.fingerprint, err: err.message }, 'releasing expired begins failed'),
        )
        .finally(() => {
          ctx.beginSweepPending = false;
          this.#budget.kick();
        });
    }
  }

  async close(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#budget.rejectAll(new Error('wallet node is shutting down'));
    await Promise.allSettled([...this.#contexts.values()].map((ctx) => this.drop(ctx)));
  }
}
