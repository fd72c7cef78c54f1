/**
 * A child never outlives its parent: real processes, no mocks (`npx tsc -b` first: the parent script and
 * the child run the built `dist/`). A small node script plays the parent (an {@link RgbHost} with a pid
 * directory), the test kills it with SIGKILL and watches the child through /proc.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isRunning, killLeftoverChildren } from './children.ts';
import { RgbHost } from './host.ts';

const root = mkdtempSync(join(tmpdir(), 'rgbx-rgb-children-'));
const started: ChildProcess[] = [];
const strays: number[] = [];
afterAll(() => {
  for (const p of started) p.kill('SIGKILL');
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  rmSync(root, { recursive: true, force: true });
});

let seq = 0;
const freshDir = (name: string) => {
  const d = join(root, `${name}-${++seq}`);
  mkdirSync(d);
  return d;
};

// The parent: starts a host recording its child in argv[2], optionally blocks the child's main thread in a
// 30 s `sleep` (Atomics.wait), prints the child's pid and stays up until killed.
const PARENT = join(root, 'parent.mjs');
writeFileSync(
  PARENT,
  `import { RgbHost } from ${JSON.stringify(pathToFileURL(resolve(import.meta.dirname, '../dist/index.js')).href)};
const host = new RgbHost({ pidDir: process.argv[2] });
await host.start();
if (process.argv[3] === 'sleep') host.request('sleep', 30_000).catch(() => {});
console.log(JSON.stringify({ child: host.pid }));
setInterval(() => {}, 1_000);
`,
);

async function startParent(
  pidDir: string,
  mode: 'sleep' | 'idle',
): Promise<{ parent: ChildProcess; child: number }> {
  const parent = spawn(process.execPath, [PARENT, pidDir, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(parent);
  let err = '';
  parent.stderr!.on('data', (d) => {
    err += d;
  });
  const line = await new Promise<string>((res, rej) => {
    let out = '';
    parent.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('\n')) res(out.slice(0, out.indexOf('\n')));
    });
    parent.once('exit', (code) => rej(new Error(`parent exited ${code}: ${err}`)));
  });
  const { child } = JSON.parse(line) as { child: number };
  strays.push(child);
  // Let the `sleep` request reach the child and block it.
  await new Promise((r) => setTimeout(r, 300));
  return { parent, child };
}

/** SIGKILLs the parent and waits for its exit; returns the time the signal was sent. */
async function killParent(parent: ChildProcess): Promise<number> {
  const exited = new Promise((r) => parent.once('exit', r));
  const t = performance.now();
  parent.kill('SIGKILL');
  await exited;
  return t;
}

/** Polls until `pid` no longer runs (gone or a zombie); returns the ms waited, or Infinity after `limitMs`. */
async function waitGone(pid: number, since: number, limitMs: number): Promise<number> {
  while (isRunning(pid)) {
    if (performance.now() - since > limitMs) return Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - since;
}

const ppidOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
};
/** Where the process's main thread sleeps in the kernel ('' if not shown): epoll = an idle event loop. */
const wchan = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/wchan`, 'utf8');
  } catch {
    return '';
  }
};

describe('rgb-lib child dies with its parent', () => {
  it('kill -9 of the parent while the child is blocked in a 30 s call: the child is gone within 2 s', async () => {
    const pidDir = freshDir('blocked');
    const { parent, child } = await startParent(pidDir, 'sleep');
    expect(isRunning(child)).toBe(true);
    expect(ppidOf(child)).toBe(parent.pid);
    expect(wchan(child)).not.toMatch(/epoll/); // the main thread is in Atomics.wait, not in its event loop
    expect(readdirSync(pidDir)).toEqual([`child-${child}.pid`]);
    expect(JSON.parse(readFileSync(join(pidDir, `child-${child}.pid`), 'utf8'))).toMatchObject({
      pid: child,
      parentPid: parent.pid,
      marker: `--rgbx-rgb-child=${pidDir}`,
      entry: resolve(import.meta.dirname, '../dist/child.js'),
    });
    const cmd = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0');
    expect(cmd).toContain(`--rgbx-rgb-child=${pidDir}`);
    // Built code forks the built child with no flags (no TypeScript loader, no `source` condition).
    expect(cmd.slice(1, 3)).toEqual([
      resolve(import.meta.dirname, '../dist/child.js'),
      `--rgbx-rgb-child=${pidDir}`,
    ]);

    const t = await killParent(parent);
    const ms = await waitGone(child, t, 2_000);
    console.info(`[rgb] parent SIGKILL → blocked child gone: ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(2_000);

    // The dead parent could not remove the pid file: the next start's sweep removes it, killing nothing.
    expect(readdirSync(pidDir)).toEqual([`child-${child}.pid`]);
    expect(await killLeftoverChildren(pidDir)).toBe(0);
    expect(readdirSync(pidDir)).toEqual([]);
  });

  it('kill -9 of the parent while the child is idle: it exits through its disconnect handler', async () => {
    const pidDir = freshDir('idle');
    const { parent, child } = await startParent(pidDir, 'idle');
    const t = await killParent(parent);
    const ms = await waitGone(child, t, 2_000);
    console.info(`[rgb] parent SIGKILL → idle child gone: ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(2_000);
  });

  it('the watchdog leaves a child with a live parent alone through a long call; close() removes the pid file', async () => {
    const pidDir = freshDir('alive');
    const host = new RgbHost({ pidDir });
    try {
      await host.start();
      const pid = host.pid!;
      expect(await host.request('sleep', 1_000)).toBe(true);
      expect(await host.request('ping')).toBe('pong');
      expect(host.pid).toBe(pid);
      expect(readdirSync(pidDir)).toEqual([`child-${pid}.pid`]);
      // The sweep never touches a live child of the calling process.
      expect(await killLeftoverChildren(pidDir)).toBe(0);
      expect(await host.request('ping')).toBe('pong');
      expect(readdirSync(pidDir)).toEqual([`child-${pid}.pid`]);
    } finally {
      await host.close();
    }
    expect(readdirSync(pidDir)).toEqual([]);
  });
  it('a pid directory that cannot be created fails start() and starts no child', async () => {
    const file = join(freshDir('not-a-dir'), 'file');
    writeFileSync(file, '');
    const host = new RgbHost({ pidDir: join(file, 'pids') });
    await expect(host.start()).rejects.toThrow(/rgb-lib child pid directory .*: ENOTDIR/);
    expect(host.pid).toBeUndefined();
    await host.close();
  });
});

describe('killLeftoverChildren', () => {
  it('kills an orphaned child that could not run its watchdog (SIGSTOPped) and removes its pid file', async () => {
    const pidDir = freshDir('stopped');
    const { parent, child } = await startParent(pidDir, 'sleep');
    process.kill(child, 'SIGSTOP'); // a stopped process runs none of its threads: the watchdog cannot act
    await killParent(parent);
    await new Promise((r) => setTimeout(r, 600)); // four watchdog periods
    expect(isRunning(child)).toBe(true);
    expect(ppidOf(child)).not.toBe(parent.pid); // an orphan now

    const t = performance.now();
    expect(await killLeftoverChildren(pidDir)).toBe(1);
    console.info(`[rgb] killLeftoverChildren of a stopped orphan: ${(performance.now() - t).toFixed(0)} ms`);
    expect(isRunning(child)).toBe(false);
    expect(readdirSync(pidDir)).toEqual([]);
  });

  it('never kills a recorded pid now used by another process; removes the files of dead and foreign pids', async () => {
    const pidDir = freshDir('foreign');
    // An unrelated process, not our child (as if the pid had been reused): a `sleep` whose shell exited.
    const sh = spawn('sh', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const sleeper = Number(await new Promise<string>((r) => sh.stdout!.once('data', (d) => r(String(d)))));
    strays.push(sleeper);
    // An rgb-lib child of another parent recorded in ANOTHER directory (another wallet node's): its marker
    // names that directory.
    const otherDir = freshDir('other');
    const { child: otherChild } = await startParent(otherDir, 'idle');
    // A process that is gone.
    const gone = spawn('true', [], { stdio: 'ignore' });
    await new Promise((r) => gone.once('exit', r));
    expect(isRunning(sleeper)).toBe(true);
    for (const pid of [sleeper, otherChild, gone.pid!]) writeFileSync(join(pidDir, `child-${pid}.pid`), '');
    writeFileSync(join(pidDir, 'notes.txt'), 'not a pid file');

    expect(await killLeftoverChildren(pidDir)).toBe(0);
    expect(isRunning(sleeper)).toBe(true);
    expect(isRunning(otherChild)).toBe(true);
    expect(readdirSync(pidDir)).toEqual(['notes.txt']);
    expect(readdirSync(otherDir)).toEqual([`child-${otherChild}.pid`]);
    process.kill(sleeper, 'SIGKILL');
  });

  it('returns 0 for a directory that does not exist', async () => {
    const missing = join(root, 'missing');
    expect(await killLeftoverChildren(missing)).toBe(0);
    expect(existsSync(missing)).toBe(false);
  });
});
