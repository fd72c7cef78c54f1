/**
 * `verifyWebhook`: checks a cloud webhook the way the spec orders it: first the RSA-SHA256
 * (PKCS#1 v1.5) signature over the exact request bytes, then the payload, then that `nodeId` is
 * the node the receiver expects. Pass the raw body: a re-serialized JSON body does not verify.
 */
import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import type { WalletEvent } from '../wallet-node/client.ts';
import { type NodeStatusEvent, parseNodeStatusEvent } from './payload.ts';
import { parseWalletEvent } from './wallet-payload.ts';

/** A PEM (SPKI `BEGIN PUBLIC KEY`) string or a KeyObject; an array during key rotation. */
export type PublicKeyInput = string | KeyObject | readonly (string | KeyObject)[];

/** The node(s) a receiver accepts events for. */
export type ExpectedNodeId = string | readonly string[] | ((nodeId: string) => boolean);

export type WebhookFailure =
  | 'missing_signature'
  | 'invalid_signature'
  | 'invalid_payload'
  | 'unexpected_node';

export type WebhookVerification =
  | { ok: true; event: NodeStatusEvent }
  | { ok: false; reason: WebhookFailure; message: string };

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function toBytes(rawBody: string | Uint8Array): Buffer {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (rawBody instanceof Uint8Array)
    return Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  throw new TypeError(
    'verifyWebhook: rawBody must be the raw request bytes (Buffer, Uint8Array or string), not a parsed object',
  );
}

const keyCache = new Map<string, KeyObject>();

function toKeys(publicKey: PublicKeyInput): KeyObject[] {
  const list = Array.isArray(publicKey) ? publicKey : [publicKey as string | KeyObject];
  if (list.length === 0) throw new TypeError('verifyWebhook: no public key given');
  return list.map((k) => {
    if (typeof k !== 'string') return k;
    let key = keyCache.get(k);
    if (!key) {
      key = createPublicKey(k);
      if (keyCache.size > 32) keyCache.clear();
      keyCache.set(k, key);
    }
    return key;
  });
}

function nodeMatches(expected: ExpectedNodeId, nodeId: string): boolean {
  if (typeof expected === 'function') return expected(nodeId) === true;
  if (typeof expected === 'string') return expected === nodeId;
  return expected.includes(nodeId);
}

/** The signature check alone: the result of checking `X-Service-Signature` over the raw body. */
export type SignatureCheck =
  | { ok: true; text: string }
  | { ok: false; reason: 'missing_signature' | 'invalid_signature'; message: string };

/**
 * Checks the RSA-SHA256 (PKCS#1 v1.5) signature of a webhook from any of our services (the cloud's node-status
 * webhooks, the wallet node's wallet-event webhooks) over the exact request bytes; on success returns the body
 * as text for the payload's own parser. Never throws for bad input.
 *
 * @example
 * const s = verifyWebhookSignature(rawBody, req.headers['x-service-signature'], pem);
 * if (!s.ok) return reply.code(403).send({ message: s.message });
 */
export function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  signature: string | readonly string[] | undefined | null,
  publicKey: PublicKeyInput,
): SignatureCheck {
  const bytes = toBytes(rawBody);
  const keys = toKeys(publicKey);
  if (signature === undefined || signature === null || signature === '') {
    return { ok: false, reason: 'missing_signature', message: 'X-Service-Signature header is missing' };
  }
  if (typeof signature !== 'string' || !BASE64.test(signature.trim())) {
    return { ok: false, reason: 'invalid_signature', message: 'X-Service-Signature is not one Base64 value' };
  }
  const sig = Buffer.from(signature.trim(), 'base64');
  const valid = keys.some((key) => {
    try {
      return verify('sha256', bytes, key, sig);
    } catch {
      return false;
    }
  });
  if (!valid) {
    return { ok: false, reason: 'invalid_signature', message: 'signature does not match the body' };
  }
  return { ok: true, text: bytes.toString('utf8') };
}

/**
 * Verifies one webhook request.
 *
 * @param rawBody the request body exactly as received.
 * @param signature the `X-Service-Signature` header (Base64); undefined when the header is absent.
 * @param publicKey the key from `GET /api/webhook-public-key` (or all published keys during a rotation).
 * @param expectedNodeId the node this receiver handles (or a list / predicate).
 * @returns `{ok: true, event}` or `{ok: false, reason, message}`; never throws for bad input, only
 *   for a programming error (a parsed object instead of the raw body, an unusable key).
 *
 * @example
 * const r = verifyWebhook(req.rawBody, req.headers['x-service-signature'], pem, myNodeId);
 * if (!r.ok) return reply.code(403).send({ message: 'Forbidden - Invalid Signature' });
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  signature: string | readonly string[] | undefined | null,
  publicKey: PublicKeyInput,
  expectedNodeId: ExpectedNodeId,
): WebhookVerification {
  const checked = verifyWebhookSignature(rawBody, signature, publicKey);
  if (!checked.ok) return checked;
  const parsed = parseNodeStatusEvent(checked.text);
  if ('error' in parsed) return { ok: false, reason: 'invalid_payload', message: parsed.error };
  if (!nodeMatches(expectedNodeId, parsed.event.nodeId)) {
    return { ok: false, reason: 'unexpected_node', message: 'nodeId is not the expected node' };
  }
  return { ok: true, event: parsed.event };
}

export type WalletWebhookVerification =
  | {
      ok: true;
      event: WalletEvent;
      /**
       * `<wallet>-<event id>`, read from the signed body: the key to drop duplicates (retries repeat it). The
       * node sends the same as `X-Service-Event-Id`, but headers are not signed: whoever replays a captured
       * delivery can change them, never this.
       */
      eventKey: string;
    }
  | {
      ok: false;
      reason: 'missing_signature' | 'invalid_signature' | 'invalid_payload' | 'unexpected_wallet';
      message: string;
    };

/**
 * Verifies one wallet-event webhook of the wallet node (`POST /wallet/webhook`): the signature as for the cloud's
 * webhooks (same headers, same scheme; the key from the node's `GET /wallet/webhook/public-key`), then the event,
 * then that it belongs to `expectedWallet` (the wallet's master fingerprint). Deduplicate by `eventKey` (from the
 * signed body; retries repeat it), not by the unsigned `X-Service-Event-Id` header; `event.id` increases by one
 * per event of the wallet, so a receiver that keeps the last id also refuses a replayed older event.
 *
 * @example
 * const r = verifyWalletWebhook(rawBody, req.headers['x-service-signature'], pem, '1a2b3c4d');
 * if (r.ok && r.event.type === 'transfer') console.log(r.event.idx, r.event.new_status);
 */
export function verifyWalletWebhook(
  rawBody: string | Uint8Array,
  signature: string | readonly string[] | undefined | null,
  publicKey: PublicKeyInput,
  expectedWallet: string | readonly string[],
): WalletWebhookVerification {
  const checked = verifyWebhookSignature(rawBody, signature, publicKey);
  if (!checked.ok) return checked;
  const parsed = parseWalletEvent(checked.text);
  if ('error' in parsed) return { ok: false, reason: 'invalid_payload', message: parsed.error };
  const wallets = typeof expectedWallet === 'string' ? [expectedWallet] : expectedWallet;
  if (!wallets.includes(parsed.event.wallet)) {
    return { ok: false, reason: 'unexpected_wallet', message: 'wallet is not the expected wallet' };
  }
  return { ok: true, event: parsed.event, eventKey: `${parsed.event.wallet}-${parsed.event.id}` };
}
