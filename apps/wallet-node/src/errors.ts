import { defineErrors, type ErrorEnvelopeFactory, type ErrorInfo } from '@rgbx/service-kit';

/**
 * The wallet node's error table: every error reply is `{error:{code, status, message, details}}` (the
 * reference's envelope). `wire` is that numeric code and status word; 500 and 1001 are the spec's, the
 * others ours (numbered like the reference's later versions), each for a condition the client can fix.
 */
const TABLE = {
  BAD_INPUT: {
    wire: [1001, 'bad_input'],
    status: 422,
    message: (body: string) => `invalid json format: ${body}`,
  },
  INVALID_HEADER: {
    wire: [1011, 'invalid_header'],
    status: 400,
    message: (header: string, why: string) => `invalid ${header} header: ${why}`,
  },
  WALLET_MISMATCH: {
    wire: [1012, 'wallet_mismatch'],
    status: 409,
    message: (fp: string) =>
      `master-fingerprint ${fp} belongs to a wallet registered with different xpubs; refusing to serve it`,
  },
  NOT_FOUND: { wire: [1000, 'not_found'], status: 404, message: (what: string) => `${what} not found` },
  WALLET_NOT_FOUND: {
    wire: [1015, 'wallet_not_found'],
    status: 404,
    message: (fp: string) =>
      `no wallet with master-fingerprint ${fp} on this node: register it first (POST /wallet/register)`,
  },
  INVALID_ADDRESS: {
    wire: [1002, 'invalid_address'],
    status: 400,
    message: (d: string) => `invalid address: ${d}`,
  },
  INSUFFICIENT_BITCOINS: {
    wire: [1003, 'not_enough_balance'],
    status: 400,
    message: (d: string) => `not enough bitcoins: ${d}`,
  },
  INSUFFICIENT_ALLOCATION_SLOTS: {
    wire: [1004, 'not_enough_utxos'],
    status: 400,
    message: 'no free UTXO with an allocation slot: create UTXOs first (createutxosbegin/createutxosend)',
  },
  INSUFFICIENT_ASSETS: {
    wire: [1005, 'not_enough_assets'],
    status: 400,
    message: (d: string) => `not enough assets: ${d}`,
  },
  INVALID_FEE_RATE: {
    wire: [1006, 'invalid_fee_rate'],
    status: 400,
    message: (d: string) => `invalid fee rate: ${d}`,
  },
  INVALID_PSBT: { wire: [1007, 'invalid_psbt'], status: 400, message: (d: string) => `invalid PSBT: ${d}` },
  INVALID_RECIPIENT: {
    wire: [1008, 'invalid_recipient'],
    status: 400,
    message: (d: string) => `invalid recipient: ${d}`,
  },
  CONFLICT: {
    wire: [1009, 'conflict'],
    status: 409,
    message: (d: string) => `conflicting transfer state: ${d}`,
  },
  INVALID_REQUEST: { wire: [1010, 'invalid_request'], status: 400, message: (d: string) => d },
  PAYLOAD_TOO_LARGE: {
    wire: [1013, 'payload_too_large'],
    status: 413,
    message: (max: number) => `body larger than ${max} bytes`,
  },
  ISSUANCE_DISABLED: {
    wire: [1014, 'issuance_disabled'],
    status: 403,
    message: (schema: string) =>
      `this node does not issue ${schema.toUpperCase()} assets (the spec's node issues NIA only); ` +
      `the operator can enable it with [wallet] issue_schemas = ["nia", "${schema}"]`,
  },
  GENERATE_KEYS_DISABLED: {
    wire: [1017, 'generate_keys_disabled'],
    status: 403,
    message:
      'this node does not generate keys (the mnemonic would cross the wire); the operator can enable it with ' +
      '[wallet] allow_generate_keys = true, or generate the keys on the client (rgb-lib generate_keys)',
  },
  CALL_TIMEOUT: {
    wire: [1016, 'timeout'],
    status: 504,
    message: (op: string) =>
      `${op} took longer than its deadline (wallet.transport_call_timeout_secs for calls that talk to RGB ` +
      'proxies, wallet.call_timeout_secs for the others) and was stopped; nothing else of this wallet was affected',
  },
  INDEXER_UNAVAILABLE: {
    wire: [1018, 'indexer_unavailable'],
    status: 503,
    message: (indexer: string, what: string) =>
      `the indexer ${indexer} ${what}; the call did not complete, retry after the Retry-After seconds`,
  },
  WALLETS_BUSY: {
    wire: [1019, 'wallets_busy'],
    status: 503,
    message: (limit: string) =>
      `every place for an ${limit} is taken by a wallet with a call in flight; retry after the Retry-After seconds`,
  },
  TOO_MANY_STREAMS: {
    wire: [1020, 'too_many_streams'],
    status: 429,
    message: (max: number) =>
      `this wallet has ${max} event streams open (wallet.events_max_streams_per_wallet)`,
  },
  WEBHOOK_URL_REFUSED: {
    wire: [1021, 'webhook_url_refused'],
    status: 400,
    message: (why: string) => `webhook URL refused: ${why}`,
  },
  WEBHOOK_REDELIVER_REFUSED: {
    wire: [1022, 'webhook_redeliver_refused'],
    status: 409,
    message: (why: string) => `redelivery refused: ${why}`,
  },
  INTERNAL: { wire: [500, 'internal_error'], status: 500, message: 'something went wrong' },
} as const;

export const E = defineErrors(TABLE);

/** Numeric code and status word of each error, as the envelope carries them (from the same table). */
export const CODES: Record<string, readonly [number, string]> = Object.fromEntries(
  Object.entries(TABLE).map(([key, def]) => [key, def.wire]),
);

/** rgb-lib error variants a client can fix, mapped to our codes; every other variant is a 500. */
export const RGB_VARIANTS: Record<string, keyof typeof CODES> = {
  AssetNotFound: 'NOT_FOUND',
  BatchTransferNotFound: 'NOT_FOUND',
  UnknownTransfer: 'NOT_FOUND',
  InvalidAddress: 'INVALID_ADDRESS',
  InsufficientBitcoins: 'INSUFFICIENT_BITCOINS',
  InsufficientAllocationSlots: 'INSUFFICIENT_ALLOCATION_SLOTS',
  InsufficientAssignments: 'INSUFFICIENT_ASSETS',
  InsufficientSpendableAssets: 'INSUFFICIENT_ASSETS',
  InsufficientTotalAssets: 'INSUFFICIENT_ASSETS',
  InvalidFeeRate: 'INVALID_FEE_RATE',
  InvalidPsbt: 'INVALID_PSBT',
  CannotFinalizePsbt: 'INVALID_PSBT',
  InvalidRecipientID: 'INVALID_RECIPIENT',
  InvalidRecipientData: 'INVALID_RECIPIENT',
  InvalidTransportEndpoint: 'INVALID_RECIPIENT',
  InvalidTransportEndpoints: 'INVALID_RECIPIENT',
  RecipientIDDuplicated: 'INVALID_RECIPIENT',
  InvalidAmountZero: 'INVALID_REQUEST',
  InvalidTicker: 'INVALID_REQUEST',
  InvalidName: 'INVALID_REQUEST',
  InvalidPrecision: 'INVALID_REQUEST',
  InvalidAssetID: 'INVALID_REQUEST',
  InvalidExpiration: 'INVALID_REQUEST',
  TooHighIssuanceAmounts: 'INVALID_REQUEST',
  NoIssuanceAmounts: 'INVALID_REQUEST',
  InvalidDetails: 'INVALID_REQUEST',
  InvalidAttachments: 'INVALID_REQUEST',
  EmptyFile: 'INVALID_REQUEST',
  TooHighInflationAmounts: 'INVALID_REQUEST',
  AllocationsAlreadyAvailable: 'CONFLICT',
  CannotFailBatchTransfer: 'CONFLICT',
  CannotDeleteBatchTransfer: 'CONFLICT',
  RecipientIDAlreadyUsed: 'CONFLICT',
  BatchTransferNotFoundOrFailed: 'CONFLICT',
};

const REQUIRED = /^must have required property '(.+)'$/;

/** The 5xx errors answered with their own code, message and details (every other 5xx is the spec's 500). */
const ANSWERED_5XX = new Set(['CALL_TIMEOUT', 'INDEXER_UNAVAILABLE', 'WALLETS_BUSY']);

/** The envelope the reference serves: `{error:{code, status, message, details}}`. */
export const envelope: ErrorEnvelopeFactory = (e: ErrorInfo) => {
  let key = e.code;
  let message = e.message;
  let details: Record<string, unknown> = (e.details as Record<string, unknown> | undefined) ?? {};
  let statusCode = e.statusCode;
  // Anything the body could not become (bad JSON, wrong types, missing fields, wrong content type) is the
  // spec's 422 bad_input with the parser's words in details.body.
  if (e.code === 'VALIDATION_ERROR' || e.code === 'INVALID_JSON' || e.code === 'UNSUPPORTED_MEDIA_TYPE') {
    key = 'BAD_INPUT';
    statusCode = 422;
    message = 'invalid json format';
    const list = e.validation?.issues ?? [];
    const missing = list.map((i) => REQUIRED.exec(i.message));
    if (list.length > 0 && missing.every((m) => m !== null)) {
      // As the reference (serde) words it: "missing field `asset_id`" (nested: its path).
      const names = list.map((i, k) => `${i.path ? `${i.path.slice(1)}/` : ''}${missing[k]![1]}`);
      details = { body: names.map((n) => `missing field \`${n}\``).join('; ') };
    } else {
      const issues = list.map((i) => `${i.path || '/'} ${i.message}`).join('; ');
      details = { body: issues ? `${e.validation?.context ?? 'body'}: ${issues}` : e.message };
    }
  } else if (e.code === 'BAD_INPUT') {
    statusCode = 422;
    details = { body: e.message.replace(/^invalid json format: /, ''), ...details };
    message = 'invalid json format';
  } else if (e.code === 'PAYLOAD_TOO_LARGE') {
    key = 'PAYLOAD_TOO_LARGE';
  } else if (!(e.code in CODES)) {
    key = statusCode >= 500 ? 'INTERNAL' : 'INVALID_REQUEST';
  }
  // 5xx say nothing of the cause, except our own documented ones: the deadline error (its message names only the
  // operation), the indexer's refusal (it names the configured indexer and what it refused) and a full budget.
  if (statusCode >= 500 && !ANSWERED_5XX.has(key)) {
    key = 'INTERNAL';
    message = 'something went wrong';
    details = {};
  }
  const [code, status] = CODES[key] ?? [500, 'internal_error'];
  return { statusCode, body: { error: { code, status, message, details } } };
};
