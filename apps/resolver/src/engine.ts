/**
 * The fill engine: drives every intent this resolver won from `ApprovalAdded` to its claim, one step
 * at a time, from what the swap service says (its status is the truth) and what this resolver stored.
 *
 *   ApprovalAdded → decide (decline what it cannot fill) → accept
 *   Accepted      → deposit: htlc: the user's funding (broadcast by the service); permit2: SwapEscrow.deposit;
 *                   cosign: the user's transaction co-signed → report when confirmed
 *   UserDeposited → pay the user on the destination chain → report the fulfilment
 *   Fulfilled     → take the secret → claim the source (HTLC claim leaf, escrow claim; Solana: none)
 *   Expired / RefundRequested after a Solana deposit → refund the user (the deposit paid us directly)
 *
 * Never pays twice: a transaction is signed, STORED, then broadcast; a stored transaction is re-sent
 * (same bytes, same id) until it is confirmed, and replaced by a new attempt only once its network says
 * it can never be included (`dead`). A payment is never started after `deadline − fill.safety_secs`.
 * Every step is idempotent, so a restart (after kill -9 at any point) resumes where the store and the
 * service say it stands.
 */
import type { Resolver } from '@rgbx/contracts/swap';
import { type ResolverClient, SwapApiError } from '@rgbx/sdk';
import type { Logger } from '@rgbx/service-kit';
import type { ResolverConfig } from './config.ts';
import { type ResolverMetrics, reasonCategory } from './metrics.ts';
import type { Reservations } from './pricing.ts';
import {
  activeFills,
  latestTx,
  loadFill,
  openTxs,
  type ResolverDb,
  type StoredTx,
  setTxState,
  storeTx,
  type TxRole,
  upsertFill,
} from './store.ts';
import type { ChainWallet, IntentView, SignedTx } from './wallets/wallet.ts';

/** Points where a test may kill the process (`RGBX_RESOLVER_CRASH_AT`), after the named effect. */
export type CrashPoint =
  | 'after-accept'
  | 'after-deposit'
  | 'payment-signed'
  | 'payment-broadcast'
  | 'before-claim';

export interface EngineDeps {
  cfg: ResolverConfig;
  db: ResolverDb;
  api: ResolverClient;
  /** Hot wallets by the swap service's network id. */
  wallets: ReadonlyMap<number, ChainWallet>;
  reservations: Reservations;
  log: Logger;
  /** Fill transitions, transactions and step failures are counted here (optional: tests). */
  metrics?: ResolverMetrics;
  now?: () => number;
  crash?: (point: CrashPoint) => void;
}

type Outcome = 'done' | 'wait';
type Leg = { leg: string; tx_hash: string };

const TERMINAL = new Set(['Declined', 'Refunded']);

/** Statuses worth a look at start (everything a resolver may still have to act on). */
const LIVE = [
  'ApprovalAdded',
  'Accepted',
  'UserDeposited',
  'Fulfilled',
  'Expired',
  'RefundRequested',
] as const;

function legs(view: IntentView): Leg[] {
  return ((view.intent as unknown as { settlement?: Leg[] }).settlement ?? []) as Leg[];
}

function rec(view: IntentView) {
  return view.intent as unknown as {
    intent_id: string;
    status: string;
    source_chain: number;
    dest_chain: number;
    dest_token: string;
    user_dest_address: string;
    max_dest_amount_lots: string;
    source_amount_lots: string;
  };
}

/** A report the service refused for now (not enough confirmations yet, not seen by its node yet). */
function isNotYet(err: unknown): boolean {
  if (!(err instanceof SwapApiError)) return false;
  const reason = err.details?.reason;
  return err.type === 'TX_NOT_VERIFIED' && (reason === 'confirmations' || reason === 'not_found');
}

/** The service could not read a chain or itself failed: try again later. */
function isTransient(err: unknown): boolean {
  return (
    !(err instanceof SwapApiError) ||
    err.status >= 500 ||
    err.status === 429 ||
    err.type === 'UPSTREAM_UNAVAILABLE'
  );
}

export class FillEngine {
  readonly #d: EngineDeps;
  readonly #now: () => number;
  /** Intents being driven now (one driver per intent). */
  readonly #running = new Map<string, Promise<void>>();
  /** Asked again while running: run once more after. */
  readonly #again = new Set<string>();
  readonly #queue: string[] = [];
  #active = 0;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #idle: (() => void)[] = [];

  constructor(d: EngineDeps) {
    this.#d = d;
    this.#now = d.now ?? Date.now;
  }

  /**
   * After a start: every stored transaction that is not known confirmed or dead is sent again (the
   * same bytes) BEFORE anything new is signed, so a wallet's next nonce / UTXOs see it; then every
   * intent still live at the service and every active fill is driven.
   */
  async recover(): Promise<void> {
    const open: StoredTx[] = [];
    for (const t of await openTxs(this.#d.db)) {
      if (await this.#abandonUnsent(t)) continue;
      open.push(t);
    }
    for (const t of open) this.#d.wallets.get(t.networkId)?.track?.(t);
    for (const t of open) {
      const w = this.#d.wallets.get(t.networkId);
      if (!w) continue;
      await this.#settleTx(w, t).catch((err: unknown) =>
        this.#d.log.warn({ intent: t.intentId, role: t.role, txid: t.txid, err: msg(err) }, 'resend failed'),
      );
    }
    const ids = new Set(await activeFills(this.#d.db));
    for (const status of LIVE) {
      for (let offset = 0; ; ) {
        const page = await this.#d.api.intents({ status, limit: 100, offset });
        for (const v of page.data) {
          const r = rec(v);
          ids.add(r.intent_id);
          // Accepted and not yet paid: its payment is promised again (the reservations were in memory).
          if (status === 'Accepted' || status === 'UserDeposited')
            this.#d.reservations.reserveFill(
              r.intent_id,
              r.dest_chain,
              r.dest_token,
              BigInt(r.max_dest_amount_lots),
            );
        }
        offset += page.data.length;
        if (page.data.length === 0 || offset >= page.pagination.total) break;
      }
    }
    for (const id of ids) this.kick(id);
  }

  /**
   * A payment signed before a crash and never seen by its network is not sent once it is too late (the
   * intent no longer waits for it, or its deadline is within `fill.safety_secs`): it is marked dead and
   * released (not tracked), so the wallet's next transaction takes its nonce / inputs and it can never be
   * included.
   */
  async #abandonUnsent(t: StoredTx): Promise<boolean> {
    if (t.role !== 'payment' || t.state !== 'signed') return false;
    const w = this.#d.wallets.get(t.networkId);
    if (!w || (await w.status(t)).state !== 'unknown') return false;
    const view = await this.#d.api.intent(t.intentId);
    const late = this.#now() > (view.deadline_secs - this.#d.cfg.fill.safety_secs) * 1000;
    if (rec(view).status === 'UserDeposited' && !late) return false;
    await setTxState(this.#d.db, t, 'dead');
    w.release?.(t);
    this.#d.metrics?.tx(t.networkId, t.role, 'dead');
    this.#d.log.warn(
      { intent: t.intentId, txid: t.txid },
      'stored payment never sent and now too late: dropped',
    );
    return true;
  }

  /** Periodically re-drives active fills (confirmations accrue without an event). */
  start(): void {
    const tick = async () => {
      if (this.#stopped) return;
      try {
        for (const id of await activeFills(this.#d.db)) this.kick(id);
      } catch (err) {
        this.#d.log.warn({ err: msg(err) }, 'listing active fills failed');
      }
      this.#timer = setTimeout(tick, this.#d.cfg.fill.poll_interval_ms);
    };
    this.#timer = setTimeout(tick, this.#d.cfg.fill.poll_interval_ms);
  }

  /** Drives `intentId` soon (deduplicated; at most `fill.max_concurrent` at once). */
  kick(intentId: string): void {
    if (this.#stopped) return;
    if (this.#running.has(intentId)) {
      this.#again.add(intentId);
      return;
    }
    if (!this.#queue.includes(intentId)) this.#queue.push(intentId);
    this.#pump();
  }

  #pump(): void {
    while (!this.#stopped && this.#active < this.#d.cfg.fill.max_concurrent && this.#queue.length) {
      const id = this.#queue.shift()!;
      if (this.#running.has(id)) {
        this.#again.add(id);
        continue;
      }
      this.#active++;
      const p = this.#drive(id).finally(() => {
        this.#active--;
        this.#running.delete(id);
        if (this.#again.delete(id)) this.kick(id);
        this.#pump();
        if (this.#active === 0 && this.#queue.length === 0) for (const f of this.#idle.splice(0)) f();
      });
      this.#running.set(id, p);
    }
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  idle(): Promise<void> {
    if (this.#active === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#queue.length = 0;
    await Promise.allSettled([...this.#running.values()]);
  }

  async #drive(id: string): Promise<void> {
    // A step that moved the intent (accept, a report) is followed by the next step at once.
    for (let i = 0; i < 8 && !this.#stopped; i++) {
      let before: string | undefined;
      try {
        const view = await this.#d.api.intent(id);
        before = rec(view).status;
        const out = await this.#step(view);
        if (out === 'wait') return;
        const after = rec(await this.#d.api.intent(id)).status;
        if (after === before) return;
      } catch (err) {
        if (err instanceof SwapApiError && err.status === 404) return; // not ours
        const level = isTransient(err) ? 'warn' : 'error';
        this.#d.metrics?.stepFailures.inc({
          status: before ?? 'unknown',
          kind: level === 'warn' ? 'transient' : 'permanent',
        });
        this.#d.log[level]({ intent: id, status: before, err: msg(err) }, 'fill step failed; retried later');
        await this.#note(id, msg(err)).catch(() => {});
        return;
      }
    }
  }

  async #note(id: string, note: string): Promise<void> {
    const f = await loadFill(this.#d.db, id);
    if (f?.state === 'active')
      await upsertFill(
        this.#d.db,
        { intentId: id, sourceNetwork: f.source_network, destNetwork: f.dest_network, state: 'active', note },
        this.#now(),
      );
  }

  async #finish(view: IntentView, state: 'done' | 'declined' | 'abandoned', note?: string): Promise<Outcome> {
    const r = rec(view);
    const f = await loadFill(this.#d.db, r.intent_id);
    this.#d.reservations.release(r.intent_id);
    if ((!f || f.state === 'active') && state !== 'done')
      this.#d.metrics?.fill(state, reasonCategory(note ?? ''));
    if (!f || f.state === 'active')
      await upsertFill(
        this.#d.db,
        {
          intentId: r.intent_id,
          sourceNetwork: r.source_chain,
          destNetwork: r.dest_chain,
          state,
          note: note ?? null,
        },
        this.#now(),
      );
    return 'done';
  }

  async #step(view: IntentView): Promise<Outcome> {
    const r = rec(view);
    switch (r.status) {
      case 'ApprovalAdded':
        return this.#decide(view);
      case 'Accepted':
        return this.#deposit(view);
      case 'UserDeposited':
        return this.#pay(view);
      case 'Fulfilled':
        return this.#claim(view);
      case 'Expired':
      case 'RefundRequested':
        return this.#refundIfOwed(view);
      default:
        if (TERMINAL.has(r.status)) return this.#finish(view, 'done', r.status);
        return 'wait'; // Initiated: no approval yet
    }
  }

  /** Decline what it cannot fill, before accepting: the wallets, the time left, the inventory. */
  async #decide(view: IntentView): Promise<Outcome> {
    const r = rec(view);
    const fill = await loadFill(this.#d.db, r.intent_id);
    if (fill && fill.state !== 'active') return 'done';
    const source = this.#d.wallets.get(r.source_chain);
    const dest = this.#d.wallets.get(r.dest_chain);
    const amount = BigInt(r.max_dest_amount_lots);
    let reason: string | undefined;
    if (!source) reason = `no wallet for the source network ${r.source_chain}`;
    else if (!dest) reason = `no wallet for the destination network ${r.dest_chain}`;
    else if (view.deadline_secs * 1000 - this.#now() < this.#d.cfg.fill.safety_secs * 1000 * 2)
      reason = 'too little time left before the deadline';
    else {
      // What other accepted intents still have to be paid from the same wallet and token.
      const promised = this.#d.reservations.reservedFills(r.dest_chain, r.dest_token, r.intent_id);
      const balance = await dest.balance(r.dest_token);
      if (balance - promised < amount)
        reason = `inventory: ${balance - promised} of ${r.dest_token} free on network ${r.dest_chain}, ${amount} needed`;
    }
    if (reason) {
      this.#d.log.info({ intent: r.intent_id, reason }, 'declining');
      await this.#d.api.decline(r.intent_id, reason);
      return this.#finish(view, 'declined', reason);
    }
    await upsertFill(
      this.#d.db,
      { intentId: r.intent_id, sourceNetwork: r.source_chain, destNetwork: r.dest_chain, state: 'active' },
      this.#now(),
    );
    this.#d.reservations.reserveFill(r.intent_id, r.dest_chain, r.dest_token, amount);
    await this.#d.api.accept(r.intent_id);
    this.#d.metrics?.fill('accepted');
    this.#d.log.info({ intent: r.intent_id }, 'accepted');
    this.#d.crash?.('after-accept');
    return 'done';
  }

  async #deposit(view: IntentView): Promise<Outcome> {
    const r = rec(view);
    await this.#activate(view);
    const w = this.#wallet(r.source_chain);
    let txid: string;
    if (view.approval_mechanism === 'htlc') {
      txid = String((view.execution as { funding_txid?: unknown } | null)?.funding_txid ?? '');
      if (!txid) throw new Error('htlc intent without execution.funding_txid');
    } else {
      const t = await this.#ensureTx(view, 'deposit', r.source_chain, () => w.signDeposit(view));
      if (!t) throw new Error(`no deposit transaction for mechanism ${view.approval_mechanism}`);
      const s = await this.#settleTx(w, t);
      if (s === 'failed') {
        // Accepted: no decline any more (the service refuses it); the intent expires, nothing was taken.
        const reason = `the deposit transaction ${t.txid} failed on chain`;
        this.#d.log.warn({ intent: r.intent_id, txid: t.txid }, 'deposit failed: the intent will expire');
        return this.#finish(view, 'abandoned', reason);
      }
      if (s !== 'confirmed') return 'wait';
      txid = t.txid;
    }
    if (!(await this.#report(r.intent_id, 'deposit', txid))) return 'wait';
    this.#d.crash?.('after-deposit');
    return 'done';
  }

  async #pay(view: IntentView): Promise<Outcome> {
    const r = rec(view);
    await this.#activate(view);
    const w = this.#wallet(r.dest_chain);
    const existing = await latestTx(this.#d.db, r.intent_id, 'payment');
    const late = this.#now() > (view.deadline_secs - this.#d.cfg.fill.safety_secs) * 1000;
    if (!existing && late) {
      // Too late to be verified before the deadline: paying now could pay a user who also refunds.
      this.#d.log.warn({ intent: r.intent_id }, 'not paying: the deadline is too close');
      return this.#finish(view, 'abandoned', 'deadline too close to pay');
    }
    const t = await this.#ensureTx(
      view,
      'payment',
      r.dest_chain,
      () =>
        w.signPayment({
          intentId: r.intent_id,
          token: r.dest_token,
          to: r.user_dest_address,
          amount: BigInt(r.max_dest_amount_lots),
          commitment: view.fulfil_commitment,
        }),
      late,
    );
    if (!t) return this.#finish(view, 'abandoned', 'payment dead and the deadline too close to pay again');
    if (late && t.state === 'signed' && (await w.status(t)).state === 'unknown') {
      // Signed before a crash and never sent: too late to send now. Only this process holds the bytes.
      await setTxState(this.#d.db, t, 'dead');
      w.release?.(t); // its nonce / inputs go to the next transaction
      this.#d.metrics?.tx(t.networkId, t.role, 'dead');
      return this.#finish(view, 'abandoned', 'deadline too close to send the stored payment');
    }
    const s = await this.#settleTx(w, t, 'payment-signed');
    if (s === 'failed') throw new Error(`payment ${t.txid} failed on chain`);
    if (s !== 'confirmed') return 'wait';
    if (!(await this.#report(r.intent_id, 'fulfil', t.txid))) return 'wait';
    this.#d.reservations.release(r.intent_id);
    this.#d.metrics?.fill('paid');
    this.#d.log.info({ intent: r.intent_id, txid: t.txid }, 'user paid, fulfilment verified');
    return 'done';
  }

  async #claim(view: IntentView): Promise<Outcome> {
    const r = rec(view);
    this.#d.reservations.release(r.intent_id);
    if (legs(view).some((l) => l.leg === 'claim')) return this.#finish(view, 'done');
    if (view.approval_mechanism === 'cosign') return this.#finish(view, 'done'); // paid to us at deposit
    await this.#activate(view);
    const w = this.#wallet(r.source_chain);
    this.#d.crash?.('before-claim');
    const preimage = await this.#d.api.secret(r.intent_id);
    const t = await this.#ensureTx(view, 'claim', r.source_chain, () => w.signClaim(view, preimage));
    if (!t) return this.#finish(view, 'done');
    const s = await this.#settleTx(w, t);
    if (s === 'failed') throw new Error(`claim ${t.txid} failed on chain`);
    if (s !== 'confirmed') return 'wait';
    if (!(await this.#report(r.intent_id, 'claim', t.txid))) return 'wait';
    this.#d.metrics?.fill('claimed');
    this.#d.log.info({ intent: r.intent_id, txid: t.txid }, 'source claimed');
    return this.#finish(view, 'done');
  }

  /**
   * Expired (or refund requested) after a co-signed Solana deposit: the lamports went to this resolver,
   * so it sends exactly them back to the refund address. HTLC and escrow refunds are the user's own.
   * A deposit it sent and never reported (it stopped past the deadline) is reported first: the service
   * records it for an intent that has ended, and the refund follows.
   */
  async #refundIfOwed(view: IntentView): Promise<Outcome> {
    const r = rec(view);
    this.#d.reservations.release(r.intent_id);
    const deposit = legs(view).find((l) => l.leg === 'deposit') as
      | (Leg & { recipient?: string; amount?: string })
      | undefined;
    if (view.approval_mechanism === 'cosign' && !deposit) {
      const sent = await latestTx(this.#d.db, r.intent_id, 'deposit');
      if (sent && sent.state !== 'dead') {
        // Its state on chain only: a deposit never sent is not sent now (the intent has ended).
        const s = (await this.#wallet(r.source_chain).status(sent)).state;
        if (s === 'pending') return 'wait';
        if (s === 'confirmed') {
          if (!(await this.#report(r.intent_id, 'deposit', sent.txid))) return 'wait';
          this.#d.log.warn({ intent: r.intent_id, txid: sent.txid }, 'late deposit recorded: refunding');
          return 'wait'; // the next look sees the recorded deposit and refunds it
        }
      }
    }
    if (view.approval_mechanism !== 'cosign' || !deposit || legs(view).some((l) => l.leg === 'refund'))
      return this.#finish(view, 'done', r.status);
    const w = this.#wallet(r.source_chain);
    if (deposit.recipient !== w.identity)
      return this.#finish(view, 'done', 'deposit not paid to this wallet');
    await this.#activate(view);
    const t = await this.#ensureTx(view, 'refund', r.source_chain, () =>
      w.signPayment({
        intentId: r.intent_id,
        token: (view.intent as unknown as { source_token: string }).source_token,
        to: view.refund_address,
        amount: BigInt(deposit.amount ?? r.source_amount_lots),
      }),
    );
    if (!t) return 'wait';
    const s = await this.#settleTx(w, t);
    if (s !== 'confirmed') return 'wait';
    if (!(await this.#report(r.intent_id, 'refund', t.txid))) return 'wait';
    this.#d.metrics?.fill('refunded');
    this.#d.log.info({ intent: r.intent_id, txid: t.txid }, 'user refunded');
    return this.#finish(view, 'done', 'refunded');
  }

  async #activate(view: IntentView): Promise<void> {
    const r = rec(view);
    const f = await loadFill(this.#d.db, r.intent_id);
    if (!f)
      await upsertFill(
        this.#d.db,
        { intentId: r.intent_id, sourceNetwork: r.source_chain, destNetwork: r.dest_chain, state: 'active' },
        this.#now(),
      );
  }

  #wallet(network: number): ChainWallet {
    const w = this.#d.wallets.get(network);
    if (!w) throw new Error(`no wallet for network ${network}`);
    return w;
  }

  /**
   * The stored transaction of `role`, or a new one signed and stored. A stored one that its network
   * says is dead is replaced by a new attempt, unless `noNew` (then undefined).
   */
  async #ensureTx(
    view: IntentView,
    role: TxRole,
    networkId: number,
    sign: () => Promise<SignedTx | null>,
    noNew = false,
  ): Promise<StoredTx | undefined> {
    const id = rec(view).intent_id;
    const w = this.#wallet(networkId);
    const last = await latestTx(this.#d.db, id, role);
    if (last && last.state !== 'dead') {
      if (last.state === 'confirmed') return last;
      const s = await w.status(last);
      if (s.state !== 'dead') return last;
      await setTxState(this.#d.db, last, 'dead');
      this.#d.metrics?.tx(networkId, role, 'dead');
      this.#d.log.warn({ intent: id, role, txid: last.txid }, 'stored transaction can never be included');
    }
    if (noNew) return undefined;
    const tx = await sign();
    if (!tx) return undefined;
    const stored = await storeTx(
      this.#d.db,
      { intentId: id, role, attempt: last ? last.attempt + 1 : 0, networkId, tx },
      this.#now(),
    );
    this.#d.metrics?.tx(networkId, role, 'signed');
    this.#d.log.info({ intent: id, role, txid: tx.txid, attempt: stored.attempt }, 'signed and stored');
    return stored;
  }

  /** Sends a stored transaction (again) unless it is known confirmed; returns where it stands. */
  async #settleTx(
    w: ChainWallet,
    t: StoredTx,
    crashAfterSign?: CrashPoint,
  ): Promise<'confirmed' | 'pending' | 'failed' | 'dead'> {
    if (t.state === 'confirmed') return 'confirmed';
    let s = await w.status(t);
    if (s.state === 'unknown') {
      if (crashAfterSign) this.#d.crash?.(crashAfterSign);
      await w.broadcast(t);
      this.#d.metrics?.tx(t.networkId, t.role, 'broadcast');
      if (t.state === 'signed') await setTxState(this.#d.db, t, 'sent');
      if (t.role === 'payment') this.#d.crash?.('payment-broadcast');
      s = await w.status(t);
    }
    if (s.state === 'confirmed') {
      await setTxState(this.#d.db, t, 'confirmed');
      return 'confirmed';
    }
    if (s.state === 'dead') {
      await setTxState(this.#d.db, t, 'dead');
      this.#d.metrics?.tx(t.networkId, t.role, 'dead');
      return 'dead';
    }
    if (s.state === 'failed') return 'failed';
    return 'pending';
  }

  /** Reports a leg; false while the service waits for confirmations or its node to see the tx. */
  async #report(id: string, leg: 'deposit' | 'fulfil' | 'claim' | 'refund', txid: string): Promise<boolean> {
    try {
      await this.#d.api[leg](id, txid);
      return true;
    } catch (err) {
      if (isNotYet(err)) return false;
      throw err;
    }
  }
}

function msg(err: unknown): string {
  if (err instanceof SwapApiError)
    return `${err.status} ${err.type}: ${err.message}${err.details?.reason ? ` (${String(err.details.reason)})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}

export type { Resolver };
