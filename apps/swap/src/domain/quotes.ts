/**
 * Quotes: validate the request, run the RFQ, apply affiliate fees and slippage, store the quote for
 * the API key that asked. A quote expires after `swap.quote_ttl_secs` and makes at most one intent.
 *
 * Amounts: `amountLots` (integer lots) or `amount` (human units, a decimal string or a JSON number
 * as Hotpot clients send it) — exactly one. Fees: the resolver's fee is inside its destination
 * amount; affiliate fees are taken from it in the destination token; `maxDestAmountLots` is what is
 * left, `minDestAmountLots` that minus the slippage.
 */
import { randomUUID } from 'node:crypto';
import { bigintNumber } from '@rgbx/store';
import { E } from '../errors.ts';
import type { SwapDb, SwapPair } from '../store/database.ts';
import { pairColumns, pairOf } from '../store/database.ts';
import { findQuote, insertQuote, knownAffiliates } from '../store/quote-store.ts';
import { AmountError, bpsOf, minusBps, parseLots, toLots } from './amounts.ts';
import { type ApprovalMechanism, type Catalog, mechanismFor } from './catalog.ts';
import { type Resolver, requestForQuote } from './resolvers.ts';

export type SwapType = 'standard' | 'optimized';
export type DepositType = 'escrowed';

export interface QuoteInput {
  sourceChain: number;
  sourceToken: string;
  destChain: number;
  destToken: string;
  amount?: string | number;
  amountLots?: string;
  slippageBps?: number | string;
  swapType?: SwapType;
  depositType?: DepositType;
  retailUserId?: string;
  /** `{ affiliateName: { feeBps } }`; names must be affiliates of the calling API key. */
  affiliateFees?: Record<string, { feeBps: number | string; networkId?: number; token?: string }>;
}

export interface AffiliateFee {
  feeBps: number;
  networkId: number;
  token: string;
  feeAmountLots: bigint;
  feeAmountDecimals: number;
}

export interface Quote extends SwapPair {
  id: string;
  slippageBps: number;
  swapType: SwapType;
  depositType: DepositType;
  approvalMechanism: ApprovalMechanism;
  affiliateFees: Record<string, AffiliateFee>;
  /** Unix seconds. */
  expiry: number;
  resolverId: string;
  retailUserId: string | null;
}

export interface QuoteSettings {
  quoteTtlSecs: number;
  defaultSlippageBps: number;
  maxSlippageBps: number;
  maxAffiliateFeeBps: number;
  resolverTimeoutMs: number;
}

function bps(field: string, v: number | string | undefined, fallback: number, max: number): number {
  if (v === undefined) return fallback;
  const n = typeof v === 'number' ? v : /^(0|[1-9][0-9]{0,4})$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isInteger(n) || n < 0 || n > max) {
    throw E.VALIDATION_ERROR.createWith({ details: { field, expected: `integer 0..${max}` } });
  }
  return n;
}

export async function createQuote(deps: {
  db: SwapDb;
  catalog: Catalog;
  resolvers: readonly Resolver[];
  settings: QuoteSettings;
  now: () => number;
  apiKeyId: string;
  input: QuoteInput;
  onResolverError?: (resolverId: string, err: unknown) => void;
  onResolverDone?: (resolverId: string, seconds: number) => void;
}): Promise<Quote> {
  const { catalog, input, settings } = deps;
  const sourceNetwork = catalog.network(input.sourceChain);
  const destNetwork = catalog.network(input.destChain);
  const sourceToken = catalog.token(input.sourceChain, input.sourceToken);
  const destToken = catalog.token(input.destChain, input.destToken);
  if (sourceNetwork.id === destNetwork.id && sourceToken.address === destToken.address) {
    throw E.NO_ROUTE.createWith({ details: { reason: 'source and destination are the same token' } });
  }
  if ((input.amount === undefined) === (input.amountLots === undefined)) {
    throw E.VALIDATION_ERROR.createWith({
      details: { field: 'amount', expected: 'exactly one of amount, amountLots' },
    });
  }
  let amountLots: bigint;
  try {
    amountLots =
      input.amountLots !== undefined
        ? parseLots(input.amountLots)
        : toLots(input.amount!, sourceToken.decimals);
  } catch (err) {
    if (err instanceof AmountError) throw E.INVALID_AMOUNT.create(err.message);
    throw err;
  }
  if (amountLots <= 0n) throw E.INVALID_AMOUNT.create('must be greater than zero');
  const slippageBps = bps(
    'slippageBps',
    input.slippageBps,
    settings.defaultSlippageBps,
    settings.maxSlippageBps,
  );
  const swapType = input.swapType ?? (sourceNetwork.id === destNetwork.id ? 'optimized' : 'standard');
  if (
    swapType === 'optimized' &&
    (sourceNetwork.id !== destNetwork.id || !sourceNetwork.supports_optimized_swap)
  ) {
    throw E.NO_ROUTE.createWith({
      details: { reason: 'optimized swaps need a single network that supports them' },
    });
  }

  const mechanism = mechanismFor(sourceNetwork, sourceToken);
  // RGB sources (rgblock) come later: no resolver quotes them, whatever its rates say.
  if (mechanism === 'rgblock')
    throw E.NO_ROUTE.createWith({ details: { reason: 'RGB asset sources are not quoted yet' } });

  const fees = input.affiliateFees ?? {};
  const names = Object.keys(fees);
  const known = await knownAffiliates(deps.db, deps.apiKeyId, names);
  const feeBps: Record<string, number> = {};
  let totalFeeBps = 0;
  for (const name of names) {
    if (!known.has(name)) throw E.AFFILIATE_NOT_FOUND.create(name);
    const f = fees[name]!;
    if (f.networkId !== undefined && f.networkId !== destNetwork.id) {
      throw E.VALIDATION_ERROR.createWith({
        details: {
          field: `affiliate_fees.${name}.network_id`,
          expected: `${destNetwork.id} (fees are paid in the destination token)`,
        },
      });
    }
    if (f.token !== undefined && catalog.token(destNetwork.id, f.token) !== destToken) {
      throw E.VALIDATION_ERROR.createWith({
        details: {
          field: `affiliate_fees.${name}.token`,
          expected: `${destToken.address} (fees are paid in the destination token)`,
        },
      });
    }
    feeBps[name] = bps(`affiliateFees.${name}.feeBps`, f.feeBps, 0, settings.maxAffiliateFeeBps);
    totalFeeBps += feeBps[name];
  }
  if (totalFeeBps > settings.maxAffiliateFeeBps) {
    throw E.VALIDATION_ERROR.createWith({
      details: { field: 'affiliateFees', expected: `total fee_bps at most ${settings.maxAffiliateFeeBps}` },
    });
  }

  const best = await requestForQuote(
    deps.resolvers,
    { sourceNetwork, sourceToken, destNetwork, destToken, amountLots },
    settings.resolverTimeoutMs,
    deps.onResolverError,
    deps.onResolverDone,
  );
  if (!best) throw E.NO_ROUTE.create();

  const affiliateFees: Record<string, AffiliateFee> = {};
  let feeTotal = 0n;
  for (const name of names) {
    const amount = bpsOf(best.destAmountLots, feeBps[name]!);
    feeTotal += amount;
    affiliateFees[name] = {
      feeBps: feeBps[name]!,
      networkId: destNetwork.id,
      token: destToken.address,
      feeAmountLots: amount,
      feeAmountDecimals: destToken.decimals,
    };
  }
  const maxDest = best.destAmountLots - feeTotal;
  const minDest = minusBps(maxDest, slippageBps);
  if (minDest <= 0n) throw E.INVALID_AMOUNT.create('too small: nothing left for the destination after fees');

  const nowMs = deps.now();
  const quote: Quote = {
    id: randomUUID(),
    sourceChain: sourceNetwork.id,
    sourceToken: sourceToken.address,
    destChain: destNetwork.id,
    destToken: destToken.address,
    sourceAmountLots: amountLots,
    sourceAmountDecimals: sourceToken.decimals,
    minDestAmountLots: minDest,
    maxDestAmountLots: maxDest,
    destAmountDecimals: destToken.decimals,
    slippageBps,
    swapType,
    depositType: input.depositType ?? 'escrowed',
    approvalMechanism: mechanism,
    affiliateFees,
    expiry: Math.floor(nowMs / 1000) + settings.quoteTtlSecs,
    resolverId: best.resolverId,
    retailUserId: input.retailUserId ?? null,
  };
  await insertQuote(deps.db, {
    id: quote.id,
    api_key_id: deps.apiKeyId,
    resolver_id: quote.resolverId,
    ...pairColumns(quote),
    slippage_bps: quote.slippageBps,
    swap_type: quote.swapType,
    deposit_type: quote.depositType,
    approval_mechanism: quote.approvalMechanism,
    affiliate_fees: JSON.stringify(affiliateFees, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
    retail_user_id: quote.retailUserId,
    expires_at: quote.expiry * 1000,
    created_at: nowMs,
  });
  return quote;
}

/** A stored quote of this API key (QUOTE_NOT_FOUND otherwise, also for other keys' quotes). */
export async function loadQuote(db: SwapDb, apiKeyId: string, id: string): Promise<Quote> {
  const r = await findQuote(db, apiKeyId, id);
  if (!r) throw E.QUOTE_NOT_FOUND.create(id);
  const fees = JSON.parse(r.affiliate_fees) as Record<
    string,
    Omit<AffiliateFee, 'feeAmountLots'> & { feeAmountLots: string }
  >;
  return {
    id: r.id,
    ...pairOf(r),
    slippageBps: r.slippage_bps,
    swapType: r.swap_type as SwapType,
    depositType: r.deposit_type as DepositType,
    approvalMechanism: r.approval_mechanism as ApprovalMechanism,
    affiliateFees: Object.fromEntries(
      Object.entries(fees).map(([k, f]) => [k, { ...f, feeAmountLots: BigInt(f.feeAmountLots) }]),
    ),
    expiry: Math.floor(bigintNumber(r.expires_at) / 1000),
    resolverId: r.resolver_id,
    retailUserId: r.retail_user_id,
  };
}
