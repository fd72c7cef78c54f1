/**
 * The SDK's receiver middleware on real Fastify and Express servers (both are devDependencies of
 * the cloud app, not of the SDK): verification happens on the raw bytes before any parser, and
 * the answers are exactly the spec's `200 {message}` / `403 {message}`.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { expressWebhookMiddleware, fastifyWebhookPlugin, type NodeStatusEvent } from '@rgbx/sdk';
import express from 'express';
import fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
const NODE = '0b8f3c1e-2a4d-4f6b-8c9d-1e2f3a4b5c6d';
// Deliberately formatted with spaces and an escape: any re-serialization would break the signature.
const BODY = `{"eventType": "NODE_STATUS_UPDATED", "eventTimestamp": "2026-11-21T06:00:00.000Z", "details": {"nodeId": "${NODE}", "status": "RUNNING"}, "nodeId": "${NODE}", "note": "caf\\u00e9"}`;
const SIG = sign('sha256', Buffer.from(BODY), privateKey).toString('base64');

async function exercise(base: string, seen: NodeStatusEvent[]) {
  const post = async (body: string, sig?: string) => {
    const r = await fetch(`${base}/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(sig ? { 'x-service-signature': sig } : {}) },
      body,
    });
    return { status: r.status, body: await r.json() };
  };
  expect(await post(BODY, SIG)).toEqual({
    status: 200,
    body: { message: 'Webhook event processed successfully' },
  });
  expect(seen.map((e) => e.details.status)).toEqual(['RUNNING']);
  expect(await post(BODY.replace('RUNNING', 'FAILED'), SIG)).toEqual({
    status: 403,
    body: { message: 'Forbidden - Invalid Signature' },
  });
  expect(await post(BODY)).toEqual({ status: 403, body: { message: 'Forbidden - Invalid Signature' } });
  const other = BODY.replaceAll(NODE, 'someone-else');
  expect((await post(other, sign('sha256', Buffer.from(other), privateKey).toString('base64'))).status).toBe(
    403,
  );
  expect(seen).toHaveLength(1);
}

describe('Fastify plugin', () => {
  const seen: NodeStatusEvent[] = [];
  const app = fastify();
  app.register(fastifyWebhookPlugin, {
    prefix: '/webhook',
    publicKey: pem,
    expectedNodeId: NODE,
    onEvent: (e: NodeStatusEvent) => {
      seen.push(e);
    },
  });
  // A JSON route next to it keeps the app's normal parser.
  app.post('/json', async (req) => ({ got: req.body }));
  beforeAll(() => app.listen({ port: 0, host: '127.0.0.1' }));
  afterAll(() => app.close());

  it('verifies the raw body and answers 200/403', async () => {
    await exercise(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, seen);
    const j = await app.inject({ method: 'POST', url: '/json', payload: { a: 1 } });
    expect(j.json()).toEqual({ got: { a: 1 } });
  });
});

describe('Express middleware', () => {
  const seen: NodeStatusEvent[] = [];
  const app = express();
  const opts = { publicKey: pem, expectedNodeId: NODE, onEvent: (e: NodeStatusEvent) => void seen.push(e) };
  app.post('/webhook', expressWebhookMiddleware(opts));
  app.post('/raw-webhook', express.raw({ type: '*/*' }), expressWebhookMiddleware(opts));
  app.use(express.json());
  app.post('/late-webhook', expressWebhookMiddleware(opts));
  app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ message: err.message });
  });
  let server: ReturnType<typeof app.listen>;
  let base = '';
  beforeAll(async () => {
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('verifies the raw stream (or express.raw’s Buffer) and answers 200/403', async () => {
    await exercise(base, seen);
    const r = await fetch(`${base}/raw-webhook`, {
      method: 'POST',
      headers: { 'x-service-signature': SIG, 'content-type': 'application/json' },
      body: BODY,
    });
    expect(r.status).toBe(200);
  });

  it('reports a route mounted after express.json() instead of verifying re-serialized JSON', async () => {
    const r = await fetch(`${base}/late-webhook`, {
      method: 'POST',
      headers: { 'x-service-signature': SIG, 'content-type': 'application/json' },
      body: BODY,
    });
    expect(r.status).toBe(500);
    expect((await r.json()).message).toMatch(/mount the webhook route before express\.json/);
  });
});
