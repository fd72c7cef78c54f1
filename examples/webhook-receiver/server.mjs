#!/usr/bin/env node
// Example receiver for the cloud's signed status webhooks, over HTTPS, with the SDK's node:http
// listener: the signature is checked on the raw bytes before anything is parsed, then the
// nodeId, and the answer is `200 {message}` or `403 {message}`.
//
//   TLS_KEY=key.pem TLS_CERT=cert.pem NODE_ID=<uuid> \
//   CLOUD_API_URL=http://127.0.0.1:3200 CLOUD_API_TOKEN=rgbxc_… node examples/webhook-receiver/server.mjs
//
// The public key comes from `GET {CLOUD_API_URL}/api/webhook-public-key` (every published key, so
// a key rotation needs no restart: the list is refetched when a signature fails), or from
// PUBLIC_KEY_FILE. Each accepted event is printed as one JSON line on stdout; duplicates (same
// X-Service-Event-Id, which at-least-once delivery allows) are acknowledged and skipped, and
// an event older than the last one applied for its node is ignored.
// Make a throwaway certificate with:
//   openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=localhost \
//     -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout key.pem -out cert.pem
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { createWebhookListener } from '@rgbx/sdk';

const env = process.env;
const need = (name) => {
  if (!env[name]) {
    process.stderr.write(`webhook-receiver: set ${name}\n`);
    process.exit(2);
  }
  return env[name];
};

let keys = [];
let fetchedAt = 0;
async function loadKeys() {
  if (env.PUBLIC_KEY_FILE) return [readFileSync(env.PUBLIC_KEY_FILE, 'utf8')];
  const res = await fetch(`${need('CLOUD_API_URL')}/api/webhook-public-key`, {
    headers: { authorization: `Bearer ${need('CLOUD_API_TOKEN')}` },
  });
  if (!res.ok) throw new Error(`public key: HTTP ${res.status}`);
  const body = await res.json();
  return body.keys.map((k) => k.pem);
}
async function publicKey() {
  // Refetch at most every 60 s (covers key rotation).
  if (keys.length === 0 || Date.now() - fetchedAt > 60_000) {
    keys = await loadKeys();
    fetchedAt = Date.now();
  }
  return keys;
}

const seen = new Set();
const lastApplied = new Map();
const listener = createWebhookListener({
  publicKey,
  expectedNodeId: env.NODE_ID ? env.NODE_ID.split(',') : () => true,
  onEvent(event, ctx) {
    if (ctx.eventId && seen.has(ctx.eventId)) return;
    if (ctx.eventId) seen.add(ctx.eventId);
    const last = lastApplied.get(event.nodeId);
    const stale = last !== undefined && last > event.eventTimestamp;
    if (!stale) lastApplied.set(event.nodeId, event.eventTimestamp);
    process.stdout.write(
      `${JSON.stringify({ ...event, eventId: ctx.eventId, attempt: ctx.attempt, stale })}\n`,
    );
  },
});

const server = createServer(
  { key: readFileSync(need('TLS_KEY')), cert: readFileSync(need('TLS_CERT')) },
  listener,
);
server.listen(Number(env.PORT ?? 8443), env.HOST ?? '127.0.0.1', () => {
  process.stderr.write(
    `webhook-receiver: listening on https://${env.HOST ?? '127.0.0.1'}:${server.address().port}\n`,
  );
  process.stdout.write(`${JSON.stringify({ event: 'listening', port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
