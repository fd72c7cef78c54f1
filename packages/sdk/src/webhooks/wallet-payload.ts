/**
 * The payload of a wallet node webhook: one wallet event, exactly as `GET /wallet/events` carries it in `data`.
 * Checked for the fields every event has and the ones its type needs; unknown fields are kept (a newer node may
 * add some). Runs only after the signature has been checked.
 */
import type { WalletEvent } from '../wallet-node/client.ts';

const TYPES = new Set(['transfer', 'balance', 'begin_released']);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Parses a wallet event; a reason string instead of an exception when it is not one. */
export function parseWalletEvent(text: string): { event: WalletEvent } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'payload is not JSON' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { error: 'payload is not an object' };
  const e = v as Record<string, unknown>;
  if (!Number.isSafeInteger(e.id) || (e.id as number) < 1) return { error: 'id must be a positive integer' };
  if (typeof e.type !== 'string' || !TYPES.has(e.type)) return { error: 'unknown event type' };
  if (typeof e.wallet !== 'string' || e.wallet === '') return { error: 'wallet missing' };
  if (typeof e.at !== 'string' || !ISO.test(e.at)) return { error: 'at must be an ISO 8601 UTC timestamp' };
  if (typeof e.source !== 'string') return { error: 'source missing' };
  if (e.type === 'transfer' && (!Number.isSafeInteger(e.idx) || typeof e.new_status !== 'string'))
    return { error: 'a transfer event needs idx and new_status' };
  if (e.type === 'balance' && (typeof e.asset_id !== 'string' || typeof e.new !== 'object' || e.new === null))
    return { error: 'a balance event needs asset_id and new' };
  if (e.type === 'begin_released' && typeof e.txid !== 'string')
    return { error: 'a begin_released event needs txid' };
  return { event: e as unknown as WalletEvent };
}
