/**
 * `GET /wallet/events`: the calling wallet's events as Server-Sent Events. Framing as the swap's feeds:
 * `retry:` and the starting `id:` first, then `id: <event id>` / `event: <type>` / `data: <JSON>` per event, an
 * `event: reset` when the `Last-Event-ID` is older than the retention (or names no event), and a heartbeat
 * comment carrying `id:` every `wallet.events_heartbeat_secs`.
 *
 * A stream has a cursor: every event up to it was written. Live events are written while the socket takes them;
 * once it does not (`write` false), the stream stops writing and, when the socket drained, reads the rest from
 * the wallet's log by id: nothing is buffered per client beyond the socket's own buffer. A socket that does not
 * drain within {@link STALL_MS} is closed (the client resumes by id).
 */
import type { ServerResponse } from 'node:http';
import { drained } from '@rgbx/service-kit/sse';
import type { EventListener } from './hub.ts';
import type { EventLog } from './log.ts';
import type { WalletEvent } from './state.ts';

/** A client whose socket buffer does not drain for this long is disconnected (it resumes later by id). */
export const STALL_MS = 30_000;
/** Events read from the log per catch-up page. */
const PAGE = 200;

export interface ResetInfo {
  reason: 'expired' | 'unknown';
  message: string;
}

/** Where a stream resuming after `lastId` starts, and the `reset` to send first, if any. */
export function resumePoint(
  log: EventLog,
  lastId: number | undefined,
): { cursor: number; reset?: ResetInfo } {
  if (lastId === undefined) return { cursor: log.lastId };
  if (lastId > log.lastId)
    return {
      cursor: log.lastId,
      reset: { reason: 'unknown', message: `Last-Event-ID ${lastId} names no event of this wallet` },
    };
  if (lastId < log.prunedThrough)
    return {
      cursor: log.prunedThrough,
      reset: {
        reason: 'expired',
        message: `events ${lastId + 1}–${log.prunedThrough} are past the retention (${log.retentionMs / 1000} s); re-read the transfers`,
      },
    };
  return { cursor: lastId };
}

export function frame(e: WalletEvent): string {
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
}

export class EventStream implements EventListener {
  #cursor: number;
  #live = false;
  #closed = false;
  #pumping: Promise<void> | undefined;
  readonly #heartbeat: NodeJS.Timeout;
  readonly #log: EventLog;
  readonly #res: ServerResponse;
  readonly #onClose: () => void;
  readonly #stallMs: number;

  constructor(
    log: EventLog,
    res: ServerResponse,
    cursor: number,
    opts: { heartbeatMs: number; stallMs?: number; onClose: () => void },
  ) {
    this.#log = log;
    this.#res = res;
    this.#cursor = cursor;
    this.#onClose = opts.onClose;
    this.#stallMs = opts.stallMs ?? STALL_MS;
    this.#heartbeat = setInterval(() => {
      if (!this.#closed && !res.writableNeedDrain) this.#write(`: heartbeat\nid: ${this.#cursor}\n\n`);
    }, opts.heartbeatMs);
    this.#heartbeat.unref();
    res.on('close', () => this.close());
  }

  get cursor(): number {
    return this.#cursor;
  }

  #write(text: string): boolean {
    const res = this.#res;
    return !res.writableEnded && !res.destroyed && res.write(text);
  }

  start(): void {
    this.#kick();
  }

  offer(events: readonly WalletEvent[]): void {
    if (this.#closed) return;
    if (!this.#live) {
      this.#kick();
      return;
    }
    for (const e of events) {
      if (e.id <= this.#cursor) continue;
      this.#cursor = e.id;
      if (!this.#write(frame(e))) {
        // The client is slow: stop pushing; the pump reads the rest from the log once the socket drained.
        this.#live = false;
        this.#kick();
        return;
      }
    }
  }

  #kick(): void {
    this.#pumping ??= this.#pump()
      .catch(() => this.close())
      .finally(() => {
        this.#pumping = undefined;
      });
  }

  /** Writes from the log until the stream reached the log's end (then it goes live), while the socket takes it. */
  async #pump(): Promise<void> {
    while (!this.#closed) {
      if (this.#res.writableNeedDrain) {
        if (!(await drained(this.#res, this.#stallMs))) {
          // Stalled past the bound (or gone): dropped; the client resumes by id.
          this.close(true);
          return;
        }
        continue;
      }
      // Synchronous from here to `live`: no append can slip between the read and going live.
      const rows = this.#log.read(this.#cursor, PAGE);
      if (rows.length === 0) {
        this.#live = true;
        return;
      }
      for (const r of rows) {
        this.#cursor = r.id;
        if (!this.#write(frame(r))) break;
      }
    }
  }

  /** Ends the stream; `drop`: destroy the socket (a stalled one is not left to the kernel's timeouts). */
  close(drop = false): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    if (drop) this.#res.destroy();
    else if (!this.#res.writableEnded) this.#res.end();
    this.#onClose();
  }
}
