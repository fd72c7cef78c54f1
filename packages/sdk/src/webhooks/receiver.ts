/**
 * Framework-neutral webhook handling: verify, then hand the event to the application, then answer
 * exactly as the spec says (`200 {message}` on success, `403 {message}` on a bad signature).
 * The Fastify, Express and node:http adapters all go through `handleWebhook`.
 */
import type { NodeStatusEvent } from './payload.ts';
import { type ExpectedNodeId, type PublicKeyInput, verifyWebhook } from './verify.ts';

/** Header names the cloud sends (lower case, as Node delivers them). */
export const WEBHOOK_HEADERS = {
  signature: 'x-service-signature',
  keyId: 'x-service-signature-key-id',
  eventId: 'x-service-event-id',
  timestamp: 'x-service-timestamp',
  attempt: 'x-service-attempt',
  sequence: 'x-service-sequence',
} as const;

export const WEBHOOK_MESSAGES = {
  ok: 'Webhook event processed successfully',
  invalidSignature: 'Forbidden - Invalid Signature',
  invalidPayload: 'Forbidden - Invalid Payload',
  unexpectedNode: 'Forbidden - Unexpected nodeId',
  handlerFailed: 'Webhook handler failed',
  tooLarge: 'Payload Too Large',
  methodNotAllowed: 'Method Not Allowed',
} as const;

/** Default largest body read by the adapters (the cloud's payloads are a few hundred bytes). */
export const DEFAULT_WEBHOOK_BODY_LIMIT = 64 * 1024;

export interface WebhookContext {
  /** `X-Service-Event-Id`: the same on every retry of one event (use it to drop duplicates). */
  eventId?: string;
  /** `X-Service-Attempt`: 1 for the first try. */
  attempt?: number;
  /** `X-Service-Sequence`: increases with every event of the cloud (order per node). */
  sequence?: number;
}

export interface WebhookReceiverOptions {
  /** The key(s) from `GET /api/webhook-public-key`, or a function returning them (may be async). */
  publicKey: PublicKeyInput | (() => PublicKeyInput | Promise<PublicKeyInput>);
  expectedNodeId: ExpectedNodeId;
  /** Runs only for verified events. Throwing answers 500 so the cloud retries. */
  onEvent: (event: NodeStatusEvent, ctx: WebhookContext) => void | Promise<void>;
  /** Largest body read (adapters answer 413 above it). Default 64 KiB. */
  maxBodyBytes?: number;
}

export interface WebhookAnswer {
  statusCode: 200 | 403 | 413 | 405 | 500;
  body: { message: string };
  event?: NodeStatusEvent;
}

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

function intHeader(headers: Headers, name: string): number | undefined {
  const v = header(headers, name);
  return v !== undefined && /^\d{1,15}$/.test(v) ? Number(v) : undefined;
}

/** Verifies `rawBody` with the headers and, if valid, runs `onEvent`. Never throws. */
export async function handleWebhook(
  rawBody: Uint8Array | string,
  headers: Headers,
  opts: WebhookReceiverOptions,
): Promise<WebhookAnswer> {
  const key = typeof opts.publicKey === 'function' ? await opts.publicKey() : opts.publicKey;
  const r = verifyWebhook(rawBody, header(headers, WEBHOOK_HEADERS.signature), key, opts.expectedNodeId);
  if (!r.ok) {
    const message =
      r.reason === 'unexpected_node'
        ? WEBHOOK_MESSAGES.unexpectedNode
        : r.reason === 'invalid_payload'
          ? WEBHOOK_MESSAGES.invalidPayload
          : WEBHOOK_MESSAGES.invalidSignature;
    return { statusCode: 403, body: { message } };
  }
  const eventId = header(headers, WEBHOOK_HEADERS.eventId);
  const attempt = intHeader(headers, WEBHOOK_HEADERS.attempt);
  const sequence = intHeader(headers, WEBHOOK_HEADERS.sequence);
  const ctx: WebhookContext = {
    ...(eventId === undefined ? {} : { eventId }),
    ...(attempt === undefined ? {} : { attempt }),
    ...(sequence === undefined ? {} : { sequence }),
  };
  try {
    await opts.onEvent(r.event, ctx);
  } catch {
    return { statusCode: 500, body: { message: WEBHOOK_MESSAGES.handlerFailed } };
  }
  return { statusCode: 200, body: { message: WEBHOOK_MESSAGES.ok }, event: r.event };
}
