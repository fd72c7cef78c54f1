/**
 * Opens and migrates the cloud database. The data dir is created 0700 and a SQLite file (with its
 * WAL and shared-memory files) is made 0600: it holds the private signing keys and token hashes.
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { migrateToLatest, type OpenedDatabase, openDatabase } from '@rgbx/store';
import { cloudMigrations } from './migrations.ts';
import type { CloudDatabase } from './schema.ts';

export async function openCloudDatabase(
  url: string,
  dataDir: string,
): Promise<OpenedDatabase<CloudDatabase>> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = /^sqlite:(.+)$/.exec(url)?.[1];
  if (file && file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const opened = openDatabase<CloudDatabase>(url);
  try {
    await migrateToLatest(opened.db, opened.dialect, cloudMigrations);
    if (file && file !== ':memory:') {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
    }
  } catch (err) {
    await opened.close();
    throw err;
  }
  return opened;
}
