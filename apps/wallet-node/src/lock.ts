import { join } from 'node:path';
import { takePidLock } from '@rgbx/service-kit';

const LOCK = '.wallet-node.lock';

/**
 * Takes `<dataDir>/.wallet-node.lock` (holding our pid) so a second service instance cannot use the same
 * wallets; a lock whose process is gone is stale and taken over (the kit's `takePidLock`). Returns the
 * release function.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK);
  let lock: ReturnType<typeof takePidLock>;
  try {
    lock = takePidLock(path);
  } catch (err) {
    throw new Error(`wallet.data_dir ${dataDir}: could not take the lock ${path}: ${(err as Error).message}`);
  }
  if (!lock.taken)
    throw new Error(
      `wallet.data_dir ${dataDir} is in use by another wallet node (pid ${Number.isNaN(lock.holder) ? '?' : lock.holder})`,
    );
  return lock.release;
}
