import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Generated, type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  columns,
  type Dialect,
  isUniqueViolation,
  type MigrationSet,
  migrateToLatest,
  openDatabase,
  openMigratedDatabase,
  redactUrl,
  STATEMENT_CACHE_SIZE,
} from './database.ts';
import { createTestPgDatabase } from './testing.ts';

interface DB {
  item: { id: Generated<number>; name: string; amount: string; meta: string | null; created_at: number };
}

const set: MigrationSet = (dialect) => ({
  '0001_item': {
    async up(db) {
      await db.schema
        .createTable('item')
        .addColumn('id', sql.raw(columns.serial(dialect)), (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('amount', 'text', (c) => c.notNull())
        .addColumn('meta', sql.raw(columns.json(dialect)))
        .addColumn('created_at', sql.raw(columns.timestamp(dialect)), (c) => c.notNull())
        .execute();
    },
  },
});

const tmp = mkdtempSync(join(tmpdir(), 'store-'));
let pgDb: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pgDb = await createTestPgDatabase();
});
afterAll(async () => {
  await pgDb?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

describe.each<[Dialect, () => string]>([
  ['sqlite', () => `sqlite:${join(tmp, 'a.db')}`],
  ['postgres', () => pgDb.url],
])('%s', (dialect, url) => {
  it('migrates once, stores exact amounts, detects unique violations', async () => {
    const { db, dialect: d, close } = openDatabase<DB>(url());
    expect(d).toBe(dialect);
    try {
      expect(await migrateToLatest(db as Kysely<DB>, d, set)).toEqual(['0001_item']);
      expect(await migrateToLatest(db as Kysely<DB>, d, set)).toEqual([]);
      const big = (2n ** 64n - 1n).toString();
      await db
        .insertInto('item')
        .values({ name: 'a', amount: big, meta: null, created_at: Date.now() })
        .execute();
      const row = await db.selectFrom('item').selectAll().where('name', '=', 'a').executeTakeFirstOrThrow();
      expect(row.amount).toBe(big);
      const dup = await db
        .insertInto('item')
        .values({ name: 'a', amount: '1', meta: null, created_at: Date.now() })
        .execute()
        .catch((e: unknown) => e);
      expect(isUniqueViolation(dup)).toBe(true);
      expect(isUniqueViolation(new Error('x'))).toBe(false);
    } finally {
      await close();
    }
  });
});

it('openMigratedDatabase: migrated and open, or refused with the failing migration named and its pool closed', async () => {
  const ok = await openMigratedDatabase<DB>(`sqlite:${join(tmp, 'm.db')}`, set);
  try {
    expect(await migrateToLatest(ok.db as Kysely<DB>, ok.dialect, set)).toEqual([]);
  } finally {
    await ok.close();
  }
  const broken: MigrationSet = (d) => ({
    ...set(d),
    '0002_bad': {
      async up(db) {
        await sql`create table oops (`.execute(db);
      },
    },
  });
  const before = (await pgPoolCount()) as number;
  await expect(openMigratedDatabase(pgDb.url, broken)).rejects.toThrow(/migration 0002_bad failed/);
  // Nothing of the failed open stays connected to the server. A closed connection's backend leaves
  // pg_stat_activity a moment after the client's end() resolved (CI saw it still listed): wait up to 3 s, well
  // inside the 10 s after which a leaked pool's idle connection would close by itself.
  let after = await pgPoolCount();
  for (const t0 = Date.now(); after !== before && Date.now() - t0 < 3_000; after = await pgPoolCount())
    await new Promise((r) => setTimeout(r, 50));
  expect(after).toBe(before);
});

/** Connections to the test database other than this query's own. */
async function pgPoolCount(): Promise<number> {
  const c = new pg.Client({ connectionString: pgDb.url });
  await c.connect();
  try {
    const r = await c.query(
      'select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    );
    return r.rows[0].n as number;
  } finally {
    await c.end();
  }
}

it('refuses unknown URLs without echoing passwords', () => {
  expect(() => openDatabase('mysql://u:secret@h/db')).toThrow(/postgres:\/\/ or sqlite:/);
  expect(() => openDatabase('mysql://u:secret@h/db')).not.toThrow(/secret/);
  expect(redactUrl('postgres://u:pw@h:5432/db')).toBe('postgres://u:***@h:5432/db');
});

describe('sqlite: prepared statements reused by SQL text', () => {
  it('more distinct queries than the cache holds, repeated, a schema change and a rollback all read right', async () => {
    const { db, close } = openDatabase<DB>(`sqlite:${join(tmp, 'cache.db')}`);
    try {
      await migrateToLatest(db, 'sqlite', set);
      const n = STATEMENT_CACHE_SIZE + 44;
      for (let i = 0; i < n; i++)
        await db
          .insertInto('item')
          .values({ name: `n${i}`, amount: String(i), meta: null, created_at: i })
          .execute();
      // Each limit is its own SQL text (a literal, not a parameter): n + 1 statements, evicting the oldest.
      const sizes = async () => {
        const out: number[] = [];
        for (let k = 1; k <= n; k += 1)
          out.push((await db.selectFrom('item').select('id').limit(sql.lit(k)).execute()).length);
        return out;
      };
      const expected = Array.from({ length: n }, (_, k) => k + 1);
      expect(await sizes()).toEqual(expected);
      expect(await sizes()).toEqual(expected); // second pass: early ones were evicted and are prepared again
      const byName = (name: string) =>
        db.selectFrom('item').selectAll().where('name', '=', name).executeTakeFirst();
      expect((await byName('n7'))?.amount).toBe('7');
      // The cached `select *` sees a column added after it was prepared.
      await sql`alter table item add column note text default 'x'`.execute(db);
      expect(await byName('n7')).toMatchObject({ amount: '7', note: 'x' });
      // A transaction that throws rolls back; the cached statements still work after it.
      await expect(
        db.transaction().execute(async (tx) => {
          await tx.updateTable('item').set({ amount: '999' }).where('name', '=', 'n7').execute();
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect((await byName('n7'))?.amount).toBe('7');
    } finally {
      await close();
    }
  });
});

describe('postgres: errors of idle pool clients', () => {
  /** Terminates the backend of the pool's one idle client from another connection, as a server restart would. */
  async function terminateIdleClient(opened: ReturnType<typeof openDatabase<DB>>): Promise<number> {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(opened.db);
    const pid = rows[0]!.pid;
    const admin = new pg.Client({ connectionString: pgDb.url });
    await admin.connect();
    try {
      const r = await admin.query('select pg_terminate_backend($1) as ok', [pid]);
      expect(r.rows[0].ok).toBe(true);
    } finally {
      await admin.end();
    }
    return pid;
  }

  const until = async (what: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!what()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('are logged through the caller’s logger, without the password, and the pool goes on', async () => {
    const logged: { obj: Record<string, unknown>; msg: string }[] = [];
    const withPassword = pgDb.url.replace('//postgres@', '//postgres:s3cret@');
    const opened = openDatabase<DB>(withPassword, {
      poolSize: 1,
      logger: { error: (obj, msg) => logged.push({ obj: obj as Record<string, unknown>, msg }) },
    });
    try {
      const pid = await terminateIdleClient(opened);
      await until(() => logged.length > 0);
      expect(logged).toHaveLength(1);
      expect(logged[0]!.msg).toMatch(/PostgreSQL idle client error/);
      expect(logged[0]!.obj).toMatchObject({
        err: { code: '57P01', message: expect.stringMatching(/terminat/) },
        database: expect.stringContaining('postgres:***@'),
      });
      expect(JSON.stringify(logged)).not.toContain('s3cret');
      // The process is still here and the pool replaced the client: a query runs on a new backend.
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(opened.db);
      expect(rows[0]!.pid).not.toBe(pid);
    } finally {
      await opened.close();
    }
  });

  it('go to stderr as a JSON line when no logger is given', async () => {
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk, ...rest) => {
      if (typeof chunk === 'string' && chunk.includes('"name":"store"')) {
        lines.push(chunk);
        return true;
      }
      return write(chunk, ...(rest as [BufferEncoding, () => void]));
    });
    const opened = openDatabase<DB>(pgDb.url, { poolSize: 1 });
    try {
      await terminateIdleClient(opened);
      await until(() => lines.length > 0);
    } finally {
      spy.mockRestore();
      await opened.close();
    }
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 50,
      name: 'store',
      err: { code: '57P01' },
      msg: expect.stringMatching(/PostgreSQL idle client error/),
    });
  });
});
