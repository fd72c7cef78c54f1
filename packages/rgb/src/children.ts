/**
 * Pid files of rgb-lib children, and the start-up sweep that kills children left behind by a parent that
 * died without stopping them.
 *
 * A child normally dies with its parent: on IPC `disconnect` when its main thread is free, or by its
 * parent-death watchdog thread when the main thread is blocked in a long synchronous rgb-lib call (see
 * `child.ts`). This sweep is the second line: an {@link RgbHost} given a `pidDir` records each child as
 * `<pidDir>/child-<pid>.pid` while it runs, and {@link killLeftoverChildren} (called before any wallet is
 * opened again) SIGKILLs every recorded child still alive, so a wallet is never open in two processes.
 *
 * Only node built-ins here: this package depends on nothing of ours (README "Layout"), so the two
 * small process probes below cannot come from `@rgbx/service-kit` or `@rgbx/devnet`'s `processes.ts`
 * (whose `isOurs` is the same pid + command-line check, without the zombie test needed here).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CHILD_MARKER_ARG, PARENT_PID_ARG } from './protocol.ts';

const PID_FILE = /^child-(\d+)\.pid$/;

/** Default bound for {@link killLeftoverChildren}'s wait for each killed child to be gone. */
export const LEFTOVER_KILL_WAIT_MS = 5_000;

/** The arguments a host passes to its child (`pidDir` already resolved). */
export function childArgs(pidDir: string | undefined): string[] {
  return [
    pidDir === undefined ? CHILD_MARKER_ARG : `${CHILD_MARKER_ARG}=${pidDir}`,
    `${PARENT_PID_ARG}${process.pid}`,
  ];
}

/** Creates the pid directory (mode 0700); throws with the path in the message. */
export function preparePidDir(pidDir: string): void {
  try {
    mkdirSync(pidDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`rgb-lib child pid directory ${pidDir}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
}

/**
 * Writes `<pidDir>/child-<pid>.pid`. The pid in the NAME is what the sweep uses (a file cut short by a
 * crash still names its process); the JSON content is for people.
 * @returns the file's path.
 */
export function recordChild(pidDir: string, pid: number, entry: string): string {
  const file = join(pidDir, `child-${pid}.pid`);
  const info = { pid, parentPid: process.pid, marker: `${CHILD_MARKER_ARG}=${pidDir}`, entry };
  writeFileSync(file, `${JSON.stringify({ ...info, startedAt: new Date().toISOString() })}\n`, {
    mode: 0o600,
  });
  return file;
}

/** Removes a pid file (the child exited). */
export function forgetChild(file: string): void {
  rmSync(file, { force: true });
}

/** `/proc/<pid>/stat` → state letter and ppid, or undefined if there is no such process. */
function procStat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state ppid …`: comm may contain spaces and parentheses, so split after the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: state ?? '', ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/**
 * True while `pid` is a process that still runs. A zombie (killed, not yet reaped by whoever adopted it) is
 * gone for our purposes: its memory, files and locks are already released.
 */
export function isRunning(pid: number): boolean {
  const s = procStat(pid);
  return s !== undefined && s.state !== 'Z' && s.state !== 'X';
}

/** The process's arguments, or [] if it is gone (or a zombie, whose cmdline is empty). */
function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/**
 * Kills the rgb-lib children recorded in `pidDir` by an earlier process (one killed with SIGKILL, say) that
 * still run, and removes their pid files. Call it before anything opens a wallet of that directory's owner,
 * and before starting a host with this `pidDir`.
 *
 * - A recorded pid is killed only if its command line carries `--rgbx-rgb-child=<pidDir>`: a pid reused by
 *   an unrelated process, or by a child recorded in another directory, is never signalled.
 * - Children of this very process (a host already started here) are left alone, files included.
 * - Files of pids that are gone, or that belong to someone else now, are removed.
 * - Each killed child is waited for (gone or a zombie) up to `waitMs`; one that is still running then
 *   (stuck in the kernel) makes this throw: its wallets must not be opened by another process.
 *
 * @returns how many children were killed.
 */
export async function killLeftoverChildren(pidDir: string, opts: { waitMs?: number } = {}): Promise<number> {
  const dir = resolve(pidDir);
  const marker = `${CHILD_MARKER_ARG}=${dir}`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const killed: Array<{ pid: number; file: string }> = [];
  for (const name of names) {
    const m = PID_FILE.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    const file = join(dir, name);
    const stat = procStat(pid);
    if (stat?.ppid === process.pid && isRunning(pid)) continue; // our own live child
    if (pid !== process.pid && isRunning(pid) && cmdline(pid).includes(marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
      killed.push({ pid, file });
    } else {
      forgetChild(file);
    }
  }
  const deadline = Date.now() + (opts.waitMs ?? LEFTOVER_KILL_WAIT_MS);
  for (const { pid, file } of killed) {
    while (isRunning(pid)) {
      if (Date.now() > deadline) {
        throw new Error(
          `rgb-lib child ${pid} left by an earlier process (${file}) still runs after SIGKILL; not opening its wallets`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    forgetChild(file);
  }
  return killed.length;
}
