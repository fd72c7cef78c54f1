import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const LOCK = '.wallet-node.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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

/**
 * Takes `<dataDir>/.wallet-node.lock` (holding our pid) so a second service instance cannot use the same
 * wallets. The file appears with its content at once (link), so a reader never sees an empty lock; a lock
 * whose pid is gone is stale and taken over. Returns the release function.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK);
  for (let attempt = 0; attempt < 3; attempt++) {
    if (createWithContent(path, String(process.pid))) {
      return () => {
        try {
          if (readFileSync(path, 'utf8') === String(process.pid)) rmSync(path, { force: true });
        } catch {}
      };
    }
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue; // removed meanwhile: try again
    }
    if (!Number.isInteger(holder) || holder <= 0 || (holder !== process.pid && alive(holder))) {
      throw new Error(`wallet.data_dir ${dataDir} is in use by another wallet node (pid ${holder || '?'})`);
    }
    rmSync(path, { force: true }); // stale: its process is gone
  }
  throw new Error(`wallet.data_dir ${dataDir}: could not take the lock ${path}`);
}
