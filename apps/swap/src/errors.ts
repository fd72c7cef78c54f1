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

/**
 * The one table: per error its integer `code` (25 is fixed by the spec; the others are ours and
 * stable), HTTP status, message, description, the Hotpot `entity` it is about (its Go SDK decodes
 * `{code, message, entity}`) and the kit's codes (Fastify, Ajv, the JSON parser) answered as it.
 */
const TABLE = {
  UNAUTHORIZED: {
    code: 1,
    kitAliases: ['FORBIDDEN'],
    status: 401,
    message: 'Missing or invalid API key (send it in the X-API-Key header)',
    description: 'No X-API-Key header, an unknown key, or a revoked key.',
  },
  VALIDATION_ERROR: {
    code: 2,
    kitAliases: ['UNPROCESSABLE_ENTITY'],
    status: 400,
    message: 'Request validation failed',
    description:
      'Body, query or path parameters do not match the schema; details.validation lists the issues.',
  },
  INVALID_JSON: {
    code: 3,
    status: 400,
    message: 'Invalid JSON body',
    description: 'The body is not valid JSON.',
  },
  ROUTE_NOT_FOUND: {
    code: 4,
    kitAliases: ['NOT_FOUND'],
    status: 404,
    message: (method: string, path: string) => `Route ${method} ${path} not found`,
    description: 'No such route.',
  },
  INTENT_NOT_FOUND: {
    code: 5,
    entity: 'Intent',
    status: 404,
    message: (id: string) => `Intent ${id} not found`,
    description: 'Unknown intent, or one created with another API key.',
  },
  QUOTE_NOT_FOUND: {
    code: 6,
    entity: 'Quote',
    status: 404,
    message: (id: string) => `Quote ${id} not found`,
    description: 'Unknown quote, or one created with another API key.',
  },
  QUOTE_EXPIRED: {
    code: 7,
    entity: 'Quote',
    status: 422,
    message: (id: string) => `Quote ${id} has expired; request a new quote`,
    description: 'The quote expiry passed before the intent was created.',
  },
  QUOTE_ALREADY_USED: {
    code: 8,
    entity: 'Quote',
    status: 409,
    message: (id: string) => `Quote ${id} already made an intent`,
    description: 'A quote makes at most one intent.',
  },
  NO_ROUTE: {
    code: 9,
    entity: 'Quote',
    status: 422,
    message: 'No resolver quotes this pair',
    description: 'No enabled resolver answered the request for quote (RGB sources are never quoted yet).',
  },
  UNKNOWN_NETWORK: {
    code: 10,
    entity: 'Network',
    status: 422,
    message: (id: number) => `Unknown network ${id}`,
    description: 'The network id is not configured.',
  },
  UNKNOWN_TOKEN: {
    code: 11,
    entity: 'Token',
    status: 422,
    message: (network: number, token: string) => `Unknown token ${token} on network ${network}`,
    description: 'The token is not configured on that network.',
  },
  INVALID_AMOUNT: {
    code: 12,
    entity: 'Quote',
    status: 422,
    message: (reason: string) => `Invalid amount: ${reason}`,
    description: 'Not a positive amount, more decimals than the token has, or outside the resolver limits.',
  },
  INVALID_ADDRESS: {
    code: 13,
    entity: 'Address',
    status: 422,
    message: (field: string, reason: string) => `Invalid ${field}: ${reason}`,
    description: 'An address or public key does not belong to the network, or does not match.',
  },
  PUBLIC_KEY_REQUIRED: {
    code: 14,
    entity: 'Address',
    status: 422,
    message: 'sourcePublicKey (user_source_public_key) is required for Bitcoin and Solana sources',
    description: 'Bitcoin and Solana sources need the public key of the source address.',
  },
  INSUFFICIENT_FUNDS: {
    code: 15,
    entity: 'Address',
    status: 422,
    message: (needed: string, found: string) =>
      `The source address has ${found} sats spendable; ${needed} are needed (amount and fee)`,
    description: 'Bitcoin source: the UTXOs found through the Electrum indexer do not cover amount + fee.',
  },
  INVALID_TRANSITION: {
    code: 16,
    entity: 'Intent',
    status: 409,
    message: (trigger: string, status: string) => `Cannot ${trigger} an intent in status ${status}`,
    description: 'The lifecycle table has no such transition from the current status.',
  },
  INTENT_EXPIRED: {
    code: 17,
    entity: 'Intent',
    status: 422,
    message: (id: string) => `Intent ${id} is past its deadline`,
    description: 'The action needs an intent before its deadline.',
  },
  APPROVAL_PAYLOAD_COUNT: {
    code: 18,
    entity: 'Approval',
    status: 400,
    message: 'Exactly one of permit2, psbt, cosign must be provided',
    description: 'Surface A approvals carry exactly one payload.',
  },
  APPROVAL_MECHANISM_MISMATCH: {
    code: 19,
    entity: 'Approval',
    status: 422,
    message: (expected: string, got: string) => `This intent expects a ${expected} approval, got ${got}`,
    description: 'Approval data is never converted between mechanisms.',
  },
  APPROVAL_CONFLICT: {
    code: 20,
    entity: 'Approval',
    status: 409,
    message: 'A different approval was already added to this intent',
    description: 'Re-posting the same approval is idempotent; a different one is refused.',
  },
  INVALID_SIGNATURE: {
    code: 21,
    entity: 'Approval',
    status: 422,
    message: (reason: string) => `Permit2 signature rejected: ${reason}`,
    description: 'Malformed signature, or the recovered signer is not the source address.',
  },
  INVALID_PSBT: {
    code: 22,
    entity: 'Approval',
    status: 422,
    message: (reason: string) => `PSBT rejected: ${reason}`,
    description:
      'Not a PSBT, changed transaction (inputs, outputs, locktime…), or a missing/invalid signature on a listed input.',
  },
  INVALID_COSIGN: {
    code: 23,
    entity: 'Approval',
    status: 422,
    message: (reason: string) => `Co-signed transaction rejected: ${reason}`,
    description:
      'Not our transaction, wrong or missing user signature at position 1, or positions 0/2 touched.',
  },
  TX_NOT_VERIFIED: {
    code: 24,
    entity: 'Transaction',
    status: 422,
    message: (reason: string) => `Reported transaction not verified: ${reason}`,
    description:
      'A reported transaction is not on chain yet, not confirmed enough, or does not do what it should.',
  },
  TX_ALREADY_USED: {
    code: 37,
    entity: 'Transaction',
    status: 409,
    message: (tx: string, by: string) =>
      `Transaction ${tx} already settles ${by}; one transaction settles one leg of one intent`,
    description:
      'A reported transaction already settles a leg (of this or another intent): a payment is never counted twice.',
  },
  RESOLVER_NOT_ASSIGNED: {
    code: 26,
    entity: 'Resolver',
    status: 404,
    message: (id: string) => `Intent ${id} not found`,
    description: 'Resolver API: the intent was quoted by another resolver (answered like an unknown intent).',
  },
  SECRET_NOT_RELEASED: {
    code: 27,
    entity: 'Htlc',
    status: 409,
    message: 'The secret is released only to the accepting resolver once the intent is Fulfilled',
    description: 'Resolver API: preimage requested too early.',
  },
  AFFILIATE_EXISTS: {
    code: 28,
    entity: 'Affiliate',
    status: 409,
    message: (name: string) => `Affiliate ${name} already exists for this API key`,
    description: 'Affiliate names are unique per API key.',
  },
  AFFILIATE_NOT_FOUND: {
    code: 29,
    entity: 'Affiliate',
    status: 422,
    message: (name: string) => `Affiliate ${name} is not configured for this API key`,
    description: 'A quote named an affiliate fee for an affiliate this key has not created.',
  },
  TOO_MANY_STREAMS: {
    code: 40,
    status: 429,
    message: (max: number) => `At most ${max} event streams per key are open at once; close one first`,
    description: 'An event feed (`/events`) opened beyond `swap.event_max_streams_per_key` for one key.',
  },
  UPSTREAM_UNAVAILABLE: {
    code: 30,
    status: 503,
    message: (what: string) => `${what} is unavailable; retry later`,
    description: 'The Electrum indexer or an EVM RPC could not be reached.',
  },
  PERMIT2_ALLOWANCE_INSUFFICIENT: {
    code: 25,
    entity: 'Approval',
    status: 422,
    message:
      'Permit2 is not approved for this token: approve the Permit2 contract on chain, then submit again',
    description:
      'The ERC-20/TRC-20 allowance of the source address to the Permit2 contract is below the source amount (spec: code 25).',
  },
  PAYLOAD_TOO_LARGE: {
    code: 31,
    status: 413,
    message: 'Request body is too large',
    description: 'Body over the limit.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    code: 32,
    status: 415,
    message: (ct: string) => `Unsupported media type: ${ct}`,
    description: 'Bodies are application/json.',
  },
  METHOD_NOT_ALLOWED: {
    code: 33,
    status: 405,
    message: 'Method Not Allowed',
    description: 'Wrong method.',
  },
  BAD_REQUEST: {
    code: 34,
    kitAliases: [
      'TOO_MANY_REQUESTS',
      'NOT_ACCEPTABLE',
      'CONFLICT',
      'MALFORMED_REQUEST',
      'LENGTH_REQUIRED',
      'URI_TOO_LONG',
      'RANGE_NOT_SATISFIABLE',
    ],
    status: 400,
    message: 'Bad Request',
    description: 'Malformed request (headers, URL).',
  },
  REQUEST_TIMEOUT: {
    code: 38,
    status: 408,
    message: 'Request not received in time',
    description:
      'The request (headers and body) did not arrive within the server timeout; the connection is closed.',
  },
  HEADERS_TOO_LARGE: {
    code: 39,
    status: 431,
    message: 'Request headers are too large',
    description: 'The request headers exceed the server limit; the connection is closed.',
  },
  SERVICE_UNAVAILABLE: {
    code: 35,
    status: 503,
    message: (reason: string) => `Service unavailable: ${reason}`,
    description: 'Health check: the database or an indexer cannot be reached; the service is shutting down.',
  },
  INTERNAL_ERROR: {
    code: 36,
    status: 500,
    message: 'Internal Server Error',
    description: 'A bug; the request id in x-request-id finds it in the logs.',
  },
} as const satisfies Record<string, SwapErrorRow>;

interface SwapErrorRow {
  code: number;
  status: number;
  message: string | ((...args: never[]) => string);
  description: string;
  entity?: string;
  kitAliases?: readonly string[];
}

export const E = defineErrors(TABLE);

export type SwapErrorName = keyof typeof E;

/** The integer `code` of every error (from the table). */
export const ERROR_CODES = Object.fromEntries(
  Object.entries(TABLE).map(([name, row]) => [name, row.code]),
) as { readonly [K in SwapErrorName]: (typeof TABLE)[K]['code'] };

/** The kit's codes answered as ours (from the table's `kitAliases`). */
const KIT_CODE_ALIASES = new Map<string, SwapErrorName>(
  Object.entries(TABLE).flatMap(([name, row]) =>
    ((row as SwapErrorRow).kitAliases ?? []).map((alias) => [alias, name as SwapErrorName] as const),
  ),
);

const entityOf = (name: SwapErrorName): string | undefined => (TABLE[name] as SwapErrorRow).entity;

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
  const alias = KIT_CODE_ALIASES.get(e.code);
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
    ...(entityOf(name) ? { entity: entityOf(name) } : {}),
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
