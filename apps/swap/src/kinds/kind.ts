/**
 * What a network kind (Bitcoin, EVM, Tron, Solana) implements, in one place: its addresses and
 * tokens, its configuration, its reads, the approval the user signs on it as a source (build and
 * verify), what a resolver needs to execute it, and the settlement check of each leg on it. The rest
 * of the service asks the registry (`registry.ts`) for a network's kind and never switches on the
 * network type itself (`kinds.test.ts` fails if it does). Adding a network kind is one folder here and
 * one line in the registry.
 */
import type { ChainGateway } from '../chains/chain-gateway.ts';
import type { SignatureVerifier } from '../chains/verify-pool.ts';
import type { FileConfig, NetworkConfig, NetworkType, ResolverConfig, TokenConfig } from '../config.ts';
import type { ResolverIdentity } from '../domain/resolvers.ts';
import type { LegCheck, VerifiedLeg } from '../settlement/check.ts';
import type { Intent } from '../store/intent-store.ts';

/** The approval a source on this kind takes (`rgblock`: RGB assets, listed, never quoted). */
export type ApprovalMechanism = 'permit2' | 'htlc' | 'cosign' | 'rgblock';

/** A user's approval as submitted (Surface A `permit2` / `psbt` / `cosign`; Surface B mapped to it). */
export type ApprovalSubmission =
  | { type: 'permit2'; signature: string }
  | { type: 'psbt'; psbt: string }
  | { type: 'cosign'; transaction: string; userAddress: string };

export interface ConfigIssue {
  path: string;
  message: string;
}

/** What building a source approval needs. */
export interface BuildApprovalArgs {
  gateway: ChainGateway;
  config: Pick<FileConfig, 'swap' | 'bitcoin'>;
  network: NetworkConfig;
  /** The source token's configuration, and its address as quoted. */
  token: TokenConfig;
  sourceToken: string;
  intentId: string;
  /** The quoting resolver's identity on this network (its address or key). */
  resolverAddress: string;
  sourceAddress: string;
  sourcePublicKey: string | null;
  amount: bigint;
  secretHash: string;
  deadline: number;
  destChain: number;
  destToken: string;
  destAddress: string;
  minDestAmount: bigint;
  maxDestAmount: bigint;
  /** Outpoints other intents hold (Bitcoin sources never spend them). */
  reserved: () => Promise<Set<string>>;
}

/** A built approval: what the user signs, what is stored to verify it, what is reserved with it. */
export interface BuiltApproval {
  params: unknown;
  /** Stored as `verify_context`; every kind's names the address the user's funds go to. */
  context: { proxyAddress: string };
  /** A Permit2 nonce to reserve (owner as read on chain). */
  nonce?: { owner: string; nonce: string };
  /** Bitcoin outpoints the funding transaction spends. */
  outpoints: string[];
}

/** A verified approval: its canonical form (compared on re-posts), what is stored, what the resolver gets. */
export interface VerifiedApproval {
  canonical: string;
  approval: unknown;
  execution: unknown;
}

export interface VerifyApprovalArgs {
  gateway: ChainGateway;
  verifier: SignatureVerifier;
  network: NetworkConfig;
  intent: Intent;
  submission: ApprovalSubmission;
  /** Pre-checks that read the chain (e.g. the Permit2 allowance) — skipped when comparing a re-post. */
  checkAllowance: boolean;
}

export interface NetworkKind {
  readonly type: NetworkType;
  /** The approval of a source on this kind (a token marked `rgb` is `rgblock` instead). */
  readonly mechanism: Exclude<ApprovalMechanism, 'rgblock'>;
  /** The submission type that carries it. */
  readonly submission: ApprovalSubmission['type'];
  /** The resolver's identity on this kind: config key and value. */
  readonly identityKey: keyof Pick<
    ResolverConfig,
    'bitcoin_claim_pubkey' | 'evm_address' | 'tron_address' | 'solana_address'
  >;
  identity(resolver: ResolverIdentity): string | undefined;
  /**
   * Whether a fulfilment on this kind is checked by its sender (the resolver's identity must be
   * configured for every rate towards it). Bitcoin shows no sender: its fulfilments carry a commitment.
   */
  readonly fulfilBySender: boolean;

  // Configuration
  /** Keys a network of this kind needs (`need` reports a missing one) and other checks. */
  checkConfig(n: NetworkConfig, at: string, config: FileConfig): ConfigIssue[];
  /** Confirmations a settlement transaction needs when the network does not say. */
  defaultConfirmations(config: Pick<FileConfig, 'bitcoin'>): number;
  /**
   * Confirmations a fulfilment needs outside a devnet when the network does not say
   * (`fulfil_min_confirmations`): the preimage is released on it and the resolver takes the user's
   * source at once, so a fulfilment undone by a reorganisation after that is the user's loss.
   */
  readonly fulfilFinality: number;

  // Addresses, tokens, transaction ids
  isAddress(address: string, network: NetworkConfig): boolean;
  /** The lookup key of a token address (case-insensitive hex, exact base58). */
  tokenKey(address: string): string;
  /** The canonical text of a transaction id on this kind; refuses a malformed one (`malformed_tx_hash`). */
  normalizeTxHash(txHash: string): string;

  // Reads
  /** The tip (height, block number, slot) now. */
  tip(gateway: ChainGateway, network: NetworkConfig): Promise<bigint>;

  // Approvals (this kind as the source)
  buildApproval(args: BuildApprovalArgs): Promise<BuiltApproval>;
  verifyApproval(args: VerifyApprovalArgs): Promise<VerifiedApproval>;
  /** What the resolver API shows as `execution` once approved. */
  executionView(intent: Intent, execution: Record<string, unknown>): Record<string, unknown>;
  /** Done when the resolver accepts (Bitcoin: broadcast the approved funding tx); details for the event. */
  onAccept?(gateway: ChainGateway, intent: Intent): Promise<Record<string, unknown>>;

  // Settlement
  /** The source deposit is this intent's own transaction (exact id), exempt from "after the acceptance". */
  readonly depositIsOwnTransaction: boolean;
  /** A refund spends the deposit's own output or escrow record (may share its block); else a free transfer. */
  readonly refundSpendsDeposit: boolean;
  verifyLeg(gateway: ChainGateway, check: LegCheck): Promise<VerifiedLeg>;
  /** The output script a fulfilment to this kind must carry, or null (resolver API `fulfil_commitment`). */
  fulfilCommitment(intentId: string): string | null;
}

/** The token key of a network whose addresses are case-sensitive (base58): exact, except 0x-hex. */
export function exactTokenKey(address: string): string {
  return address.startsWith('0x') ? address.toLowerCase() : address;
}
