/**
 * The rgb-lib child's parent-death watchdog thread (see `child.ts`): polls the child's ppid and, once the
 * parent is gone, SIGKILLs the whole child process, whatever its main thread is doing in native code.
 * It imports nothing but `node:worker_threads` (never the addon, which must live in one isolate only).
 * Started by URL: `dist/watchdog-worker.js`, or this file itself when the child runs from the sources.
 */
import { parentPort, workerData } from 'node:worker_threads';

export interface WatchdogData {
  /** The pid the parent-death check compares `process.ppid` with. */
  parentPid: number;
  intervalMs: number;
  /** How long a child whose main thread is already exiting (`exiting[0] === 1`) gets before the SIGKILL. */
  graceMs: number;
  exiting: Int32Array;
}

const { parentPid, intervalMs, graceMs, exiting } = workerData as WatchdogData;
let orphanedAt = 0;
setInterval(() => {
  if (process.ppid === parentPid) return;
  orphanedAt ||= Date.now();
  if (Atomics.load(exiting, 0) === 1 && Date.now() - orphanedAt < graceMs) return;
  process.kill(process.pid, 'SIGKILL');
}, intervalMs);

// Which module runs here, for the child's `modules` op (the tests check it is the current source).
parentPort?.postMessage({ module: import.meta.url });
