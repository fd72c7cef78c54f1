/**
 * Domain objects → wire shapes. Surface A is camelCase, Surface B (Hotpot affiliate API) and the
 * resolver API are snake_case. Amounts leave as decimal strings.
 */

import type { CosignParams } from '../chains/cosign-approval.ts';
import type { HtlcParams } from '../chains/htlc-approval.ts';
import type { Permit2Params } from '../chains/permit2-approval.ts';
import type { NetworkConfig, TokenConfig } from '../config.ts';
import type { Affiliate } from '../domain/affiliates.ts';
import type { Quote } from '../domain/quotes.ts';
import type { Intent } from '../store/intent-store.ts';

export function networkA(n: NetworkConfig) {
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

export function networkB(n: NetworkConfig) {
  return {
    id: n.id,
    name: n.name,
    type: n.type,
    icon_url: n.icon_url,
    supports_optimized_swap: n.supports_optimized_swap,
    supports_custom_tokens: n.supports_custom_tokens,
  };
}

export function tokenA(t: TokenConfig) {
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

export function tokenB(t: TokenConfig) {
  return {
    network_id: t.network_id,
    name: t.name,
    contract_address: t.address,
    symbol: t.symbol,
    decimals: t.decimals,
    icon_url: t.icon_url,
    ...(t.wrapped_token_address ? { wrapped_token_address: t.wrapped_token_address } : {}),
  };
}

export function quoteA(q: Quote) {
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
    approvalMechanism: q.approvalMechanism,
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

export function quoteB(q: Quote) {
  return {
    quote_id: q.id,
    id: q.id,
    source_chain: q.sourceChain,
    source_token: q.sourceToken,
    dest_chain: q.destChain,
    dest_token: q.destToken,
    source_amount_lots: q.sourceAmountLots.toString(),
    source_amount_decimals: q.sourceAmountDecimals,
    min_dest_amount_lots: q.minDestAmountLots.toString(),
    max_dest_amount_lots: q.maxDestAmountLots.toString(),
    dest_amount_decimals: q.destAmountDecimals,
    slippage_bps: String(q.slippageBps),
    expiry: q.expiry,
    swap_type: q.swapType,
    deposit_type: q.depositType,
    approval_mechanism: q.approvalMechanism,
    affiliate_fees: Object.fromEntries(
      Object.entries(q.affiliateFees).map(([k, f]) => [
        k,
        {
          fee_bps: f.feeBps,
          network_id: f.networkId,
          token: f.token,
          fee_amount_lots: f.feeAmountLots.toString(),
          fee_amount_decimals: f.feeAmountDecimals,
        },
      ]),
    ),
  };
}

function htlcSnake(p: HtlcParams) {
  return {
    psbt: p.psbt,
    inputs: p.inputs,
    htlc_address: p.htlcAddress,
    locktime: p.locktime,
    resolver_pubkey: p.resolverPubkey,
    user_pubkey: p.userPubkey,
    claim_script: p.claimScript,
    refund_script: p.refundScript,
    claim_control_block: p.claimControlBlock,
    refund_control_block: p.refundControlBlock,
    funding_txid: p.fundingTxid,
    htlc_vout: p.htlcVout,
    fee: p.fee,
  };
}

function permit2Snake(p: Permit2Params) {
  return {
    escrow_contract_address: p.escrowContractAddress,
    permit2_contract_address: p.permit2ContractAddress,
    resolver_deposit_address: p.resolverDepositAddress,
    nonce: p.nonce,
    additional_data: {
      domain: p.additionalData.domain,
      types: p.additionalData.types,
      witness: p.additionalData.witness,
      witness_type_string: p.additionalData.witnessTypeString,
      witness_hash: p.additionalData.witnessHash,
      secretHash: p.additionalData.secretHash,
    },
  };
}

export function intentCreatedA(i: Intent) {
  const base = {
    intentId: i.id,
    deadlineSecs: i.deadline,
    secretHash: i.secretHash,
    approvalMechanism: i.mechanism,
  };
  switch (i.mechanism) {
    case 'permit2':
      return { ...base, permit2: i.paramsToSign as Permit2Params };
    case 'htlc':
      return { ...base, htlc: i.paramsToSign as HtlcParams };
    case 'cosign':
      return { ...base, cosign: i.paramsToSign as CosignParams };
    default:
      return base;
  }
}

export function paramsToSignB(i: Intent): Record<string, unknown> {
  switch (i.mechanism) {
    case 'permit2':
      return permit2Snake(i.paramsToSign as Permit2Params);
    case 'htlc':
      return htlcSnake(i.paramsToSign as HtlcParams);
    default: {
      const c = i.paramsToSign as CosignParams;
      return { transaction: c.transaction, ...(c.nonce === undefined ? {} : { nonce: c.nonce }) };
    }
  }
}

export function intentCreatedB(i: Intent) {
  return {
    intent_id: i.id,
    deadline_secs: i.deadline,
    secret_hash: i.secretHash,
    approval_mechanism: i.mechanism,
    params_to_sign: paramsToSignB(i),
  };
}

export function swapRecordA(i: Intent) {
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
    approvalMechanism: i.mechanism,
    deadlineSecs: i.deadline,
    secretHash: i.secretHash,
    retailUserId: i.retailUserId,
    settlement: i.settlement,
  };
}

/** The quote's fields of a Surface B record (flat and again in `additional_info`). */
function quoteFieldsB(i: Intent) {
  return {
    source_amount_decimals: i.sourceAmountDecimals,
    source_amount_lots: i.sourceAmountLots.toString(),
    source_chain: i.sourceChain,
    source_token: i.sourceToken,
    dest_amount_decimals: i.destAmountDecimals,
    dest_chain: i.destChain,
    dest_token: i.destToken,
    min_dest_amount_lots: i.minDestAmountLots.toString(),
    max_dest_amount_lots: i.maxDestAmountLots.toString(),
  };
}

export function swapRecordB(i: Intent) {
  const m = i.metadata;
  return {
    intent_id: i.id,
    status: i.status,
    swap_metadata: {
      id: m.id,
      proxy_address: m.proxyAddress,
      user_deposit_tx: m.userDepositTx,
      fulfill_tx: m.fulfillTx,
      swap_tx: m.swapTx,
      refund_tx: m.refundTx,
      created_at: m.createdAt,
      user_deposited_at: m.userDepositedAt,
      fulfilled_at: m.fulfilledAt,
      swapped_at: m.swappedAt,
      refunded_at: m.refundedAt,
      refund_requested_at: m.refundRequestedAt,
    },
    ...quoteFieldsB(i),
    user_source_address: i.userSourceAddress,
    user_dest_address: i.userDestAddress,
    additional_info: quoteFieldsB(i),
    settlement: i.settlement.map((l) => ({
      leg: l.leg,
      network_id: l.networkId,
      tx_hash: l.txHash,
      index: l.index,
      block_height: l.blockHeight,
      block_hash: l.blockHash,
      block_time: l.blockTime,
      confirmations: l.confirmations,
      recipient: l.recipient,
      token: l.token,
      amount: l.amount,
      sender: l.sender,
      verified_at: l.verifiedAt,
    })),
  };
}

export function affiliateA(a: Affiliate, withKeyName: boolean) {
  return {
    affiliateName: a.affiliateName,
    ...(withKeyName ? { apiKeyName: a.apiKeyName } : {}),
    payoutAddress: a.payoutAddress,
    payoutNetworkId: a.payoutNetworkId,
    payoutTokenAddress: a.payoutTokenAddress,
  };
}
