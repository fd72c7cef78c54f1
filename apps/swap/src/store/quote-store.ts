/** Quotes as stored (one row per quote, affiliate fees as JSON) and the affiliate names a quote may use. */
import type { Insertable, Selectable } from 'kysely';
import type { QuoteTable, SwapDb } from './database.ts';

export async function insertQuote(db: SwapDb, row: Insertable<QuoteTable>): Promise<void> {
  await db.insertInto('quotes').values(row).execute();
}

/** The quote `id` of this API key, or undefined (also for another key's quote). */
export function findQuote(
  db: SwapDb,
  apiKeyId: string,
  id: string,
): Promise<Selectable<QuoteTable> | undefined> {
  return db
    .selectFrom('quotes')
    .selectAll()
    .where('id', '=', id)
    .where('api_key_id', '=', apiKeyId)
    .executeTakeFirst();
}

/** Which of `names` are affiliates registered by this API key. */
export async function knownAffiliates(db: SwapDb, apiKeyId: string, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await db
    .selectFrom('affiliates')
    .select('affiliate_name')
    .where('api_key_id', '=', apiKeyId)
    .where('affiliate_name', 'in', names)
    .execute();
  return new Set(rows.map((r) => r.affiliate_name));
}
