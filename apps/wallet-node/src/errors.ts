import { defineErrors, type ErrorEnvelopeFactory, type ErrorInfo } from '@rgbx/service-kit';

/**
 * The wallet node's error table: every error reply is `{error:{code, status, message, details}}`
 * (the reference's envelope). Codes 500 and 1001 are the spec's; the others are ours (the numbering
 * follows the reference's later versions), each for a condition the client can fix.
 */
export const E = defineErrors({
  BAD_INPUT: {
    status: 422,
    message: (body: string) => `invalid json format: ${body}`,
    description: '1001 bad_input',
  },
  INVALID_HEADER: {
    status: 400,
    message: (header: string, why: string) => `invalid ${header} header: ${why}`,
    description: '1011 invalid_header',
  },
  WALLET_MISMATCH: {
    status: 409,
    message: (fp: string) =>
      `master-fingerprint ${fp} belongs to a wallet registered with different xpubs; refusing to serve it`,
    description: '1012 wallet_mismatch',
  },
  NOT_FOUND: { status: 404, message: (what: string) => `${what} not found`, description: '1000 not_found' },
  INVALID_ADDRESS: {
    status: 400,
    message: (d: string) => `invalid address: ${d}`,
    description: '1002 invalid_address',
  },
  INSUFFICIENT_BITCOINS: {
    status: 400,
    message: (d: string) => `not enough bitcoins: ${d}`,
    description: '1003 not_enough_balance',
  },
  INSUFFICIENT_ALLOCATION_SLOTS: {
    status: 400,
    message: 'no free UTXO with an allocation slot: create UTXOs first (createutxosbegin/createutxosend)',
    description: '1004 not_enough_utxos',
  },
  INSUFFICIENT_ASSETS: {
    status: 400,
    message: (d: string) => `not enough assets: ${d}`,
    description: '1005 not_enough_assets',
  },
  INVALID_FEE_RATE: {
    status: 400,
    message: (d: string) => `invalid fee rate: ${d}`,
    description: '1006 invalid_fee_rate',
  },
  INVALID_PSBT: {
    status: 400,
    message: (d: string) => `invalid PSBT: ${d}`,
    description: '1007 invalid_psbt',
  },
  INVALID_RECIPIENT: {
    status: 400,
    message: (d: string) => `invalid recipient: ${d}`,
    description: '1008 invalid_recipient',
  },
  CONFLICT: {
    status: 409,
    message: (d: string) => `conflicting transfer state: ${d}`,
    description: '1009 conflict',
  },
  INVALID_REQUEST: { status: 400, message: (d: string) => d, description: '1010 invalid_request' },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    message: (max: number) => `body larger than ${max} bytes`,
    description: '1013 payload_too_large',
  },
  INTERNAL: { status: 500, message: 'something went wrong', description: '500 internal_error' },
});

/** Numeric code and status word of each error, as the envelope carries them. */
export const CODES: Record<string, [number, string]> = {
  BAD_INPUT: [1001, 'bad_input'],
  INVALID_HEADER: [1011, 'invalid_header'],
  WALLET_MISMATCH: [1012, 'wallet_mismatch'],
  NOT_FOUND: [1000, 'not_found'],
  INVALID_ADDRESS: [1002, 'invalid_address'],
  INSUFFICIENT_BITCOINS: [1003, 'not_enough_balance'],
  INSUFFICIENT_ALLOCATION_SLOTS: [1004, 'not_enough_utxos'],
  INSUFFICIENT_ASSETS: [1005, 'not_enough_assets'],
  INVALID_FEE_RATE: [1006, 'invalid_fee_rate'],
  INVALID_PSBT: [1007, 'invalid_psbt'],
  INVALID_RECIPIENT: [1008, 'invalid_recipient'],
  CONFLICT: [1009, 'conflict'],
  INVALID_REQUEST: [1010, 'invalid_request'],
  PAYLOAD_TOO_LARGE: [1013, 'payload_too_large'],
  INTERNAL: [500, 'internal_error'],
};

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
  AllocationsAlreadyAvailable: 'CONFLICT',
  CannotFailBatchTransfer: 'CONFLICT',
  CannotDeleteBatchTransfer: 'CONFLICT',
  RecipientIDAlreadyUsed: 'CONFLICT',
  BatchTransferNotFoundOrFailed: 'CONFLICT',
};

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
    const issues = e.validation?.issues.map((i) => `${i.path || '/'} ${i.message}`).join('; ');
    details = { body: issues ? `${e.validation?.context ?? 'body'}: ${issues}` : e.message };
  } else if (e.code === 'BAD_INPUT') {
    statusCode = 422;
    details = { body: e.message.replace(/^invalid json format: /, ''), ...details };
    message = 'invalid json format';
  } else if (e.code === 'PAYLOAD_TOO_LARGE') {
    key = 'PAYLOAD_TOO_LARGE';
  } else if (!(e.code in CODES)) {
    key = statusCode >= 500 ? 'INTERNAL' : 'INVALID_REQUEST';
  }
  if (statusCode >= 500) {
    key = 'INTERNAL';
    message = 'something went wrong';
    details = {};
  }
  const [code, status] = CODES[key] ?? [500, 'internal_error'];
  return { statusCode, body: { error: { code, status, message, details } } };
};
