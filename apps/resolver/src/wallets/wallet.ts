/**
 * The resolver's hot wallet on one network kind. Every transaction is SIGNED first and returned, so
 * the engine stores it before it is broadcast ("never pays twice"): after a crash the stored bytes are
 * broadcast again (or found on chain), never a new transaction. `broadcast` is idempotent.
 */
import type { Resolver } from '@rgbx/contracts/swap';

/** A transaction this resolver signed. */
export interface SignedTx {
  /** The network's id of it: Bitcoin txid (hex), EVM/Tron tx hash (0x hex), Solana signature (base58). */
  txid: string;
  /** The signed transaction as broadcast (hex, the network's wire form). */
  raw: string;
  /**
   * What decides whether this exact transaction can still be included, per kind: EVM/Tron `nonce`;
   * Solana `last_valid_block_height`; Bitcoin the spent outpoints `inputs` ("txid:vout", comma separated).
   */
  meta: Record<string, string | number>;
}

/**
 * Where a signed transaction stands on its network.
 * - `unknown`: the node has never seen it (not in the mempool, not in a block);
 * - `pending`: in the mempool;
 * - `confirmed`: in a block, executed successfully (`confirmations` ≥ 1);
 * - `failed`: in a block but reverted (EVM/Tron status 0, Solana error);
 * - `dead`: can never be included any more (Solana blockhash expired, EVM nonce used by another
 *   transaction, Bitcoin input spent by another transaction): only then may a NEW transaction replace it.
 */
export type TxState =
  | { state: 'unknown' | 'pending' | 'failed' | 'dead' }
  | { state: 'confirmed'; confirmations: number };

/** The intent as the resolver API returns it (`GET /resolver/v1/intents/{id}`). */
export type IntentView = Resolver.ResolverIntent;

export interface PaymentRequest {
  intentId: string;
  /** Token address as the swap service names it (`BTC`, the wrapped-SOL mint for SOL, contract addresses). */
  token: string;
  /** The user's destination address on this network. */
  to: string;
  /** Lots of `token` (satoshis, token base units, lamports). */
  amount: bigint;
  /** Bitcoin: the output script (hex, `6a20…`) the payment must carry (`fulfil_commitment`). */
  commitment?: string | null;
}

export interface ChainWallet {
  /** The swap service's network type this wallet serves. */
  readonly type: 'BITCOIN' | 'EVM' | 'TRON' | 'SOLANA';
  /** The identity the swap service's `[[resolvers]]` entry must list (claim x-only pubkey hex, or address). */
  readonly identity: string;
  /** Spendable balance of `token` in lots (what the resolver may promise: inventory). */
  balance(token: string): Promise<bigint>;
  /** The destination payment, signed, not broadcast. */
  signPayment(p: PaymentRequest): Promise<SignedTx>;
  /**
   * The deposit of an approved intent whose SOURCE is on this network, signed, not broadcast:
   * permit2 → `SwapEscrow.deposit` with the user's signature; cosign → the user's transaction with the
   * resolver's signature at position 0; htlc → null (the swap service broadcasts the user's funding on
   * accept; its txid is `execution.funding_txid`).
   */
  signDeposit(intent: IntentView): Promise<SignedTx | null>;
  /**
   * The claim of the source with the preimage (hex, 0x-prefixed): htlc → claim-leaf spend to the
   * resolver's own address; permit2 → `SwapEscrow.claim`; cosign → null (no claim leg: the deposit
   * paid the resolver directly).
   */
  signClaim(intent: IntentView, preimage: string): Promise<SignedTx | null>;
  /** Sends the signed bytes. Already in the mempool or already mined counts as success. */
  broadcast(tx: SignedTx): Promise<void>;
  /** Where `tx` stands (see {@link TxState}). */
  status(tx: SignedTx): Promise<TxState>;
  /**
   * After a start: a stored transaction that is not yet known confirmed (its inputs stay reserved, its
   * unconfirmed change counts as the wallet's own). Called before anything new is signed.
   */
  track?(tx: SignedTx): void;
  /**
   * A stored transaction that will never be sent (dropped unsent as too late; its network does not know it):
   * its nonce / inputs are free again, so the next transaction takes them (an EVM nonce left reserved would
   * hold every later transaction behind the gap until a restart).
   */
  release?(tx: SignedTx): void;
  close?(): Promise<void>;
}
