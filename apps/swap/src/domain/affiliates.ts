/**
 * Affiliate payout configurations, tied to the API key that creates them. Names are unique per key;
 * the payout network and token must be configured, and the address must belong to that network.
 */

import { bigintNumber } from '@rgbx/store';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { apiKeyName, insertAffiliate, listAffiliateRows } from '../store/affiliate-store.ts';
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
  const inserted = await insertAffiliate(ctx.db, {
    api_key_id: apiKeyId,
    affiliate_name: input.affiliateName,
    payout_address: input.payoutAddress,
    payout_network_id: network.id,
    payout_token_address: token.address,
    created_at: nowMs,
  });
  if (!inserted) throw E.AFFILIATE_EXISTS.create(input.affiliateName);
  return {
    ...input,
    payoutTokenAddress: token.address,
    apiKeyName: await apiKeyName(ctx.db, apiKeyId),
    createdAt: nowMs,
  };
}

export async function listAffiliates(ctx: SwapContext, apiKeyId: string): Promise<Affiliate[]> {
  const rows = await listAffiliateRows(ctx.db, apiKeyId);
  return rows.map((r) => ({
    affiliateName: r.affiliate_name,
    payoutAddress: r.payout_address,
    payoutNetworkId: r.payout_network_id,
    payoutTokenAddress: r.payout_token_address,
    apiKeyName: r.name,
    createdAt: bigintNumber(r.created_at),
  }));
}
