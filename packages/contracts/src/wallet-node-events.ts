/**
 * The wallet node's events (`GET /wallet/events` and the wallet webhooks send the same JSON) and the webhook
 * status of `GET /wallet/webhook`: declared once here, for the node (OpenAPI, its own types) and the SDK (types).
 *
 * Amounts are decimal strings: u64 stays exact in any JSON parser (a browser's `EventSource` + `JSON.parse` too).
 */
import { type Static, Type } from 'typebox';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

/** An asset's balance in an event. */
export const WalletBalanceAmounts = Type.Object({
  settled: Type.String(),
  future: Type.String(),
  spendable: Type.String(),
});
export type WalletBalanceAmounts = Static<typeof WalletBalanceAmounts>;

/** What every event carries besides its body. */
const Common = {
  id: Type.Integer({ description: 'per wallet, increasing from 1' }),
  at: Type.String({ description: 'ISO 8601 UTC time the node found the change' }),
  wallet: Type.String({ description: 'master fingerprint' }),
  source: Type.String({
    description: 'refresh (background), call (after a client call), abortbegin, begin_ttl',
  }),
};

/** A transfer's status changed (`old_status` null: seen for the first time). */
export const WalletTransferEvent = Type.Object({
  ...Common,
  type: Type.Literal('transfer'),
  idx: Type.Integer(),
  batch_transfer_idx: Type.Integer(),
  asset_id: Nullable(Type.String()),
  kind: Type.String({ description: 'Issuance, ReceiveBlind, ReceiveWitness, Send, Inflation, Burn' }),
  old_status: Nullable(Type.String({ description: 'null: a transfer seen for the first time' })),
  new_status: Type.String({
    description:
      'Initiated, WaitingCounterparty, WaitingSafeHeight, WaitingBroadcast, WaitingConfirmations, Settled, Failed',
  }),
  txid: Nullable(Type.String()),
  recipient_id: Nullable(Type.String()),
  requested_amount: Nullable(Type.String({ description: 'u64 as a decimal string' })),
  amount: Type.String({ description: 'u64 as a decimal string' }),
});
export type WalletTransferEvent = Static<typeof WalletTransferEvent>;

/** An asset's balance changed (`old` null: the asset appeared). */
export const WalletBalanceEvent = Type.Object({
  ...Common,
  type: Type.Literal('balance'),
  asset_id: Type.String(),
  old: Type.Union([WalletBalanceAmounts, Type.Null()]),
  new: WalletBalanceAmounts,
});
export type WalletBalanceEvent = Static<typeof WalletBalanceEvent>;

/** A begin's holds were released: by `/wallet/abortbegin` (`aborted`) or after `wallet.begin_ttl_secs` (`expired`). */
export const WalletBeginReleasedEvent = Type.Object({
  ...Common,
  type: Type.Literal('begin_released'),
  reason: Type.Union([Type.Literal('aborted'), Type.Literal('expired')]),
  txid: Type.String(),
  released: Type.Array(Type.String()),
  failed_batch_transfer_idx: Type.Union([Type.Integer(), Type.Null()]),
});
export type WalletBeginReleasedEvent = Static<typeof WalletBeginReleasedEvent>;

/** One event, as streamed (`data:` of an SSE frame whose `event:` is its `type`) and as a webhook's body. */
export const WalletEvent = Type.Union([WalletTransferEvent, WalletBalanceEvent, WalletBeginReleasedEvent], {
  $id: 'WalletEvent',
});
export type WalletEvent = Static<typeof WalletEvent>;

/** `event: reset`: the stream cannot resume where the client asked (the events were dropped, or never existed). */
export const WalletEventsReset = Type.Object(
  { reason: Type.Union([Type.Literal('expired'), Type.Literal('unknown')]), message: Type.String() },
  { $id: 'WalletEventsReset' },
);
export type WalletEventsReset = Static<typeof WalletEventsReset>;

/** `GET /wallet/webhook`: a wallet's webhook and how its delivery goes. */
export const WalletWebhookStatus = Type.Object(
  {
    url: Nullable(Type.String({ description: 'null: no webhook' })),
    origin: Type.Union([Type.Literal('wallet'), Type.Literal('config'), Type.Null()], {
      description:
        "wallet: set with POST /wallet/webhook; config: the node's wallet.webhook_url (a wallet without its own); null: none",
    }),
    since: Nullable(
      Type.String({ description: 'ISO time it was set; events after that moment are delivered' }),
    ),
    key_id: Type.String({
      description: 'RFC 7638 thumbprint of the signing key (X-Service-Signature-Key-Id)',
    }),
    delivered_through: Type.Integer({ description: 'events up to this id were accepted (2xx)' }),
    last_event_id: Type.Integer({ description: "the wallet's newest event id" }),
    pending: Type.Integer({ description: 'events not yet accepted' }),
    skipped: Type.Integer({
      description: 'events the retention dropped before delivery (receiver down past the hold)',
    }),
    failures: Type.Integer({ description: 'failed attempts of the event being delivered now' }),
    last_error: Nullable(Type.String()),
    next_attempt_at: Nullable(
      Type.String({ description: 'ISO time of the next retry, when one is waiting' }),
    ),
  },
  { $id: 'WalletWebhook' },
);
export type WalletWebhookStatus = Static<typeof WalletWebhookStatus>;
