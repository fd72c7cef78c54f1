/**
 * Request and response schemas of the wallet node (wallet-node-service.md), defined once: the service
 * validates and documents with them, the SDK takes its types from them. Field names are the reference's
 * snake_case; request bodies also accept the legacy camelCase spellings listed next to each field.
 * u64 amounts are exact JSON integers (a decimal string is accepted in requests too).
 */
import { type Static, Type } from 'typebox';
import { BACKUP_SCHEMAS } from './wallet-node-backup.ts';
import { BEGIN_SCHEMAS } from './wallet-node-begins.ts';
import { BTC_SCHEMAS } from './wallet-node-btc.ts';
import { KEY_SCHEMAS } from './wallet-node-keys.ts';
import { type InvoiceData, RECORD_SCHEMAS, type RgbLibInvoiceData } from './wallet-node-records.ts';

// Request defaults are applied by the service, never by the schema: a schema default would fill the
// snake_case field before the handler sees a legacy camelCase spelling, silently overriding it.

export * from './wallet-node-backup.ts';
export * from './wallet-node-begins.ts';
export * from './wallet-node-btc.ts';
export * from './wallet-node-keys.ts';
export * from './wallet-node-records.ts';
export type { Static };

export const U64 = Type.Union(
  [Type.Integer({ minimum: 0 }), Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' })],
  { description: 'u64: a JSON integer (exact up to 18446744073709551615); a decimal string is accepted too' },
);
/**
 * u64 in a response: always a JSON integer, exact. Its static type is `bigint`, which is what a
 * client that parses the reply losslessly (the SDK) holds.
 */
const U64Out = Type.Unsafe<bigint>(Type.Integer({ minimum: 0, description: 'u64, exact JSON integer' }));
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

// ---------- requests ----------

export const AssetIdRequest = Type.Object(
  {
    asset_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    assetId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'legacy spelling of asset_id' }),
    ),
  },
  { $id: 'AssetIdRequest' },
);

export const FailTransfersRequest = Type.Object(
  {
    batch_transfer_idx: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 2147483647 }))),
    batchTransferIdx: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 2147483647 }))),
    no_asset_only: Type.Optional(Type.Boolean({ description: 'default false' })),
    noAssetOnly: Type.Optional(Type.Boolean()),
    skip_sync: Type.Optional(Type.Boolean({ description: 'default false' })),
    skipSync: Type.Optional(Type.Boolean()),
  },
  { $id: 'FailTransfersRequest' },
);

export const CreateUtxosBeginRequest = Type.Object(
  {
    up_to: Type.Optional(Type.Boolean({ description: 'default false' })),
    upTo: Type.Optional(Type.Boolean()),
    num: Type.Optional(Type.Integer({ minimum: 1, maximum: 255, description: 'default 5' })),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 4294967295, description: 'sats per UTXO, default 1000' }),
    ),
    fee_rate: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'sat/vB, default 1' }),
    ),
    feeRate: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    skip_sync: Type.Optional(Type.Boolean({ description: 'default false' })),
  },
  { $id: 'CreateUtxosBeginRequest' },
);

export const SignedPsbtRequest = Type.Object(
  {
    signed_psbt: Type.Optional(
      Type.String({ minLength: 1, description: 'base64 PSBT, signed (and preferably finalized)' }),
    ),
    signedPsbt: Type.Optional(Type.String({ minLength: 1, description: 'legacy spelling of signed_psbt' })),
  },
  { $id: 'SignedPsbtRequest' },
);

export const IssueAssetNiaRequest = Type.Object(
  {
    ticker: Type.String({ minLength: 1, maxLength: 8 }),
    name: Type.String({ minLength: 1, maxLength: 256 }),
    precision: Type.Optional(Type.Integer({ minimum: 0, maximum: 18, description: 'default 0' })),
    amounts: Type.Array(U64, { minItems: 1, maxItems: 64 }),
  },
  { $id: 'IssueAssetNiaRequest' },
);

export const BlindReceiveRequest = Type.Object(
  {
    asset_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    assetId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    amount: Type.Optional(Nullable(U64)),
    duration_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 31_536_000, description: 'default 3600' }),
    ),
    durationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 31_536_000 })),
    min_confirmations: Type.Optional(Type.Integer({ minimum: 0, maximum: 255, description: 'default 1' })),
    minConfirmations: Type.Optional(Type.Integer({ minimum: 0, maximum: 255 })),
    expiration_timestamp: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 253_402_300_799,
          description:
            'absolute expiry, unix seconds (the BTCPay plugin sends it); wins over duration_seconds',
        }),
      ),
    ),
  },
  {
    $id: 'BlindReceiveRequest',
    description:
      'blindreceive and witnessreceive: asset_id/amount absent, null or 0 = any asset/amount; expiry = expiration_timestamp, else now + duration_seconds',
  },
);

export const Recipient = Type.Object(
  {
    recipient_id: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    recipientId: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    amount: U64,
    transport_endpoints: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: 3 }),
    ),
    transportEndpoints: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: 3 }),
    ),
    witness_data: Type.Optional(
      Nullable(
        Type.Object({
          amount_sat: U64,
          blinding: Type.Optional(Nullable(U64)),
        }),
      ),
    ),
  },
  { description: 'one recipient of an asset' },
);

const FeeRate = Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'sat/vB, default 1' });
const MinConfirmations = Type.Integer({ minimum: 0, maximum: 255, description: 'default 1' });
const WitnessData = Type.Object(
  { amount_sat: U64, blinding: Type.Optional(Nullable(U64)) },
  { description: 'sats sent to a witness recipient (needed for a witness invoice)' },
);

/** sendbegin, the spec's form: recipients per asset. */
export const SendBeginRecipientMapForm = Type.Object(
  {
    recipient_map: Type.Optional(
      Type.Record(Type.String(), Type.Array(Recipient, { minItems: 1, maxItems: 64 })),
    ),
    recipientMap: Type.Optional(
      Type.Record(Type.String(), Type.Array(Recipient, { minItems: 1, maxItems: 64 })),
    ),
    donation: Type.Optional(Type.Boolean({ description: 'default false' })),
    fee_rate: Type.Optional(FeeRate),
    feeRate: Type.Optional(FeeRate),
    min_confirmations: Type.Optional(MinConfirmations),
    minConfirmations: Type.Optional(MinConfirmations),
    expiration_timestamp: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'unix seconds; should be the invoice expiry. Default: now + 3600 (rgb-lib 0.3 requires one)',
      }),
    ),
  },
  {
    $id: 'SendBeginRecipientMapForm',
    description: 'recipients per asset id (recipient_map, or legacy recipientMap); no `invoice`',
    anyOf: [{ required: ['recipient_map'] }, { required: ['recipientMap'] }],
    not: { required: ['invoice'] },
  },
);

/** sendbegin, the invoice form the field's clients send (rgb-sdk, BTCPay plugin): one RGB invoice. */
export const SendBeginInvoiceForm = Type.Object(
  {
    invoice: Type.String({ minLength: 1, maxLength: 4000, description: 'an RGB invoice (`rgb:…`)' }),
    asset_id: Type.Optional(
      Nullable(
        Type.String({ minLength: 1, maxLength: 200, description: 'needed if the invoice names none' }),
      ),
    ),
    assetId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    amount: Type.Optional(Nullable(U64)),
    witness_data: Type.Optional(Nullable(WitnessData)),
    witnessData: Type.Optional(Nullable(WitnessData)),
    donation: Type.Optional(Type.Boolean({ description: 'default false' })),
    fee_rate: Type.Optional(FeeRate),
    feeRate: Type.Optional(FeeRate),
    min_confirmations: Type.Optional(MinConfirmations),
    minConfirmations: Type.Optional(MinConfirmations),
  },
  {
    $id: 'SendBeginInvoiceForm',
    description:
      'pay one RGB invoice: the asset, amount, recipient, transport endpoints and expiry come from the invoice; ' +
      'asset_id and amount fill what the invoice leaves open and must agree with what it states',
  },
);

/** sendbegin body: exactly one of the two forms. */
export const SendBeginRequest = Type.Unsafe<
  Static<typeof SendBeginRecipientMapForm> | Static<typeof SendBeginInvoiceForm>
>({
  $id: 'SendBeginRequest',
  oneOf: [Type.Ref('SendBeginRecipientMapForm'), Type.Ref('SendBeginInvoiceForm')],
  description: 'the recipient_map form (spec) or the invoice form (rgb-sdk, BTCPay plugin)',
});

export const InvoiceRequest = Type.Object(
  { invoice: Type.String({ minLength: 1, maxLength: 4000, description: 'an RGB invoice (`rgb:…`)' }) },
  { $id: 'InvoiceRequest' },
);

export const FeeEstimationRequest = Type.Object(
  {
    blocks: Type.Integer({ minimum: 1, maximum: 1008, description: 'confirmation target in blocks' }),
  },
  { $id: 'FeeEstimationRequest' },
);

// ---------- responses ----------

export const Balance = Type.Object(
  { settled: U64Out, future: U64Out, spendable: U64Out },
  { $id: 'Balance' },
);
export const BtcBalance = Type.Object(
  { vanilla: Type.Ref('Balance'), colored: Type.Ref('Balance') },
  { $id: 'BtcBalance' },
);
export const RegisterResponse = Type.Object(
  { address: Type.String(), btc_balance: Type.Ref('BtcBalance') },
  { $id: 'RegisterResponse' },
);
export const Media = Type.Object(
  { file_path: Type.String(), digest: Type.String(), mime: Type.String() },
  { $id: 'Media', additionalProperties: true },
);
export const AssetNia = Type.Object(
  {
    asset_id: Type.String(),
    ticker: Type.String(),
    name: Type.String(),
    details: Nullable(Type.String()),
    precision: Type.Integer(),
    issued_supply: U64Out,
    timestamp: Type.Integer({ description: 'unix seconds' }),
    added_at: Type.Integer({ description: 'unix seconds' }),
    balance: Type.Ref('Balance'),
    media: Nullable(Type.Ref('Media')),
  },
  { $id: 'AssetNia' },
);
export const Assets = Type.Object(
  {
    nia: Nullable(Type.Array(Type.Ref('AssetNia'))),
    uda: Nullable(Type.Array(Type.Unknown())),
    cfa: Nullable(Type.Array(Type.Unknown())),
    ifa: Type.Optional(Nullable(Type.Array(Type.Unknown()))),
  },
  { $id: 'Assets' },
);
export const ReceiveData = Type.Object(
  {
    invoice: Type.String(),
    recipient_id: Type.String(),
    expiration_timestamp: Nullable(Type.Integer({ description: 'unix seconds' })),
    batch_transfer_idx: Type.Integer(),
  },
  { $id: 'ReceiveData' },
);

export const SendResult = Type.Object(
  { txid: Type.String(), batch_transfer_idx: Type.Integer() },
  { $id: 'SendResult' },
);
export const VersionInfo = Type.Object(
  { app: Type.String(), version: Type.String(), build: Type.String(), commit: Type.String() },
  { $id: 'VersionInfo' },
);
export const WalletErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: Type.Integer({ description: '500, 1000–1017: see the README error table' }),
      status: Type.String(),
      message: Type.String(),
      details: Type.Record(Type.String(), Type.Unknown()),
    }),
  },
  { $id: 'WalletErrorEnvelope' },
);

/** Every shared schema, for `app.addSchema` (named components in the OpenAPI document). */
export const WALLET_NODE_SCHEMAS = [
  ...BTC_SCHEMAS,
  ...BACKUP_SCHEMAS,
  ...BEGIN_SCHEMAS,
  ...RECORD_SCHEMAS,
  ...KEY_SCHEMAS,
  AssetIdRequest,
  FailTransfersRequest,
  CreateUtxosBeginRequest,
  SignedPsbtRequest,
  IssueAssetNiaRequest,
  BlindReceiveRequest,
  SendBeginRecipientMapForm,
  SendBeginInvoiceForm,
  SendBeginRequest,
  InvoiceRequest,
  FeeEstimationRequest,
  Balance,
  BtcBalance,
  RegisterResponse,
  Media,
  AssetNia,
  Assets,
  ReceiveData,
  SendResult,
  VersionInfo,
  WalletErrorEnvelope,
] as const;

export type BalanceT = { settled: bigint; future: bigint; spendable: bigint };
export type BtcBalanceT = { vanilla: BalanceT; colored: BalanceT };
export type RegisterResponseT = { address: string; btc_balance: BtcBalanceT };
export type ReceiveDataT = Static<typeof ReceiveData>;
export type SendResultT = Static<typeof SendResult>;
export type VersionInfoT = Static<typeof VersionInfo>;
export type IssueAssetNiaRequestT = Static<typeof IssueAssetNiaRequest>;
export type BlindReceiveRequestT = Static<typeof BlindReceiveRequest>;
export type SendBeginRequestT =
  | Static<typeof SendBeginRecipientMapForm>
  | Static<typeof SendBeginInvoiceForm>;
export type SendBeginInvoiceFormT = Static<typeof SendBeginInvoiceForm>;
export type InvoiceDataT = Static<typeof InvoiceData>;
export type RgbLibInvoiceDataT = Static<typeof RgbLibInvoiceData>;
export type CreateUtxosBeginRequestT = Static<typeof CreateUtxosBeginRequest>;
export type FailTransfersRequestT = Static<typeof FailTransfersRequest>;
export type WalletErrorEnvelopeT = Static<typeof WalletErrorEnvelope>;
