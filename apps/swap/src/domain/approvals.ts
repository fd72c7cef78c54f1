/**
 * Approvals: verified, never trusted. The submission must match the intent's mechanism (`htlc`
 * takes a `psbt`), verify against what the service stored, and only then move the intent
 * `Initiated → ApprovalAdded`. Each verified approval reduces to a canonical form (the normalized
 * Permit2 signature, the finalized funding transaction, the user's ed25519 signature); re-posting an
 * approval with the same canonical form is idempotent, anything else after `ApprovalAdded` is
 * APPROVAL_CONFLICT.
 */

import { sha256 } from '@rgbx/service-kit';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import type { ApprovalSubmission, VerifiedApproval } from '../kinds/kind.ts';
import { kindOf } from '../kinds/registry.ts';
import { errorOutcome } from '../metrics.ts';
import { applyTransition, expireIfDue, type Intent, loadIntent } from '../store/intent-store.ts';
import { stringifyJson } from '../store/json.ts';

export type { ApprovalSubmission } from '../kinds/kind.ts';

/** The source network's kind verifies the approval against what it stored at creation. */
function verify(
  ctx: SwapContext,
  intent: Intent,
  submission: ApprovalSubmission,
  checkAllowance: boolean,
): Promise<VerifiedApproval> {
  const network = ctx.catalog.network(intent.sourceChain);
  return kindOf(network).verifyApproval({
    gateway: ctx.gateway,
    verifier: ctx.verifier,
    network,
    intent,
    submission,
    checkAllowance,
  });
}

function digestOf(mechanism: string, canonical: string): string {
  return sha256(`${mechanism}:${canonical}`).toString('hex');
}

/**
 * Re-post after the approval was added: same approval → the intent as it is; different → conflict.
 * `verified` is the canonical form when this request already verified the submission (it lost a
 * race to a concurrent one): it is compared as it is, not verified a second time.
 */
async function compareWithStored(
  ctx: SwapContext,
  intent: Intent,
  s: ApprovalSubmission,
  verified?: VerifiedApproval,
): Promise<Intent> {
  if (!intent.row.approval_digest) {
    if (intent.status === 'Expired') throw E.INTENT_EXPIRED.create(intent.id);
    throw E.INVALID_TRANSITION.create('approve', intent.status);
  }
  let v = verified;
  if (!v) {
    try {
      v = await verify(ctx, intent, s, false);
    } catch {
      throw E.APPROVAL_CONFLICT.create();
    }
  }
  if (digestOf(intent.mechanism, v.canonical) !== intent.row.approval_digest)
    throw E.APPROVAL_CONFLICT.create();
  return intent;
}

export async function addApproval(
  ctx: SwapContext,
  apiKeyId: string,
  intentId: string,
  s: ApprovalSubmission,
): Promise<Intent> {
  const intent = await expireIfDue(ctx.db, await loadIntent(ctx.db, intentId, { apiKeyId }), ctx.now());
  try {
    const [after, result] = await approve(ctx, apiKeyId, intent, s);
    ctx.metrics.approvals.inc({ mechanism: intent.mechanism, result });
    return after;
  } catch (err) {
    ctx.metrics.approvals.inc({ mechanism: intent.mechanism, result: errorOutcome(err) });
    throw err;
  }
}

async function approve(
  ctx: SwapContext,
  apiKeyId: string,
  loaded: Intent,
  s: ApprovalSubmission,
): Promise<[Intent, 'approved' | 'unchanged']> {
  let intent = loaded;
  const intentId = intent.id;
  const expected = kindOf(ctx.catalog.network(intent.sourceChain)).submission;
  if (s.type !== expected) throw E.APPROVAL_MECHANISM_MISMATCH.create(expected, s.type);
  if (intent.status !== 'Initiated') return [await compareWithStored(ctx, intent, s), 'unchanged'];

  const v = await verify(ctx, intent, s, true);
  const nowMs = ctx.now();
  if (intent.deadline * 1000 <= nowMs) {
    await expireIfDue(ctx.db, intent, nowMs);
    throw E.INTENT_EXPIRED.create(intent.id);
  }
  try {
    intent = await applyTransition(
      ctx.db,
      intent,
      'approve',
      'user',
      {
        approval: stringifyJson(v.approval),
        approval_digest: digestOf(intent.mechanism, v.canonical),
        execution: stringifyJson(v.execution),
        approved_at: nowMs,
      },
      nowMs,
    );
    return [intent, 'approved'];
  } catch (err) {
    if (!E.INVALID_TRANSITION.is(err)) throw err;
    // A concurrent request approved (or expired) it first: compare with what this one verified.
    return [
      await compareWithStored(ctx, await loadIntent(ctx.db, intentId, { apiKeyId }), s, v),
      'unchanged',
    ];
  }
}
