/**
 * What the node knows about its indexer: whether the last attempts to use it failed, how (refused, dropped, no
 * answer, an error answer), when to try again, and the few connections the HTTP process itself may hold to it.
 *
 * An indexer that refuses or drops connections is an answer for the client (503 `indexer_unavailable`, naming the
 * indexer and what was refused, with `Retry-After`), not a 500; the background refresh pauses while it is down
 * (one probe per back-off period) instead of logging a failure per wallet and tick; and `/readiness` says so.
 */
import { ElectrumConnection, ElectrumUnavailableError } from '@rgbx/chains/btc';
import { RgbLibError } from '@rgbx/rgb';
import type { Logger } from '@rgbx/service-kit';

/**
 * How the indexer failed:
 * - `refused`: a new connection was refused or closed before the handshake (nothing listening, or the server is at
 *   its connection limit: both look the same to rgb-lib, "not a valid electrum nor esplora server");
 * - `dropped`: an open connection was closed or reset during a call;
 * - `timeout`: no answer in time;
 * - `error`: the indexer answered, with an error (e.g. its own backend, bitcoind, unreachable).
 */
export type IndexerFailureKind = 'refused' | 'dropped' | 'timeout' | 'error';

export interface IndexerProblem {
  kind: IndexerFailureKind;
  /** The underlying message (rgb-lib's details, or the socket error). */
  detail: string;
  /** rgb-lib's error variant (`InvalidIndexer`, `Indexer`) or `Electrum` for the node's own connections. */
  source: string;
}

/** A call not even tried: the indexer is known to be down ({@link IndexerHealth.knownDown}). */
export class IndexerDownError extends Error {
  override readonly name = 'IndexerDownError';
  readonly problem: IndexerProblem;
  constructor(problem: IndexerProblem) {
    super(`indexer known to be down: ${problem.detail}`);
    this.problem = problem;
  }
}

/** rgb-lib gives up on a connection that never answers after ~10 s; a refusal takes milliseconds. */
const SLOW_MS = 5_000;

/** The kind of failure a message describes (rgb-lib's Electrum client errors, Node socket codes). */
export function failureKindOf(text: string): IndexerFailureKind {
  const t = text.toLowerCase();
  if (/connection refused|os error 111|econnrefused|enotfound|eai_again|ehostunreach|enetunreach/.test(t))
    return 'refused';
  if (
    /timed out|os error 110|resource temporarily unavailable|os error 11\b|no connection within|timeout/.test(
      t,
    )
  )
    return 'timeout';
  if (
    /unexpected eof|connection reset|os error 104|broken pipe|os error 32\b|econnreset|epipe|connection closed|not connected|os error 107|connection aborted/.test(
      t,
    )
  )
    return 'dropped';
  return 'error';
}

/**
 * The indexer problem an error reports, or null when it is not about the indexer. `elapsedMs`: how long the failed
 * attempt took (a `goOnline` that gave up after ~10 s met an indexer that accepted and never answered).
 */
export function classifyIndexerError(err: unknown, elapsedMs = 0): IndexerProblem | null {
  if (err instanceof IndexerDownError) return err.problem;
  if (err instanceof RgbLibError && err.kind === 'rgb-lib') {
    if (err.variant === 'InvalidIndexer') {
      return {
        kind: elapsedMs >= SLOW_MS ? 'timeout' : 'refused',
        detail: err.details.details ?? err.message,
        source: 'InvalidIndexer',
      };
    }
    if (err.variant === 'Indexer') {
      const detail = err.details.details ?? err.message;
      return { kind: failureKindOf(detail), detail, source: 'Indexer' };
    }
    return null;
  }
  if (err instanceof ElectrumUnavailableError) {
    const k = failureKindOf(err.reason);
    // A connection closed by the server before it answered `server.version` is a refusal (e.g. its limit).
    return { kind: k === 'dropped' ? 'refused' : k, detail: err.reason, source: 'Electrum' };
  }
  return null;
}

/** Words for a message: "the indexer tcp://… <what>". */
export function describeFailure(kind: IndexerFailureKind): string {
  switch (kind) {
    case 'refused':
      return 'refused a new connection (not listening, or at its connection limit)';
    case 'dropped':
      return 'dropped the connection during the call';
    case 'timeout':
      return 'did not answer in time';
    default:
      return 'answered with an error';
  }
}

export interface IndexerState {
  address: string;
  state: 'ok' | 'unavailable';
  /** ISO time the indexer became unavailable. */
  since?: string;
  last_error?: { kind: IndexerFailureKind; message: string; at: string };
  consecutive_failures: number;
  /** Seconds until the node tries it again in the background (and what `Retry-After` says). */
  retry_after_secs?: number;
  /** The last probe from the node (server.version on a connection of its own). */
  last_probe?: { at: string; ok: boolean; detail: string };
}

/** Socket outcomes of a probe that mean the indexer is down, not merely full. */
const DOWN = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|no connection within|timed? ?out/i;

const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 30_000;
/** While unavailable, a summary line at most this often (not a line per failure). */
const SUMMARY_EVERY_MS = 60_000;
/** `/readiness` probes at most this often while nothing else says how the indexer is. */
const PROBE_EVERY_MS = 5_000;

export interface IndexerHealthOptions {
  /** Connections the HTTP process may hold to the indexer at once (its own calls, probes). Default 2. */
  reserve?: number;
  now?: () => number;
  /** Opens a connection for a probe (tests inject one). Default: an Electrum `server.version` handshake. */
  probe?: (address: string) => Promise<string>;
}

/**
 * The indexer's health as the node sees it, from the outcome of every call that needed it. Failures back off
 * exponentially (1 s doubling to 30 s); any success clears them.
 */
export class IndexerHealth {
  readonly address: string;
  readonly reserve: number;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #probeFn: (address: string) => Promise<string>;
  #failures = 0;
  #since = 0;
  #retryAt = 0;
  #last: { kind: IndexerFailureKind; message: string; at: number } | undefined;
  #lastSuccess = 0;
  #failuresSinceSummary = 0;
  #summaryAt = 0;
  #nextBackgroundAt = 0;
  #probe: Promise<void> | undefined;
  #lastProbe: { at: number; ok: boolean; detail: string; down: boolean } | undefined;
  #inUse = 0;
  readonly #gateWaiters: Array<() => void> = [];

  constructor(address: string, log: Logger, opts: IndexerHealthOptions = {}) {
    this.address = address;
    this.reserve = opts.reserve ?? 2;
    this.#log = log;
    this.#now = opts.now ?? Date.now;
    this.#probeFn =
      opts.probe ??
      (async (a) => {
        const c = await ElectrumConnection.connect(a, { timeoutMs: 3_000, clientName: 'rgbx-wallet-node' });
        c.close();
        return `${c.serverVersion[0]} (protocol ${c.serverVersion[1]})`;
      });
  }

  get available(): boolean {
    return this.#failures === 0;
  }

  /** A call needing the indexer succeeded. */
  ok(): void {
    this.#lastSuccess = this.#now();
    if (this.#failures === 0) return;
    this.#log.info(
      {
        indexer: this.address,
        down_ms: this.#lastSuccess - this.#since,
        failures: this.#failures,
      },
      'indexer available again',
    );
    this.#failures = 0;
    this.#retryAt = 0;
    this.#nextBackgroundAt = 0;
    this.#failuresSinceSummary = 0;
  }

  /**
   * A call needing the indexer failed with `p`; returns the seconds a client should wait (`Retry-After`). The first
   * failure also starts a probe of the node's own, which tells a down indexer from a full one ({@link knownDown}).
   */
  fail(p: IndexerProblem, probe = true): number {
    const now = this.#now();
    // Diagnose with a probe of our own, unless one ran since this streak began, or in the last few seconds.
    const last = this.#lastProbe;
    if (probe && (!last || last.at < this.#since || this.#failures === 0 || now - last.at >= PROBE_EVERY_MS))
      queueMicrotask(() => void this.#runProbe());
    if (this.#failures === 0) {
      this.#since = now;
      this.#summaryAt = now;
      this.#log.warn(
        { indexer: this.address, kind: p.kind, detail: p.detail.slice(0, 300) },
        `indexer unavailable: it ${describeFailure(p.kind)}; background work pauses, clients get 503`,
      );
    } else if (now - this.#summaryAt >= SUMMARY_EVERY_MS) {
      this.#log.warn(
        {
          indexer: this.address,
          kind: p.kind,
          failures: this.#failures + 1,
          failures_since_last_line: this.#failuresSinceSummary + 1,
          down_ms: now - this.#since,
        },
        'indexer still unavailable',
      );
      this.#summaryAt = now;
      this.#failuresSinceSummary = 0;
    } else {
      this.#failuresSinceSummary++;
    }
    this.#failures++;
    this.#last = { kind: p.kind, message: p.detail, at: now };
    const backoff = Math.min(BACKOFF_BASE_MS * 2 ** Math.min(this.#failures - 1, 15), BACKOFF_MAX_MS);
    this.#retryAt = Math.max(this.#retryAt, now + backoff);
    return this.retryAfterSecs();
  }

  /** Seconds until the next try (at least 1): what `Retry-After` says. */
  retryAfterSecs(): number {
    return Math.max(1, Math.ceil((this.#retryAt - this.#now()) / 1000));
  }

  /**
   * May the background refresh use the indexer now? Always while it is available; while it is not, once per back-off
   * period (a probe: the first caller after `retry_after` gets the turn).
   */
  backgroundTurn(): boolean {
    if (this.#failures === 0) return true;
    const now = this.#now();
    if (now < this.#retryAt || now < this.#nextBackgroundAt) return false;
    this.#nextBackgroundAt =
      now + Math.min(BACKOFF_BASE_MS * 2 ** Math.min(this.#failures, 15), BACKOFF_MAX_MS);
    return true;
  }

  /**
   * Runs `fn` on one of the HTTP process's own indexer connections (at most `reserve` at once; the rest wait), so
   * the node's total stays within `indexer_max_connections`.
   */
  async withConnection<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#inUse >= this.reserve) await new Promise<void>((r) => this.#gateWaiters.push(r));
    this.#inUse++;
    try {
      return await fn();
    } finally {
      this.#inUse--;
      this.#gateWaiters.shift()?.();
    }
  }

  /**
   * Checks the indexer with a connection of the node's own (`server.version`) when nothing recent says how it is:
   * while it is unavailable and its back-off has passed, or when no call used it for a while. One at a time, at most
   * every 5 s. A probe that connects clears the failures (new connections work again).
   */
  async refreshByProbe(): Promise<void> {
    const now = this.#now();
    const stale =
      this.#failures > 0
        ? now >= this.#retryAt
        : now - Math.max(this.#lastSuccess, this.#lastProbe?.at ?? 0) > 30_000;
    if (!stale || (this.#lastProbe && now - this.#lastProbe.at < PROBE_EVERY_MS)) return this.#probe;
    return this.#runProbe();
  }

  /**
   * True while the indexer is known to be down (the node's own probe found nothing listening, or no answer, since it
   * became unavailable) and its back-off runs: a call of a wallet already online is answered 503 at once instead of
   * holding its child until rgb-lib gives up. Wallets going online still try (a refusal costs milliseconds).
   */
  knownDown(): boolean {
    const p = this.#lastProbe;
    return (
      this.#failures > 0 && p !== undefined && p.down && p.at >= this.#since && this.#now() < this.#retryAt
    );
  }

  /** What the last probe found, as the problem a call not tried reports (see {@link knownDown}). */
  downProblem(): IndexerProblem {
    const p = this.#lastProbe;
    const detail = p?.detail ?? 'unreachable';
    return { kind: failureKindOf(detail) === 'timeout' ? 'timeout' : 'refused', detail, source: 'probe' };
  }

  #runProbe(): Promise<void> {
    this.#probe ??= this.withConnection(() => this.#probeFn(this.address))
      .then(
        (version) => {
          this.#lastProbe = { at: this.#now(), ok: true, detail: version, down: false };
          this.ok();
        },
        (err: unknown) => {
          const p = classifyIndexerError(err) ?? {
            kind: 'error' as const,
            detail: err instanceof Error ? err.message : String(err),
            source: 'Electrum',
          };
          // Nothing listening or no answer at all: calls of wallets already online would only wait for rgb-lib to
          // give up (14 s refused, 54 s unanswered); a connection closed at once (a full server) is not that.
          const down = err instanceof ElectrumUnavailableError && DOWN.test(err.reason);
          this.#lastProbe = { at: this.#now(), ok: false, detail: p.detail, down };
          this.fail(p, false);
        },
      )
      .finally(() => {
        this.#probe = undefined;
      });
    return this.#probe;
  }

  state(): IndexerState {
    const iso = (t: number) => new Date(t).toISOString();
    const base: IndexerState = {
      address: this.address,
      state: this.#failures === 0 ? 'ok' : 'unavailable',
      consecutive_failures: this.#failures,
      ...(this.#lastProbe
        ? {
            last_probe: {
              at: iso(this.#lastProbe.at),
              ok: this.#lastProbe.ok,
              detail: this.#lastProbe.detail,
            },
          }
        : {}),
    };
    if (this.#failures === 0) return base;
    return {
      ...base,
      since: iso(this.#since),
      ...(this.#last
        ? {
            last_error: {
              kind: this.#last.kind,
              message: `the indexer ${this.address} ${describeFailure(this.#last.kind)}: ${this.#last.message.slice(0, 300)}`,
              at: iso(this.#last.at),
            },
          }
        : {}),
      retry_after_secs: this.retryAfterSecs(),
    };
  }
}
