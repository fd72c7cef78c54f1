/**
 * Domain objects → Surface A's wire shapes (the contracts' `A.*`). Surface B and the resolver API
 * rename these through their field maps. Amounts leave as decimal strings.
 */
import type { A } from '@rgbx/contracts/swap';
import type { NetworkConfig, TokenConfig } from '../config.ts';
import type { Affiliate } from '../domain/affiliates.ts';
import type { ApprovalMechanism } from '../domain/catalog.ts';
import type { Quote } from '../domain/quotes.ts';
import type { Intent } from '../store/intent-store.ts';

/** `rgblock` is never quoted (quotes.ts refuses RGB sources), so no quote or intent carries it yet. */
function mechanismA(m: ApprovalMechanism): A.Quote['approvalMechanism'] {
  return m as A.Quote['approvalMechanism'];
}

export function networkA(n: NetworkConfig): A.Network {
  return {
    id: n.id,
    name: n.name,
    type: n.type,
    iconUrl: n.icon_url,
    features: {
      supportsCustomTokens: n.supports_custom_tokens,
      supportsOptimizedSwap: n.supports_optimized_swap,
    },
  };
}

export function tokenA(t: TokenConfig): A.Token {
  return {
    networkId: t.network_id,
    name: t.name,
    contractAddress: t.address,
    symbol: t.symbol,
    decimals: t.decimals,
    iconUrl: t.icon_url,
    ...(t.wrapped_token_address ? { wrappedTokenAddress: t.wrapped_token_address } : {}),
  };
}

export function quoteA(q: Quote): A.Quote {
  return {
    quoteId: q.id,
    sourceChain: q.sourceChain,
    sourceToken: q.sourceToken,
    destChain: q.destChain,
    destToken: q.destToken,
    sourceAmountLots: q.sourceAmountLots.toString(),
    sourceAmountDecimals: q.sourceAmountDecimals,
    minDestAmountLots: q.minDestAmountLots.toString(),
    maxDestAmountLots: q.maxDestAmountLots.toString(),
    destAmountDecimals: q.destAmountDecimals,
    slippageBps: q.slippageBps,
    expiry: q.expiry,
    swapType: q.swapType,
    depositType: q.depositType,
    approvalMechanism: mechanismA(q.approvalMechanism),
    affiliateFees: Object.fromEntries(
      Object.entries(q.affiliateFees).map(([k, f]) => [
        k,
        {
          feeBps: f.feeBps,
          networkId: f.networkId,
          token: f.token,
          feeAmountLots: f.feeAmountLots.toString(),
          feeAmountDecimals: f.feeAmountDecimals,
        },
      ]),
    ),
  };
}

export function intentCreatedA(i: Intent): A.IntentCreated {
  const base = {
    intentId: i.id,
    deadlineSecs: i.deadline,
    secretHash: i.secretHash,
    approvalMechanism: mechanismA(i.mechanism),
  };
  // The approval data sits under the mechanism's own name (`permit2`, `htlc`, `cosign`), as built by
  // the source network's kind; `rgblock` intents are never created.
  if (i.mechanism === 'rgblock') return base;
  return { ...base, [i.mechanism]: i.paramsToSign } as A.IntentCreated;
}

export function swapRecordA(i: Intent): A.SwapRecord {
  const m = i.metadata;
  return {
    intentId: i.id,
    status: i.status,
    swapMetadata: {
      id: m.id,
      proxyAddress: m.proxyAddress,
      userDepositTx: m.userDepositTx,
      fulfillTx: m.fulfillTx,
      swapTx: m.swapTx,
      refundTx: m.refundTx,
      createdAt: m.createdAt,
      userDepositedAt: m.userDepositedAt,
      fulfilledAt: m.fulfilledAt,
      swappedAt: m.swappedAt,
      refundedAt: m.refundedAt,
      refundRequestedAt: m.refundRequestedAt,
    },
    sourceAmountDecimals: i.sourceAmountDecimals,
    sourceAmountLots: i.sourceAmountLots.toString(),
    sourceChain: i.sourceChain,
    sourceToken: i.sourceToken,
    destAmountDecimals: i.destAmountDecimals,
    destChain: i.destChain,
    destToken: i.destToken,
    minDestAmountLots: i.minDestAmountLots.toString(),
    maxDestAmountLots: i.maxDestAmountLots.toString(),
    userSourceAddress: i.userSourceAddress,
    userDestAddress: i.userDestAddress,
    refundAddress: i.refundAddress,
    approvalMechanism: mechanismA(i.mechanism),
    deadlineSecs: i.deadline,
    secretHash: i.secretHash,
    retailUserId: i.retailUserId,
    settlement: i.settlement,
  };
}

export function affiliateA(a: Affiliate, withKeyName: boolean): A.Affiliate {
  return {
    affiliateName: a.affiliateName,
    ...(withKeyName ? { apiKeyName: a.apiKeyName } : {}),
    payoutAddress: a.payoutAddress,
    payoutNetworkId: a.payoutNetworkId,
    payoutTokenAddress: a.payoutTokenAddress,
  };
}
