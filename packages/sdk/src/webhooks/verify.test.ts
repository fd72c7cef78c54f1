import { constants, generateKeyPairSync, sign } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookListener } from './node-http.ts';
import type { NodeStatusEvent } from './payload.ts';
import { handleWebhook, WEBHOOK_MESSAGES } from './receiver.ts';
import { verifyWebhook } from './verify.ts';

const pair = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = pair();
const other = pair();
const pem = key.publicKey.export({ type: 'spki', format: 'pem' }) as string;
const otherPem = other.publicKey.export({ type: 'spki', format: 'pem' }) as string;
const NODE = '5d1f8b56-7f0e-4d8e-9f77-5d8c7d2f0a11';

function payload(over: Record<string, unknown> = {}): string {
  return JSON.stringify({
    eventType: 'NODE_STATUS_UPDATED',
    eventTimestamp: '2026-11-21T06:00:00.123Z',
    details: { nodeId: NODE, status: 'RUNNING' },
    nodeId: NODE,
    ...over,
  });
}
const signed = (body: string, k = key.privateKey) => sign('sha256', Buffer.from(body), k).toString('base64');

describe('verifyWebhook', () => {
  const body = payload();
  const sig = signed(body);

  it('accepts the exact bytes signed with RSA-SHA256 PKCS#1 v1.5 and returns the event', () => {
    const r = verifyWebhook(Buffer.from(body), sig, pem, NODE);
    expect(r).toEqual({ ok: true, event: JSON.parse(body) });
    expect(verifyWebhook(body, sig, key.publicKey, NODE).ok).toBe(true);
    expect(verifyWebhook(new Uint8Array(Buffer.from(body)), sig, [otherPem, pem], NODE).ok).toBe(true);
    expect(verifyWebhook(body, sig, pem, [NODE, 'x']).ok).toBe(true);
    expect(verifyWebhook(body, sig, pem, (id) => id === NODE).ok).toBe(true);
  });

  it('refuses tampered bodies, wrong keys, missing or malformed signatures', () => {
    const cases: [string | Buffer, string | undefined, string, string][] = [
      [body.replace('RUNNING', 'FAILED'), sig, pem, 'invalid_signature'],
      [`${body} `, sig, pem, 'invalid_signature'],
      [body, sig, otherPem, 'invalid_signature'],
      [body, signed(body, other.privateKey), pem, 'invalid_signature'],
      [body, undefined, pem, 'missing_signature'],
      [body, '', pem, 'missing_signature'],
      [body, 'not base64!', pem, 'invalid_signature'],
      [body, sig.slice(0, -4), pem, 'invalid_signature'],
      [body, Buffer.from(sig, 'base64').toString('base64url'), pem, 'invalid_signature'],
    ];
    for (const [b, s, k, reason] of cases) {
      const r = verifyWebhook(b, s, k, NODE);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toBe(reason);
    }
  });

  it('refuses a PSS signature (a different scheme) and a re-serialized body', () => {
    const pss = sign('sha256', Buffer.from(body), {
      key: key.privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
    }).toString('base64');
    expect(verifyWebhook(body, pss, pem, NODE).ok).toBe(false);
    const spaced = JSON.stringify(JSON.parse(body), null, 1);
    expect(verifyWebhook(spaced, sig, pem, NODE).ok).toBe(false);
    const unicode = payload({ note: '\\u00e9' }).replace('"\\\\u00e9"', '"\\u00e9"');
    const reparsed = JSON.stringify(JSON.parse(unicode));
    expect(reparsed).not.toBe(unicode);
    expect(verifyWebhook(reparsed, signed(unicode), pem, NODE).ok).toBe(false);
    expect(() => verifyWebhook(JSON.parse(body), sig, pem, NODE)).toThrow(/raw request bytes/);
  });

  it('checks nodeId after the signature, and the payload shape', () => {
    const r = verifyWebhook(body, sig, pem, 'another-node');
    expect(r).toMatchObject({ ok: false, reason: 'unexpected_node' });
    const bad = [
      payload({ nodeId: 'x' }),
      payload({ eventType: 'OTHER' }),
      payload({ eventTimestamp: 'yesterday' }),
      payload({ details: { nodeId: NODE, status: 'DESTROYED' } }),
      '[1,2]',
      'not json',
    ];
    for (const b of bad)
      expect(verifyWebhook(b, signed(b), pem, NODE)).toMatchObject({ ok: false, reason: 'invalid_payload' });
  });
});

describe('handleWebhook and the node:http listener', () => {
  const seen: NodeStatusEvent[] = [];
  let failNext = false;
  const server = createServer(
    createWebhookListener({
      publicKey: async () => pem,
      expectedNodeId: NODE,
      maxBodyBytes: 4096,
      onEvent: (e) => {
        if (failNext) {
          failNext = false;
          throw new Error('db down');
        }
        seen.push(e);
      },
    }),
  );
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const post = (body: string | Buffer, headers: Record<string, string>, method = 'POST') =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: '/hook',
          headers: { 'content-type': 'application/json', ...headers },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(parts).toString() || 'null'),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('answers 200 {message} for a valid webhook and 403 {message} for an invalid one', async () => {
    const body = payload();
    expect(
      await post(body, {
        'x-service-signature': signed(body),
        'x-service-event-id': 'e1',
        'x-service-attempt': '2',
      }),
    ).toEqual({
      status: 200,
      body: { message: 'Webhook event processed successfully' },
    });
    expect(seen).toEqual([JSON.parse(body)]);
    expect(await post(body.replace('RUNNING', 'PAUSED'), { 'x-service-signature': signed(body) })).toEqual({
      status: 403,
      body: { message: 'Forbidden - Invalid Signature' },
    });
    expect(await post(body, {})).toEqual({
      status: 403,
      body: { message: WEBHOOK_MESSAGES.invalidSignature },
    });
    const foreign = payload({ nodeId: 'n2', details: { nodeId: 'n2', status: 'RUNNING' } });
    expect((await post(foreign, { 'x-service-signature': signed(foreign) })).status).toBe(403);
    expect(seen).toHaveLength(1);
  });

  it('answers 500 when the application handler fails (so the cloud retries), 413 and 405', async () => {
    const body = payload();
    failNext = true;
    expect(await post(body, { 'x-service-signature': signed(body) })).toEqual({
      status: 500,
      body: { message: 'Webhook handler failed' },
    });
    expect((await post(Buffer.alloc(5000, 'a'), { 'x-service-signature': 'AAAA' })).status).toBe(413);
    expect((await post('', {}, 'GET')).status).toBe(405);
  });

  it('passes event id and attempt to the handler', async () => {
    const body = payload();
    let ctx: unknown;
    const a = await handleWebhook(
      Buffer.from(body),
      {
        'x-service-signature': signed(body),
        'x-service-event-id': 'ev',
        'x-service-attempt': '3',
        'x-service-sequence': '9',
      },
      {
        publicKey: pem,
        expectedNodeId: NODE,
        onEvent: (_e, c) => {
          ctx = c;
        },
      },
    );
    expect(a.statusCode).toBe(200);
    expect(ctx).toEqual({ eventId: 'ev', attempt: 3, sequence: 9 });
  });
});
