import { afterEach, describe, expect, it } from 'vitest';
import { MARKER, type TestReply } from './test-pool-worker.ts';
import { siblingModule, ThreadPool, TS_LOADER, workerExecArgv } from './thread-pool.ts';

let pool: ThreadPool<{ spawned: number }, unknown>;
let spawned = 0;
afterEach(() => pool?.close());

function make(threads: number) {
  pool = new ThreadPool<{ spawned: number }, unknown>({
    threads,
    module: siblingModule(import.meta.url, 'test-pool-worker'),
    name: 'test-pool',
    state: () => ({ spawned: ++spawned }),
    settle: (m: TestReply) => (m.value !== undefined ? { value: m.value } : { error: new Error(m.error) }),
    lost: (why) => new Error('code' in why ? `exited ${why.code}` : `failed ${why.err.message}`),
  });
  return pool;
}

function ask(p: typeof pool, n: number, extra: object = {}) {
  const t = p.pick()!;
  const { id, results } = p.expect(t, 1);
  t.worker.postMessage({ id, n, ...extra });
  return { thread: t, result: results[0]! };
}

describe('ThreadPool', () => {
  it('answers each request by its id, errors as the settle function says', async () => {
    const p = make(2);
    const asked = [1, 2, 3, 4, 5].map((n) => ask(p, n, { ms: 5 * (6 - n) }).result);
    expect(await Promise.all(asked)).toEqual([2, 4, 6, 8, 10]);
    await expect(ask(p, 1, { boom: true }).result).rejects.toThrow('boom');
  });

  it('picks the least busy thread', async () => {
    const p = make(2);
    const first = ask(p, 1, { ms: 50 });
    const second = ask(p, 2, { ms: 50 });
    expect(second.thread).not.toBe(first.thread);
    return Promise.all([first.result, second.result]);
  });

  it('a thread that dies rejects its pending requests and is replaced, with fresh state', async () => {
    const p = make(1);
    const { thread, result } = ask(p, 1, { ms: 1000 });
    await thread.worker.terminate();
    await expect(result).rejects.toThrow(/^exited \d+$/);
    const next = p.pick()!;
    expect(next).not.toBe(thread);
    expect(next.state.spawned).toBeGreaterThan(thread.state.spawned);
    expect(await ask(p, 21).result).toBe(42);
  });

  it('has no thread to pick once closed, or with 0 threads', async () => {
    expect(make(0).pick()).toBeUndefined();
    const p = make(1);
    await p.close();
    expect(p.pick()).toBeUndefined();
  });
});

describe('worker modules', () => {
  it("siblingModule keeps the caller's extension: .ts from the sources, .js from dist", () => {
    expect(siblingModule('file:///a/src/x/pool.ts', 'w').href).toBe('file:///a/src/x/w.ts');
    expect(siblingModule('file:///a/dist/x/pool.js', 'w').href).toBe('file:///a/dist/x/w.js');
  });

  it('a pool started by the test runner runs the current source of its worker and of the workspace', async () => {
    // This file runs with `--conditions source`; so does the thread, which runs test-pool-worker.ts itself
    // (no build involved: a stale or missing dist/ would not be used).
    expect(process.execArgv.join(' ')).toMatch(/--conditions source|--conditions=source/);
    const about = (await ask(make(1), 0, { about: true }).result) as Record<string, string>;
    expect(about).toEqual({
      module: new URL('./test-pool-worker.ts', import.meta.url).href,
      marker: MARKER,
      store: expect.stringMatching(/\/packages\/store\/src\/index\.ts$/),
    });
  });

  it('refuses a worker module that does not exist', () => {
    expect(() => new ThreadPool({ ...optionsOf(), module: new URL('./nope.js', import.meta.url) })).toThrow(
      /does not exist/,
    );
  });
});

function optionsOf() {
  return {
    threads: 1,
    name: 'x',
    state: () => undefined,
    settle: () => ({ value: 0 }),
    lost: () => new Error('lost'),
  };
}

describe('workerExecArgv', () => {
  const argv = ['--require', 'x.cjs', '--conditions', 'source', '--conditions', 'node', '-C', 'source'];
  const all = [
    ...argv,
    '--conditions=source',
    '-Csource',
    '--input-type=module',
    '--input-type',
    'commonjs',
    '--conditions=development',
  ];
  const others = ['--require', 'x.cjs', '--conditions', 'node', '--conditions=development'];

  it('a built (.js) module: drops the source export condition and --input-type in every spelling, keeps every other flag', () => {
    expect(workerExecArgv(new URL('file:///a/dist/w.js'), all)).toEqual(others);
  });

  it('a .ts module: the source condition (once) and the TypeScript loader', () => {
    expect(workerExecArgv(new URL('file:///a/src/w.ts'), all)).toEqual([
      ...others,
      '--conditions',
      'source',
      '--import',
      TS_LOADER.href,
    ]);
    expect(workerExecArgv(new URL('file:///a/src/w.ts'), [])).toEqual([
      '--conditions',
      'source',
      '--import',
      TS_LOADER.href,
    ]);
  });
});
