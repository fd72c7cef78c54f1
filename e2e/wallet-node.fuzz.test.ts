/**
 * Property tests against a real wallet node process: malformed bodies, content types and headers on
 * every endpoint always get the documented answer (the 401 text or the JSON envelope), never a crash,
 * a stack trace or a hang.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys, type Keys } from '@rgbx/rgb';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type NodeProcess, startNode, writeNodeConfig } from './helpers/wallet-node.ts';

const ENDPOINTS = [
  '/wallet/register',
  '/wallet/refresh',
  '/wallet/drop',
  '/wallet/address',
  '/wallet/btcbalance',
  '/wallet/listassets',
  '/wallet/assetbalance',
  '/wallet/listunspents',
  '/wallet/listtransactions',
  '/wallet/listtransfers',
  '/wallet/issueassetnia',
  '/wallet/blindreceive',
  '/wallet/failtransfers',
  '/wallet/createutxosbegin',
  '/wallet/createutxosend',
  '/wallet/sendbegin',
  '/wallet/sendend',
  '/blindreceive',
];
const DOCUMENTED = new Set([200, 400, 401, 404, 409, 413, 422, 500]);

let devnet: Devnet;
let dir: string;
let node: NodeProcess;
let keys: Keys;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wallet-node-fuzz-'));
  devnet = await startDevnet({ dir: join(dir, 'devnet') });
  node = await startNode(writeNodeConfig(dir, devnet.info, { workers: 1, 'api.body_limit_bytes': 65536 }));
  keys = await generateKeys('Regtest', 'Taproot');
}, 300_000);

afterAll(async () => {
  try {
    if (node) expect(await node.stop()).toBe(0); // still alive and shuts down cleanly after the storm
  } finally {
    await closeDefaultHost();
    await devnet?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function call(
  path: string,
  headers: Record<string, string>,
  body?: string | Uint8Array,
  contentType?: string,
) {
  const res = await fetch(node.url + path, {
    method: 'POST',
    headers: { ...headers, ...(contentType ? { 'content-type': contentType } : {}) },
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

function assertDocumented(r: { status: number; type: string; text: string }): void {
  expect(DOCUMENTED.has(r.status), `status ${r.status}: ${r.text.slice(0, 200)}`).toBe(true);
  expect(r.text).not.toMatch(/\n\s+at /); // no stack traces
  if (r.status === 401) {
    expect(r.text).toBe('Missing xpub-van/xpub-col/master-fingerprint header');
    return;
  }
  expect(r.type).toMatch(/^application\/json/);
  const body = JSON.parse(r.text);
  if (r.status === 200) return;
  expect(typeof body.error.code).toBe('number');
  expect(typeof body.error.status).toBe('string');
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.error.details).toBe('object');
  if (r.status === 500)
    expect(body.error).toEqual({
      code: 500,
      status: 'internal_error',
      message: 'something went wrong',
      details: {},
    });
  if (r.status === 422) expect(body.error.code).toBe(1001);
}

const wallet = () => ({
  'xpub-van': keys.accountXpubVanilla,
  'xpub-col': keys.accountXpubColored,
  'master-fingerprint': keys.masterFingerprint,
});

it('malformed bodies and content types on every endpoint get the documented envelope', async () => {
  const arbBody = fc.oneof(
    fc.jsonValue().map((v) => ({ body: JSON.stringify(v), type: 'application/json' })),
    fc.string({ maxLength: 300 }).map((s) => ({ body: s, type: 'application/json' })),
    fc
      .record(
        {
          asset_id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
          amount: fc.oneof(fc.bigInt({ min: -5n, max: 2n ** 70n }).map(String), fc.integer(), fc.string()),
          amounts: fc.array(fc.oneof(fc.integer({ min: -1, max: 1e9 }), fc.string()), { maxLength: 3 }),
          ticker: fc.string({ maxLength: 12 }),
          name: fc.string({ maxLength: 12 }),
          fee_rate: fc.integer({ min: -2, max: 2000 }),
          num: fc.integer({ min: -1, max: 300 }),
          signed_psbt: fc.base64String({ maxLength: 80 }),
          recipient_map: fc.dictionary(
            fc.string({ maxLength: 8 }),
            fc.array(fc.record({ recipient_id: fc.string(), amount: fc.nat() }), { maxLength: 2 }),
          ),
          batch_transfer_idx: fc.oneof(fc.integer({ min: -3, max: 50 }), fc.constant(null)),
          duration_seconds: fc.integer({ min: -5, max: 100_000 }),
        },
        { requiredKeys: [] },
      )
      .map((o) => ({
        body: JSON.stringify(o).replace(/"amount":"(\d+)"/, '"amount":$1'),
        type: 'application/json',
      })),
    fc.string({ maxLength: 100 }).map((s) => ({ body: s, type: 'text/plain' })),
    fc.constant({ body: 'x'.repeat(70_000), type: 'application/json' }),
    fc.constant({ body: '{"__proto__":{"polluted":true},"asset_id":"a"}', type: 'application/json' }),
  );
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ENDPOINTS), arbBody, async (path, b) => {
      assertDocumented(await call(path, wallet(), b.body, b.type));
    }),
    { numRuns: 250 },
  );
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}, 600_000);

it('malformed or missing wallet headers get the 401 text or a 400 envelope', async () => {
  const arbHeader = fc.oneof(
    fc.constant(undefined),
    fc.string({ maxLength: 120 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...ENDPOINTS),
      arbHeader,
      arbHeader,
      arbHeader,
      async (path, van, col, fp) => {
        const h: Record<string, string> = {};
        if (van !== undefined) h['xpub-van'] = van;
        if (col !== undefined) h['xpub-col'] = col;
        if (fp !== undefined) h['master-fingerprint'] = fp;
        const r = await call(path, h, '{}', 'application/json');
        assertDocumented(r);
        expect([400, 401]).toContain(r.status);
      },
    ),
    { numRuns: 150 },
  );
}, 300_000);
