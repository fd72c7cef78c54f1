/** Affiliates of an API key (unique by name per key) with the key's name. */
import { isUniqueViolation } from '@rgbx/store';
import type { Insertable } from 'kysely';
import type { AffiliateTable, SwapDb } from './database.ts';

/** Inserts an affiliate; false when this key already has one of that name. */
export async function insertAffiliate(db: SwapDb, row: Insertable<AffiliateTable>): Promise<boolean> {
  try {
    await db.insertInto('affiliates').values(row).execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

export async function apiKeyName(db: SwapDb, apiKeyId: string): Promise<string> {
  const key = await db
    .selectFrom('api_keys')
    .select('name')
    .where('id', '=', apiKeyId)
    .executeTakeFirstOrThrow();
  return key.name;
}

/** This key's affiliates in creation order, each with the key's name. */
export function listAffiliateRows(db: SwapDb, apiKeyId: string) {
  return db
    .selectFrom('affiliates')
    .innerJoin('api_keys', 'api_keys.id', 'affiliates.api_key_id')
    .select([
      'affiliates.affiliate_name',
      'affiliates.payout_address',
      'affiliates.payout_network_id',
      'affiliates.payout_token_address',
      'affiliates.created_at',
      'api_keys.name',
    ])
    .where('affiliates.api_key_id', '=', apiKeyId)
    .orderBy('affiliates.id')
    .execute();
}
