/**
 * Process liveness and pid lock files, for a service's data directory (one wallet node per
 * `data_dir`) and the devnet's directory (one `up`/`down` at a time).
 */
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

/**
 * True if a process with this pid exists and is not a zombie. Signal 0 probes without signalling
 * (EPERM: it exists, owned by someone else); a zombie has exited and only waits for its parent.
 */
export function pidAlive(pid: number | undefined): boolean {
  if (!pid || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no procfs: the signal probe is all there is
  }
}

/** Creates `path` holding `content` atomically: written aside, then hard-linked into place (fails if present). */
function createWithContent(path: string, content: string): boolean {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
}

export type PidLock = { taken: true; release(): void } | { taken: false; holder: number };

/**
 * One attempt at the lock file `path` holding our pid. The file appears with its content at once (a
 * link), so a reader never sees it empty; a lock whose process is gone is stale and taken over. A lock
 * that holds no valid pid is treated as held (`holder` NaN): it was not written by this function.
 * `release()` removes the file only while it still holds our pid.
 *
 * @example
 * const lock = takePidLock(join(dataDir, '.lock'));
 * if (!lock.taken) throw new Error(`in use by pid ${lock.holder}`);
 * try { … } finally { lock.release(); }
 */
export function takePidLock(path: string): PidLock {
  const me = String(process.pid);
  for (let attempt = 0; attempt < 3; attempt++) {
    if (createWithContent(path, me)) {
      return {
        taken: true,
        release() {
          try {
            if (readFileSync(path, 'utf8') === me) rmSync(path, { force: true });
          } catch {
            // already gone
          }
        },
      };
    }
    let holder: number;
    try {
      holder = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue; // removed meanwhile: try again
    }
    if (!Number.isInteger(holder) || holder <= 0) return { taken: false, holder: Number.NaN };
    if (holder !== process.pid && pidAlive(holder)) return { taken: false, holder };
    rmSync(path, { force: true }); // stale: its process is gone (or it is a previous life of our pid)
  }
  throw new Error(`could not take the lock ${path}: it keeps changing`);
}
