/**
 * Wallet node schemas of CFA, UDA and IFA issuance and of the issued assets (re-exported by `wallet-node.ts`).
 * Field names are snake_case as in the reference's clients (RGB-OS rgb-sdk, the UTEXO BTCPay plugin). `*Form`
 * schemas describe the multipart/form-data variant of a route: its text fields are read like the JSON body (a
 * number field as its decimal text; an array field repeated, or one field holding a JSON array), its file parts
 * are uploaded to the node and handed to rgb-lib by path. Every u64 is the one of `wire.ts`.
 */
import { type Static, Type } from 'typebox';
import { U64, U64Out } from './wire.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Binary = (description: string) => Type.String({ format: 'binary', description });

/** Most attachments rgb-lib accepts on a UDA token. */
export const UDA_MAX_ATTACHMENTS = 20;

// ---------- issuance requests ----------

const name = Type.String({ minLength: 1, maxLength: 256, description: 'rgb-lib allows 1–40 characters' });
const ticker = Type.String({ minLength: 1, maxLength: 8, description: 'uppercase, 1–8 characters' });
const details = Type.Optional(
  Nullable(
    Type.String({ minLength: 1, maxLength: 4096, description: 'free text (rgb-lib: at most 255 bytes)' }),
  ),
);
const precision = Type.Optional(Type.Integer({ minimum: 0, maximum: 18, description: 'default 0' }));
const amounts = Type.Array(U64, {
  minItems: 1,
  maxItems: 64,
  description: 'one allocation (UTXO) per amount',
});

const cfaFields = { name, details, precision, amounts };
export const IssueAssetCfaRequest = Type.Object(cfaFields, { $id: 'IssueAssetCfaRequest' });
export const IssueAssetCfaForm = Type.Object(
  {
    ...cfaFields,
    file: Type.Optional(Binary('media file of the asset (any type; rgb-lib sniffs its MIME type)')),
  },
  { $id: 'IssueAssetCfaForm' },
);

const udaFields = {
  ticker,
  name,
  details,
  precision: Type.Optional(Type.Integer({ minimum: 0, maximum: 18, description: 'default 0' })),
};
export const IssueAssetUdaRequest = Type.Object(udaFields, { $id: 'IssueAssetUdaRequest' });
export const IssueAssetUdaForm = Type.Object(
  {
    ...udaFields,
    file: Type.Optional(Binary('media file of the token')),
    attachments: Type.Optional(
      Type.Array(Binary('one attachment of the token'), {
        maxItems: UDA_MAX_ATTACHMENTS,
        description: `repeated file parts, at most ${UDA_MAX_ATTACHMENTS}`,
      }),
    ),
  },
  { $id: 'IssueAssetUdaForm' },
);

export const IssueAssetIfaRequest = Type.Object(
  {
    ticker,
    name,
    precision,
    amounts,
    inflation_amounts: Type.Optional(
      Type.Array(U64, {
        maxItems: 64,
        description: 'inflation rights, one allocation each (default none: the supply is then fixed)',
      }),
    ),
    replace_rights_num: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 255,
        description: 'rgb-sdk field; rgb-lib 0.3.0-beta.7 issues no replace rights, so only 0 is accepted',
      }),
    ),
    reject_list_url: Type.Optional(
      Nullable(
        Type.String({ format: 'uri', maxLength: 2048, description: "URL of the asset's reject list" }),
      ),
    ),
  },
  { $id: 'IssueAssetIfaRequest' },
);

// ---------- issued assets ----------

export const TokenLight = Type.Object(
  {
    index: Type.Integer(),
    ticker: Nullable(Type.String()),
    name: Nullable(Type.String()),
    details: Nullable(Type.String()),
    embedded_media: Type.Boolean(),
    media: Nullable(Type.Ref('Media')),
    attachments: Type.Record(Type.String(), Type.Ref('Media'), {
      description: 'by attachment index ("0", "1", …)',
    }),
    reserves: Type.Boolean(),
  },
  { $id: 'TokenLight', additionalProperties: true },
);

export const AssetCfa = Type.Object(
  {
    asset_id: Type.String(),
    name: Type.String(),
    details: Nullable(Type.String()),
    precision: Type.Integer(),
    issued_supply: U64Out,
    timestamp: Type.Integer({ description: 'unix seconds' }),
    added_at: Type.Integer({ description: 'unix seconds' }),
    balance: Type.Ref('Balance'),
    media: Nullable(Type.Ref('Media')),
  },
  { $id: 'AssetCfa', additionalProperties: true },
);

export const AssetUda = Type.Object(
  {
    asset_id: Type.String(),
    ticker: Type.String(),
    name: Type.String(),
    details: Nullable(Type.String()),
    precision: Type.Integer(),
    timestamp: Type.Integer({ description: 'unix seconds' }),
    added_at: Type.Integer({ description: 'unix seconds' }),
    balance: Type.Ref('Balance'),
    media: Type.Optional(Nullable(Type.Ref('Media'))),
    token: Nullable(Type.Ref('TokenLight')),
  },
  { $id: 'AssetUda', additionalProperties: true },
);

export const AssetIfa = Type.Object(
  {
    asset_id: Type.String(),
    ticker: Type.String(),
    name: Type.String(),
    details: Nullable(Type.String()),
    precision: Type.Integer(),
    initial_supply: U64Out,
    max_supply: U64Out,
    known_circulating_supply: U64Out,
    timestamp: Type.Integer({ description: 'unix seconds' }),
    added_at: Type.Integer({ description: 'unix seconds' }),
    balance: Type.Ref('Balance'),
    media: Nullable(Type.Ref('Media')),
    reject_list_url: Nullable(Type.String()),
  },
  { $id: 'AssetIfa', additionalProperties: true },
);

/** Named schemas of these routes, added to WALLET_NODE_SCHEMAS (OpenAPI components). */
export const ISSUE_SCHEMAS = [
  IssueAssetCfaRequest,
  IssueAssetCfaForm,
  IssueAssetUdaRequest,
  IssueAssetUdaForm,
  IssueAssetIfaRequest,
  TokenLight,
  AssetCfa,
  AssetUda,
  AssetIfa,
] as const;

export type IssueAssetCfaRequestT = Static<typeof IssueAssetCfaRequest>;
export type IssueAssetUdaRequestT = Static<typeof IssueAssetUdaRequest>;
export type IssueAssetIfaRequestT = Static<typeof IssueAssetIfaRequest>;
