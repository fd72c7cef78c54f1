/**
 * Wire types of the swap service, Surface A (camelCase) and the resolver API (snake_case): the
 * `Static<>` of the schemas the service itself validates and serializes with
 * (`@rgbx/contracts/swap`), so they cannot drift from it. Amounts are integer lots as decimal
 * strings; convert with `BigInt(...)`.
 */
import type {
  A,
  EventsReset as EventsResetSchema,
  Pagination as PaginationSchema,
  Resolver,
  SettlementLeg as SettlementLegSchema,
  Static,
  Status,
  SwapError,
} from '@rgbx/contracts/swap';

export type SwapStatus = Static<typeof Status>;
export type ApprovalMechanism = A.Quote['approvalMechanism'];
export type Network = A.Network;
export type Token = A.Token;
export type Pagination = PaginationSchema;
export type QuoteRequest = A.QuoteRequest;
export type Quote = A.Quote;
export type IntentRequest = A.IntentRequest;
/** EIP-712 field list. */
export type TypedDataFields = A.TypedDataFields;
/** EIP-712/TIP-712 typed data as JSON (what `eth_signTypedData_v4` takes). */
export type TypedDataJson = A.TypedData;
export type Permit2Approval = A.Permit2Approval;
export type HtlcApproval = A.HtlcApproval;
export type CosignApproval = A.CosignApproval;
export type IntentCreated = A.IntentCreated;

type ExactlyOne<T> = {
  [K in keyof T]-?: { [P in K]-?: Exclude<T[P], undefined> } & { [P in Exclude<keyof T, K>]?: never };
}[keyof T];
/** An approval: exactly one payload (the schema's "exactly one" as a type). */
export type ApprovalBody = ExactlyOne<A.ApprovalRequest>;

export type SwapRecord = A.SwapRecord;
export type TokenPage = Static<typeof A.TokenPage>;
export type SwapPage = Static<typeof A.SwapPage>;
/** An intent's id and its status after an action. */
export type IntentStatusChange = Static<typeof A.IntentStatusChange>;
export type SwapMetadata = A.SwapRecord['swapMetadata'];

/**
 * One settlement leg the swap service verified on chain before moving the status: the transaction,
 * where it is mined and what it proved. A user or auditor re-checks it without trusting the service.
 *
 * @example
 * const rec = await swap.swap(intentId);
 * const fulfil = rec.settlement.find((l) => l.leg === 'fulfil');
 * // fulfil.txHash paid fulfil.amount of fulfil.token to fulfil.recipient, from fulfil.sender, in block fulfil.blockHeight
 */
export type SettlementLeg = SettlementLegSchema;
export type Affiliate = A.Affiliate;
/** `GET /swaps` filters; a list filter takes several values (sent as repeated parameters). */
export type SwapListQuery = A.SwapsQuery;

/** Resolver API: one intent with what the resolver needs to execute it. */
export type ResolverIntent = Resolver.ResolverIntent;

/** One status change on `GET /events` (Surface A). */
export type IntentEvent = A.IntentEvent;
/** One status change on `GET /resolver/v1/events`. */
export type ResolverEvent = Resolver.ResolverEvent;
/** The `reset` of a feed: the resume point was older than the retention (or unknown). */
export type EventsReset = EventsResetSchema;

/** The service's error envelope. */
export type SwapErrorBody = Static<typeof SwapError>;
