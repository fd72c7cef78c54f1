/** Wallet node request/response schemas of the btc routes (re-exported by `wallet-node.ts`). */
import { type Static, Type } from 'typebox';

// Defined here rather than imported from wallet-node.ts: that module imports this one to list BTC_SCHEMAS,
// so an import back would read its constants before they exist.
const Sats = Type.Union(
  [
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' }),
  ],
  {
    description:
      'satoshis sent to `address` (at least its dust limit), u64: a JSON integer (exact up to 18446744073709551615); a decimal string is accepted too',
  },
);
const feeRate = (description: string) => Type.Integer({ minimum: 1, maximum: 1_000_000, description });

export const SendBtcBeginRequest = Type.Object(
  {
    address: Type.String({
      minLength: 1,
      maxLength: 100,
      description: "recipient address on the service's network (P2WPKH, P2WSH, P2TR, P2PKH or P2SH)",
    }),
    amount: Sats,
    fee_rate: Type.Optional(feeRate('sat/vB, required (or its legacy spelling feeRate)')),
    feeRate: Type.Optional(feeRate('legacy spelling of fee_rate')),
    skip_sync: Type.Optional(
      Type.Boolean({ description: 'default false: sync the vanilla wallet with the indexer first' }),
    ),
    skipSync: Type.Optional(Type.Boolean({ description: 'legacy spelling of skip_sync' })),
  },
  { $id: 'SendBtcBeginRequest' },
);

export const SendBtcEndRequest = Type.Object(
  {
    signed_psbt: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'the PSBT from sendbtcbegin, signed (finalized or not), base64',
      }),
    ),
    signedPsbt: Type.Optional(Type.String({ minLength: 1, description: 'legacy spelling of signed_psbt' })),
    skip_sync: Type.Optional(
      Type.Boolean({ description: 'default false: sync the vanilla wallet after the broadcast' }),
    ),
    skipSync: Type.Optional(Type.Boolean({ description: 'legacy spelling of skip_sync' })),
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
