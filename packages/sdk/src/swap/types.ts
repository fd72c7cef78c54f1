/**
 * Wire types of the swap service, Surface A (camelCase) and the resolver API (snake_case).
 * Amounts are integer lots as decimal strings; convert with `BigInt(...)`.
 */

export type SwapStatus =
  | 'Initiated'
  | 'ApprovalAdded'
  | 'Accepted'
  | 'Declined'
  | 'UserDeposited'
  | 'Fulfilled'
  | 'Expired'
  | 'RefundRequested'
  | 'Refunded';

export type ApprovalMechanism = 'permit2' | 'htlc' | 'cosign';

export interface Network {
  id: number;
  name: string;
  type: 'EVM' | 'TRON' | 'BITCOIN' | 'SOLANA';
  iconUrl: string;
  features: { supportsCustomTokens: boolean; supportsOptimizedSwap: boolean };
}

export interface Token {
  networkId: number;
  name: string;
  contractAddress: string;
  symbol: string;
  decimals: number;
  iconUrl: string;
  wrappedTokenAddress?: string;
}

export interface Pagination {
  limit: number;
  offset: number;
  total: number;
  pages: number;
}

export interface QuoteRequest {
  sourceChain: number;
  sourceToken: string;
  destChain: number;
  destToken: string;
  /** Human units (exactly one of amount and amountLots). */
  amount?: string;
  /** Integer lots. */
  amountLots?: string;
  slippageBps?: number;
  swapType?: 'standard' | 'optimized';
  depositType?: 'escrowed';
  retailUserId?: string;
  affiliateFees?: Record<string, { feeBps: number }>;
}

export interface Quote {
  quoteId: string;
  sourceChain: number;
  sourceToken: string;
  destChain: number;
  destToken: string;
  sourceAmountLots: string;
  sourceAmountDecimals: number;
  minDestAmountLots: string;
  maxDestAmountLots: string;
  destAmountDecimals: number;
  slippageBps: number;
  /** Unix seconds. */
  expiry: number;
  swapType: 'standard' | 'optimized';
  depositType: 'escrowed';
  approvalMechanism: ApprovalMechanism;
  affiliateFees: Record<
    string,
    { feeBps: number; networkId: number; token: string; feeAmountLots: string; feeAmountDecimals: number }
  >;
}

export interface IntentRequest {
  quoteId: string;
  refundAddress: string;
  destinationAddress: string;
  sourceAddress: string;
  /** Bitcoin: the x-only (P2TR) or compressed (P2WPKH) key of sourceAddress; Solana: the address. */
  sourcePublicKey?: string | null;
  retailUserId?: string;
}

/** EIP-712 field list. */
export type TypedDataFields = { name: string; type: string }[];

export interface TypedDataJson {
  domain: { name?: string; chainId?: number | string; verifyingContract?: string; [k: string]: unknown };
  types: Record<string, TypedDataFields>;
  primaryType: string;
  message: Record<string, unknown>;
}

export interface Permit2Approval {
  escrowContractAddress: string;
  permit2ContractAddress: string;
  resolverDepositAddress: string;
  nonce: number;
  additionalData: {
    domain: Record<string, unknown>;
    types: Record<string, TypedDataFields>;
    witness: Record<string, unknown>;
    witnessTypeString: string;
    witnessHash: string;
    secretHash: string;
  };
  typedData: TypedDataJson;
}

export interface HtlcApproval {
  psbt: string;
  inputs: number[];
  htlcAddress: string;
  locktime: number;
  resolverPubkey: string;
  userPubkey: string;
  claimScript: string;
  refundScript: string;
  claimControlBlock: string;
  refundControlBlock: string;
  fundingTxid: string;
  htlcVout: number;
  fee: string;
}

export interface CosignApproval {
  transaction: string;
}

export interface IntentCreated {
  intentId: string;
  deadlineSecs: number;
  secretHash: string;
  approvalMechanism: ApprovalMechanism;
  permit2?: Permit2Approval;
  htlc?: HtlcApproval;
  cosign?: CosignApproval;
}

/** Exactly one payload. */
export type ApprovalBody =
  | { permit2: string }
  | { psbt: string }
  | { cosign: { transaction: string; userAddress: string } };

export interface SwapMetadata {
  id: string;
  proxyAddress: string;
  userDepositTx: string | null;
  fulfillTx: string | null;
  swapTx: string | null;
  refundTx: string | null;
  createdAt: string;
  userDepositedAt: string | null;
  fulfilledAt: string | null;
  swappedAt: string | null;
  refundedAt: string | null;
  refundRequestedAt: string | null;
}

export interface SwapRecord {
  intentId: string;
  status: SwapStatus;
  swapMetadata: SwapMetadata;
  sourceAmountDecimals: number;
  sourceAmountLots: string;
  sourceChain: number;
  sourceToken: string;
  destAmountDecimals: number;
  destChain: number;
  destToken: string;
  minDestAmountLots: string;
  maxDestAmountLots: string;
  userSourceAddress: string;
  userDestAddress: string;
  refundAddress: string;
  approvalMechanism: ApprovalMechanism;
  deadlineSecs: number;
  secretHash: string;
  retailUserId: string | null;
  /** The settlement legs the service proved on chain, in order; re-check them against the chain. */
  settlement: SettlementLeg[];
}

/**
 * One settlement leg the swap service verified on chain before moving the status: the transaction,
 * where it is mined and what it proved. A user or auditor re-checks it without trusting the service.
 *
 * @example
 * const rec = await swap.swap(intentId);
 * const fulfil = rec.settlement.find((l) => l.leg === 'fulfil');
 * // fulfil.txHash paid fulfil.amount of fulfil.token to fulfil.recipient, from fulfil.sender, in block fulfil.blockHeight
 */
export interface SettlementLeg {
  leg: 'deposit' | 'fulfil' | 'claim' | 'refund';
  networkId: number;
  txHash: string;
  /** Output (Bitcoin), log (EVM/Tron) or instruction (Solana) index; -1 = the transaction itself. */
  index: number;
  blockHeight: string | null;
  blockHash: string | null;
  blockTime: number | null;
  confirmations: number;
  recipient: string;
  token: string;
  /** Integer lots. */
  amount: string;
  sender: string | null;
  verifiedAt: string;
}

export interface Affiliate {
  affiliateName: string;
  apiKeyName?: string;
  payoutAddress: string;
  payoutNetworkId: number;
  payoutTokenAddress: string;
}

export interface SwapListQuery {
  limit?: number;
  offset?: number;
  status?: SwapStatus;
  active?: boolean;
  wallet?: string;
  retailUserId?: string;
}

/** Resolver API: one intent with what the resolver needs to execute it. */
export interface ResolverIntent {
  intent: {
    intent_id: string;
    status: SwapStatus;
    swap_metadata: Record<string, string | null>;
    source_amount_lots: string;
    source_chain: number;
    source_token: string;
    dest_chain: number;
    dest_token: string;
    min_dest_amount_lots: string;
    max_dest_amount_lots: string;
    user_source_address: string;
    user_dest_address: string;
    [k: string]: unknown;
  };
  approval_mechanism: ApprovalMechanism | 'rgblock';
  deadline_secs: number;
  secret_hash: string;
  refund_address: string;
  execution: Record<string, unknown> | null;
}

/** The service's error envelope. */
export interface SwapErrorBody {
  code: number;
  type: string;
  message: string;
  details?: Record<string, unknown>;
}
