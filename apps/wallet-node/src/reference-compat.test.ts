/**
 * The wallet node process (its build output, `npx tsc -b` first) started with the REFERENCE's configuration
 * keys and spellings, then asked the way the field's clients ask: axios's empty form POST, .NET's POST with no
 * content type, JSON with a charset, a browser's CORS preflight. No devnet: only offline calls reach rgb-lib
 * (`listassets` on a fresh wallet), the indexer check is off.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceProcess } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerOffline, startWalletNode, syntheticIdentity } from './test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'wn-refcompat-'));
let node: ServiceProcess<string>;
let base: string;

const ID = syntheticIdentity('b1c2d3e4', 9);
const ORIGIN = 'https://wallet.example';

/** One request with exactly these headers and body bytes (no header added by a client library). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const u = new URL(path, base);
  return new Promise((res, rej) => {
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method, headers, setHost: true },
      (r) => {
        let text = '';
        r.on('data', (d) => {
          text += String(d);
        });
        r.on('end', () => res({ status: r.statusCode ?? 0, headers: r.headers, text }));
      },
    );
    req.on('error', rej);
    req.end(body);
  });
}

beforeAll(async () => {
  const config = join(dir, 'config.toml');
  // The reference's own keys and spellings: network capitalized, CORS keys, max_json_size, alias.
  writeFileSync(
    config,
    [
      '[api]',
      'listen_address = "127.0.0.1"',
      'port = 0',
      'enable_cors = true',
      `cors_domain = "${ORIGIN}"`,
      'allowed_headers = ["x-client-version"]',
      'max_json_size = 2048',
      '[metrics]', // any free port: never the default 9401 in tests
      'port = 0',
      '[wallet]',
      'alias = "node-a"',
      `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
      'network = "Regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "dev"',
      'btc_rpc_password = "dev"',
      'indexer_address = "tcp://127.0.0.1:9"',
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      'workers = 1',
      'check_indexer_at_start = false',
      '',
    ].join('\n'),
  );
  node = await startWalletNode(config);
  base = node.value;
  await registerOffline(base, ID); // only register creates a wallet (then fails to go online: no indexer)
}, 60_000);

afterAll(async () => {
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('wallet node with the reference configuration', () => {
  it('starts, and warns about the keys it accepts without effect', () => {
    expect(node.stderr()).toContain('configuration keys accepted but without effect');
    expect(node.stderr()).toContain('wallet.btc_rpc_password');
  });

  it('body-less routes ignore whatever arrives: axios empty form, .NET no content type, junk JSON', async () => {
    const empty = { nia: [], uda: [], cfa: [], ifa: [] };
    const axios = await raw('POST', '/wallet/listassets', {
      ...ID,
      accept: 'application/json, text/plain, */*',
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect([axios.status, JSON.parse(axios.text)]).toEqual([200, empty]);
    const dotnet = await raw('POST', '/wallet/listassets', { ...ID, 'content-length': '0' }, '');
    expect([dotnet.status, JSON.parse(dotnet.text)]).toEqual([200, empty]);
    const junk = await raw(
      'POST',
      '/wallet/listassets',
      { ...ID, 'content-type': 'application/json' },
      '{not json',
    );
    expect([junk.status, JSON.parse(junk.text)]).toEqual([200, empty]);
    const form = await raw(
      'POST',
      '/wallet/listassets',
      { ...ID, 'content-type': 'application/x-www-form-urlencoded' },
      'a=1&b=2',
    );
    expect([form.status, JSON.parse(form.text)]).toEqual([200, empty]);
    // `alias` is a subdirectory of data_dir holding this node's wallets.
    expect(existsSync(join(dir, 'data', 'node-a', ID['master-fingerprint'], 'wallet_manifest.json'))).toBe(
      true,
    );
  });

  it('body routes take JSON with or without a charset; an empty body of any type is `{}`', async () => {
    const noBody = await raw('POST', '/wallet/listtransfers', { ...ID, 'content-length': '0' }, '');
    expect([noBody.status, JSON.parse(noBody.text)]).toEqual([200, []]);
    const charset = await raw(
      'POST',
      '/wallet/listtransfers',
      { ...ID, 'content-type': 'application/json; charset=utf-8' },
      '{}',
    );
    expect([charset.status, JSON.parse(charset.text)]).toEqual([200, []]);
    const emptyForm = await raw('POST', '/wallet/assetbalance', {
      ...ID,
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(emptyForm.status).toBe(422);
    expect(JSON.parse(emptyForm.text).error.details.body).toBe('missing field `asset_id`');
    const formBody = await raw(
      'POST',
      '/wallet/assetbalance',
      { ...ID, 'content-type': 'application/x-www-form-urlencoded' },
      'asset_id=rgb%3Aabc',
    );
    expect(formBody.status).toBe(422);
    expect(JSON.parse(formBody.text).error).toEqual({
      code: 1001,
      status: 'bad_input',
      message: 'invalid json format',
      details: {
        body: 'Content type error: expected application/json, got application/x-www-form-urlencoded',
      },
    });
  });

  it('max_json_size is the body limit (413 in the envelope)', async () => {
    const big = JSON.stringify({ asset_id: 'x'.repeat(3000) });
    const r = await raw('POST', '/wallet/assetbalance', { ...ID, 'content-type': 'application/json' }, big);
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text).error.code).toBe(1013);
  });

  it('answers CORS for the configured origin: preflight with the wallet headers, credentials', async () => {
    const pre = await raw('OPTIONS', '/wallet/btcbalance', {
      origin: ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers':
        'xpub-van,xpub-col,master-fingerprint,content-type,x-client-version,last-event-id',
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(pre.headers['access-control-allow-credentials']).toBe('true');
    const allowed = String(pre.headers['access-control-allow-headers']).split(/,\s*/);
    for (const h of [
      'xpub-van',
      'xpub-col',
      'master-fingerprint',
      'content-type',
      'x-client-version',
      'last-event-id',
    ]) {
      expect(allowed).toContain(h);
    }
    expect(String(pre.headers['access-control-allow-methods'])).toBe('GET, POST, DELETE, OPTIONS');
    const actual = await raw('POST', '/wallet/listassets', { ...ID, origin: ORIGIN });
    expect(actual.status).toBe(200);
    expect(actual.headers['access-control-allow-origin']).toBe(ORIGIN);
    // Another origin is not granted.
    const other = await raw('POST', '/wallet/listassets', { ...ID, origin: 'https://evil.example' });
    expect(other.headers['access-control-allow-origin']).not.toBe('https://evil.example');
  });

  it('issues NIA only unless the operator opts in: CFA/UDA/IFA answer 403 naming the key', async () => {
    const ifa = await raw(
      'POST',
      '/wallet/issueassetifa',
      { ...ID, 'content-type': 'application/json' },
      JSON.stringify({
        ticker: 'IFA',
        name: 'Inflatable',
        precision: 0,
        amounts: [10],
        inflation_amounts: [5],
      }),
    );
    expect(ifa.status).toBe(403);
    expect(JSON.parse(ifa.text).error).toMatchObject({
      code: 1014,
      status: 'issuance_disabled',
      message: expect.stringContaining('issue_schemas'),
    });
    const cfa = await raw(
      'POST',
      '/wallet/issueassetcfa',
      { ...ID, 'content-type': 'application/json' },
      JSON.stringify({ name: 'Collectible', amounts: [1] }),
    );
    expect([cfa.status, JSON.parse(cfa.text).error.code]).toEqual([403, 1014]);
  });

  it('a missing identity header is the spec 401 text, before any body problem', async () => {
    const r = await raw('POST', '/wallet/assetbalance', { 'content-type': 'application/json' }, '{bad');
    expect([r.status, r.headers['content-type'], r.text]).toEqual([
      401,
      'text/plain; charset=utf-8',
      'Missing xpub-van/xpub-col/master-fingerprint header',
    ]);
  });
});
