/**
 * A small pool of worker threads for CPU-bound work kept off the event loop (the cloud's RSA webhook
 * signatures, the swap's Permit2 signature checks). Each thread runs a worker module of the caller's,
 * a TypeScript file next to it (type-checked and linted like the rest) started by URL: `dist/….js` in a
 * service, and under the test runner the `src/….ts` file itself, so a test runs the current sources
 * (see {@link siblingModule} and {@link workerExecArgv}). The pool does the bookkeeping both need:
 * request ids, one pending map per thread, the least busy thread, and a thread that fails or exits
 * rejecting what it had pending and being replaced by a new one (with fresh per-thread state).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** One thread of the pool, with whatever per-thread state the user keeps (e.g. which keys it holds). */
export interface PoolThread<S> {
  readonly worker: Worker;
  readonly state: S;
}

interface Slot<S, R> extends PoolThread<S> {
  pending: Map<number, { resolve: (r: R) => void; reject: (e: Error) => void }>;
}

export interface ThreadPoolOptions<S, R> {
  threads: number;
  /**
   * The module each thread runs (an ES module answering messages with `{id, …}`): `.js` (built code) or,
   * from the sources under the test runner, `.ts`. Usually {@link siblingModule}`(import.meta.url, name)`.
   */
  module: URL;
  /** Thread name (shown in diagnostics). */
  name: string;
  workerData?: unknown;
  /** Fresh state for each (re)spawned thread. */
  state: () => S;
  /** A thread's answer `{id, …}` as the result of request `id`, or the error to reject it with. */
  settle(reply: { id: number }): { value: R } | { error: Error };
  /** The error pending requests get when their thread fails (`err`) or exits (`code`). */
  lost(why: { err: Error } | { code: number }): Error;
}

export class ThreadPool<S, R> {
  readonly threads: number;
  private readonly slots: Slot<S, R>[] = [];
  private nextId = 1;
  private closed = false;
  private readonly o: ThreadPoolOptions<S, R>;

  constructor(o: ThreadPoolOptions<S, R>) {
    this.o = o;
    this.threads = o.threads;
    if (o.threads > 0) checkModule(o.module);
    for (let i = 0; i < o.threads; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot<S, R> {
    const worker = new Worker(this.o.module, {
      name: this.o.name,
      execArgv: workerExecArgv(this.o.module, process.execArgv),
      ...(this.o.workerData === undefined ? {} : { workerData: this.o.workerData }),
    });
    worker.unref(); // an idle pool never keeps the process alive
    const slot: Slot<S, R> = { worker, state: this.o.state(), pending: new Map() };
    worker.on('message', (m: { id: number }) => {
      const p = slot.pending.get(m.id);
      if (!p) return;
      slot.pending.delete(m.id);
      const r = this.o.settle(m);
      if ('value' in r) p.resolve(r.value);
      else p.reject(r.error);
    });
    const fail = (why: { err: Error } | { code: number }) => {
      for (const p of slot.pending.values()) p.reject(this.o.lost(why));
      slot.pending.clear();
      const i = this.slots.indexOf(slot);
      if (i >= 0 && !this.closed) this.slots[i] = this.spawn();
    };
    worker.on('error', (err) => fail({ err }));
    worker.on('exit', (code) => fail({ code }));
    return slot;
  }

  /** The thread with the fewest pending requests; undefined when the pool is closed or has none. */
  pick(): PoolThread<S> | undefined {
    if (this.closed || this.slots.length === 0) return undefined;
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.pending.size < slot.pending.size) slot = s;
    return slot;
  }

  /**
   * Reserves `n` consecutive request ids on `thread` and returns the first with one promise per id; the
   * caller then posts the message that asks for them (ids `id` … `id + n − 1`).
   */
  expect(thread: PoolThread<S>, n: number): { id: number; results: Promise<R>[] } {
    const slot = thread as Slot<S, R>;
    const id = this.nextId;
    this.nextId += n;
    const results = Array.from(
      { length: n },
      (_, i) =>
        new Promise<R>((resolve, reject) => {
          slot.pending.set(id + i, { resolve, reject });
        }),
    );
    return { id, results };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.slots.map((s) => s.worker.terminate()));
  }
}

/**
 * The module `name` next to `base` (a module's `import.meta.url`), with `base`'s extension: `./<name>.js`
 * in built code, `./<name>.ts` when `base` runs from the sources (the test runner). `tsc` rewrites the
 * extensions of imports, not of URLs, hence this.
 */
export function siblingModule(base: string, name: string): URL {
  return new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
}

/**
 * The test-only loader that lets Node 20 run a `.ts` worker module (`scripts/ts-loader/` of the
 * repository; `typescript` is a devDependency). Built code never needs it: its worker modules are `.js`.
 */
export const TS_LOADER = new URL('../../../scripts/ts-loader/register.mjs', import.meta.url);

const isSource = (module: URL) => module.pathname.endsWith('.ts');

function checkModule(module: URL): void {
  if (!existsSync(fileURLToPath(module))) throw new Error(`worker module ${module.href} does not exist`);
  if (isSource(module) && !existsSync(fileURLToPath(TS_LOADER)))
    throw new Error(
      `worker module ${module.href} is TypeScript, which runs only in the repository (with ${TS_LOADER.href})`,
    );
}

/**
 * The Node flags of a worker running `module`, from the parent's (`argv`). A `.ts` module (the sources,
 * under the test runner): the parent's flags with the `source` export condition, so workspace packages
 * resolve to their sources too, and the TypeScript loader. A `.js` module (built code): the parent's
 * flags without the `source` condition, so built code never resolves a workspace package to TypeScript.
 * Either way without `--input-type`, which is about the parent's `-e` text and fails a worker started from
 * a file (`node --input-type=module -e …` starting a pool).
 */
export function workerExecArgv(module: URL, argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (((a === '--conditions' || a === '-C') && argv[i + 1] === 'source') || a === '--input-type') {
      i++;
      continue;
    }
    if (a === '--conditions=source' || a === '-Csource' || a.startsWith('--input-type=')) continue;
    out.push(a);
  }
  return isSource(module) ? [...out, '--conditions', 'source', '--import', TS_LOADER.href] : out;
}
