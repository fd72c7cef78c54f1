import { readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * Takes `<dataDir>/.wallet-node.lock` (O_EXCL, holding our pid) so a second service instance cannot use
 * the same wallets. A lock whose pid is gone is stale and taken over. Returns the release function.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (readFileSync(path, 'utf8') === String(process.pid)) rmSync(path, { force: true });
        } catch {}
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new Error(`wallet.data_dir ${dataDir} is in use by another wallet node (pid ${holder})`);
      }
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`wallet.data_dir ${dataDir}: could not take the lock ${path}`);
}
