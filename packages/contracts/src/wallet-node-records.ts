/**
 * Transfer, unspent, transaction and invoice records in the field's format: the shape both public clients of
 * this API type them in (RGB-OS rgb-sdk v1.3.0 `src/types/rgb-model.ts`, the UTEXO BTCPay plugin v1.0.1's
 * model classes in `Services/RgbNodeClient.cs`; provenance in `e2e/fixtures/wallet-clients/README.md`).
 * The spec leaves these records "not shown"; both clients declare the Python RGB-Node's integer enums of an
 * older rgb-lib and flat `amount`s, so that is the default. rgb-lib 0.3's own shapes (string enums, no flat
 * amounts) are served only on request: `?format=rgb-lib`.
 */
import { Type } from 'typebox';
import { U64Out, u64Out } from './wire.ts';

/**
 * `status` as an integer. 0–3 are the values both clients declare (rgb-sdk `TransferStatus`, the plugin's
 * `Status == 2` = settled); rgb-lib 0.3's three newer statuses follow, so 0–3 keep their meaning and a client
 * that knows only 0–3 sees them as neither settled nor failed, i.e. still in flight.
 */
export const TRANSFER_STATUS_CODES = {
  WaitingCounterparty: 0,
  WaitingConfirmations: 1,
  Settled: 2,
  Failed: 3,
  Initiated: 4,
  WaitingSafeHeight: 5,
  WaitingBroadcast: 6,
} as const;

/** `kind` as an integer: rgb-sdk's `TransferKind` 0–4 (the plugin: `Kind is 1 or 2` = a receive), then Burn. */
export const TRANSFER_KIND_CODES = {
  Issuance: 0,
  ReceiveBlind: 1,
  ReceiveWitness: 2,
  Send: 3,
  Inflation: 4,
  Burn: 5,
} as const;

/**
 * `transaction_type` as rgb-sdk's `TransactionType` (RGB_SEND 0, DRAIN 1, CREATE_UTXOS 2, USER 3). The older
 * rgb-lib's `User` is "a transaction not created by rgb-lib directly"; rgb-lib 0.3 splits that into `User` and
 * `Incoming`, so both are 3.
 */
export const TRANSACTION_TYPE_CODES = {
  RgbSend: 0,
  Drain: 1,
  CreateUtxos: 2,
  User: 3,
  Incoming: 3,
} as const;

/** `transport_endpoints[].transport_type` (rgb-sdk: a number): rgb-lib has one transport, JSON-RPC. */
export const TRANSPORT_TYPE_CODES = { JsonRpc: 0 } as const;

/**
 * decodergbinvoice `network`: the older rgb-lib's `BitcoinNetwork` order (Mainnet, Testnet, Signet, Regtest),
 * then rgb-lib 0.3's additions. Written as a numeric string ("3"): the plugin binds `int Network` and reads a
 * numeric string with .NET's web defaults, rgb-sdk declares `network: string`; no other value satisfies both.
 */
export const NETWORK_CODES = {
  Mainnet: 0,
  Testnet: 1,
  Signet: 2,
  Regtest: 3,
  Testnet4: 4,
  SignetCustom: 5,
} as const;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const codes = (table: Record<string, number>) => [...new Set(Object.values(table))];
const codeList = (table: Record<string, number>) =>
  Object.entries(table)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');

const Outpoint = Type.Object({ txid: Type.String(), vout: Type.Integer() });
const Assignment = Type.Union(
  [
    Type.Literal('Any'),
    Type.Literal('NonFungible'),
    Type.Literal('ReplaceRight'),
    Type.Object({ Fungible: U64Out }, { additionalProperties: false }),
    Type.Object({ InflationRight: U64Out }, { additionalProperties: false }),
  ],
  {
    description:
      'rgb-lib, externally tagged: "Any", "NonFungible", "ReplaceRight", {"Fungible": u64}, {"InflationRight": u64}',
  },
);

export const RecordFormatQuery = Type.Object(
  {
    format: Type.Optional(
      Type.Union([Type.Literal('field'), Type.Literal('rgb-lib')], {
        description:
          "field (default): the clients' integer enums and flat amounts; rgb-lib: rgb-lib 0.3's names and shapes",
      }),
    ),
  },
  { $id: 'RecordFormatQuery' },
);

export const Transfer = Type.Object(
  {
    idx: Type.Integer(),
    batch_transfer_idx: Type.Integer(),
    created_at: Type.Integer({ description: 'unix seconds' }),
    updated_at: Type.Integer({ description: 'unix seconds' }),
    status: Type.Integer({
      enum: codes(TRANSFER_STATUS_CODES),
      description: codeList(TRANSFER_STATUS_CODES),
    }),
    amount: u64Out(
      'the Fungible amounts of `assignments` (a NonFungible one counts 1); until it has any, the requested amount; else 0',
    ),
    kind: Type.Integer({ enum: codes(TRANSFER_KIND_CODES), description: codeList(TRANSFER_KIND_CODES) }),
    txid: Nullable(Type.String()),
    recipient_id: Type.String({ description: '"" when rgb-lib has none (an issuance)' }),
    receive_utxo: Nullable(Outpoint),
    change_utxo: Nullable(Outpoint),
    expiration: Type.Integer({ minimum: 0, description: 'unix seconds; 0 when the transfer has no expiry' }),
    transport_endpoints: Type.Array(
      Type.Object({
        endpoint: Type.String(),
        transport_type: Type.Integer({ description: codeList(TRANSPORT_TYPE_CODES) }),
        used: Type.Boolean(),
      }),
    ),
    requested_assignment: Nullable(Assignment),
    assignments: Type.Array(Assignment),
    expiration_timestamp: Nullable(Type.Integer({ description: "rgb-lib's expiry, null when none" })),
    invoice_string: Type.Optional(Nullable(Type.String())),
  },
  {
    $id: 'Transfer',
    additionalProperties: true,
    description:
      'a transfer in the format both public clients read; rgb-lib 0.3 extras (requested_assignment, assignments, expiration_timestamp, invoice_string) kept; never a server file path',
  },
);

export const Unspent = Type.Object(
  {
    utxo: Type.Object(
      {
        outpoint: Outpoint,
        btc_amount: U64Out,
        colorable: Type.Boolean(),
        exists: Type.Boolean(),
      },
      { additionalProperties: true },
    ),
    rgb_allocations: Type.Array(
      Type.Object(
        {
          asset_id: Type.String({ description: '"" when rgb-lib does not know the asset yet' }),
          amount: u64Out('Fungible amount; NonFungible 1; rights and Any 0'),
          assignment: Assignment,
          settled: Type.Boolean(),
        },
        { additionalProperties: true },
      ),
    ),
    pending_blinded: Type.Optional(Type.Integer()),
  },
  { $id: 'Unspent', additionalProperties: true },
);

export const Transaction = Type.Object(
  {
    transaction_type: Type.Integer({
      enum: codes(TRANSACTION_TYPE_CODES),
      description: codeList(TRANSACTION_TYPE_CODES),
    }),
    txid: Type.String(),
    received: U64Out,
    sent: U64Out,
    fee: U64Out,
    confirmation_time: Type.Optional(
      Type.Object(
        { height: Type.Integer(), timestamp: Type.Integer() },
        { description: 'absent while unconfirmed' },
      ),
    ),
  },
  { $id: 'Transaction', additionalProperties: true },
);

/** decodergbinvoice in the field's format: optional fields absent rather than null (rgb-sdk types them `?`). */
export const InvoiceData = Type.Object(
  {
    recipient_id: Type.String({ description: 'blinded UTXO (`utxob:…`) or witness script (`wvout:…`)' }),
    asset_schema: Type.Optional(
      Type.Union([Type.Literal('Nia'), Type.Literal('Uda'), Type.Literal('Cfa'), Type.Literal('Ifa')]),
    ),
    asset_id: Type.Optional(Type.String()),
    assignment: Type.Object(
      {
        type: Type.String({ description: 'Fungible, NonFungible, InflationRight, ReplaceRight or Any' }),
        amount: Type.Optional(u64Out('absent for Any (any amount) and NonFungible')),
      },
      { description: 'what the invoice asks for; the plugin reads `amount` (absent = any)' },
    ),
    assignment_name: Type.Optional(Type.String()),
    network: Type.String({
      pattern: '^[0-9]$',
      description: `the network's integer as a numeric string: ${codeList(NETWORK_CODES)}`,
    }),
    expiration_timestamp: Type.Optional(Type.Integer({ description: 'unix seconds' })),
    transport_endpoints: Type.Array(Type.String()),
  },
  { $id: 'InvoiceData', additionalProperties: true },
);

// ---------- rgb-lib 0.3's own shapes (`?format=rgb-lib`) ----------

export const RgbLibUnspent = Type.Object(
  {
    utxo: Type.Object(
      {
        outpoint: Outpoint,
        btc_amount: U64Out,
        colorable: Type.Boolean(),
        exists: Type.Boolean(),
      },
      { additionalProperties: true },
    ),
    rgb_allocations: Type.Array(
      Type.Object(
        { asset_id: Nullable(Type.String()), assignment: Assignment, settled: Type.Boolean() },
        { additionalProperties: true },
      ),
    ),
    pending_blinded: Type.Optional(Type.Integer()),
  },
  { $id: 'RgbLibUnspent', additionalProperties: true },
);
export const RgbLibTransaction = Type.Object(
  {
    transaction_type: Type.Union(
      ['RgbSend', 'Drain', 'CreateUtxos', 'User', 'Incoming'].map((t) => Type.Literal(t)),
      { description: 'rgb-lib 0.3: RgbSend, Drain, CreateUtxos, User (a BTC send) or Incoming' },
    ),
    txid: Type.String(),
    received: U64Out,
    sent: U64Out,
    fee: U64Out,
    confirmation_time: Nullable(Type.Object({ height: Type.Integer(), timestamp: Type.Integer() })),
  },
  { $id: 'RgbLibTransaction', additionalProperties: true },
);
/** decodergbinvoice with `?format=rgb-lib`: rgb-lib's `invoice_data` as it is. */
export const RgbLibInvoiceData = Type.Object(
  {
    recipient_id: Type.String({ description: 'blinded UTXO (`utxob:…`) or witness script (`wvout:…`)' }),
    asset_schema: Nullable(
      Type.Union([Type.Literal('Nia'), Type.Literal('Uda'), Type.Literal('Cfa'), Type.Literal('Ifa')]),
    ),
    asset_id: Nullable(Type.String()),
    assignment: Assignment,
    assignment_name: Type.Optional(Nullable(Type.String())),
    network: Type.String({ description: 'Mainnet, Testnet, Testnet4, Signet, SignetCustom or Regtest' }),
    expiration_timestamp: Nullable(Type.Integer({ description: 'unix seconds' })),
    transport_endpoints: Type.Array(Type.String()),
  },
  { $id: 'RgbLibInvoiceData', additionalProperties: true },
);

const RgbLibTransferStatus = Type.Union([
  Type.Literal('Initiated'),
  Type.Literal('WaitingCounterparty'),
  Type.Literal('WaitingSafeHeight'),
  Type.Literal('WaitingBroadcast'),
  Type.Literal('WaitingConfirmations'),
  Type.Literal('Settled'),
  Type.Literal('Failed'),
]);
const RgbLibTransferKind = Type.Union([
  Type.Literal('Issuance'),
  Type.Literal('ReceiveBlind'),
  Type.Literal('ReceiveWitness'),
  Type.Literal('Send'),
  Type.Literal('Inflation'),
  Type.Literal('Burn'),
]);
export const RgbLibTransfer = Type.Object(
  {
    idx: Type.Integer(),
    batch_transfer_idx: Type.Integer(),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
    status: RgbLibTransferStatus,
    requested_assignment: Type.Optional(Nullable(Assignment)),
    assignments: Type.Array(Assignment),
    kind: RgbLibTransferKind,
    txid: Nullable(Type.String()),
    recipient_id: Nullable(Type.String()),
    receive_utxo: Type.Optional(Nullable(Outpoint)),
    change_utxo: Type.Optional(Nullable(Outpoint)),
    expiration_timestamp: Type.Optional(Nullable(Type.Integer())),
    transport_endpoints: Type.Array(
      Type.Object({
        endpoint: Type.String(),
        transport_type: Type.Union([Type.Literal('JsonRpc')]),
        used: Type.Boolean(),
      }),
    ),
    invoice_string: Type.Optional(Nullable(Type.String())),
  },
  {
    $id: 'RgbLibTransfer',
    additionalProperties: true,
    description: "rgb-lib 0.3's transfer, without its server file paths (consignment_path)",
  },
);

export const RECORD_SCHEMAS = [
  RecordFormatQuery,
  Transfer,
  Unspent,
  Transaction,
  InvoiceData,
  RgbLibTransfer,
  RgbLibUnspent,
  RgbLibTransaction,
  RgbLibInvoiceData,
] as const;
