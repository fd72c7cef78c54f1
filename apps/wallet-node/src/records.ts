/**
 * rgb-lib 0.3's transfer, unspent, transaction and invoice records (snake_case, as `snakeKeys` leaves them)
 * → the field's format both public clients read (`@rgbx/contracts` wallet-node-records: integer enums, flat
 * `amount`s, `expiration`; rgb-lib's extras kept). `?format=rgb-lib` keeps rgb-lib's own shapes; neither
 * format carries a server file path.
 */
import {
  NETWORK_CODES,
  TRANSACTION_TYPE_CODES,
  TRANSFER_KIND_CODES,
  TRANSFER_STATUS_CODES,
  TRANSPORT_TYPE_CODES,
} from '@rgbx/contracts/wallet-node';
import type { FastifyReply } from '@rgbx/service-kit';
import { replyJson, snakeKeys } from './json.ts';

export type RecordFormat = 'field' | 'rgb-lib';
type Rec = Record<string, unknown>;

/** Keys of rgb-lib's transfer that are server file paths (the consignment under the data dir). */
const SERVER_PATHS = ['consignment_path', 'psbt_path'] as const;

function code(table: Record<string, number>, value: unknown, what: string): number {
  const c = typeof value === 'string' ? table[value] : undefined;
  if (c === undefined) throw new Error(`no integer for ${what} ${JSON.stringify(value)}`);
  return c;
}

/**
 * The asset units an rgb-lib assignment stands for: `{Fungible: n}` → n, `NonFungible` → 1 (one UDA token, as
 * the older rgb-lib counted it), rights (`InflationRight`, `ReplaceRight`) and `Any` → 0.
 */
export function assignmentUnits(a: unknown): bigint {
  if (a === 'NonFungible') return 1n;
  if (a !== null && typeof a === 'object' && 'Fungible' in a)
    return BigInt((a as { Fungible: bigint }).Fungible);
  return 0n;
}

/** The tag and the amount of an assignment, the way the plugin's `InvoiceAssignment` reads it. */
export function assignmentObject(a: unknown): { type: string; amount?: bigint } {
  if (typeof a === 'string') return a === 'NonFungible' ? { type: a, amount: 1n } : { type: a };
  if (a !== null && typeof a === 'object') {
    const [type, amount] = Object.entries(a)[0] ?? ['Any', undefined];
    return amount === undefined || amount === null ? { type } : { type, amount: BigInt(amount as bigint) };
  }
  return { type: 'Any' };
}

function withoutPaths(t: Rec): Rec {
  const out = { ...t };
  for (const k of SERVER_PATHS) delete out[k];
  return out;
}

/**
 * A transfer, rgb-lib (snake_case) → the field's format. `amount` is what the older rgb-lib reported: for a
 * send the amount sent (its requested assignment), otherwise the units its assignments hold (until it holds any,
 * the requested amount).
 */
export function fieldTransfer(t: Rec): Rec {
  const assignments = Array.isArray(t.assignments) ? t.assignments : [];
  const held = assignments.some((a) => a !== 'Any');
  // A send's `assignments` are what the sender keeps (its change); what it sends is the recipient's request.
  const sent = t.kind === 'Send' && t.requested_assignment !== null && t.requested_assignment !== undefined;
  const amount =
    held && !sent
      ? assignments.reduce<bigint>((s, a) => s + assignmentUnits(a), 0n)
      : assignmentUnits(t.requested_assignment);
  const endpoints = Array.isArray(t.transport_endpoints) ? (t.transport_endpoints as Rec[]) : [];
  const expiry = t.expiration_timestamp;
  return {
    ...withoutPaths(t),
    status: code(TRANSFER_STATUS_CODES, t.status, 'transfer status'),
    amount,
    kind: code(TRANSFER_KIND_CODES, t.kind, 'transfer kind'),
    txid: t.txid ?? null,
    recipient_id: t.recipient_id ?? '',
    receive_utxo: t.receive_utxo ?? null,
    change_utxo: t.change_utxo ?? null,
    expiration: typeof expiry === 'number' ? expiry : 0,
    expiration_timestamp: expiry ?? null,
    requested_assignment: t.requested_assignment ?? null,
    assignments,
    transport_endpoints: endpoints.map((e) => ({
      ...e,
      transport_type: code(TRANSPORT_TYPE_CODES, e.transport_type, 'transport type'),
    })),
  };
}

/** An unspent: each allocation gets its flat `amount` (and `asset_id` "" while rgb-lib knows none). */
export function fieldUnspent(u: Rec): Rec {
  const allocations = Array.isArray(u.rgb_allocations) ? (u.rgb_allocations as Rec[]) : [];
  return {
    ...u,
    rgb_allocations: allocations.map((a) => ({
      ...a,
      asset_id: a.asset_id ?? '',
      amount: assignmentUnits(a.assignment),
    })),
  };
}

/** A transaction: integer `transaction_type`; `confirmation_time` absent (not null) while unconfirmed. */
export function fieldTransaction(t: Rec): Rec {
  const { confirmation_time, ...rest } = t;
  return {
    ...rest,
    transaction_type: code(TRANSACTION_TYPE_CODES, t.transaction_type, 'transaction type'),
    ...(confirmation_time === null || confirmation_time === undefined ? {} : { confirmation_time }),
  };
}

/** rgb-lib's `invoice_data` → what both clients read: nulls left out, `assignment` `{type, amount?}`, `network` "3". */
export function fieldInvoiceData(d: Rec): Rec {
  const out: Rec = {};
  for (const [k, v] of Object.entries(d)) if (v !== null && v !== undefined) out[k] = v;
  out.assignment = assignmentObject(d.assignment);
  out.network = String(code(NETWORK_CODES, d.network, 'network'));
  return out;
}

/** The format a request asks for (`?format=`), the field's by default. */
export function recordFormat(query: unknown): RecordFormat {
  return (query as { format?: string } | undefined)?.format === 'rgb-lib' ? 'rgb-lib' : 'field';
}

/**
 * A reply wrapper for a route answering records: rgb-lib's value, snake_cased, mapped element by element to the
 * requested format. Server file paths are dropped in both formats.
 */
export function recordReply(map: (r: Rec) => Rec, rgbLib: (r: Rec) => Rec = (r) => r) {
  return (reply: FastifyReply, value: unknown): FastifyReply => {
    const format = recordFormat(reply.request.query);
    const snake = snakeKeys(value);
    const one = (r: unknown) => (format === 'rgb-lib' ? rgbLib(r as Rec) : map(r as Rec));
    const out = Array.isArray(snake) ? snake.map(one) : one(snake);
    return reply.type('application/json; charset=utf-8').send(replyJson(out));
  };
}

export const rgbLibTransfer = withoutPaths;
