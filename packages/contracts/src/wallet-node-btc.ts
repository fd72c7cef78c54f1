/** Wallet node request/response schemas of the btc routes (re-exported by `wallet-node.ts`). */
import { type Static, Type } from 'typebox';
import { aliases, u64 } from './wire.ts';

const Sats = u64('satoshis sent to `address` (at least its dust limit)');

export const SendBtcBeginRequest = Type.Object(
  {
    address: Type.String({
      minLength: 1,
      maxLength: 100,
      description: "recipient address on the service's network (P2WPKH, P2WSH, P2TR, P2PKH or P2SH)",
    }),
    amount: Sats,
    fee_rate: Type.Integer({ minimum: 1, maximum: 1_000_000, ...aliases('sat/vB, required', 'feeRate') }),
    skip_sync: Type.Optional(
      Type.Boolean(aliases('default false: sync the vanilla wallet with the indexer first', 'skipSync')),
    ),
  },
  { $id: 'SendBtcBeginRequest' },
);

export const SendBtcEndRequest = Type.Object(
  {
    signed_psbt: Type.String({
      minLength: 1,
      ...aliases('the PSBT from sendbtcbegin, signed (finalized or not), base64', 'signedPsbt'),
    }),
    skip_sync: Type.Optional(
      Type.Boolean(aliases('default false: sync the vanilla wallet after the broadcast', 'skipSync')),
    ),
  },
  { $id: 'SendBtcEndRequest' },
);

export const SendBtcEndResponse = Type.Object(
  { txid: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'the broadcast transaction' }) },
  { $id: 'SendBtcEndResponse' },
);

export type SendBtcBeginRequestT = Static<typeof SendBtcBeginRequest>;
export type SendBtcEndRequestT = Static<typeof SendBtcEndRequest>;
export type SendBtcEndResponseT = Static<typeof SendBtcEndResponse>;

/** Named schemas of these routes, added to WALLET_NODE_SCHEMAS (OpenAPI components). */
export const BTC_SCHEMAS = [SendBtcBeginRequest, SendBtcEndRequest, SendBtcEndResponse] as const;
