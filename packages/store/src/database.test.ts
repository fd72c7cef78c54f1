import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Generated, type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  columns,
  type Dialect,
  isUniqueViolation,
  type MigrationSet,
  migrateToLatest,
  openDatabase,
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
