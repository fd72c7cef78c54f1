/**
 * How our services sign a webhook, in one place (the cloud's node-status webhooks and the wallet node's
 * wallet-event webhooks): RSA-SHA256 with PKCS#1 v1.5 padding over the exact body bytes, the signature in
 * Base64 in `X-Service-Signature`, the key named by its RFC 7638 thumbprint in `X-Service-Signature-Key-Id`,
 * and the same `X-Service-*` headers on every delivery. Receivers verify with the SDK's `verifyWebhook` /
 * `verifyWebhookSignature` (packages/sdk/src/webhooks/verify.ts).
 *
 * @example
 * const sig = await signWebhookBody(bytes, key);           // off the event loop (libuv threadpool)
 * const headers = webhookHeaders({ signature: sig, keyId, eventId, eventType, attempt: 1, sequence: 7, userAgent });
 */
import { createHash, generateKeyPair, type KeyObject, sign } from 'node:crypto';
import { promisify } from 'node:util';

/** RSA modulus of every signing key we generate. */
export const WEBHOOK_KEY_BITS = 3072;

/** What a public-key route announces about the scheme (the cloud's `GET /api/webhook-public-key`). */
export const WEBHOOK_SIGNATURE_SCHEME = {
  algorithm: 'RSA-SHA256',
  padding: 'PKCS1-v1_5',
  signatureHeader: 'X-Service-Signature',
  signatureEncoding: 'base64',
} as const;

/** RFC 7638 JWK thumbprint (SHA-256, base64url) of an RSA public key: the key id. */
export function keyIdOf(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: 'jwk' }) as { e: string; n: string };
  const canonical = JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n });
  return createHash('sha256').update(canonical).digest('base64url');
}

/** A new signing key pair (generated in the threadpool: a 3072-bit key takes ~0.1–1 s of CPU). */
export function generateWebhookKey(): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  return promisify(generateKeyPair)('rsa', { modulusLength: WEBHOOK_KEY_BITS, publicExponent: 0x10001 });
}

/** The signature of `body` (Base64), on the calling thread: for worker threads and fallbacks. */
export function signWebhookBodySync(body: Uint8Array, key: KeyObject): string {
  return sign('sha256', body, key).toString('base64');
}

/** The signature of `body` (Base64), computed in libuv's threadpool so the event loop stays free. */
export function signWebhookBody(body: Uint8Array, key: KeyObject): Promise<string> {
  return new Promise((resolve, reject) => {
    sign('sha256', body, key, (err, sig) => (err ? reject(err) : resolve(sig.toString('base64'))));
  });
}

export interface WebhookHeaderFields {
  signature: string;
  keyId: string;
  /** Stable across attempts: the receiver's deduplication key. */
  eventId: string;
  eventType: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Increases per subscription (node, wallet) in delivery order. */
  sequence: number | bigint;
  userAgent: string;
  /** Unix seconds of this attempt (default: now). */
  timestamp?: number;
}

/** The headers of one delivery attempt. */
export function webhookHeaders(f: WebhookHeaderFields): Record<string, string> {
  return {
    'content-type': 'application/json; charset=utf-8',
    'user-agent': f.userAgent,
    'x-service-signature': f.signature,
    'x-service-signature-key-id': f.keyId,
    'x-service-event-id': f.eventId,
    'x-service-event-type': f.eventType,
    'x-service-timestamp': String(f.timestamp ?? Math.floor(Date.now() / 1000)),
    'x-service-attempt': String(f.attempt),
    'x-service-sequence': String(f.sequence),
  };
}
