/**
 * Execution after approval: the resolver-facing actions (accept, decline, report deposit / fulfil /
 * claim / refund transactions, fetch the preimage) and the user's refund request and refund report.
 * Each report is proven on chain first (settlement/verify.ts: one verifier per network type, the
 * transaction bound to one leg of one intent), then the lifecycle table moves the status with the
 * proof stored in the same database transaction (intent-store.ts `applyTransition`).
 *
 * Preimage release: only to the resolver that quoted and accepted the intent, and only once the
 * intent is `Fulfilled` (the destination payment verified on chain). The user's source funds are
 * safe until then; after the deadline + safety margin the user refunds (HTLC refund leaf, escrow).
 */

import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { kindOf } from '../kinds/registry.ts';
import { errorOutcome } from '../metrics.ts';
import { readAcceptanceTips, verifyLeg } from '../settlement/verify.ts';
import {
  applyTransition,
  expireIfDue,
  type Intent,
  type IntentPatch,
  loadIntent,
  markSecretReleased,
} from '../store/intent-store.ts';
import { type Leg, legRecord } from '../store/legs.ts';
import type { Trigger } from './lifecycle.ts';
import { canTransition } from './lifecycle.ts';

async function loadForResolver(ctx: SwapContext, resolverId: string, id: string): Promise<Intent> {
  return expireIfDue(ctx.db, await loadIntent(ctx.db, id, { resolverId }), ctx.now());
}

function requireTransition(intent: Intent, trigger: Trigger): void {
  if (!canTransition(intent.status, trigger)) {
    if (intent.status === 'Expired' && !['request_refund', 'refund', 'record_deposit'].includes(trigger))
      throw E.INTENT_EXPIRED.create(intent.id);
    throw E.INVALID_TRANSITION.create(trigger.replace('_', ' '), intent.status);
  }
}

export async function acceptIntent(ctx: SwapContext, resolverId: string, id: string): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  requireTransition(intent, 'accept');
  // The tips of both networks now: every fulfilment and escrow deposit must be mined after them.
  const tips = await readAcceptanceTips(ctx, intent);
  const patch: IntentPatch = { accepted_at: ctx.now(), accepted_tips: JSON.stringify(tips) };
  const details: Record<string, unknown> = { tips };
  const source = kindOf(ctx.catalog.network(intent.sourceChain));
  if (source.onAccept) {
    if (!intent.row.execution) throw E.INVALID_TRANSITION.create('execute', intent.status);
    Object.assign(details, await source.onAccept(ctx.gateway, intent));
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

/** Verifies `leg` on chain and moves the intent along `trigger` with the proof, in one store transaction. */
async function settle(
  ctx: SwapContext,
  intent: Intent,
  leg: Leg,
  trigger: Trigger,
  actor: string,
  txHash: string,
  patch: (tx: string, nowMs: number) => IntentPatch,
): Promise<Intent> {
  const network = String(leg === 'fulfil' ? intent.destChain : intent.sourceChain);
  const t0 = performance.now();
  let proof: Awaited<ReturnType<typeof verifyLeg>>;
  try {
    proof = await verifyLeg(ctx, intent, leg, txHash, trigger === 'record_deposit');
  } catch (err) {
    ctx.metrics.settlements.inc({ network, leg, result: errorOutcome(err) });
    throw err;
  } finally {
    ctx.metrics.settlementLatency.observe({ network }, (performance.now() - t0) / 1000);
  }
  ctx.metrics.settlements.inc({ network, leg, result: 'accepted' });
  const nowMs = ctx.now();
  return applyTransition(
    ctx.db,
    intent,
    trigger,
    actor,
    patch(proof.txHash, nowMs),
    nowMs,
    legRecord(proof) as unknown as Record<string, unknown>,
    proof,
  );
}

/** What each resolver-reported leg writes on the intent row with its proof. */
const LEG_PATCH: Record<'deposit' | 'fulfil' | 'claim', (tx: string, nowMs: number) => IntentPatch> = {
  // The user's funds locked for this intent (HTLC funding tx, escrow deposit, co-signed transfer).
  deposit: (tx, nowMs) => ({ user_deposit_tx: tx, user_deposited_at: nowMs }),
  // The destination leg, paid by the resolver to the user: the preimage becomes releasable.
  fulfil: (tx, nowMs) => ({ fulfill_tx: tx, fulfilled_at: nowMs }),
  // The resolver's claim of the source funds (Bitcoin: the HTLC claim leaf; EVM: the escrow's Claimed).
  claim: (tx, nowMs) => ({ swap_tx: tx, swapped_at: nowMs }),
};

/** A resolver's report of a deposit, fulfilment or claim: proven on chain, then the transition. */
export async function reportLeg(
  ctx: SwapContext,
  resolverId: string,
  id: string,
  leg: keyof typeof LEG_PATCH,
  txHash: string,
): Promise<Intent> {
  const intent = await loadForResolver(ctx, resolverId, id);
  // A deposit reported once the intent has ended (expired or declined): recorded for the refund path.
  if (leg === 'deposit' && canTransition(intent.status, 'record_deposit'))
    return recordDeposit(ctx, intent, `resolver:${resolverId}`, txHash);
  requireTransition(intent, leg);
  if (leg === 'claim' && intent.row.swap_tx) throw E.INVALID_TRANSITION.create('claim again', intent.status);
  return settle(ctx, intent, leg, leg, `resolver:${resolverId}`, txHash, LEG_PATCH[leg]);
}

/**
 * A deposit reported by the user (or its resolver, late) once the intent has ended without one:
 * Declined, Expired or RefundRequested. The resolver holds the user's approval from ApprovalAdded and
 * may have used it before accepting (a deposit then older than the acceptance), before declining, or
 * without reporting it (a crash past the deadline); this records it, proven on chain by the kind's
 * deposit rules whenever it was mined, so that the refund path opens. The status does not change.
 */
export async function reportLateDeposit(
  ctx: SwapContext,
  apiKeyId: string,
  id: string,
  txHash: string,
): Promise<Intent> {
  const intent = await expireIfDue(ctx.db, await loadIntent(ctx.db, id, { apiKeyId }), ctx.now());
  return recordDeposit(ctx, intent, 'user', txHash);
}

async function recordDeposit(
  ctx: SwapContext,
  intent: Intent,
  actor: string,
  txHash: string,
): Promise<Intent> {
  requireTransition(intent, 'record_deposit');
  if (intent.row.user_deposit_tx || intent.row.approved_at == null)
    throw E.INVALID_TRANSITION.createWith(
      {
        details: {
          reason: intent.row.user_deposit_tx
            ? 'a deposit is already recorded'
            : 'the intent was never approved',
        },
      },
      'record deposit',
      intent.status,
    );
  return settle(ctx, intent, 'deposit', 'record_deposit', actor, txHash, LEG_PATCH.deposit);
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
    await markSecretReleased(ctx.db, intent.id, ctx.now());
    return { intent, preimage: `0x${preimage.toString('hex')}` };
  } finally {
    preimage.fill(0);
  }
}

/**
 * Whether the user's source funds may be locked (a refund request makes sense): a deposit was proven, or
 * the source kind's deposit is this intent's own signed transaction (Bitcoin: the approved HTLC funding),
 * which exists from the approval on: the service broadcasts it when the resolver accepts, and the
 * resolver, who is shown it from the approval, may broadcast it without accepting or reporting it.
 */
function mayHaveDeposited(ctx: SwapContext, intent: Intent): boolean {
  if (intent.row.user_deposit_tx) return true;
  return (
    kindOf(ctx.catalog.network(intent.sourceChain)).depositIsOwnTransaction && intent.row.approved_at != null
  );
}

/**
 * Whether a refund can be recorded: funds may be locked (above), or the source kind's refund proves
 * itself once the user approved (EVM/Tron: the escrow's Refunded event for this intent to its owner can
 * only return a lock made with the user's Permit2 signature, which the resolver holds from the approval
 * and may have used before accepting — a deposit then proves nothing — or without reporting it). A
 * resolver that moved the user's funds without a recorded deposit must not keep the user from recording
 * their refund. Solana's refund is a free transfer from the resolver: it needs the recorded deposit.
 */
function mayRecordRefund(ctx: SwapContext, intent: Intent): boolean {
  if (mayHaveDeposited(ctx, intent)) return true;
  return (
    kindOf(ctx.catalog.network(intent.sourceChain)).refundSpendsDeposit && intent.row.approved_at != null
  );
}

export async function requestRefund(ctx: SwapContext, apiKeyId: string, id: string): Promise<Intent> {
  const intent = await expireIfDue(ctx.db, await loadIntent(ctx.db, id, { apiKeyId }), ctx.now());
  requireTransition(intent, 'request_refund');
  if (!mayHaveDeposited(ctx, intent)) {
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
  if (!mayRecordRefund(ctx, intent)) {
    throw E.INVALID_TRANSITION.createWith(
      { details: { reason: 'nothing was deposited' } },
      'refund',
      intent.status,
    );
  }
  const actor = 'apiKeyId' in scope ? 'user' : `resolver:${scope.resolverId}`;
  return settle(ctx, intent, 'refund', 'refund', actor, txHash, (tx, nowMs) => ({
    refund_tx: tx,
    refunded_at: nowMs,
    refund_requested_at: intent.row.refund_requested_at ?? nowMs,
  }));
}

/** What a resolver needs to execute: the source kind's view of the approved execution data. */
export function resolverExecutionData(ctx: SwapContext, intent: Intent): Record<string, unknown> | null {
  if (!intent.row.execution) return null;
  const ex = JSON.parse(intent.row.execution) as Record<string, unknown>;
  return kindOf(ctx.catalog.network(intent.sourceChain)).executionView(intent, ex);
}

/**
 * The output script a fulfilment of `intent` must include (Bitcoin destinations: its OP_RETURN
 * commitment); null when the destination kind checks the sender instead.
 */
export function fulfilCommitmentOf(ctx: SwapContext, intent: Intent): string | null {
  return kindOf(ctx.catalog.network(intent.destChain)).fulfilCommitment(intent.id);
}
