/**
 * What every network's verifier is given and the rules they share: the failure envelope
 * (TX_NOT_VERIFIED with a machine-readable reason), confirmations and the "mined after" rule.
 */
import type { NetworkConfig } from '../config.ts';
import type { ResolverIdentity } from '../domain/resolvers.ts';
import { E } from '../errors.ts';
import type { Intent } from '../store/intent-store.ts';
import type { Leg, LegProof, LegRecord } from '../store/legs.ts';

export interface LegCheck {
  intent: Intent;
  leg: Leg;
  /** The network the leg settles on (source for deposit/claim/refund, destination for fulfil). */
  network: NetworkConfig;
  /** Normalized transaction id as reported. */
  txHash: string;
  minConfirmations: number;
  /** The event on this network the transaction must be mined after (see `verify.ts` `mustFollow`); null: bound otherwise. */
  after: After | null;
  /** The verified deposit of this intent (claim and refund legs), as recorded. */
  deposit: LegRecord | null;
  resolver: ResolverIdentity;
  /** Seconds after the deadline before the user may refund (the EVM escrow's `refundAfter` is checked against it). */
  refundSafetyMarginSecs: number;
}

/** "Mined after": the height (block, slot) of the earlier event, and whether the same block still counts. */
export interface After {
  /** What happened at `height`: the resolver's acceptance (the tip then) or the verified deposit. */
  event: 'acceptance' | 'deposit';
  /** null: the event has no height on this network (no acceptance recorded, a deposit seen in the mempool). */
  height: bigint | null;
  /** The same block as the event counts (a spend of the deposit's own output can share its block). */
  sameBlock: boolean;
}

export type VerifiedLeg = Omit<LegProof, 'leg' | 'networkId' | 'txHash' | 'verifiedAt'>;

/** Throws TX_NOT_VERIFIED with `details.reason` (a stable code) and anything else that helps. */
export function refuse(reason: string, message: string, details: Record<string, unknown> = {}): never {
  throw E.TX_NOT_VERIFIED.createWith({ details: { reason, ...details } }, message);
}

export function requireConfirmations(check: LegCheck, confirmations: number): void {
  if (confirmations < check.minConfirmations)
    refuse(
      'confirmations',
      `the transaction has ${confirmations} confirmations, ${check.minConfirmations} needed on network ${check.network.id}`,
      { confirmations, required: check.minConfirmations },
    );
}

/**
 * The transaction was mined after the event it must follow: a fulfilment or an escrow deposit after
 * the resolver accepted (an older transfer, e.g. an earlier swap's fulfilment, proves nothing about
 * this one), a refund or claim not before the deposit it returns or takes. A mempool transaction
 * (devnets with 0 confirmations) is newer by construction.
 */
export function requireAfter(check: LegCheck, blockHeight: bigint | null): void {
  const after = check.after;
  if (!after || blockHeight === null) return;
  if (after.height === null) {
    if (after.event === 'acceptance')
      refuse('not_accepted', 'the intent has no recorded acceptance on this network');
    return; // a deposit verified in the mempool: the spend-or-event binding is all there is
  }
  const early = after.sameBlock ? blockHeight < after.height : blockHeight <= after.height;
  if (early)
    refuse(
      after.event === 'acceptance' ? 'older_than_acceptance' : 'older_than_deposit',
      after.event === 'acceptance'
        ? `the transaction is in block ${blockHeight}, not after block ${after.height} (the tip when the intent was accepted)`
        : `the transaction is in block ${blockHeight}, ${after.sameBlock ? 'before' : 'not after'} block ${after.height} (the deposit's)`,
      {
        block: blockHeight.toString(),
        [after.event === 'acceptance' ? 'acceptedTip' : 'depositBlock']: after.height.toString(),
      },
    );
}

/**
 * The amount rule of a payment leg: at least `required` (a fulfilment's `min_dest_amount`) or exactly
 * it (a deposit, a refund). Refuses with `amount` and both values in `details`.
 */
export function requireAmount(
  paid: bigint,
  required: bigint,
  rule: 'at_least' | 'exactly',
  unit: string,
): void {
  if (rule === 'at_least' ? paid >= required : paid === required) return;
  refuse(
    'amount',
    `the transaction moves ${paid}${unit}, ${rule === 'at_least' ? 'at least' : 'exactly'} ${required}${unit} expected`,
    { paid: paid.toString(), required: required.toString() },
  );
}
