/**
 * Parent side of the rgb-lib child-process host.
 *
 * This module (and everything it imports) never loads the native addon: all rgb-lib work happens in
 * a `child_process.fork`ed process (`child.ts`) that the host talks to over IPC. That keeps the
 * synchronous, potentially minute-long rgb-lib calls off the parent's event loop, keeps the swig
 * addon in exactly one isolate, and contains crashes (a Rust panic aborts only the child).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, realpathSync, unlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childArgs, forgetChild, preparePidDir, recordChild } from './children.ts';
import { RgbCallTimeoutError, RgbChildDiedError, RgbLibError, RgbWalletClosedError } from './errors.ts';
import type {
  OpName,
  Ops,
  RawArg,
  ReadyMessage,
  RequestMessage,
  ResponseMessage,
  WalletFunction,
} from './protocol.ts';

export interface RgbHostOptions {
  /**
   * Path of the child entry. Default: `child.js` next to this module when running from `dist/`, or
   * `child.ts` itself when this module runs from `src/` (the test runner), so tests run the current source.
   */
  childEntry?: string;
  /**
   * Node flags for the child. Default `[]` for a `.js` entry (the parent's `execArgv`, e.g. test loaders, is
   * NOT inherited); for a `.ts` entry, the `source` export condition and the test-only TypeScript loader.
   */
  execArgv?: string[];
  /** Child environment. Default: the parent's. */
  env?: NodeJS.ProcessEnv;
  /** Max time from fork to the child's `ready` message. Default 30 s. */
  spawnTimeoutMs?: number;
  /**
   * Watchdog for a single call. rgb-lib calls cannot be cancelled, so on expiry the child is
   * SIGKILLed: the call rejects with {@link RgbCallTimeoutError}, other in-flight calls with
   * {@link RgbChildDiedError}. Default: no watchdog.
   */
  callTimeoutMs?: number;
  /** How long `close()` waits for a graceful child exit before SIGKILL. Default 10 s. */
  closeTimeoutMs?: number;
  /**
   * Directory (created, mode 0700) where each child is recorded as `child-<pid>.pid` while it runs. A child
   * normally dies with this process, even one blocked in a long rgb-lib call (its parent-death watchdog);
   * should one survive anyway, {@link killLeftoverChildren} on the same directory kills it at the next start.
   * Default: not recorded.
   */
  pidDir?: string;
}

interface Pending {
  op: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

interface OpenWalletEntry {
  walletDir: string;
}

/** Events: `child-spawn` ({pid, generation, spawnMs, loadMs}), `child-exit` ({pid, generation, code, signal}). */
export interface RgbHostEvents {
  'child-spawn': [{ pid: number; generation: number; spawnMs: number; loadMs: number }];
  'child-exit': [{ pid: number | undefined; generation: number; code: number | null; signal: string | null }];
}

const STDERR_TAIL_BYTES = 4096;
const LOCK_FILE = 'rgb_runtime.lock';

/**
 * The test-only loader that lets Node 20 run the `.ts` child (`scripts/ts-loader/` of the repository, with
 * the `typescript` devDependency); built code never needs it (its child is `child.js`).
 */
export const TS_LOADER = new URL('../../../scripts/ts-loader/register.mjs', import.meta.url);

function defaultChildEntry(): string {
  return fileURLToPath(
    new URL(import.meta.url.endsWith('.ts') ? './child.ts' : './child.js', import.meta.url),
  );
}

/** Flags for a child running `entry`: none for built code; for the sources, what runs TypeScript. */
function defaultExecArgv(entry: string): string[] {
  return entry.endsWith('.ts') ? ['--conditions', 'source', '--import', TS_LOADER.href] : [];
}

/**
 * Runs rgb-lib in a child process and forwards calls to it.
 *
 * - One child at a time, started lazily by the first call (or {@link start}); calls are queued in
 *   the child and executed one by one (rgb-lib wallets are not thread-safe anyway).
 * - If the child dies, every in-flight call rejects with {@link RgbChildDiedError}, the wallets it
 *   held are marked closed (calls on their handles reject with {@link RgbWalletClosedError}), their
 *   stale `rgb_runtime.lock` files are removed, and the next call starts a fresh child.
 * - The child does not keep the parent alive while idle (it is unref'ed between calls); still call
 *   {@link close} to free the wallets cleanly.
 */
export class RgbHost extends EventEmitter<RgbHostEvents> {
  readonly #opts: Required<Pick<RgbHostOptions, 'spawnTimeoutMs' | 'closeTimeoutMs'>> & RgbHostOptions;
  #child: ChildProcess | null = null;
  #starting: Promise<ChildProcess> | null = null;
  #generation = 0;
  #nextId = 1;
  #walletSeq = 0;
  #pending = new Map<number, Pending>();
  #stderrTail = '';
  #wallets = new Map<string, OpenWalletEntry>();
  #closedHandles = new Map<string, string>();
  #closed = false;
  #lastSpawnMs: number | undefined;
  #killReason: { reason: string; timedOutId: number | undefined } | null = null;

  constructor(opts: RgbHostOptions = {}) {
    super();
    this.#opts = { spawnTimeoutMs: 30_000, closeTimeoutMs: 10_000, ...opts };
  }

  /** PID of the current child, if one is running. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Number of children started so far (the current child's generation). */
  get generation(): number {
    return this.#generation;
  }

  /** Milliseconds from `fork()` to the `ready` message, for the last child started. */
  get lastSpawnMs(): number | undefined {
    return this.#lastSpawnMs;
  }

  /** Handles of the wallets open in the current child. */
  get openWallets(): string[] {
    return [...this.#wallets.keys()];
  }

  /** Start the child now (otherwise the first call does). Resolves once the addon is loaded. */
  async start(): Promise<void> {
    await this.#ensureChild();
  }

  #ensureChild(): Promise<ChildProcess> {
    if (this.#closed) return Promise.reject(new Error('RgbHost is closed'));
    if (this.#child) return Promise.resolve(this.#child);
    this.#starting ??= this.#spawn().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  #spawn(): Promise<ChildProcess> {
    const entry = this.#opts.childEntry ?? defaultChildEntry();
    if (!existsSync(entry)) {
      return Promise.reject(
        new Error(`rgb-lib child entry ${entry} not found; build it with \`npx tsc -b\``),
      );
    }
    const execArgv = this.#opts.execArgv ?? defaultExecArgv(entry);
    if (execArgv.includes(TS_LOADER.href) && !existsSync(fileURLToPath(TS_LOADER))) {
      return Promise.reject(
        new Error(`rgb-lib child entry ${entry} is TypeScript, which runs only in the repository`),
      );
    }
    const pidDir = this.#opts.pidDir === undefined ? undefined : resolve(this.#opts.pidDir);
    if (pidDir !== undefined) {
      try {
        preparePidDir(pidDir);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const t0 = performance.now();
    const child = fork(entry, childArgs(pidDir), {
      execArgv,
      env: this.#opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json',
    });
    let pidFileError: Error | undefined;
    if (pidDir !== undefined && child.pid !== undefined) {
      // Recorded at once (same tick as the fork); removed once the child is reaped.
      try {
        const file = recordChild(pidDir, child.pid, entry);
        child.once('exit', () => forgetChild(file));
      } catch (err) {
        pidFileError = new Error(
          `cannot record the rgb-lib child in ${pidDir}: ${(err as NodeJS.ErrnoException).code ?? err}`,
        );
      }
    }
    const generation = ++this.#generation;
    this.#stderrTail = '';
    child.stdout?.on('data', () => {});
    child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });

    return new Promise<ChildProcess>((resolvePromise, rejectPromise) => {
      let settled = false;
      if (pidFileError) {
        // An unrecorded child could outlive us unnoticed by the next start's sweep: do not use it.
        settled = true;
        child.kill('SIGKILL');
        rejectPromise(pidFileError);
      }
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        child.kill('SIGKILL');
        rejectPromise(new Error(`rgb-lib child did not become ready within ${this.#opts.spawnTimeoutMs} ms`));
      }, this.#opts.spawnTimeoutMs);

      child.on('message', (msg: ResponseMessage | ReadyMessage) => {
        if ('type' in msg && msg.type === 'ready') {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          this.#child = child;
          this.#lastSpawnMs = performance.now() - t0;
          this.#updateRef();
          this.emit('child-spawn', {
            pid: msg.pid,
            generation,
            spawnMs: this.#lastSpawnMs,
            loadMs: msg.loadMs,
          });
          resolvePromise(child);
          return;
        }
        this.#onResponse(msg as ResponseMessage);
      });
      child.on('error', (err) => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          rejectPromise(err);
        }
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (!settled) {
          settled = true;
          rejectPromise(
            new RgbChildDiedError({
              pid: child.pid,
              exitCode: code,
              signal,
              stderrTail: this.#stderrTail,
              reason: 'before ready',
            }),
          );
        }
        this.#onExit(child, generation, code, signal);
      });
    });
  }

  #onResponse(msg: ResponseMessage): void {
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    if (p.timer) clearTimeout(p.timer);
    this.#updateRef();
    if (msg.ok) p.resolve(msg.value);
    else p.reject(new RgbLibError(msg.error, p.op));
  }

  #onExit(child: ChildProcess, generation: number, code: number | null, signal: string | null): void {
    if (this.#child !== child) {
      // never became ready; nothing was registered against it
      this.emit('child-exit', { pid: child.pid, generation, code, signal });
      return;
    }
    this.#child = null;
    const kill = this.#killReason;
    this.#killReason = null;
    const info = { pid: child.pid, exitCode: code, signal, stderrTail: this.#stderrTail };
    for (const [id, p] of this.#pending) {
      if (p.timer) clearTimeout(p.timer);
      if (kill && kill.timedOutId === id) p.reject(new RgbCallTimeoutError({ ...info, reason: kill.reason }));
      else p.reject(new RgbChildDiedError(kill ? { ...info, reason: kill.reason } : info));
    }
    this.#pending.clear();
    const why = `its rgb-lib child process ${child.pid} exited (${signal ? `signal ${signal}` : `code ${code}`})`;
    for (const [handle, w] of this.#wallets) {
      this.#closedHandles.set(handle, why);
      // The dead process cannot hold the lock any more; a leftover lock would make every later RGB
      // operation on this wallet wait up to an hour (rgb-lib's lock-wait loop).
      try {
        unlinkSync(join(w.walletDir, LOCK_FILE));
      } catch {
        // no lock left behind
      }
    }
    this.#wallets.clear();
    this.emit('child-exit', { pid: child.pid, generation, code, signal });
  }

  /** Keep the parent alive only while calls are in flight. */
  #updateRef(): void {
    const child = this.#child;
    if (!child) return;
    const busy = this.#pending.size > 0;
    const channel = child.channel as { ref?: () => void; unref?: () => void } | undefined;
    for (const s of [child.stdout, child.stderr] as Array<{ ref?: () => void; unref?: () => void } | null>) {
      if (busy) s?.ref?.();
      else s?.unref?.();
    }
    if (busy) {
      child.ref();
      channel?.ref?.();
    } else {
      child.unref();
      channel?.unref?.();
    }
  }

  /**
   * Send one request to the child (starting it if needed). Low level: prefer the wallet facade.
   * @throws RgbLibError for errors reported by rgb-lib/the child, RgbChildDiedError if it died.
   */
  async request<K extends OpName>(op: K, ...args: Ops[K][0]): Promise<Ops[K][1]> {
    const child = await this.#ensureChild();
    return this.#send(child, op, args) as Promise<Ops[K][1]>;
  }

  #send(child: ChildProcess, op: OpName, args: unknown[], timeoutMs?: number): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolvePromise, rejectPromise) => {
      const pending: Pending = { op, resolve: resolvePromise, reject: rejectPromise, timer: undefined };
      const timeout = timeoutMs ?? this.#opts.callTimeoutMs;
      if (timeout !== undefined) {
        pending.timer = setTimeout(() => {
          if (!this.#pending.has(id) || this.#child !== child) return;
          this.#killReason = {
            reason: `killed after ${op === 'call' ? String(args[1]) : op} exceeded callTimeoutMs=${timeout}`,
            timedOutId: id,
          };
          child.kill('SIGKILL');
        }, timeout);
      }
      this.#pending.set(id, pending);
      this.#updateRef();
      const msg: RequestMessage = { id, op, args };
      child.send(msg, (err) => {
        if (err && this.#pending.delete(id)) {
          if (pending.timer) clearTimeout(pending.timer);
          this.#updateRef();
          rejectPromise(err);
        }
      });
    });
  }

  /**
   * `rgblib_new_wallet(walletDataJson, keysJson)` in the child. Refuses a second open of the same
   * wallet directory (`<dataDir>/<masterFingerprint>`) in this host: rgb-lib has no lock of its own.
   * @returns the wallet handle.
   */
  async newWallet(
    dataDir: string,
    masterFingerprint: string,
    walletDataJson: string,
    keysJson: string,
  ): Promise<string> {
    let walletDir: string;
    try {
      walletDir = join(realpathSync(dataDir), masterFingerprint);
    } catch {
      walletDir = join(resolve(dataDir), masterFingerprint);
    }
    for (const [h, w] of this.#wallets) {
      if (w.walletDir === walletDir) {
        throw new RgbLibError({
          kind: 'host',
          variant: 'WalletAlreadyOpen',
          message: `wallet ${walletDir} is already open in this host (handle ${h}); drop it first`,
        });
      }
    }
    const child = await this.#ensureChild();
    const handle = `w${this.#generation}.${++this.#walletSeq}`;
    // reserve before the await so concurrent opens of the same dir are refused too
    this.#wallets.set(handle, { walletDir });
    try {
      await this.#send(child, 'newWallet', [handle, walletDataJson, keysJson]);
    } catch (err) {
      this.#wallets.delete(handle);
      throw err;
    }
    return handle;
  }

  /**
   * Call one raw `rgblib_*` wallet function in the child; the wallet object is prepended there.
   * @returns the function's raw string result (JSON or plain), or null.
   */
  async callWallet(
    handle: string,
    fn: WalletFunction,
    args: RawArg[],
    timeoutMs?: number,
  ): Promise<string | null> {
    const child = this.#child;
    if (!child || !this.#wallets.has(handle)) throw this.#closedError(handle);
    return (await this.#send(child, 'call', [handle, fn, ...args], timeoutMs)) as string | null;
  }

  /**
   * Forgets a wallet without freeing it in the child, for a caller that moves the wallet to another host while
   * this child is busy (its main thread cannot free anything then). The handle is closed from now on and the
   * child's exit will not touch the wallet's lock file; the caller must end this child (see {@link restartChild})
   * before it can run anything on the stale object.
   */
  abandon(handle: string, reason: string): void {
    if (this.#wallets.delete(handle)) this.#closedHandles.set(handle, reason);
  }

  /** Kills the current child (if any) and resolves once it has exited; the next call starts a fresh one. */
  async restartChild(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('close', () => r()));
    child.kill('SIGKILL');
    await exited;
  }

  /** `free_wallet` in the child. A no-op for handles already closed (dropped or child died). */
  async freeWallet(handle: string): Promise<void> {
    const child = this.#child;
    if (!child || !this.#wallets.has(handle)) return;
    this.#wallets.delete(handle);
    this.#closedHandles.set(handle, 'it was dropped');
    await this.#send(child, 'freeWallet', [handle]);
  }

  /** Whether the handle refers to a wallet open in the current child. */
  isOpen(handle: string): boolean {
    return this.#child !== null && this.#wallets.has(handle);
  }

  #closedError(handle: string): RgbWalletClosedError {
    return new RgbWalletClosedError(
      handle,
      this.#closedHandles.get(handle) ?? 'unknown handle for this host',
    );
  }

  /** Send a signal to the current child (tests, or an operator abort). Its exit is handled as a crash. */
  killChild(signal: NodeJS.Signals = 'SIGKILL'): boolean {
    return this.#child?.kill(signal) ?? false;
  }

  /**
   * Free all wallets (`free_wallet` in the child, which also removes their `rgb_runtime.lock`) and
   * end the child. Waits for calls queued before it; after `closeTimeoutMs` the child is SIGKILLed.
   * The host cannot be used afterwards.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const child = this.#child ?? (this.#starting ? await this.#starting.catch(() => null) : null);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const timer = setTimeout(() => child.kill('SIGKILL'), this.#opts.closeTimeoutMs);
    try {
      await this.#send(child, 'shutdown', []).catch(() => undefined);
      await exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
