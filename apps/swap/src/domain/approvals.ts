/**
 * Approvals: verified, never trusted. The submission must match the intent's mechanism (`htlc`
 * takes a `psbt`), verify against what the service stored, and only then move the intent
 * `Initiated → ApprovalAdded`. Each verified approval reduces to a canonical form (the normalized
 * Permit2 signature, the finalized funding transaction, the user's ed25519 signature); re-posting an
 * approval with the same canonical form is idempotent, anything else after `ApprovalAdded` is
 * APPROVAL_CONFLICT.
 */

import { sha256 } from '@rgbx/service-kit';
import { type CosignContext, verifyCosignApproval } from '../chains/cosign-approval.ts';
import { type HtlcContext, verifyHtlcApproval } from '../chains/htlc-approval.ts';
import {
  type Permit2Context,
  type Permit2Params,
  permit2Params,
  verifyPermit2Approval,
} from '../chains/permit2-approval.ts';
import type { SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { applyTransition, expireIfDue, type Intent, loadIntent } from '../store/intent-store.ts';
import { stringifyJson } from '../store/json.ts';

export type ApprovalSubmission =
  | { type: 'permit2'; signature: string }
  | { type: 'psbt'; psbt: string }
  | { type: 'cosign'; transaction: string; userAddress: string };

const TYPE_FOR_MECHANISM = { permit2: 'permit2', htlc: 'psbt', cosign: 'cosign', rgblock: 'psbt' } as const;

interface Verified {
  canonical: string;
  approval: unknown;
  execution: unknown;
}

async function verify(
  ctx: SwapContext,
  intent: Intent,
  s: ApprovalSubmission,
  checkAllowance: boolean,
): Promise<Verified> {
  const stored = JSON.parse(intent.row.verify_context) as unknown;
  switch (s.type) {
    case 'permit2': {
      const pc = stored as Permit2Context;
      const network = ctx.catalog.network(intent.sourceChain);
      const { canonical } = await verifyPermit2Approval(
        pc,
        s.signature,
        network,
        ctx.gateway,
        checkAllowance,
        ctx.verifier,
      );
      // The typed data handed out at creation, built from this same stored context (the signature was
      // checked against it), is what the resolver submits: not rebuilt and hashed again here.
      const typedData =
        (intent.paramsToSign as Partial<Permit2Params> | null)?.typedData ??
        permit2Params(pc, pc.witness.resolver).typedData;
      return {
        canonical,
        approval: { type: 'permit2', signature: canonical },
        execution: { signature: canonical, owner: pc.owner, nonce: pc.nonce, typedData },
      };
    }
    case 'psbt': {
      const { txid, txHex } = verifyHtlcApproval(stored as HtlcContext, s.psbt);
      return {
        canonical: txHex,
        approval: { type: 'psbt', psbt: s.psbt },
        execution: { fundingTxid: txid, fundingTxHex: txHex },
      };
    }
    case 'cosign': {
      const { canonical, signedTransaction } = await verifyCosignApproval(stored as CosignContext, s);
      return {
        canonical,
        approval: { type: 'cosign', transaction: signedTransaction, userAddress: s.userAddress },
        execution: { signedTransaction },
      };
    }
  }
}

function digestOf(mechanism: string, canonical: string): string {
  return sha256(`${mechanism}:${canonical}`).toString('hex');
}

/** Re-post after the approval was added: same approval → the intent as it is; different → conflict. */
async function compareWithStored(ctx: SwapContext, intent: Intent, s: ApprovalSubmission): Promise<Intent> {
  if (!intent.row.approval_digest) {
    if (intent.status === 'Expired') throw E.INTENT_EXPIRED.create(intent.id);
    throw E.INVALID_TRANSITION.create('approve', intent.status);
  }
  let v: Verified;
  try {
    v = await verify(ctx, intent, s, false);
  } catch {
    throw E.APPROVAL_CONFLICT.create();
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
  let intent = await expireIfDue(ctx.db, await loadIntent(ctx.db, intentId, { apiKeyId }), ctx.now());
  const expected = TYPE_FOR_MECHANISM[intent.mechanism];
  if (s.type !== expected) throw E.APPROVAL_MECHANISM_MISMATCH.create(expected, s.type);
  if (intent.status !== 'Initiated') return compareWithStored(ctx, intent, s);

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
    return intent;
  } catch (err) {
    if (!E.INVALID_TRANSITION.is(err)) throw err;
    // A concurrent request approved (or expired) it first.
    return compareWithStored(ctx, await loadIntent(ctx.db, intentId, { apiKeyId }), s);
  }
}
