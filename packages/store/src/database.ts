import Database from 'better-sqlite3';
import {
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  sql,
} from 'kysely';
import pg from 'pg';

export type Dialect = 'sqlite' | 'postgres';

export interface OpenedDatabase<DB> {
  db: Kysely<DB>;
  dialect: Dialect;
  /** Closes the pool or the SQLite handle. */
  close(): Promise<void>;
}

/** Where the database reports what it cannot throw to a caller; a pino logger fits. */
export interface DatabaseLogger {
  error(obj: object, msg: string): void;
}

/** Without a logger: one pino-shaped JSON line on stderr (level 50 = error), as the services log. */
const stderrLogger: DatabaseLogger = {
  error(obj, msg) {
    process.stderr.write(`${JSON.stringify({ level: 50, time: Date.now(), name: 'store', ...obj, msg })}\n`);
  },
};

/**
 * Opens a Kysely database from a URL: `postgres://…` / `postgresql://…` (pg pool), `sqlite:<path>` or
 * `sqlite::memory:` (better-sqlite3 in WAL mode with a busy timeout and foreign keys on).
 *
 * `logger` receives the PostgreSQL pool's errors of idle clients (a server restart, a terminated
 * backend, a dropped connection): the pool discards that client and the next query opens a new one,
 * so they are logged, never thrown. Default: a JSON line on stderr.
 *
 * @example
 * const { db, dialect, close } = openDatabase<MySchema>('sqlite:/var/lib/swap/swap.db', { logger });
 */
export function openDatabase<DB>(
  url: string,
  opts: { poolSize?: number; logger?: DatabaseLogger } = {},
): OpenedDatabase<DB> {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: opts.poolSize ?? 10 });
    const logger = opts.logger ?? stderrLogger;
    const database = redactUrl(url);
    // Without a listener an idle-client error would crash the process (an unhandled 'error' event).
    pool.on('error', (err: Error & { code?: string }) => {
      logger.error(
        { err: { type: err.name, message: err.message, code: err.code }, database },
        'PostgreSQL idle client error (client discarded; the pool opens a new one)',
      );
    });
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  const m = /^sqlite:(.+)$/.exec(url);
  if (!m)
    throw new Error(
      `database url must start with postgres:// or sqlite:, got ${JSON.stringify(redactUrl(url))}`,
    );
  const file = m[1] === ':memory:' ? ':memory:' : m[1]!;
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/** How many prepared statements one SQLite handle keeps (least recently used dropped first). */
export const STATEMENT_CACHE_SIZE = 256;

/**
 * The handle Kysely's SQLite driver gets: `prepare` answers from a cache keyed by the SQL text.
 * Kysely prepares every query it runs, and a better-sqlite3 `prepare` compiles the SQL each time
 * (5.8 % of the swap's event loop per Permit2 approval in a profile). Reusing a statement is safe
 * here: the driver runs one query at a time on its single connection (a stream holds it until the
 * end), and SQLite re-prepares a statement itself after a schema change.
 */
function withStatementCache(sqlite: Database.Database): {
  close(): void;
  prepare(sql: string): Database.Statement;
} {
  const cache = new Map<string, Database.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      let stmt = cache.get(sql);
      if (stmt) {
        // Map order is insertion order: re-inserting marks it most recently used.
        cache.delete(sql);
      } else {
        stmt = sqlite.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, stmt);
      return stmt;
    },
  };
}

/** Hides the password of a database URL for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}

/** A service's migrations; the dialect is given so a migration can pick dialect-specific column types. */
export type MigrationSet = (dialect: Dialect) => Record<string, Migration>;

/** Applies every pending migration in name order; throws with the failing migration's name. */
export async function migrateToLatest<DB>(
  db: Kysely<DB>,
  dialect: Dialect,
  set: MigrationSet,
): Promise<string[]> {
  const migrations = set(dialect);
  const provider: MigrationProvider = { getMigrations: async () => migrations };
  const migrator = new Migrator({ db: db as Kysely<unknown>, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    throw new Error(
      `migration ${failed?.migrationName ?? '?'} failed: ${(error as Error).message ?? String(error)}`,
      {
        cause: error,
      },
    );
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Opens a database and applies its pending migrations; closes it again if they fail (no pool left behind).
 * `prepare` runs first on the open database (a pragma, say).
 *
 * @example
 * const { db, dialect, close } = await openMigratedDatabase<MyDb>(url, myMigrations);
 */
export async function openMigratedDatabase<DB>(
  url: string,
  migrations: MigrationSet,
  opts: {
    poolSize?: number;
    logger?: DatabaseLogger;
    prepare?: (o: OpenedDatabase<DB>) => Promise<void>;
  } = {},
): Promise<OpenedDatabase<DB>> {
  const opened = openDatabase<DB>(url, {
    ...(opts.poolSize === undefined ? {} : { poolSize: opts.poolSize }),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  try {
    await opts.prepare?.(opened);
    await migrateToLatest(opened.db, opened.dialect, migrations);
  } catch (err) {
    await opened.close();
    throw err;
  }
  return opened;
}

/** Column type helpers that differ between the dialects. */
export const columns = {
  /** Auto-incrementing integer primary key. */
  serial: (dialect: Dialect) => (dialect === 'postgres' ? 'bigserial' : 'integer'),
  /** JSON document (jsonb on PostgreSQL, text on SQLite). */
  json: (dialect: Dialect) => (dialect === 'postgres' ? 'jsonb' : 'text'),
  /** Milliseconds since the epoch. */
  timestamp: (_dialect: Dialect) => 'bigint',
};

/** True for a UNIQUE / PRIMARY KEY violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    e?.code === '23505' ||
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/** Cheap connectivity check (`select 1`). */
export async function ping<DB>(db: Kysely<DB>): Promise<void> {
  await sql`select 1`.execute(db);
}
