/**
 * What every network's verifier is given and the rules they share: the failure envelope
 * (TX_NOT_VERIFIED with a machine-readable reason), confirmations and the "newer than the
 * acceptance" rule.
 */
import type { NetworkConfig } from '../../config.ts';
import type { ResolverIdentity } from '../../domain/resolvers.ts';
import { E } from '../../errors.ts';
import type { Intent } from '../../store/intent-store.ts';
import type { Leg, LegProof } from './legs.ts';

export interface LegCheck {
  intent: Intent;
  leg: Leg;
  /** The network the leg settles on (source for deposit/claim/refund, destination for fulfil). */
  network: NetworkConfig;
  /** Normalized transaction id as reported. */
  txHash: string;
  minConfirmations: number;
  /** The network's tip when the resolver accepted; the transaction must be mined after it. */
  acceptedTip: bigint | null;
  /** Whether the leg's transaction must be newer than the acceptance (see `requiresFreshness`). */
  fresh: boolean;
  resolver: ResolverIdentity;
  /** Seconds after the deadline before the user may refund (the EVM escrow's `refundAfter` is checked against it). */
  refundSafetyMarginSecs: number;
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
 * The transaction was mined after the resolver accepted the intent (an older transfer, e.g. an
 * earlier swap's fulfilment, proves nothing about this one). A mempool transaction (devnets with
 * 0 confirmations) is newer by construction.
 */
export function requireFresh(check: LegCheck, blockHeight: bigint | null): void {
  if (!check.fresh || blockHeight === null) return;
  if (check.acceptedTip === null)
    refuse('not_accepted', 'the intent has no recorded acceptance on this network');
  if (blockHeight <= check.acceptedTip)
    refuse(
      'older_than_acceptance',
      `the transaction is in block ${blockHeight}, not after block ${check.acceptedTip} (the tip when the intent was accepted)`,
      { block: blockHeight.toString(), acceptedTip: check.acceptedTip.toString() },
    );
}
