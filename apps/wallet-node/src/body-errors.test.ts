/**
 * What a client is told about a body the node refuses (issue 24, section 4), against the built node (`npx tsc
 * -b` first): conflicting spellings of one field, JSON sent as text/plain, a `__proto__` key. No devnet: every
 * case is refused before anything reaches rgb-lib.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceProcess } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeBodyAliases } from './json.ts';
import { startWalletNode, syntheticIdentity } from './test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'wn-body-errors-'));
let node: ServiceProcess<string>;

beforeAll(async () => {
  const config = join(dir, 'wallet-node.toml');
  writeFileSync(
    config,
    [
      '[api]',
      'port = 0',
      '[metrics]', // any free port: never the default 9401 in tests
      'port = 0',
      '[wallet]',
      `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
      'network = "regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "u"',
      'btc_rpc_password = "p"',
      'indexer_address = "tcp://127.0.0.1:9"',
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      'workers = 1',
      'check_indexer_at_start = false',
      '',
    ].join('\n'),
  );
  node = await startWalletNode(config);
}, 60_000);

afterAll(async () => {
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: string, contentType: string) {
  const res = await fetch(node.value + path, {
    method: 'POST',
    headers: { ...syntheticIdentity('a1b2c3d4'), 'content-type': contentType },
    body,
  });
  return {
    status: res.status,
    body: (await res.json()) as { error: { code: number; details: { body: string } } },
  };
}

describe('bodies the node refuses say why', () => {
  it("an integer out of a bounded field's range names the range (also beyond 2^53, read as digits)", async () => {
    for (const big of ['1000001', '100000000000000000000000000000']) {
      const r = await post('/wallet/createutxosbegin', `{"fee_rate":${big}}`, 'application/json');
      expect([r.status, r.body.error.code]).toEqual([422, 1001]);
      expect(r.body.error.details.body).toMatch(/\/fee_rate must be (<= 1000000|integer in 1\.\.1000000)$/);
    }
  });

  it('refuses fee_rate and feeRate with different values, naming both', async () => {
    const r = await post('/wallet/createutxosbegin', '{"fee_rate":2,"feeRate":5}', 'application/json');
    expect([r.status, r.body.error.code]).toEqual([422, 1001]);
    expect(r.body.error.details.body).toBe(
      '/fee_rate and /feeRate are two spellings of one field with different values (2 and 5): send one',
    );
  });
  it('names the content type of valid JSON sent as text/plain', async () => {
    const r = await post('/wallet/assetbalance', '{"asset_id":"rgb:x"}', 'text/plain;charset=UTF-8');
    expect([r.status, r.body.error.code]).toEqual([422, 1001]);
    expect(r.body.error.details.body).toBe(
      'Content type error: expected application/json, got text/plain;charset=UTF-8 (the body is JSON: send it with content-type: application/json)',
    );
  });
  it('says a __proto__ key is what is refused', async () => {
    const r = await post(
      '/wallet/assetbalance',
      '{"asset_id":"rgb:x","__proto__":{"a":1}}',
      'application/json',
    );
    expect([r.status, r.body.error.code]).toEqual([422, 1001]);
    expect(r.body.error.details.body).toMatch(/^a `__proto__` key .* is refused/);
  });
});

/** The alias step as the node runs it on a route whose body schema is `$ref` (normalized in place). */
function normalized(ref: string, body: Record<string, unknown>): Record<string, unknown> {
  normalizeBodyAliases({ routeOptions: { schema: { body: { $ref: ref } } }, body });
  return body;
}

describe("legacy spellings, from the schemas' x-aliases", () => {
  it('renames an alias to its field at any depth; same value twice is one; different values are refused', () => {
    expect(normalized('CreateUtxosBeginRequest', { feeRate: 2, upTo: true })).toEqual({
      fee_rate: 2,
      up_to: true,
    });
    expect(normalized('CreateUtxosBeginRequest', { fee_rate: 2, feeRate: 2 })).toEqual({ fee_rate: 2 });
    expect(
      normalized('SendBeginRequest', {
        recipientMap: { 'rgb:aB': [{ recipientId: 'x', transportEndpoints: ['rpc://p'], amount: 1 }] },
        minConfirmations: 3,
      }),
    ).toEqual({
      recipient_map: { 'rgb:aB': [{ recipient_id: 'x', transport_endpoints: ['rpc://p'], amount: 1 }] },
      min_confirmations: 3,
    });
    expect(normalized('SendBtcEndRequest', { signedPsbt: 'p', skipSync: true })).toEqual({
      signed_psbt: 'p',
      skip_sync: true,
    });
    expect(() =>
      normalized('SendBeginRequest', { recipient_map: { a: [{ recipient_id: 'x', recipientId: 'y' }] } }),
    ).toThrow(
      '/recipient_map/a/0/recipient_id and /recipient_map/a/0/recipientId are two spellings of one field with different values ("x" and "y"): send one',
    );
    // Keys the schema does not alias stay as they are (an asset id that merely looks camelCase, say).
    expect(normalized('SendBeginRequest', { recipient_map: { 'rgb:aB': [], rgb_a_b: [] } })).toEqual({
      recipient_map: { 'rgb:aB': [], rgb_a_b: [] },
    });
  });
});
