/**
 * Affiliate payout configurations, tied to the API key that creates them. Names are unique per key;
 * the payout network and token must be configured, and the address must belong to that network.
 */
import { isUniqueViolation } from '@rgbx/store';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { ms } from '../store/database.ts';
import { checkAddress } from './catalog.ts';

export interface Affiliate {
  affiliateName: string;
  payoutAddress: string;
  payoutNetworkId: number;
  payoutTokenAddress: string;
  apiKeyName: string;
  createdAt: number;
}

export interface AffiliateInput {
  affiliateName: string;
  payoutAddress: string;
  payoutNetworkId: number;
  payoutTokenAddress: string;
}

export async function createAffiliate(
  ctx: SwapContext,
  apiKeyId: string,
  input: AffiliateInput,
): Promise<Affiliate> {
  const network = ctx.catalog.network(input.payoutNetworkId);
  const token = ctx.catalog.token(network.id, input.payoutTokenAddress);
  checkAddress('payoutAddress', input.payoutAddress, network);
  const nowMs = ctx.now();
  try {
    await ctx.db
      .insertInto('affiliates')
      .values({
        api_key_id: apiKeyId,
        affiliate_name: input.affiliateName,
        payout_address: input.payoutAddress,
        payout_network_id: network.id,
        payout_token_address: token.address,
        created_at: nowMs,
      })
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw E.AFFILIATE_EXISTS.create(input.affiliateName);
    throw err;
  }
  const key = await ctx.db
    .selectFrom('api_keys')
    .select('name')
    .where('id', '=', apiKeyId)
    .executeTakeFirstOrThrow();
  return { ...input, payoutTokenAddress: token.address, apiKeyName: key.name, createdAt: nowMs };
}

export async function listAffiliates(ctx: SwapContext, apiKeyId: string): Promise<Affiliate[]> {
  const rows = await ctx.db
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
  return rows.map((r) => ({
    affiliateName: r.affiliate_name,
    payoutAddress: r.payout_address,
    payoutNetworkId: r.payout_network_id,
    payoutTokenAddress: r.payout_token_address,
    apiKeyName: r.name,
    createdAt: ms(r.created_at),
  }));
}
