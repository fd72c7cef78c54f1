/**
 * The cloud API's error codes (one central table) and its envelope:
 * `{"error": {"code": "NODE_NOT_FOUND", "message": "…", "details": {…}?}}` with the HTTP status of
 * the code. The kit's own codes (VALIDATION_ERROR, INVALID_JSON, NOT_FOUND, PAYLOAD_TOO_LARGE, …)
 * come out in the same shape.
 */
import {
  defineErrors,
  ErrorEnvelope,
  type ErrorEnvelopeFactory,
  KitErrors,
  listErrors,
} from '@rgbx/service-kit';

export const CloudErrors = defineErrors({
  UNAUTHORIZED: {
    status: 401,
    message: 'Missing or invalid bearer token',
    description: 'No `Authorization: Bearer <token>` header, or the token is unknown or revoked',
  },
  NODE_NOT_FOUND: {
    status: 404,
    message: (id: string) => `node ${id} not found`,
    description: 'No node with this id in the token’s account (other accounts’ nodes are never visible)',
  },
  EVENT_NOT_FOUND: {
    status: 404,
    message: (id: string) => `webhook event ${id} not found`,
    description: 'No webhook event with this id for this node',
  },
  DELIVERY_NOT_FOUND: {
    status: 404,
    message: (id: string) => `webhook delivery ${id} not found`,
    description: 'No delivery attempt (or event) with this id for this node',
  },
  NODE_NAME_TAKEN: {
    status: 409,
    message: (name: string) => `a node named ${JSON.stringify(name)} already exists`,
    description: 'Node names are unique per account',
  },
  NODE_BUSY: {
    status: 409,
    message: (id: string, status: string) => `node ${id} is ${status}; try again when the operation ends`,
    description: 'Another operation (pause, resume, delete, settings change) is still running on the node',
  },
  INVALID_STATE: {
    status: 409,
    message: (id: string, status: string, op: string) => `node ${id} is ${status}; cannot ${op}`,
    description: 'The operation does not apply to the node’s current status',
  },
  UNSUPPORTED_NETWORK: {
    status: 400,
    message: (network: string, allowed: string) =>
      `network ${JSON.stringify(network)} is not offered (allowed: ${allowed})`,
    description: 'The cloud only hosts nodes on the configured networks (regtest on the devnet)',
  },
  INVALID_WEBHOOK_URL: {
    status: 400,
    message: (reason: string) => `invalid webhookUrl: ${reason}`,
    description: 'Not an absolute HTTPS URL, has credentials, or points at a refused address',
  },
  NODE_LIMIT_REACHED: {
    status: 409,
    message: (max: number) => `the account already has ${max} nodes`,
    description: 'Per-account node limit ([nodes] max_per_account)',
  },
});

export type CloudErrorCode = keyof typeof CloudErrors;

/** Every code the API can answer, for the README and OpenAPI descriptions. */
export function allErrorCodes() {
  return [...listErrors(CloudErrors), ...listErrors(KitErrors)];
}

/** The one JSON error envelope of the cloud API. */
export const cloudEnvelope: ErrorEnvelopeFactory = ErrorEnvelope.factory;
