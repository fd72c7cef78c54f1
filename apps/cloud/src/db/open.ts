/**
 * Opens and migrates the cloud database. The data dir is created 0700 and a SQLite database is
 * kept 0600 together with its WAL and shared-memory files: it holds the (sealed) signing keys and
 * the token hashes. The database file is created 0600 before SQLite opens it and an existing one is
 * narrowed to 0600 first; SQLite creates `-wal` and `-shm` with the database file's permissions, so
 * they are 0600 from their first byte whatever the umask. All three are checked again after opening.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { type DatabaseLogger, type OpenedDatabase, openMigratedDatabase } from '@rgbx/store';
import { sql } from 'kysely';
import { cloudMigrations } from './migrations.ts';
import type { CloudDatabase } from './schema.ts';

/** The file of a `sqlite:` URL, or undefined for PostgreSQL and in-memory SQLite. */
export function sqliteFile(url: string): string | undefined {
  const file = /^sqlite:(.+)$/.exec(url)?.[1];
  return file && file !== ':memory:' ? file : undefined;
}

/** The database file and its WAL / shared-memory companions. */
export function sqliteFiles(file: string): string[] {
  return [file, `${file}-wal`, `${file}-shm`];
}

function restrictSqliteFiles(file: string): void {
  for (const f of sqliteFiles(file)) if (existsSync(f)) chmodSync(f, 0o600);
}

/** `logger` gets the PostgreSQL pool's idle-client errors (default: a JSON line on stderr). */
export async function openCloudDatabase(
  url: string,
  dataDir: string,
  logger?: DatabaseLogger,
): Promise<OpenedDatabase<CloudDatabase>> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = sqliteFile(url);
  if (file) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Create it 0600 (O_CREAT with an explicit mode, then chmod: the umask cannot widen it), or
    // narrow an existing file before SQLite derives the WAL/SHM permissions from it.
    closeSync(openSync(file, 'a', 0o600));
    restrictSqliteFiles(file);
  }
  const opened = await openMigratedDatabase<CloudDatabase>(url, cloudMigrations, {
    ...(logger ? { logger } : {}),
    // Deleted and overwritten content (a retired key, a plain key replaced by its sealed form) is
    // zeroed in the file instead of lingering in free space.
    prepare: async (o) => {
      if (o.dialect === 'sqlite') await sql`pragma secure_delete = on`.execute(o.db);
    },
  });
  if (file) restrictSqliteFiles(file);
  return opened;
}
