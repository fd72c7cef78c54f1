/**
 * Execution after approval: the resolver-facing actions (accept, decline, report deposit / fulfil /
 * claim / refund transactions, fetch the preimage) and the user's refund request and refund report.
 * Each action checks what it must on chain first (onchain-checks.ts), then asks the lifecycle table
 * for the transition (intent-store.ts `applyTransition`).
 *
 * Preimage release: only to the resolver that quoted and accepted the intent, and only once the
 * intent is `Fulfilled` (the destination leg was reported and, where a reader exists, verified). The
 * user's Bitcoin is safe until then; after the deadline the user refunds through the refund leaf.
 */
import type { SwapContext } from './context.ts';
import { E } from './errors.ts';
import { type HtlcContext, htlcOf } from './htlc-approval.ts';
import { applyTransition, expireIfDue, type Intent, type IntentPatch, loadIntent } from './intent-store.ts';
import type { Trigger } from './lifecycle.ts';
import { canTransition } from './lifecycle.ts';
import {
  type CheckResult,
  checkBitcoinPayment,
  checkEvmTransfer,
  checkHtlcFunding,
  checkHtlcSpend,
  normalizeTxHash,
} from './onchain-checks.ts';
import type { Permit2Context } from './permit2-approval.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

async function loadForResolver(ctx: SwapContext, resolverId: string, id: string): Promise<Intent> {
  return expireIfDue(ctx.db, await loadIntent(ctx.db, id, { resolverId }), ctx.now());
}

function requireTransition(intent: Intent, trigger: Trigger): void {
  if (!canTransition(intent.status, trigger)) {
    if (intent.status === 'Expired' && !['request_refund', 'refund'].includes(trigger))
      throw E.INTENT_EXPIRED.create(intent.id);
    throw E.INVALID_TRANSITION.create(trigger.replace('_', ' '), intent.status);
  }
}

function htlcContext(intent: Intent): HtlcContext {
  return JSON.parse(intent.row.verify_context) as HtlcContext;
}

function execution<T>(intent: Intent): T {
  if (!intent.row.execution) throw E.INVALID_TRANSITION.create('execute', intent.status);
  return JSON.parse(intent.row.execution) as T;
}

export async function acceptIntent(ctx: SwapContext, resolverId: string, id: string): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  requireTransition(intent, 'accept');
  const patch: IntentPatch = { accepted_at: ctx.now() };
  const details: Record<string, unknown> = {};
  if (intent.mechanism === 'htlc') {
    // Funds are locked only once a resolver commits: the service broadcasts the approved funding tx.
    const ex = execution<{ fundingTxid: string; fundingTxHex: string }>(intent);
    await ctx.gateway.bitcoin().broadcast(ex.fundingTxHex, ex.fundingTxid);
    details.broadcast = ex.fundingTxid;
  }
  return applyTransition(ctx.db, intent, 'accept', `resolver:${resolverId}`, patch, ctx.now(), details);
}

export async function declineIntent(
  ctx: SwapContext,
  resolverId: string,
  id: string,
  reason?: string,
): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  requireTransition(intent, 'decline');
  const nowMs = ctx.now();
  return applyTransition(
    ctx.db,
    intent,
    'decline',
    `resolver:${resolverId}`,
    { declined_at: nowMs, decline_reason: reason ?? null },
    nowMs,
  );
}

export async function reportDeposit(
  ctx: SwapContext,
  resolverId: string,
  id: string,
  txHash: string,
): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  requireTransition(intent, 'deposit');
  const network = ctx.catalog.network(intent.sourceChain);
  const tx = normalizeTxHash(network, txHash);
  let check: CheckResult;
  if (intent.mechanism === 'htlc') {
    check = await checkHtlcFunding(
      ctx.gateway,
      htlcContext(intent),
      tx,
      ctx.config.bitcoin.min_confirmations,
    );
  } else if (intent.mechanism === 'permit2') {
    const pc = JSON.parse(intent.row.verify_context) as Permit2Context;
    check = await checkEvmTransfer(ctx.gateway, network, tx, {
      token: pc.token,
      from: pc.owner,
      minAmount: intent.sourceAmountLots,
    });
  } else {
    check = { verified: false };
  }
  const nowMs = ctx.now();
  return applyTransition(
    ctx.db,
    intent,
    'deposit',
    `resolver:${resolverId}`,
    { user_deposit_tx: tx, user_deposited_at: nowMs },
    nowMs,
    { tx, ...check },
  );
}

export async function reportFulfil(
  ctx: SwapContext,
  resolverId: string,
  id: string,
  txHash: string,
): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  requireTransition(intent, 'fulfil');
  const network = ctx.catalog.network(intent.destChain);
  const tx = normalizeTxHash(network, txHash);
  let check: CheckResult = { verified: false };
  if (network.type === 'BITCOIN') {
    check = await checkBitcoinPayment(
      ctx.gateway,
      network,
      tx,
      intent.userDestAddress,
      intent.minDestAmountLots,
      ctx.config.bitcoin.min_confirmations,
    );
  } else if (network.type === 'EVM' || network.type === 'TRON') {
    check = await checkEvmTransfer(ctx.gateway, network, tx, {
      token: intent.destToken,
      to: [intent.userDestAddress],
      minAmount: intent.minDestAmountLots,
    });
  }
  const nowMs = ctx.now();
  return applyTransition(
    ctx.db,
    intent,
    'fulfil',
    `resolver:${resolverId}`,
    { fulfill_tx: tx, fulfilled_at: nowMs },
    nowMs,
    { tx, ...check },
  );
}

/** The resolver's claim of the source funds (Bitcoin: the HTLC claim leaf with the preimage). */
export async function reportClaim(
  ctx: SwapContext,
  resolverId: string,
  id: string,
  txHash: string,
): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  requireTransition(intent, 'claim');
  if (intent.row.swap_tx) throw E.INVALID_TRANSITION.create('claim again', intent.status);
  const network = ctx.catalog.network(intent.sourceChain);
  const tx = normalizeTxHash(network, txHash);
  let check: CheckResult = { verified: false };
  if (intent.mechanism === 'htlc') {
    const hc = htlcContext(intent);
    const htlc = htlcOf(hc);
    check = await checkHtlcSpend(
      ctx.gateway,
      hc,
      { claimScript: hex(htlc.claimScript), refundScript: hex(htlc.refundScript) },
      tx,
      'claim',
      ctx.config.bitcoin.min_confirmations,
    );
  }
  const nowMs = ctx.now();
  return applyTransition(
    ctx.db,
    intent,
    'claim',
    `resolver:${resolverId}`,
    { swap_tx: tx, swapped_at: nowMs },
    nowMs,
    {
      tx,
      ...check,
    },
  );
}

/** The preimage, for the accepting resolver of a Fulfilled intent. */
export async function releaseSecret(
  ctx: SwapContext,
  resolverId: string,
  id: string,
): Promise<{ intent: Intent; preimage: string }> {
  const intent = await loadForResolver(ctx, resolverId, id);
  if (intent.status !== 'Fulfilled' || intent.row.accepted_at === null) throw E.SECRET_NOT_RELEASED.create();
  const preimage = ctx.vault.open(intent.row.secret_sealed, intent.id);
  try {
    await ctx.db
      .updateTable('intents')
      .set({ secret_released_at: ctx.now() })
      .where('id', '=', intent.id)
      .where('secret_released_at', 'is', null)
      .execute();
    return { intent, preimage: `0x${preimage.toString('hex')}` };
  } finally {
    preimage.fill(0);
  }
}

export async function requestRefund(ctx: SwapContext, apiKeyId: string, id: string): Promise<Intent> {
  const intent = await expireIfDue(ctx.db, await loadIntent(ctx.db, id, { apiKeyId }), ctx.now());
  requireTransition(intent, 'request_refund');
  if (!intent.row.user_deposit_tx) {
    throw E.INVALID_TRANSITION.createWith(
      { details: { reason: 'nothing was deposited' } },
      'request refund',
      intent.status,
    );
  }
  const nowMs = ctx.now();
  return applyTransition(ctx.db, intent, 'request_refund', 'user', { refund_requested_at: nowMs }, nowMs);
}

/** A refund transaction, reported by the user (Bitcoin: their own refund-leaf spend) or the resolver. */
export async function reportRefund(
  ctx: SwapContext,
  scope: { apiKeyId: string } | { resolverId: string },
  id: string,
  txHash: string,
): Promise<Intent> {
  const intent = await expireIfDue(ctx.db, await loadIntent(ctx.db, id, scope), ctx.now());
  requireTransition(intent, 'refund');
  if (!intent.row.user_deposit_tx) {
    throw E.INVALID_TRANSITION.createWith(
      { details: { reason: 'nothing was deposited' } },
      'refund',
      intent.status,
    );
  }
  const network = ctx.catalog.network(intent.sourceChain);
  const tx = normalizeTxHash(network, txHash);
  let check: CheckResult = { verified: false };
  if (intent.mechanism === 'htlc') {
    const hc = htlcContext(intent);
    const htlc = htlcOf(hc);
    check = await checkHtlcSpend(
      ctx.gateway,
      hc,
      { claimScript: hex(htlc.claimScript), refundScript: hex(htlc.refundScript) },
      tx,
      'refund',
      ctx.config.bitcoin.min_confirmations,
    );
  } else if (intent.mechanism === 'permit2') {
    check = await checkEvmTransfer(ctx.gateway, network, tx, {
      token: intent.sourceToken,
      to: [intent.refundAddress, intent.userSourceAddress],
      minAmount: intent.sourceAmountLots,
    });
  }
  const nowMs = ctx.now();
  const actor = 'apiKeyId' in scope ? 'user' : `resolver:${scope.resolverId}`;
  return applyTransition(
    ctx.db,
    intent,
    'refund',
    actor,
    { refund_tx: tx, refunded_at: nowMs, refund_requested_at: intent.row.refund_requested_at ?? nowMs },
    nowMs,
    { tx, ...check },
  );
}

/** What a resolver needs to execute: the public intent plus the mechanism's execution data. */
export function resolverExecutionData(intent: Intent): Record<string, unknown> | null {
  if (!intent.row.execution) return null;
  const ex = JSON.parse(intent.row.execution) as Record<string, unknown>;
  if (intent.mechanism === 'htlc') {
    const hc = htlcContext(intent);
    const htlc = htlcOf(hc);
    return {
      funding_txid: hc.fundingTxid,
      funding_tx_hex: ex.fundingTxHex,
      htlc_vout: hc.htlcVout,
      amount: hc.amount,
      htlc_address: htlc.address,
      locktime: hc.locktime,
      network: hc.network,
      secret_hash: hc.secretHash,
      resolver_pubkey: hex(htlc.resolverKey),
      user_pubkey: hex(htlc.userKey),
      claim_script: hex(htlc.claimScript),
      refund_script: hex(htlc.refundScript),
      claim_control_block: hex(htlc.claimControlBlock),
      refund_control_block: hex(htlc.refundControlBlock),
    };
  }
  if (intent.mechanism === 'permit2') {
    return { permit2_signature: ex.signature, owner: ex.owner, nonce: ex.nonce, typed_data: ex.typedData };
  }
  return { signed_transaction: ex.signedTransaction };
}
