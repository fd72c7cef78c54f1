import { join } from 'node:path';
import { RgbHost } from '@rgbx/rgb';
import type { WalletNodeConfig } from './config.ts';

export type Priority = 'foreground' | 'background';

interface Task {
  fn: () => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * One rgb-lib child process and the queue in front of it. rgb-lib calls block their process, so a
 * slot runs one call at a time; foreground (HTTP) calls always go before queued background work
 * (refresh, idle drops), so background work never delays a client call that is waiting.
 */
export class Slot {
  readonly index: number;
  readonly host: RgbHost;
  /** Wallet keys owned by this slot's child. */
  readonly wallets = new Set<string>();
  readonly #fg: Task[] = [];
  readonly #bg: Task[] = [];
  #running = false;

  constructor(index: number, host: RgbHost) {
    this.index = index;
    this.host = host;
  }

  get queued(): number {
    return this.#fg.length + this.#bg.length + (this.#running ? 1 : 0);
  }

  run<T>(priority: Priority, fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      (priority === 'foreground' ? this.#fg : this.#bg).push({
        fn,
        resolve: resolve as (v: unknown) => void,
        reject,
      });
      this.#pump();
    });
  }

  #pump(): void {
    if (this.#running) return;
    const task = this.#fg.shift() ?? this.#bg.shift();
    if (!task) return;
    this.#running = true;
    task
      .fn()
      .then(task.resolve, task.reject)
      .finally(() => {
        this.#running = false;
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

/**
 * The rgb-lib process pool: `size` children, each owning a disjoint set of wallets. The HTTP process
 * never loads the addon. A new wallet goes to the child owning the fewest wallets.
 */
export class WorkerPool {
  readonly slots: Slot[];

  /** `pidDir`: record each child there while it runs (see `RgbHostOptions.pidDir`). */
  constructor(size: number, opts: { callTimeoutMs: number; pidDir?: string }) {
    this.slots = Array.from(
      { length: size },
      (_, i) => new Slot(i, new RgbHost({ callTimeoutMs: opts.callTimeoutMs, pidDir: opts.pidDir })),
    );
  }

  /** The pool of a wallet node: `workers` children, `call_timeout_secs`, recorded in {@link childPidDir}. */
  static forConfig(wallet: WalletNodeConfig['wallet']): WorkerPool {
    return new WorkerPool(wallet.workers, {
      callTimeoutMs: wallet.call_timeout_secs * 1000,
      pidDir: childPidDir(wallet.data_dir),
    });
  }

  async start(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.host.start()));
  }

  leastLoaded(): Slot {
    return this.slots.reduce((a, b) => (b.wallets.size < a.wallets.size ? b : a));
  }

  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.host.close()));
  }
}
