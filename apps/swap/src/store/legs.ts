/**
 * Settlement legs: what a verified transaction proved, stored once and bound to one intent and one
 * leg. `settlement_legs` has `(network_id, tx_hash)` unique — a transaction settles at most one leg
 * of one intent, on SQLite and PostgreSQL alike, whatever races — and `(intent_id, leg)` as key.
 * The intent row keeps a JSON copy (`intents.settlement`) so swap records read it without a join.
 */
import { isUniqueViolation } from '@rgbx/store';
import type { Transaction } from 'kysely';
import { E } from '../errors.ts';
import type { SwapDatabase, SwapDb } from './database.ts';

export const LEGS = ['deposit', 'fulfil', 'claim', 'refund'] as const;
export type Leg = (typeof LEGS)[number];

/** What one verified leg proved (all values as read from the chain). */
export interface LegProof {
  leg: Leg;
  networkId: number;
  txHash: string;
  /** Output (Bitcoin), log (EVM/Tron) or instruction (Solana) index that satisfied the leg. */
  index: number;
  /** Block height / number / slot; null for a mempool transaction (0-confirmation devnets only). */
  blockHeight: bigint | null;
  blockHash: string | null;
  blockTime: number | null;
  confirmations: number;
  /** Who received the value (the HTLC / escrow for a deposit, the user for a fulfilment…). */
  recipient: string;
  /** Token identifier as configured (`BTC`, a contract address, a mint). */
  token: string;
  /** Amount moved, integer lots. */
  amount: bigint;
  /** Sender where the chain shows one (EVM `from`, the Solana signer), else null. */
  sender: string | null;
  /** When we verified it, milliseconds. */
  verifiedAt: number;
}

/** The JSON form kept on the intent row and shown in swap records. */
export interface LegRecord {
  leg: Leg;
  networkId: number;
  txHash: string;
  index: number;
  blockHeight: string | null;
  blockHash: string | null;
  blockTime: number | null;
  confirmations: number;
  recipient: string;
  token: string;
  amount: string;
  sender: string | null;
  verifiedAt: string;
}

export function legRecord(p: LegProof): LegRecord {
  return {
    leg: p.leg,
    networkId: p.networkId,
    txHash: p.txHash,
    index: p.index,
    blockHeight: p.blockHeight === null ? null : p.blockHeight.toString(),
    blockHash: p.blockHash,
    blockTime: p.blockTime,
    confirmations: p.confirmations,
    recipient: p.recipient,
    token: p.token,
    amount: p.amount.toString(),
    sender: p.sender,
    verifiedAt: new Date(p.verifiedAt).toISOString(),
  };
}

export function parseSettlement(json: string | null): LegRecord[] {
  return json ? (JSON.parse(json) as LegRecord[]) : [];
}

/** Refuses a transaction that already settles a leg (a clear error before the insert races). */
export async function assertTxUnused(db: SwapDb, networkId: number, txHash: string): Promise<void> {
  const used = await db
    .selectFrom('settlement_legs')
    .select(['intent_id', 'leg'])
    .where('network_id', '=', networkId)
    .where('tx_hash', '=', txHash)
    .executeTakeFirst();
  if (used) throw E.TX_ALREADY_USED.create(txHash, `the ${used.leg} of intent ${used.intent_id}`);
}

/**
 * Inserts the leg inside the caller's transaction (the one that moves the status) and returns the
 * new JSON copy for the intent row. A concurrent insert of the same transaction loses on the unique
 * constraint and the whole status change rolls back.
 */
export async function insertLeg(
  trx: Transaction<SwapDatabase>,
  intentId: string,
  current: string | null,
  proof: LegProof,
): Promise<string> {
  try {
    await trx
      .insertInto('settlement_legs')
      .values({
        intent_id: intentId,
        leg: proof.leg,
        network_id: proof.networkId,
        tx_hash: proof.txHash,
        idx: proof.index,
        block_height: proof.blockHeight === null ? null : proof.blockHeight.toString(),
        block_hash: proof.blockHash,
        block_time: proof.blockTime,
        confirmations: proof.confirmations,
        recipient: proof.recipient,
        token: proof.token,
        amount: proof.amount.toString(),
        sender: proof.sender,
        verified_at: proof.verifiedAt,
      })
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw E.TX_ALREADY_USED.create(proof.txHash, 'another leg');
    throw err;
  }
  return JSON.stringify([...parseSettlement(current), legRecord(proof)]);
}
