import { afterEach, describe, expect, it } from 'vitest';
import { ThreadPool, workerExecArgv } from './thread-pool.ts';

// Doubles `n` after `ms` (so requests can be pending); `boom` answers an error.
const SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (m) => {
  setTimeout(() => parentPort.postMessage(m.boom ? { id: m.id, error: 'boom' } : { id: m.id, value: m.n * 2 }), m.ms ?? 0);
});
`;

let pool: ThreadPool<{ spawned: number }, number>;
let spawned = 0;
afterEach(() => pool?.close());

function make(threads: number) {
  pool = new ThreadPool<{ spawned: number }, number>({
    threads,
    source: SOURCE,
    name: 'test-pool',
    state: () => ({ spawned: ++spawned }),
    settle: (m: { id: number; value?: number; error?: string }) =>
      m.value !== undefined ? { value: m.value } : { error: new Error(m.error) },
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

describe('workerExecArgv', () => {
  it('drops the source export condition in every spelling and keeps every other flag', () => {
    const argv = ['--require', 'x.cjs', '--conditions', 'source', '--conditions', 'node', '-C', 'source'];
    expect(workerExecArgv([...argv, '--conditions=source', '-Csource', '--conditions=development'])).toEqual([
      '--require',
      'x.cjs',
      '--conditions',
      'node',
      '--conditions=development',
    ]);
  });

  it('a worker started under this runner resolves a workspace package to its built code', async () => {
    // This file runs with `--conditions source`; the worker must not inherit it.
    expect(process.execArgv.join(' ')).toMatch(/--conditions source|--conditions=source/);
    const probe = new ThreadPool<Record<string, never>, string>({
      threads: 1,
      name: 'conditions-probe',
      source: `
        const { parentPort } = require('node:worker_threads');
        parentPort.on('message', (m) => parentPort.postMessage({ id: m.id, value: require.resolve('@rgbx/store') }));`,
      state: () => ({}),
      settle: (m: { value: string }) => ({ value: m.value }),
      lost: () => new Error('lost'),
    });
    try {
      const t = probe.pick()!;
      const { id, results } = probe.expect(t, 1);
      t.worker.postMessage({ id });
      expect(await results[0]!).toMatch(/\/packages\/store\/dist\/index\.js$/);
    } finally {
      await probe.close();
    }
  });
});
