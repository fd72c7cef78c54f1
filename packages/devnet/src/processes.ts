import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { pidAlive } from '@rgbx/service-kit';

/** True if a process with this pid exists and has not exited (the kit's `pidAlive`). */
export const isAlive = pidAlive;

/**
 * True if `pid` is alive AND its command line mentions `marker` (the devnet directory). A pid recorded
 * before a reboot or crash may now belong to an unrelated process: never signal or adopt one of those.
 */
export function isOurs(pid: number | undefined, marker: string): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .some((arg) => arg.includes(marker));
  } catch {
    return false;
  }
}

export interface Spawned {
  pid: number;
  /** Resolves with the exit code once the process ends (only for processes we spawned in this process). */
  exited: Promise<number | null>;
}

/**
 * Starts a long-running process with stdout/stderr appended to `logFile`. `detached` processes get their
 * own session and outlive the caller (the CLI's `up`); others are tied to the caller's lifetime by its
 * shutdown code (tests stop them in afterAll).
 */
export function startProcess(
  cmd: string,
  args: string[],
  opts: { logFile: string; detached: boolean; env?: NodeJS.ProcessEnv },
): Spawned {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(cmd, args, {
    stdio: ['ignore', fd, fd],
    detached: opts.detached,
    env: opts.env ?? process.env,
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  if (opts.detached) child.unref();
  return { pid: child.pid, exited };
}

/** SIGTERM, wait up to `graceMs`, then SIGKILL. Resolves once the pid is gone. */
export async function stopProcess(pid: number | undefined, graceMs = 15_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid!, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (isAlive(pid)) {
    try {
      process.kill(pid!, 'SIGKILL');
    } catch {}
    // Bounded: a zombie without a reaper or a process stuck in the kernel must not hang `down`.
    const killDeadline = Date.now() + 5_000;
    while (isAlive(pid) && Date.now() < killDeadline) await new Promise((r) => setTimeout(r, 20));
  }
}
