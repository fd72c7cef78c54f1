/**
 * Request and response schemas of the wallet node (wallet-node-service.md), defined once: the service
 * validates and documents with them, the SDK takes its types (and its u64 reading) from them. Field names are
 * the reference's snake_case; a request field's legacy camelCase spelling is declared on it (`x-aliases`, see
 * `wire.ts`) and rewritten to the snake_case name by the service before validation. u64 amounts are exact JSON
 * integers (a decimal string is accepted in requests too), all marked with the one `U64` / `U64Out` of `wire.ts`.
 */
import { type Static, Type } from 'typebox';
import { BACKUP_SCHEMAS } from './wallet-node-backup.ts';
import { BEGIN_SCHEMAS } from './wallet-node-begins.ts';
import { BTC_SCHEMAS } from './wallet-node-btc.ts';
import { ISSUE_SCHEMAS } from './wallet-node-issue.ts';
import { KEY_SCHEMAS } from './wallet-node-keys.ts';
import { type InvoiceData, RECORD_SCHEMAS, type RgbLibInvoiceData } from './wallet-node-records.ts';
import { aliases, schemaRefs, U64, U64Out } from './wire.ts';

// Request defaults are applied by the service, never by the schema (they are documented in descriptions).

export * from './wallet-node-backup.ts';
export * from './wallet-node-begins.ts';
export * from './wallet-node-btc.ts';
export * from './wallet-node-events.ts';
export * from './wallet-node-issue.ts';
export * from './wallet-node-keys.ts';
export * from './wallet-node-records.ts';
export * from './wire.ts';
export type { Static };

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(
  t: T,
  options?: { description?: string },
) => Type.Union([t, Type.Null()], options);
/** The legacy camelCase spelling of a field (`x-aliases`), with the field's description. */
const alias = (camel: string, description?: string) => aliases(description, camel);

// ---------- requests ----------

const AssetId = Type.String({ minLength: 1, maxLength: 200, ...alias('assetId') });

export const AssetIdRequest = Type.Object(
  { asset_id: Type.Optional(AssetId) },
  { $id: 'AssetIdRequest', description: 'listtransfers: asset_id absent = the transfers of every asset' },
);

export const AssetBalanceRequest = Type.Object({ asset_id: AssetId }, { $id: 'AssetBalanceRequest' });

export const FailTransfersRequest = Type.Object(
  {
    batch_transfer_idx: Type.Optional(
      Nullable(Type.Integer({ minimum: 0, maximum: 2147483647 }), alias('batchTransferIdx')),
    ),
    no_asset_only: Type.Optional(Type.Boolean(alias('noAssetOnly', 'default false'))),
    skip_sync: Type.Optional(Type.Boolean(alias('skipSync', 'default false'))),
  },
  { $id: 'FailTransfersRequest' },
);

const FeeRate = Type.Integer({
  minimum: 1,
  maximum: 1_000_000,
  ...alias('feeRate', 'sat/vB, default 1'),
});
const MinConfirmations = Type.Integer({
  minimum: 0,
  maximum: 255,
  ...alias('minConfirmations', 'default 1'),
});

export const CreateUtxosBeginRequest = Type.Object(
  {
    up_to: Type.Optional(Type.Boolean(alias('upTo', 'default false'))),
    num: Type.Optional(Type.Integer({ minimum: 1, maximum: 255, description: 'default 5' })),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 4294967295, description: 'sats per UTXO, default 1000' }),
    ),
    fee_rate: Type.Optional(FeeRate),
    skip_sync: Type.Optional(Type.Boolean(alias('skipSync', 'default false'))),
  },
  { $id: 'CreateUtxosBeginRequest' },
);

export const SignedPsbtRequest = Type.Object(
  {
    signed_psbt: Type.String({
      minLength: 1,
      ...alias('signedPsbt', 'base64 PSBT, signed (and preferably finalized)'),
    }),
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
    asset_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }), alias('assetId'))),
    amount: Type.Optional(Nullable(U64)),
    duration_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 31_536_000, ...alias('durationSeconds', 'default 3600') }),
    ),
    min_confirmations: Type.Optional(MinConfirmations),
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

const WitnessData = Type.Object(
  { amount_sat: U64, blinding: Type.Optional(Nullable(U64)) },
  { description: 'sats sent to a witness recipient (needed for a witness invoice)' },
);

export const Recipient = Type.Object(
  {
    recipient_id: Type.String({ minLength: 1, maxLength: 500, ...alias('recipientId') }),
    amount: U64,
    transport_endpoints: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
        maxItems: 3,
        ...alias('transportEndpoints', 'default: the RGB proxies of the node'),
      }),
    ),
    witness_data: Type.Optional(Nullable(WitnessData, alias('witnessData'))),
  },
  { description: 'one recipient of an asset' },
);

/** sendbegin, the spec's form: recipients per asset. */
export const SendBeginRecipientMapForm = Type.Object(
  {
    recipient_map: Type.Record(Type.String(), Type.Array(Recipient, { minItems: 1, maxItems: 64 }), {
      ...alias('recipientMap', 'recipients per asset id'),
    }),
    donation: Type.Optional(Type.Boolean({ description: 'default false' })),
    fee_rate: Type.Optional(FeeRate),
    min_confirmations: Type.Optional(MinConfirmations),
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
        alias('assetId'),
      ),
    ),
    amount: Type.Optional(Nullable(U64)),
    witness_data: Type.Optional(Nullable(WitnessData, alias('witnessData'))),
    donation: Type.Optional(Type.Boolean({ description: 'default false' })),
    fee_rate: Type.Optional(FeeRate),
    min_confirmations: Type.Optional(MinConfirmations),
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
    uda: Nullable(Type.Array(Type.Ref('AssetUda'))),
    cfa: Nullable(Type.Array(Type.Ref('AssetCfa'))),
    ifa: Type.Optional(Nullable(Type.Array(Type.Ref('AssetIfa')))),
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
  ...ISSUE_SCHEMAS,
  ...BEGIN_SCHEMAS,
  ...RECORD_SCHEMAS,
  ...KEY_SCHEMAS,
  AssetIdRequest,
  AssetBalanceRequest,
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

/** Every named schema by `$id`, to follow `$ref`s when walking a schema (u64 reading, aliases). */
export const WALLET_NODE_REFS = schemaRefs(WALLET_NODE_SCHEMAS);

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
