/** Wallet node schemas of the pending-begin routes (re-exported by `wallet-node.ts`). */
import { type Static, Type } from 'typebox';

const Txid = Type.String({ pattern: '^[0-9a-f]{64}$', description: 'transaction id, hex' });

export const AbortBeginRequest = Type.Object(
  {
    txid: Type.Optional(Txid),
    psbt: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'the PSBT the begin answered (signed or not), base64; an alternative to txid',
      }),
    ),
  },
  { $id: 'AbortBeginRequest', description: 'exactly one of txid or psbt' },
);

export const PendingBegin = Type.Object(
  {
    txid: Txid,
    kind: Type.String({
      description: "rgb-lib's wallet transaction type: CreateUtxos, Send, SendBtc, Drain",
    }),
    outpoints: Type.Array(Type.String(), { description: 'the TXOs it holds, `txid:vout`' }),
    since: Type.Integer({ description: 'unix seconds when the node served the begin (or first saw it)' }),
    expires_at: Type.Union([Type.Integer(), Type.Null()], {
      description: 'unix seconds when the node releases it by itself; null when wallet.begin_ttl_secs = 0',
    }),
    batch_transfer_idx: Type.Union([Type.Integer(), Type.Null()], {
      description: "an RGB send's batch transfer (Initiated), failed on release",
    }),
  },
  { $id: 'PendingBegin' },
);

export const AbortBeginResponse = Type.Object(
  {
    txid: Txid,
    released: Type.Array(Type.String(), { description: 'the TXOs no longer held, `txid:vout`' }),
    failed_batch_transfer_idx: Type.Union([Type.Integer(), Type.Null()], {
      description: "the RGB send's batch transfer set to Failed, if any",
    }),
  },
  { $id: 'AbortBeginResponse' },
);

export const BEGIN_SCHEMAS = [AbortBeginRequest, PendingBegin, AbortBeginResponse] as const;

export type AbortBeginRequestT = Static<typeof AbortBeginRequest>;
export type PendingBeginT = Static<typeof PendingBegin>;
export type AbortBeginResponseT = Static<typeof AbortBeginResponse>;
