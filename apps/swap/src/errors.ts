/**
 * The swap service's error codes, defined once for both surfaces and the resolver API.
 *
 * Every error reply is the envelope `{ code, type, message, details? }`:
 * - `code`: the stable integer of the table below (25 = Permit2 allowance missing, as the spec says);
 * - `type`: the same code as an UPPER_SNAKE name, for people and logs;
 * - `message`: human readable, never a stack trace or a secret;
 * - `details`: optional object (validation issues, the allowance found, the input that failed…).
 *
 * The health check's 503 body `{ code, message }` is the same envelope.
 */

import { VerificationError } from '@rgbx/chains/btc';
import type { SwapError } from '@rgbx/contracts/swap';
import {
  defineErrors,
  type ErrorEnvelopeFactory,
  type ErrorInfo,
  listErrors,
  type Static,
  Type,
} from '@rgbx/service-kit';

export const E = defineErrors({
  UNAUTHORIZED: {
    status: 401,
    message: 'Missing or invalid API key (send it in the X-API-Key header)',
    description: 'No X-API-Key header, an unknown key, or a revoked key.',
  },
  VALIDATION_ERROR: {
    status: 400,
    message: 'Request validation failed',
    description:
      'Body, query or path parameters do not match the schema; details.validation lists the issues.',
  },
  INVALID_JSON: { status: 400, message: 'Invalid JSON body', description: 'The body is not valid JSON.' },
  ROUTE_NOT_FOUND: {
    status: 404,
    message: (method: string, path: string) => `Route ${method} ${path} not found`,
    description: 'No such route.',
  },
  INTENT_NOT_FOUND: {
    status: 404,
    message: (id: string) => `Intent ${id} not found`,
    description: 'Unknown intent, or one created with another API key.',
  },
  QUOTE_NOT_FOUND: {
    status: 404,
    message: (id: string) => `Quote ${id} not found`,
    description: 'Unknown quote, or one created with another API key.',
  },
  QUOTE_EXPIRED: {
    status: 422,
    message: (id: string) => `Quote ${id} has expired; request a new quote`,
    description: 'The quote expiry passed before the intent was created.',
  },
  QUOTE_ALREADY_USED: {
    status: 409,
    message: (id: string) => `Quote ${id} already made an intent`,
    description: 'A quote makes at most one intent.',
  },
  NO_ROUTE: {
    status: 422,
    message: 'No resolver quotes this pair',
    description: 'No enabled resolver answered the request for quote (RGB sources are never quoted yet).',
  },
  UNKNOWN_NETWORK: {
    status: 422,
    message: (id: number) => `Unknown network ${id}`,
    description: 'The network id is not configured.',
  },
  UNKNOWN_TOKEN: {
    status: 422,
    message: (network: number, token: string) => `Unknown token ${token} on network ${network}`,
    description: 'The token is not configured on that network.',
  },
  INVALID_AMOUNT: {
    status: 422,
    message: (reason: string) => `Invalid amount: ${reason}`,
    description: 'Not a positive amount, more decimals than the token has, or outside the resolver limits.',
  },
  INVALID_ADDRESS: {
    status: 422,
    message: (field: string, reason: string) => `Invalid ${field}: ${reason}`,
    description: 'An address or public key does not belong to the network, or does not match.',
  },
  PUBLIC_KEY_REQUIRED: {
    status: 422,
    message: 'sourcePublicKey (user_source_public_key) is required for Bitcoin and Solana sources',
    description: 'Bitcoin and Solana sources need the public key of the source address.',
  },
  INSUFFICIENT_FUNDS: {
    status: 422,
    message: (needed: string, found: string) =>
      `The source address has ${found} sats spendable; ${needed} are needed (amount and fee)`,
    description: 'Bitcoin source: the UTXOs found through the Electrum indexer do not cover amount + fee.',
  },
  INVALID_TRANSITION: {
    status: 409,
    message: (trigger: string, status: string) => `Cannot ${trigger} an intent in status ${status}`,
    description: 'The lifecycle table has no such transition from the current status.',
  },
  INTENT_EXPIRED: {
    status: 422,
    message: (id: string) => `Intent ${id} is past its deadline`,
    description: 'The action needs an intent before its deadline.',
  },
  APPROVAL_PAYLOAD_COUNT: {
    status: 400,
    message: 'Exactly one of permit2, psbt, cosign must be provided',
    description: 'Surface A approvals carry exactly one payload.',
  },
  APPROVAL_MECHANISM_MISMATCH: {
    status: 422,
    message: (expected: string, got: string) => `This intent expects a ${expected} approval, got ${got}`,
    description: 'Approval data is never converted between mechanisms.',
  },
  APPROVAL_CONFLICT: {
    status: 409,
    message: 'A different approval was already added to this intent',
    description: 'Re-posting the same approval is idempotent; a different one is refused.',
  },
  INVALID_SIGNATURE: {
    status: 422,
    message: (reason: string) => `Permit2 signature rejected: ${reason}`,
    description: 'Malformed signature, or the recovered signer is not the source address.',
  },
  INVALID_PSBT: {
    status: 422,
    message: (reason: string) => `PSBT rejected: ${reason}`,
    description:
      'Not a PSBT, changed transaction (inputs, outputs, locktime…), or a missing/invalid signature on a listed input.',
  },
  INVALID_COSIGN: {
    status: 422,
    message: (reason: string) => `Co-signed transaction rejected: ${reason}`,
    description:
      'Not our transaction, wrong or missing user signature at position 1, or positions 0/2 touched.',
  },
  TX_NOT_VERIFIED: {
    status: 422,
    message: (reason: string) => `Reported transaction not verified: ${reason}`,
    description:
      'A reported transaction is not on chain yet, not confirmed enough, or does not do what it should.',
  },
  TX_ALREADY_USED: {
    status: 409,
    message: (tx: string, by: string) =>
      `Transaction ${tx} already settles ${by}; one transaction settles one leg of one intent`,
    description:
      'A reported transaction already settles a leg (of this or another intent): a payment is never counted twice.',
  },
  RESOLVER_NOT_ASSIGNED: {
    status: 404,
    message: (id: string) => `Intent ${id} not found`,
    description: 'Resolver API: the intent was quoted by another resolver (answered like an unknown intent).',
  },
  SECRET_NOT_RELEASED: {
    status: 409,
    message: 'The secret is released only to the accepting resolver once the intent is Fulfilled',
    description: 'Resolver API: preimage requested too early.',
  },
  AFFILIATE_EXISTS: {
    status: 409,
    message: (name: string) => `Affiliate ${name} already exists for this API key`,
    description: 'Affiliate names are unique per API key.',
  },
  AFFILIATE_NOT_FOUND: {
    status: 422,
    message: (name: string) => `Affiliate ${name} is not configured for this API key`,
    description: 'A quote named an affiliate fee for an affiliate this key has not created.',
  },
  UPSTREAM_UNAVAILABLE: {
    status: 503,
    message: (what: string) => `${what} is unavailable; retry later`,
    description: 'The Electrum indexer or an EVM RPC could not be reached.',
  },
  PERMIT2_ALLOWANCE_INSUFFICIENT: {
    status: 422,
    message:
      'Permit2 is not approved for this token: approve the Permit2 contract on chain, then submit again',
    description:
      'The ERC-20/TRC-20 allowance of the source address to the Permit2 contract is below the source amount (spec: code 25).',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    message: 'Request body is too large',
    description: 'Body over the limit.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: (ct: string) => `Unsupported media type: ${ct}`,
    description: 'Bodies are application/json.',
  },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method Not Allowed', description: 'Wrong method.' },
  BAD_REQUEST: { status: 400, message: 'Bad Request', description: 'Malformed request (headers, URL).' },
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'Request not received in time',
    description:
      'The request (headers and body) did not arrive within the server timeout; the connection is closed.',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: 'Request headers are too large',
    description: 'The request headers exceed the server limit; the connection is closed.',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message: (reason: string) => `Service unavailable: ${reason}`,
    description: 'Health check: the database or an indexer cannot be reached; the service is shutting down.',
  },
  INTERNAL_ERROR: {
    status: 500,
    message: 'Internal Server Error',
    description: 'A bug; the request id in x-request-id finds it in the logs.',
  },
});

export type SwapErrorName = keyof typeof E;

/** The Hotpot `entity` of an error (its Go SDK decodes `{code, message, entity}`), where it is about one. */
export const ERROR_ENTITIES: Partial<Record<SwapErrorName, string>> = {
  INTENT_NOT_FOUND: 'Intent',
  INTENT_EXPIRED: 'Intent',
  INVALID_TRANSITION: 'Intent',
  QUOTE_NOT_FOUND: 'Quote',
  QUOTE_EXPIRED: 'Quote',
  QUOTE_ALREADY_USED: 'Quote',
  NO_ROUTE: 'Quote',
  INVALID_AMOUNT: 'Quote',
  UNKNOWN_NETWORK: 'Network',
  UNKNOWN_TOKEN: 'Token',
  INVALID_ADDRESS: 'Address',
  PUBLIC_KEY_REQUIRED: 'Address',
  INSUFFICIENT_FUNDS: 'Address',
  APPROVAL_PAYLOAD_COUNT: 'Approval',
  APPROVAL_MECHANISM_MISMATCH: 'Approval',
  APPROVAL_CONFLICT: 'Approval',
  INVALID_SIGNATURE: 'Approval',
  INVALID_PSBT: 'Approval',
  INVALID_COSIGN: 'Approval',
  PERMIT2_ALLOWANCE_INSUFFICIENT: 'Approval',
  TX_NOT_VERIFIED: 'Transaction',
  TX_ALREADY_USED: 'Transaction',
  RESOLVER_NOT_ASSIGNED: 'Resolver',
  SECRET_NOT_RELEASED: 'Htlc',
  AFFILIATE_EXISTS: 'Affiliate',
  AFFILIATE_NOT_FOUND: 'Affiliate',
};

/** The integer `code` of every error. 25 is fixed by the spec; the others are ours and stable. */
export const ERROR_CODES = {
  UNAUTHORIZED: 1,
  VALIDATION_ERROR: 2,
  INVALID_JSON: 3,
  ROUTE_NOT_FOUND: 4,
  INTENT_NOT_FOUND: 5,
  QUOTE_NOT_FOUND: 6,
  QUOTE_EXPIRED: 7,
  QUOTE_ALREADY_USED: 8,
  NO_ROUTE: 9,
  UNKNOWN_NETWORK: 10,
  UNKNOWN_TOKEN: 11,
  INVALID_AMOUNT: 12,
  INVALID_ADDRESS: 13,
  PUBLIC_KEY_REQUIRED: 14,
  INSUFFICIENT_FUNDS: 15,
  INVALID_TRANSITION: 16,
  INTENT_EXPIRED: 17,
  APPROVAL_PAYLOAD_COUNT: 18,
  APPROVAL_MECHANISM_MISMATCH: 19,
  APPROVAL_CONFLICT: 20,
  INVALID_SIGNATURE: 21,
  INVALID_PSBT: 22,
  INVALID_COSIGN: 23,
  TX_NOT_VERIFIED: 24,
  PERMIT2_ALLOWANCE_INSUFFICIENT: 25,
  RESOLVER_NOT_ASSIGNED: 26,
  SECRET_NOT_RELEASED: 27,
  AFFILIATE_EXISTS: 28,
  AFFILIATE_NOT_FOUND: 29,
  UPSTREAM_UNAVAILABLE: 30,
  PAYLOAD_TOO_LARGE: 31,
  UNSUPPORTED_MEDIA_TYPE: 32,
  METHOD_NOT_ALLOWED: 33,
  BAD_REQUEST: 34,
  SERVICE_UNAVAILABLE: 35,
  INTERNAL_ERROR: 36,
  TX_ALREADY_USED: 37,
  REQUEST_TIMEOUT: 38,
  HEADERS_TOO_LARGE: 39,
} as const satisfies Record<SwapErrorName, number>;

/** Codes the kit (Fastify, Ajv, the JSON parser) produces, mapped onto ours. */
const KIT_CODE_ALIASES: Record<string, SwapErrorName> = {
  NOT_FOUND: 'ROUTE_NOT_FOUND',
  UNPROCESSABLE_ENTITY: 'VALIDATION_ERROR',
  TOO_MANY_REQUESTS: 'BAD_REQUEST',
  NOT_ACCEPTABLE: 'BAD_REQUEST',
  CONFLICT: 'BAD_REQUEST',
  FORBIDDEN: 'UNAUTHORIZED',
  MALFORMED_REQUEST: 'BAD_REQUEST',
  LENGTH_REQUIRED: 'BAD_REQUEST',
  URI_TOO_LONG: 'BAD_REQUEST',
  RANGE_NOT_SATISFIABLE: 'BAD_REQUEST',
};

export { SwapError as ErrorEnvelopeSchema } from '@rgbx/contracts/swap';
export type SwapErrorBody = Static<typeof SwapError>;

/**
 * A chains-module `VerificationError` (a PSBT, signature or transaction that does not do what it
 * must) as this service's `error`, its reason, expected and received values in `details`; any
 * other error is rethrown as it is.
 */
export function verificationFailure(
  err: unknown,
  error: { createWith(options: { details: Record<string, unknown> }, message: string): Error },
): never {
  if (err instanceof VerificationError) {
    throw error.createWith(
      {
        details: {
          reason: err.code,
          ...(err.expected === undefined ? {} : { expected: err.expected }),
          ...(err.received === undefined ? {} : { received: err.received }),
        },
      },
      err.message,
    );
  }
  throw err;
}

const ErrorRef = Type.Unsafe<SwapErrorBody>({ $ref: 'SwapError#' });

/**
 * The documented error replies of a route, by HTTP status. Typed as nothing so they do not widen
 * the handlers' return types.
 */
export function errorReplies(...statuses: number[]): Record<never, never> {
  return Object.fromEntries(statuses.map((c) => [c, ErrorRef]));
}

function nameOf(e: ErrorInfo): SwapErrorName {
  if (Object.hasOwn(ERROR_CODES, e.code)) return e.code as SwapErrorName;
  const alias = KIT_CODE_ALIASES[e.code];
  if (alias) return alias;
  if (e.statusCode >= 500) return e.statusCode === 503 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR';
  return 'BAD_REQUEST';
}

/** The one envelope factory, handed to `createServer`. */
export const swapEnvelope: ErrorEnvelopeFactory = (e) => {
  const name = nameOf(e);
  let details: Record<string, unknown> | undefined;
  if (e.validation) {
    details = { context: e.validation.context, validation: e.validation.issues };
  } else if (e.details !== undefined && e.details !== null && typeof e.details === 'object') {
    details = e.details as Record<string, unknown>;
  }
  const body: SwapErrorBody = {
    code: ERROR_CODES[name],
    type: name,
    message: e.message,
    ...(details ? { details } : {}),
    ...(ERROR_ENTITIES[name] ? { entity: ERROR_ENTITIES[name] } : {}),
  };
  // Our own codes keep their status; anything mapped onto ours answers with our table's status.
  const statusCode = Object.hasOwn(ERROR_CODES, e.code) ? e.statusCode : E[name].status;
  return { statusCode, body };
};

/** Rows for the README and the OpenAPI description. */
export function errorTable(): { code: number; type: string; status: number; description: string }[] {
  return listErrors(E as never).map((r) => ({
    code: ERROR_CODES[r.code as SwapErrorName],
    type: r.code,
    status: r.status,
    description: r.description ?? '',
  }));
}
