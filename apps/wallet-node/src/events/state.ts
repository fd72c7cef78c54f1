/**
 * What a wallet's events are computed from: a snapshot of its transfers (status per idx) and asset balances, read
 * with the calls the background refresh makes anyway (`listAssets`, then `listTransfers` per asset), and the diff
 * of two snapshots as event bodies (one per transfer status change, one per balance change).
 *
 * Amounts are decimal strings: u64 stays exact in any JSON parser (a browser's `EventSource` + `JSON.parse` too).
 */
import type {
  WalletBalanceAmounts,
  WalletBalanceEvent,
  WalletBeginReleasedEvent,
  WalletTransferEvent,
} from '@rgbx/contracts/wallet-node';
import type { Assignment, RgbWallet, Transfer } from '@rgbx/rgb';

export type BalanceSnap = WalletBalanceAmounts;

export interface TransferSnap {
  asset_id: string | null;
  batch_transfer_idx: number;
  kind: string;
  status: string;
  txid: string | null;
  recipient_id: string | null;
  /** The amount asked for (an invoice's), null for "any amount" or a non-fungible one. */
  requested_amount: string | null;
  /** A send: the amount sent; otherwise the units its assignments hold (a NonFungible counts 1), until then asked. */
  amount: string;
}

export interface Snapshot {
  transfers: Record<string, TransferSnap>;
  balances: Record<string, BalanceSnap>;
}

export const emptySnapshot = (): Snapshot => ({ transfers: {}, balances: {} });

/** What one read of the wallet gives (see {@link readWalletState}). */
export interface WalletState {
  /** Every transfer, with the asset it was listed under (null: an any-asset receive not bound yet). */
  transfers: Array<Transfer & { assetId: string | null }>;
  balances: Record<string, { settled: bigint; future: bigint; spendable: bigint }>;
}

/**
 * Every transfer of the wallet and every asset's balance. rgb-lib's `list_transfers(None)` lists only transfers
 * bound to no asset yet, so "all" is those plus each known asset's (as `listAllTransfers`).
 */
export async function readWalletState(w: RgbWallet): Promise<WalletState> {
  const assets = await w.listAssets([]);
  const all = [...(assets.nia ?? []), ...(assets.cfa ?? []), ...(assets.uda ?? []), ...(assets.ifa ?? [])];
  const balances: WalletState['balances'] = {};
  for (const a of all) balances[a.assetId] = a.balance;
  const transfers: WalletState['transfers'] = (await w.listTransfers(null)).map((t) => ({
    ...t,
    assetId: null,
  }));
  for (const a of all)
    for (const t of await w.listTransfers(a.assetId)) transfers.push({ ...t, assetId: a.assetId });
  return { transfers, balances };
}

function units(a: Assignment | null): bigint | null {
  if (a === null || typeof a === 'string') return a === 'NonFungible' ? 1n : null;
  if ('Fungible' in a) return BigInt(a.Fungible);
  return null;
}

export function snapshotOf(state: WalletState): Snapshot {
  const snap = emptySnapshot();
  for (const t of state.transfers) {
    const held = t.assignments.reduce((sum, a) => sum + (units(a) ?? 0n), 0n);
    const requested = units(t.requestedAssignment);
    const prev = snap.transfers[t.idx];
    snap.transfers[t.idx] = {
      // Listed under an asset beats listed under none (an any-asset receive once its asset is known).
      asset_id: t.assetId ?? prev?.asset_id ?? null,
      batch_transfer_idx: t.batchTransferIdx,
      kind: t.kind,
      status: t.status,
      txid: t.txid,
      recipient_id: t.recipientId,
      requested_amount: requested === null ? null : requested.toString(),
      // As listtransfers' `amount` (records.ts): a send, the amount sent; else what it holds (until then, asked).
      amount: ((t.kind === 'Send' && requested !== null) || (held === 0n && requested !== null)
        ? requested
        : held
      ).toString(),
    };
  }
  for (const [id, b] of Object.entries(state.balances)) {
    snap.balances[id] = {
      settled: String(b.settled),
      future: String(b.future),
      spendable: String(b.spendable),
    };
  }
  return snap;
}

/** The fields every event carries besides its body (the wire types are declared in the contracts). */
type Envelope = 'id' | 'at' | 'wallet' | 'source';
/** A transfer's status changed (or a new transfer appeared: `old_status` null). */
export type TransferEventBody = Omit<WalletTransferEvent, Envelope>;
/** An asset's balance changed (or the asset appeared: `old` null). */
export type BalanceEventBody = Omit<WalletBalanceEvent, Envelope>;
/** A begin's holds were released: by `/wallet/abortbegin` (`aborted`) or after `wallet.begin_ttl_secs` (`expired`). */
export type BeginReleasedEventBody = Omit<WalletBeginReleasedEvent, Envelope>;

export type EventBody = TransferEventBody | BalanceEventBody | BeginReleasedEventBody;

/** Where a change was found: the node's background refresh, or after a client's call. */
export type EventSource = 'refresh' | 'call';

/** One event as stored and sent: its id (per wallet, increasing from 1), time, wallet and source. */
export type WalletEvent = EventBody & {
  id: number;
  /** ISO 8601 UTC time the node found the change. */
  at: string;
  /** The wallet's master fingerprint. */
  wallet: string;
  source: EventSource | 'abortbegin' | 'begin_ttl';
};

const sameBalance = (a: BalanceSnap, b: BalanceSnap) =>
  a.settled === b.settled && a.future === b.future && a.spendable === b.spendable;

/**
 * The events between two snapshots, in a fixed order: transfers by idx, then balances by asset id. A transfer or
 * an asset that disappeared (deleted) gives none.
 */
export function diffSnapshots(prev: Snapshot, next: Snapshot): EventBody[] {
  const out: EventBody[] = [];
  const idxs = Object.keys(next.transfers)
    .map(Number)
    .sort((a, b) => a - b);
  for (const idx of idxs) {
    const t = next.transfers[idx]!;
    const old = prev.transfers[idx];
    if (old?.status === t.status) continue;
    out.push({
      type: 'transfer',
      idx,
      batch_transfer_idx: t.batch_transfer_idx,
      asset_id: t.asset_id,
      kind: t.kind,
      old_status: old?.status ?? null,
      new_status: t.status,
      txid: t.txid,
      recipient_id: t.recipient_id,
      requested_amount: t.requested_amount,
      amount: t.amount,
    });
  }
  for (const id of Object.keys(next.balances).sort()) {
    const b = next.balances[id]!;
    const old = prev.balances[id];
    if (old && sameBalance(old, b)) continue;
    out.push({ type: 'balance', asset_id: id, old: old ?? null, new: b });
  }
  return out;
}

/** A snapshot with `events` applied (recovers the snapshot after a crash between a log append and its state). */
export function applyEvents(snap: Snapshot, events: readonly EventBody[]): Snapshot {
  const out: Snapshot = { transfers: { ...snap.transfers }, balances: { ...snap.balances } };
  for (const e of events) {
    if (e.type === 'transfer') {
      out.transfers[e.idx] = {
        asset_id: e.asset_id,
        batch_transfer_idx: e.batch_transfer_idx,
        kind: e.kind,
        status: e.new_status,
        txid: e.txid,
        recipient_id: e.recipient_id,
        requested_amount: e.requested_amount,
        amount: e.amount,
      };
    } else if (e.type === 'balance') out.balances[e.asset_id] = e.new;
  }
  return out;
}
