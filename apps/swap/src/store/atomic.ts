/**
 * A set of inserts written all or nothing, spelled once: PostgreSQL runs them as one statement of
 * data-modifying CTEs (one round trip instead of begin, N inserts, select, commit), SQLite as one
 * transaction. The first insert's row comes back.
 */
import type { Insertable, Selectable } from 'kysely';
import { isPostgres, type SwapDatabase, type SwapDb } from './database.ts';

/** One insert of the set: a table and its rows. */
export type InsertOf<T extends keyof SwapDatabase = keyof SwapDatabase> = {
  [K in T]: { table: K; values: Insertable<SwapDatabase[K]> | Insertable<SwapDatabase[K]>[] };
}[T];

/**
 * Inserts `first` and every one of `rest` atomically; returns `first`'s row. A unique violation in
 * any of them writes nothing (and throws it).
 */
export async function insertAtomically<T extends keyof SwapDatabase>(
  db: SwapDb,
  first: InsertOf<T>,
  rest: InsertOf[],
): Promise<Selectable<SwapDatabase[T]>> {
  const writes = rest.filter((w) => !Array.isArray(w.values) || w.values.length > 0);
  if (isPostgres(db)) {
    // biome-ignore lint/suspicious/noExplicitAny: CTE names are built at run time; the rows are typed by InsertOf.
    let q: any = db.with('w0', (c) =>
      c
        .insertInto(first.table)
        .values(first.values as never)
        .returningAll(),
    );
    writes.forEach((w, i) => {
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      q = q.with(`w${i + 1}`, (c: any) => c.insertInto(w.table).values(w.values));
    });
    return q.selectFrom('w0').selectAll().executeTakeFirstOrThrow();
  }
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto(first.table)
      .values(first.values as never)
      .returningAll()
      .executeTakeFirstOrThrow();
    for (const w of writes)
      await trx
        .insertInto(w.table)
        .values(w.values as never)
        .execute();
    return row as Selectable<SwapDatabase[T]>;
  });
}
