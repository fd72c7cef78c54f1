/**
 * A wallet's event log, in its own directory (`<data_dir>/<fingerprint>/`), next to rgb-lib's files:
 *
 * - `rgbx-events.jsonl`: append-only, one event per line (`{"id":…,…}`, ids increasing from 1, never reused);
 *   lines older than the retention are dropped by rewriting the file (a temporary file renamed over it).
 * - `rgbx-events-state.json`: the last id handed out, the highest id dropped by the retention, and the snapshot
 *   (transfer statuses, balances) the next observation is compared with. Written after the log lines it covers:
 *   a crash between the two is repaired at the next open by applying the newer lines to the snapshot, so a
 *   restart never reports a change twice, nor everything as new.
 *
 * Why files and not SQLite: the node keeps no database of its own (rgb-lib's is private to it), a wallet's
 * events are read by one wallet's streams only, and a per-wallet file goes with the wallet (backup, delete).
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  applyEvents,
  diffSnapshots,
  type EventBody,
  emptySnapshot,
  type Snapshot,
  type WalletEvent,
} from './state.ts';

export const EVENTS_FILE = 'rgbx-events.jsonl';
export const EVENTS_STATE_FILE = 'rgbx-events-state.json';

interface StateFile {
  version: 1;
  last_id: number;
  pruned_through: number;
  snapshot: Snapshot;
}

/** How often (at most) an append looks for lines past the retention. */
const PRUNE_CHECK_MS = 60_000;
const ID_OF = /^\{"id":(\d+),/;

/** Writes `text` to a temporary file renamed over `path` (0600): a crash leaves the old file or the new one. */
export function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, path);
}

export class EventLog {
  readonly dir: string;
  readonly wallet: string;
  readonly retentionMs: number;
  #state: StateFile | undefined;
  #lastPruneCheck = 0;
  /** The highest id the retention may drop (undelivered webhook events are held), or undefined: no hold. */
  readonly #hold: (() => number | undefined) | undefined;
  /** Byte offset in the log just after event `id` (from reads and appends), so a page starts where it is. */
  readonly #offsets = new Map<number, number>();

  private constructor(
    dir: string,
    wallet: string,
    retentionMs: number,
    state: StateFile | undefined,
    hold?: () => number | undefined,
  ) {
    this.dir = dir;
    this.#hold = hold;
    this.wallet = wallet;
    this.retentionMs = retentionMs;
    this.#state = state;
  }

  /** Opens the log of the wallet in `dir` (repairing a torn last line and a state file behind the log). */
  static open(dir: string, wallet: string, retentionMs: number, hold?: () => number | undefined): EventLog {
    let state: StateFile | undefined;
    try {
      const s = JSON.parse(readFileSync(join(dir, EVENTS_STATE_FILE), 'utf8')) as StateFile;
      if (s.version === 1 && Number.isSafeInteger(s.last_id) && s.snapshot) state = s;
    } catch {}
    const log = new EventLog(dir, wallet, retentionMs, state, hold);
    const path = join(dir, EVENTS_FILE);
    if (existsSync(path)) {
      // A line cut short by a crash mid-append is dropped (its state was never written).
      const fd = openSync(path, 'r+');
      try {
        const size = fstatSync(fd).size;
        if (size > 0) {
          const last = Buffer.alloc(1);
          readSync(fd, last, 0, 1, size - 1);
          if (last[0] !== 0x0a) {
            const text = readFileSync(path, 'utf8');
            ftruncateSync(fd, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
          }
        }
      } finally {
        closeSync(fd);
      }
      if (state) {
        const behind = log.read(state.last_id, Number.MAX_SAFE_INTEGER);
        if (behind.length > 0) {
          state.snapshot = applyEvents(state.snapshot, behind);
          state.last_id = behind.at(-1)!.id;
          log.#saveState();
        }
      }
    }
    return log;
  }

  /** Whether the wallet has a snapshot yet (its first observation is otherwise its baseline). */
  get hasState(): boolean {
    return this.#state !== undefined;
  }

  get lastId(): number {
    return this.#state?.last_id ?? 0;
  }

  /** The highest id the retention dropped (a resume from below it has missed events). */
  get prunedThrough(): number {
    return this.#state?.pruned_through ?? 0;
  }

  get snapshot(): Snapshot {
    return this.#state?.snapshot ?? emptySnapshot();
  }

  #saveState(): void {
    writeAtomic(join(this.dir, EVENTS_STATE_FILE), `${JSON.stringify(this.#state)}\n`);
  }

  /** Sets the snapshot without any event (a new wallet: empty; a wallet seen first with history: as it is). */
  baseline(snap: Snapshot = emptySnapshot()): void {
    this.#state = {
      version: 1,
      last_id: this.#state?.last_id ?? 0,
      pruned_through: this.#state?.pruned_through ?? 0,
      snapshot: snap,
    };
    this.#saveState();
  }

  /**
   * Compares `snap` with the stored snapshot and appends one event per difference (a wallet with no state yet:
   * `snap` becomes its baseline, no event). Returns the events appended.
   */
  observe(snap: Snapshot, source: WalletEvent['source'], now = Date.now()): WalletEvent[] {
    if (!this.#state) {
      this.baseline(snap);
      return [];
    }
    const bodies = diffSnapshots(this.#state.snapshot, snap);
    if (bodies.length === 0) return [];
    return this.append(bodies, source, now, snap);
  }

  /** Appends events (ids from `lastId + 1`), then the state (with `snap` as its snapshot, if given). */
  append(bodies: readonly EventBody[], source: WalletEvent['source'], now = Date.now(), snap?: Snapshot) {
    const state = this.#state ?? { version: 1, last_id: 0, pruned_through: 0, snapshot: emptySnapshot() };
    const at = new Date(now).toISOString();
    const events = bodies.map(
      (b, i) => ({ id: state.last_id + 1 + i, at, wallet: this.wallet, source, ...b }) as WalletEvent,
    );
    if (events.length === 0) return events;
    const text = events.map((e) => `${JSON.stringify(e)}\n`).join('');
    const fd = openSync(join(this.dir, EVENTS_FILE), 'a', 0o600);
    try {
      let pos = fstatSync(fd).size;
      writeSync(fd, text);
      for (const e of events) {
        pos += Buffer.byteLength(JSON.stringify(e)) + 1;
        this.#remember(e.id, pos);
      }
    } finally {
      closeSync(fd);
    }
    state.last_id = events.at(-1)!.id;
    state.snapshot = snap ?? applyEvents(state.snapshot, bodies);
    this.#state = state;
    this.#saveState();
    if (now - this.#lastPruneCheck >= PRUNE_CHECK_MS) this.prune(now);
    return events;
  }

  #remember(id: number, offset: number): void {
    if (this.#offsets.size >= 4096) this.#offsets.clear();
    this.#offsets.set(id, offset);
  }

  /** Up to `limit` events with an id above `afterId`, in order (read from where `afterId` ended, if known). */
  read(afterId: number, limit: number): WalletEvent[] {
    let fd: number;
    try {
      fd = openSync(join(this.dir, EVENTS_FILE), 'r');
    } catch {
      return [];
    }
    const out: WalletEvent[] = [];
    try {
      const size = fstatSync(fd).size;
      let pos = this.#offsets.get(afterId) ?? 0;
      if (pos > size) pos = 0;
      let rest = '';
      const chunk = Buffer.alloc(256 * 1024);
      while (pos < size && out.length < limit) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - pos), pos);
        if (n <= 0) break;
        const lines = (rest + chunk.toString('utf8', 0, n)).split('\n');
        let lineStart = pos - Buffer.byteLength(rest);
        pos += n;
        rest = lines.pop() ?? '';
        for (const line of lines) {
          lineStart += Buffer.byteLength(line) + 1;
          const m = ID_OF.exec(line);
          if (!m || Number(m[1]) <= afterId) continue;
          try {
            out.push(JSON.parse(line) as WalletEvent);
          } catch {
            continue;
          }
          this.#remember(out.at(-1)!.id, lineStart);
          if (out.length >= limit) break;
        }
      }
    } finally {
      closeSync(fd);
    }
    return out;
  }

  /**
   * Drops the events older than the retention (the newest event always stays: it carries the position), but none
   * above the hold (events a webhook has not delivered yet).
   */
  prune(now = Date.now()): number {
    this.#lastPruneCheck = now;
    const path = join(this.dir, EVENTS_FILE);
    if (!this.#state || !existsSync(path)) return 0;
    const cutoff = now - this.retentionMs;
    const hold = this.#hold?.();
    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    let drop = 0;
    let through = this.#state.pruned_through;
    for (const line of lines.slice(0, -1)) {
      let e: WalletEvent;
      try {
        e = JSON.parse(line) as WalletEvent;
      } catch {
        drop++;
        continue;
      }
      if (Date.parse(e.at) >= cutoff || (hold !== undefined && e.id > hold)) break;
      through = e.id;
      drop++;
    }
    if (drop === 0) return 0;
    // The state first: a crash after it only keeps lines a resume will not be offered.
    this.#state.pruned_through = through;
    this.#saveState();
    const kept = lines.slice(drop);
    this.#offsets.clear();
    writeAtomic(path, kept.length > 0 ? `${kept.join('\n')}\n` : '');
    return drop;
  }
}
