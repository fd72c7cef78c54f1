/**
 * Begins that are never ended. rgb-lib's `create_utxos_begin` and `send_begin` (not dry-run) reserve the vanilla
 * TXOs they spend in its database (`wallet_transaction` + `reserved_txo`, cascade-linked) until the matching end
 * broadcasts them; a client that never calls the end leaves those TXOs unspendable for good (`spendable: 0`), and
 * an RGB send's batch transfer stays `Initiated`. rgb-lib has `abort_pending_vanilla_tx` for this, but the
 * c-ffi of 0.3.0-beta.7 does not export it, so we do what it does (delete the wallet transaction and its
 * reservations, in one SQLite transaction) on the wallet's own database, inside the wallet's queue (no rgb-lib
 * call of that wallet runs meanwhile).
 *
 * When each begin happened is ours to record (rgb-lib stores no time): `rgbx-begins.json` in the wallet's
 * directory maps txid → first seen (and, for RGB sends, the batch transfer to fail). A reservation found in the
 * database without a record (a crash between rgb-lib and us, or a begin older than this feature) is recorded
 * when first seen, so it too expires `begin_ttl_secs` later.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RgbLibError, type RgbWallet } from '@rgbx/rgb';
import { Transaction } from '@scure/btc-signer';
import Database from 'better-sqlite3';
import { listAllTransfers } from './transfers.ts';

/** rgb-lib's database file inside a wallet directory. */
const RGB_DB = 'rgb_lib_db';
/** Our records of begins, inside the wallet directory. */
export const BEGINS_FILE = 'rgbx-begins.json';

/** rgb-lib's `WalletTransactionType` as stored (tinyint), named as rgb-lib names them. */
const KINDS: Record<number, string> = { 1: 'CreateUtxos', 2: 'Drain', 3: 'SendBtc', 4: 'Send' };
export const kindName = (type: number) => KINDS[type] ?? `type ${type}`;

export interface PendingVanillaTx {
  txid: string;
  /** rgb-lib's wallet transaction type. */
  kind: string;
  /** The outpoints it holds, `txid:vout`. */
  outpoints: string[];
}

interface BeginRecord {
  /** Unix ms when the node served the begin (or first saw its reservation). */
  since: number;
  /** RGB sends: the batch transfer rgb-lib created in `Initiated`. */
  batch_transfer_idx?: number;
}
type BeginRecords = Record<string, BeginRecord>;

/** The txid of the transaction a begin's PSBT (unsigned or signed, base64) spends with. */
export function psbtTxid(psbtBase64: string): string {
  const tx = Transaction.fromPSBT(Buffer.from(psbtBase64, 'base64'), {
    allowUnknownInputs: true,
    allowUnknownOutputs: true,
    disableScriptCheck: true,
  });
  return tx.id;
}

/** The outpoints (`txid:vout`) a begin's PSBT spends. */
export function psbtInputs(psbtBase64: string): string[] {
  const tx = Transaction.fromPSBT(Buffer.from(psbtBase64, 'base64'), {
    allowUnknownInputs: true,
    allowUnknownOutputs: true,
    disableScriptCheck: true,
  });
  const out: string[] = [];
  for (let i = 0; i < tx.inputsLength; i++) {
    const input = tx.getInput(i);
    if (input.txid) out.push(`${Buffer.from(input.txid).toString('hex')}:${input.index}`);
  }
  return out;
}

function openDb(walletDir: string, readonly: boolean): Database.Database {
  const db = new Database(join(walletDir, RGB_DB), { readonly, fileMustExist: true });
  // rgb-lib's own connection may be mid-write for an instant (it is not running a call of this wallet, but its
  // pool can still be closing a statement): wait rather than fail.
  db.pragma('busy_timeout = 5000');
  return db;
}

/** The vanilla transactions rgb-lib has reserved TXOs for and not broadcast yet. */
export function listPendingVanillaTxs(walletDir: string): PendingVanillaTx[] {
  let db: Database.Database;
  try {
    db = openDb(walletDir, true);
  } catch {
    return []; // no database yet: a wallet never opened holds nothing
  }
  try {
    const rows = db
      .prepare(
        `SELECT wt.txid AS txid, wt.type AS type, r.txid AS in_txid, r.vout AS in_vout
           FROM wallet_transaction wt JOIN reserved_txo r ON r.reserved_for = wt.idx
          ORDER BY wt.idx, r.idx`,
      )
      .all() as { txid: string; type: number; in_txid: string; in_vout: number }[];
    const byTxid = new Map<string, PendingVanillaTx>();
    for (const r of rows) {
      let p = byTxid.get(r.txid);
      if (!p) {
        p = { txid: r.txid, kind: kindName(r.type), outpoints: [] };
        byTxid.set(r.txid, p);
      }
      p.outpoints.push(`${r.in_txid}:${r.in_vout}`);
    }
    return [...byTxid.values()];
  } finally {
    db.close();
  }
}

/**
 * What rgb-lib's `abort_pending_vanilla_tx` does: deletes the wallet transaction `txid` and the reservations it
 * holds. Returns the outpoints released, or null when rgb-lib holds nothing for `txid` (never made here, already
 * aborted, or ended and broadcast: its reservations are gone then).
 */
export function abortPendingVanillaTx(walletDir: string, txid: string): string[] | null {
  const db = openDb(walletDir, false);
  try {
    return db.transaction(() => {
      const held = db
        .prepare(
          `SELECT wt.idx AS idx, r.txid AS in_txid, r.vout AS in_vout
             FROM wallet_transaction wt JOIN reserved_txo r ON r.reserved_for = wt.idx
            WHERE wt.txid = ?`,
        )
        .all(txid) as { idx: number; in_txid: string; in_vout: number }[];
      if (held.length === 0) return null;
      for (const idx of new Set(held.map((h) => h.idx))) {
        db.prepare('DELETE FROM reserved_txo WHERE reserved_for = ?').run(idx);
        db.prepare('DELETE FROM wallet_transaction WHERE idx = ?').run(idx);
      }
      return held.map((h) => `${h.in_txid}:${h.in_vout}`);
    })();
  } finally {
    db.close();
  }
}

/**
 * For the metrics (`pending_begins`, `oldest_pending_begin_age_seconds`): per wallet directory, the records last
 * read or written by this process (count, oldest). Kept only while tracking is on (`[metrics] enabled`).
 */
let tracked: Map<string, { count: number; oldest: number | undefined }> | undefined;

/** Turns the bookkeeping for the metrics on (or off, forgetting it). */
export function trackBegins(on: boolean): void {
  tracked = on ? (tracked ?? new Map()) : undefined;
}

function noteRecords(walletDir: string, begins: BeginRecords): void {
  if (!tracked) return;
  let count = 0;
  let oldest: number | undefined;
  for (const r of Object.values(begins)) {
    count++;
    if (oldest === undefined || r.since < oldest) oldest = r.since;
  }
  if (count === 0) tracked.delete(walletDir);
  else tracked.set(walletDir, { count, oldest });
}

/**
 * The begins recorded in the wallets under `dataDir` that this process has read or written since it started:
 * how many, and when the oldest was served (unix ms).
 */
export function pendingBeginsSummary(dataDir: string): { count: number; oldestSince: number | undefined } {
  let count = 0;
  let oldestSince: number | undefined;
  if (!tracked) return { count, oldestSince };
  const prefix = join(dataDir, '/');
  for (const [dir, t] of tracked) {
    if (!dir.startsWith(prefix)) continue;
    count += t.count;
    if (t.oldest !== undefined && (oldestSince === undefined || t.oldest < oldestSince))
      oldestSince = t.oldest;
  }
  return { count, oldestSince };
}

export function readBeginRecords(walletDir: string): BeginRecords {
  let begins: BeginRecords = {};
  try {
    const parsed = JSON.parse(readFileSync(join(walletDir, BEGINS_FILE), 'utf8')) as {
      version?: number;
      begins?: BeginRecords;
    };
    if (parsed.version === 1 && parsed.begins && typeof parsed.begins === 'object') begins = parsed.begins;
  } catch {
    begins = {};
  }
  noteRecords(walletDir, begins);
  return begins;
}

export function writeBeginRecords(walletDir: string, begins: BeginRecords): void {
  const path = join(walletDir, BEGINS_FILE);
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ version: 1, begins }, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
  noteRecords(walletDir, begins);
}

/** Records a begin the node just served (so its age is known). */
export function recordBegin(walletDir: string, txid: string, batchTransferIdx?: number | null): void {
  const begins = readBeginRecords(walletDir);
  begins[txid] = {
    since: Date.now(),
    ...(batchTransferIdx == null ? {} : { batch_transfer_idx: batchTransferIdx }),
  };
  writeBeginRecords(walletDir, begins);
}

export interface PendingBegin extends PendingVanillaTx {
  /** Unix seconds when the node served it (or first saw it). */
  since: number;
  /** Unix seconds when the node releases it by itself; null when automatic release is off. */
  expires_at: number | null;
  batch_transfer_idx: number | null;
}

/**
 * The pending begins of a wallet with their age: every transaction rgb-lib holds TXOs for, and every recorded RGB
 * send begin not ended yet (its batch transfer is still `Initiated`, holding its colored inputs). Records of begins
 * no longer pending are dropped; reservations without a record are recorded as seen now.
 */
export function pendingBegins(walletDir: string, ttlMs: number, now = Date.now()): PendingBegin[] {
  const pending = new Map(listPendingVanillaTxs(walletDir).map((p) => [p.txid, p]));
  const records = readBeginRecords(walletDir);
  for (const [txid, rec] of Object.entries(records)) {
    if (!pending.has(txid) && rec.batch_transfer_idx !== undefined)
      pending.set(txid, { txid, kind: 'Send', outpoints: [] });
  }
  const kept: BeginRecords = {};
  const out = [...pending.values()].map((p) => {
    const rec = records[p.txid] ?? { since: now };
    kept[p.txid] = rec;
    return {
      ...p,
      since: Math.floor(rec.since / 1000),
      expires_at: ttlMs > 0 ? Math.floor((rec.since + ttlMs) / 1000) : null,
      batch_transfer_idx: rec.batch_transfer_idx ?? null,
    };
  });
  if (JSON.stringify(kept) !== JSON.stringify(records)) writeBeginRecords(walletDir, kept);
  return out;
}

/** After an end succeeded: the begin is no longer pending (a PSBT we cannot parse was refused by rgb-lib). */
export function forgetSignedBegin(walletDir: string, signedPsbt: string): void {
  let txid: string;
  try {
    txid = psbtTxid(signedPsbt);
  } catch {
    return;
  }
  forgetBegin(walletDir, txid);
}

/** Forgets the record of `txid` (after it was released or ended). */
export function forgetBegin(walletDir: string, txid: string): void {
  const records = readBeginRecords(walletDir);
  if (!(txid in records)) return;
  delete records[txid];
  writeBeginRecords(walletDir, records);
}

export interface Released {
  txid: string;
  /** The outpoints rgb-lib held for it and no longer does. */
  released: string[];
  /** The RGB send's batch transfer set to Failed (its colored inputs free again), if there was one. */
  failed_batch_transfer_idx: number | null;
}

/**
 * Releases the begin `txid` of the wallet in `walletDir` (open as `w`, inside its queue): an RGB send's batch
 * transfer is failed through rgb-lib (skip_sync), then the vanilla reservations are deleted as rgb-lib's
 * `abort_pending_vanilla_tx` does. Null when nothing was held for `txid`.
 *
 * The caller runs {@link syncSendRecords} first, in the same queued task: only a send still `Initiated` is failed
 * (one ended meanwhile, even by a call whose answer was lost, is a transfer in progress, never ours to cancel).
 */
export async function releaseBegin(w: RgbWallet, walletDir: string, txid: string): Promise<Released | null> {
  const rec = readBeginRecords(walletDir)[txid];
  let failed: number | null = null;
  if (rec?.batch_transfer_idx !== undefined) {
    try {
      if (await w.failTransfers(rec.batch_transfer_idx, false, true)) failed = rec.batch_transfer_idx;
    } catch (err) {
      // Already failed or past the point of failing (ended meanwhile): nothing of ours to release there.
      if (!(err instanceof RgbLibError)) throw err;
    }
  }
  const released = abortPendingVanillaTx(walletDir, txid);
  forgetBegin(walletDir, txid);
  if (released === null && failed === null) return null;
  return { txid, released: released ?? [], failed_batch_transfer_idx: failed };
}

/**
 * Keeps the records of RGB send begins in step with rgb-lib: a send rgb-lib persisted (batch transfer
 * `Initiated`) without a record (the node died between rgb-lib's `send_begin` and our record, or the answer was
 * lost) is recorded now (timed from now), so `listpendingbegins`, `abortbegin` and the TTL release see it; the
 * record of a send no longer `Initiated` (ended, even if the end's answer was lost) is dropped, so it is never
 * failed by a release.
 */
export async function syncSendRecords(w: RgbWallet, walletDir: string, now = Date.now()): Promise<void> {
  const records = readBeginRecords(walletDir);
  const initiated = new Map<number, string>();
  for (const t of await listAllTransfers(w)) {
    if (t.kind === 'Send' && t.status === 'Initiated' && t.txid !== null)
      initiated.set(t.batchTransferIdx, t.txid);
  }
  let changed = false;
  for (const [txid, r] of Object.entries(records)) {
    if (r.batch_transfer_idx !== undefined && !initiated.has(r.batch_transfer_idx)) {
      delete records[txid];
      changed = true;
    }
  }
  const known = new Set(Object.values(records).map((r) => r.batch_transfer_idx));
  for (const [idx, txid] of initiated) {
    if (known.has(idx)) continue;
    records[txid] = { since: now, batch_transfer_idx: idx };
    changed = true;
  }
  if (changed) writeBeginRecords(walletDir, records);
}

/**
 * The createutxos begins this node served in a wallet (txid → unix ms), kept after they end or are released:
 * `createutxosend` broadcasts only one of these (or one rgb-lib still holds as CreateUtxos). rgb-lib's
 * `create_utxos_end` checks nothing of the sort — given a PSBT with no matching begin it records and broadcasts
 * it — so a signed `sendbegin` PSBT posted there would put an RGB transfer on chain with no consignment sent
 * (the assets on its inputs lost), and a PSBT of another wallet, or one changed after the begin, would go out.
 * A release does not revoke a signed createutxos transaction (its outputs are the wallet's own): an end that
 * still comes broadcasts it, so entries stay {@link SERVED_KEEP_MS} after they were served.
 */
export const SERVED_CREATE_UTXOS_FILE = 'rgbx-createutxos-served.json';
const SERVED_KEEP_MS = 30 * 86_400_000;

function readServed(walletDir: string): Record<string, number> {
  try {
    const parsed = JSON.parse(readFileSync(join(walletDir, SERVED_CREATE_UTXOS_FILE), 'utf8')) as {
      version?: number;
      served?: Record<string, number>;
    };
    if (parsed.version === 1 && parsed.served && typeof parsed.served === 'object') return parsed.served;
  } catch {}
  return {};
}

/** Records a createutxos begin the node just served (older entries past the keep time are dropped). */
export function recordServedCreateUtxos(walletDir: string, txid: string, now = Date.now()): void {
  const served = Object.fromEntries(
    Object.entries(readServed(walletDir)).filter(([, at]) => now - at < SERVED_KEEP_MS),
  );
  served[txid] = now;
  const path = join(walletDir, SERVED_CREATE_UTXOS_FILE);
  writeFileSync(`${path}.tmp`, `${JSON.stringify({ version: 1, served }, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/**
 * Why `txid` may not be ended as this wallet's UTXO creation, or undefined if it may: it must be a createutxos
 * begin this wallet served (recorded, or still held by rgb-lib as CreateUtxos).
 */
export function createUtxosEndRefusal(walletDir: string, txid: string): string | undefined {
  const held = listPendingVanillaTxs(walletDir).find((p) => p.txid === txid);
  if (held) return held.kind === 'CreateUtxos' ? undefined : `it is this wallet's pending ${held.kind} begin`;
  if (txid in readServed(walletDir)) return undefined;
  if (readBeginRecords(walletDir)[txid]?.batch_transfer_idx !== undefined)
    return "it is this wallet's RGB send";
  return 'no createutxosbegin of this wallet built it (another wallet, another kind of begin, or changed since)';
}
