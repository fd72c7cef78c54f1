/**
 * The network kinds the service supports, by network type: the only place that maps a network to
 * the code of its kind. Everything else asks `kindOf(network)`.
 */
import type { NetworkConfig, NetworkType } from '../config.ts';
import { bitcoin } from './bitcoin/index.ts';
import { evm } from './evm/index.ts';
import type { NetworkKind } from './kind.ts';
import { solana } from './solana/index.ts';
import { tron } from './tron/index.ts';

export const KINDS: { readonly [T in NetworkType]: NetworkKind & { readonly type: T } } = {
  BITCOIN: bitcoin as NetworkKind & { type: 'BITCOIN' },
  EVM: evm as NetworkKind & { type: 'EVM' },
  TRON: tron as NetworkKind & { type: 'TRON' },
  SOLANA: solana as NetworkKind & { type: 'SOLANA' },
};

/** The kind of `network` (or of a network type). */
export function kindOf(network: Pick<NetworkConfig, 'type'> | NetworkType): NetworkKind {
  return KINDS[typeof network === 'string' ? network : network.type];
}

export type { ApprovalMechanism, ApprovalSubmission, NetworkKind } from './kind.ts';
