/**
 * The client-request replayer against a stand-in HTTP server (node:http, in this process): proves the bytes
 * on the wire for each body kind (content type present or absent, Content-Length 0, exact JSON bytes,
 * multipart layout) and that the fixture files load. No wallet node runs here.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildRequest,
  type ClientName,
  checkShape,
  dotnetJson,
  fixture,
  type IdentityHeaders,
  loadClientFixtures,
  replay,
} from './client-requests.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

const ID: IdentityHeaders = {
  'xpub-van': 'tpubVanStandIn',
  'xpub-col': 'tpubColStandIn',
  'master-fingerprint': 'a1b2c3d4',
};
const AXIOS_ACCEPT = 'application/json, text/plain, */*';
// An RGB invoice has & and + (query string, amount): System.Text.Json escapes both, JSON.stringify neither.
const INVOICE = 'rgb:~/~/~/bcrt:utxob:abc-def?expiry=1700000000&endpoints=rpc://127.0.0.1:3000/json-rpc';
const PSBT = 'cHNidP8BAH0CAAAAAb+/abc+def/ghi==';

let server: Server;
let base: string;
let seen: Seen[] = [];
let reply: { status: number; type?: string; body: string } = {
  status: 200,
  type: 'application/json',
  body: 'null',
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
      });
      res.statusCode = reply.status;
      if (reply.type) res.setHeader('content-type', reply.type);
      res.end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
});

async function wire(
  client: ClientName,
  id: string,
  vars: Record<string, string | number | Uint8Array> = {},
): Promise<Seen> {
  seen = [];
  reply = { status: 200, type: 'application/json', body: 'null' };
  const r = await replay(base, fixture(client, id), ID, vars);
  expect(r.status).toBe(200);
  expect(seen).toHaveLength(1);
  return seen[0]!;
}

describe('wallet client fixtures', () => {
  it('load, have unique ids and cover every route each client calls', () => {
    const sdkRoutes = new Set(loadClientFixtures('rgb-sdk').map((r) => `${r.method} ${r.route}`));
    for (const route of [
      'register',
      'btcbalance',
      'address',
      'listunspents',
      'createutxosbegin',
      'createutxosend',
      'sendbegin',
      'sendend',
      'sendbtcbegin',
      'sendbtcend',
      'get_fee_estimation',
      'blindreceive',
      'witnessreceive',
      'assetbalance',
      'issueassetnia',
      'issueassetifa',
      'inflatebegin',
      'inflateend',
      'listassets',
      'decodergbinvoice',
      'refresh',
      'drop',
      'listtransactions',
      'listtransfers',
      'failtransfers',
      'sync',
      'backup',
      'restore',
    ]) {
      expect(sdkRoutes, route).toContain(`POST /wallet/${route}`);
    }
    expect(sdkRoutes).toContain('GET /wallet/backup/$BACKUP_ID');

    const btcpay = loadClientFixtures('btcpay');
    const btcRoutes = new Set(btcpay.map((r) => r.route.slice('/wallet/'.length)));
    for (const route of [
      'generate_keys',
      'register',
      'address',
      'btcbalance',
      'refresh',
      'sync',
      'listunspents',
      'createutxosbegin',
      'createutxosend',
      'listassets',
      'assetbalance',
      'issueassetnia',
      'blindreceive',
      'witnessreceive',
      'decodergbinvoice',
      'listtransfers',
      'failtransfers',
      'sendbegin',
      'sendend',
      'sendbtcbegin',
      'sendbtcend',
      'backup',
    ]) {
      expect(btcRoutes, route).toContain(route);
    }
    // generate_keys is served too, once the operator enables it (wallet.allow_generate_keys).
    expect(btcpay.filter((r) => r.served === false).map((r) => [r.id, r.reason])).toEqual([]);
    expect(() => fixture('btcpay', 'nope')).toThrow(/have: generate_keys, register/);
  });
});

describe('replayer on a stand-in server: bytes on the wire per body kind', () => {
  it('empty-form (axios post with no data): x-www-form-urlencoded, Content-Length 0, empty body', async () => {
    const s = await wire('rgb-sdk', 'register');
    expect(s.method).toBe('POST');
    expect(s.url).toBe('/wallet/register');
    expect(s.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(s.headers['content-length']).toBe('0');
    expect(s.headers['transfer-encoding']).toBeUndefined();
    expect(s.body.length).toBe(0);
    expect(s.headers.accept).toBe(AXIOS_ACCEPT);
    expect(s.headers['user-agent']).toMatch(/^axios\/1\./);
    expect(s.headers['xpub-van']).toBe(ID['xpub-van']);
    expect(s.headers['xpub-col']).toBe(ID['xpub-col']);
    expect(s.headers['master-fingerprint']).toBe(ID['master-fingerprint']);
  });

  it('none (HttpClient POST with null content): no content type, no Accept, Content-Length 0', async () => {
    const s = await wire('btcpay', 'register');
    expect(s.url).toBe('/wallet/register');
    expect(s.headers['content-type']).toBeUndefined();
    expect(s.headers['content-length']).toBe('0');
    expect(s.headers['transfer-encoding']).toBeUndefined();
    expect(s.headers.accept).toBeUndefined();
    expect(s.headers['user-agent']).toBeUndefined();
    expect(s.body.length).toBe(0);
    expect(s.headers['xpub-van']).toBe(ID['xpub-van']);
    // listtransfers without an asset id is the body-less form too
    const all = await wire('btcpay', 'listtransfers.all');
    expect(all.headers['content-type']).toBeUndefined();
    expect(all.headers['content-length']).toBe('0');
  });

  it('none on a GET (backup download): no content type and no Content-Length', async () => {
    const s = await wire('rgb-sdk', 'backup.download', { BACKUP_ID: 'tpub/with+odd chars' });
    expect(s.method).toBe('GET');
    expect(s.url).toBe('/wallet/backup/tpub%2Fwith%2Bodd%20chars');
    expect(s.headers['content-type']).toBeUndefined();
    expect(s.headers['content-length']).toBeUndefined();
    expect(s.headers['transfer-encoding']).toBeUndefined();
    expect(s.headers.accept).toBe(AXIOS_ACCEPT);
  });

  it('json (axios): application/json, JSON.stringify bytes, numeric placeholders as numbers', async () => {
    const s = await wire('rgb-sdk', 'sendbegin', { ASSET_ID: 'rgb:asset', AMOUNT: 100, INVOICE });
    expect(s.headers['content-type']).toBe('application/json');
    const expected = `{"asset_id":"rgb:asset","amount":100,"invoice":${JSON.stringify(INVOICE)},"min_confirmations":1}`;
    expect(s.body.toString('utf8')).toBe(expected);
    expect(s.headers['content-length']).toBe(String(Buffer.byteLength(expected)));
    // an explicit null stays on the wire
    const w = await wire('rgb-sdk', 'sendbegin.witness', { ASSET_ID: 'rgb:asset', AMOUNT: 10, INVOICE });
    expect(w.body.toString()).toContain('"witness_data":{"amount_sat":1000,"blinding":null}');
    // a string var stays a string
    const fee = await wire('rgb-sdk', 'get_fee_estimation', { BLOCKS: '6' });
    expect(fee.body.toString()).toBe('{"blocks":"6"}');
    expect((await wire('rgb-sdk', 'get_fee_estimation')).body.toString()).toBe('{"blocks":6}');
  });

  it('json (.NET): application/json; charset=utf-8, System.Text.Json escaping, client defaults', async () => {
    const d = await wire('btcpay', 'decodergbinvoice', { INVOICE });
    expect(d.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(d.body.toString()).toBe(
      '{"invoice":"rgb:~/~/~/bcrt:utxob:abc-def?expiry=1700000000\\u0026endpoints=rpc://127.0.0.1:3000/json-rpc"}',
    );
    expect(JSON.parse(d.body.toString())).toEqual({ invoice: INVOICE });
    // decodergbinvoice is sent with no identity headers
    expect(d.headers['xpub-van']).toBeUndefined();
    expect(d.headers['master-fingerprint']).toBeUndefined();

    const end = await wire('btcpay', 'createutxosend', { SIGNED_PSBT: PSBT });
    expect(end.body.toString()).toBe('{"signed_psbt":"cHNidP8BAH0CAAAAAb\\u002B/abc\\u002Bdef/ghi=="}');
    expect(end.headers['content-length']).toBe(String(end.body.length));

    expect((await wire('btcpay', 'createutxosbegin')).body.toString()).toBe(
      '{"up_to":true,"num":5,"size":10000,"fee_rate":2}',
    );
    expect((await wire('btcpay', 'createutxosbegin', { NUM: 3 })).body.toString()).toBe(
      '{"up_to":true,"num":3,"size":10000,"fee_rate":2}',
    );
    const blind = await wire('btcpay', 'blindreceive.any-asset', {
      AMOUNT: 1500,
      EXPIRATION_TIMESTAMP: 1700000900,
    });
    expect(blind.body.toString()).toBe('{"amount":1500,"expiration_timestamp":1700000900}');
    const empty = await wire('btcpay', 'blindreceive.empty');
    expect(empty.body.toString()).toBe('{}');
    expect(empty.headers['content-length']).toBe('2');
    expect(empty.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('multipart (form-data package): boundary style, part layout, Content-Length, parseable', async () => {
    const file = Uint8Array.from([0, 1, 2, 0xff, 13, 10, 45, 45]);
    const s = await wire('rgb-sdk', 'restore', {
      BACKUP_FILE: file,
      PASSWORD: 'pw+&"x',
      XPUB_VAN: ID['xpub-van'],
      XPUB_COL: ID['xpub-col'],
      MASTER_FINGERPRINT: ID['master-fingerprint'],
    });
    const ct = s.headers['content-type']!;
    const m = /^multipart\/form-data; boundary=(-{26}[0-9a-f]{24})$/.exec(ct);
    expect(m, ct).not.toBeNull();
    const boundary = m![1]!;
    expect(s.headers['content-length']).toBe(String(s.body.length));
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="wallet.backup"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n';
    expect(s.body.subarray(0, head.length).toString('latin1')).toBe(head);
    expect(s.body.toString('latin1')).toContain(
      `\r\n--${boundary}\r\nContent-Disposition: form-data; name="password"\r\n\r\npw+&"x\r\n`,
    );
    expect(s.body.toString('latin1').endsWith(`--${boundary}--\r\n`)).toBe(true);
    const form = await new Response(new Uint8Array(s.body), { headers: { 'content-type': ct } }).formData();
    expect([...form.keys()]).toEqual(['file', 'password', 'xpub_van', 'xpub_col', 'master_fingerprint']);
    const got = form.get('file') as File;
    expect(got.name).toBe('wallet.backup');
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(file);
    expect(form.get('password')).toBe('pw+&"x');
    expect(form.get('master_fingerprint')).toBe(ID['master-fingerprint']);
  });

  it('refuses to send with a placeholder left unfilled, naming it', () => {
    expect(() => buildRequest(fixture('rgb-sdk', 'sendend'), ID, {})).toThrow(/\$SIGNED_PSBT/);
    expect(() => buildRequest(fixture('btcpay', 'register'), null)).toThrow(/identity headers/);
    expect(buildRequest(fixture('btcpay', 'generate_keys'), null).headers).toEqual({ 'content-length': '0' });
  });

  it('returns status, content type, text and json of the reply', async () => {
    seen = [];
    reply = { status: 400, type: 'application/json; charset=utf-8', body: '{"code":1001}' };
    const r = await replay(base, fixture('btcpay', 'btcbalance'), ID);
    expect(r).toMatchObject({
      status: 400,
      contentType: 'application/json; charset=utf-8',
      json: { code: 1001 },
    });
    reply = { status: 200, type: 'text/plain', body: 'cHNidP8B' };
    const t = await replay(base, fixture('btcpay', 'address'), ID);
    expect(t.text).toBe('cHNidP8B');
    expect(t.json).toBeUndefined();
  });
});

describe('checkShape', () => {
  const balance = { settled: 1, future: 2, spendable: 3 };

  it('accepts what the client reads and names what it cannot', () => {
    expect(checkShape(fixture('rgb-sdk', 'btcbalance'), { vanilla: balance, colored: balance })).toEqual([]);
    expect(checkShape(fixture('rgb-sdk', 'btcbalance'), { vanilla: balance })).toEqual([
      '$.colored: missing',
    ]);
    expect(
      checkShape(fixture('btcpay', 'btcbalance'), { vanilla: balance, colored: { ...balance, future: 1.5 } }),
    ).toEqual(['$.colored.future: expected an integer, got number 1.5']);
    const transfer = {
      idx: 1,
      created_at: 1,
      updated_at: 2,
      amount: 5,
      kind: 1,
      txid: null,
      recipient_id: 'r',
    };
    expect(checkShape(fixture('btcpay', 'listtransfers'), [{ ...transfer, status: 2 }])).toEqual([]);
    expect(checkShape(fixture('btcpay', 'listtransfers'), [{ ...transfer, status: 'Settled' }])).toEqual([
      '$[0].status: expected an integer, got string "Settled"',
    ]);
    expect(checkShape(fixture('btcpay', 'refresh'), undefined, '')).toEqual([]);
    expect(checkShape(fixture('btcpay', 'createutxosbegin'), '"cHNidP8B"')).toEqual([]);
    expect(checkShape(fixture('btcpay', 'createutxosbegin'), undefined, 'cHNidP8B')).toEqual([]);
    expect(checkShape(fixture('btcpay', 'createutxosbegin'), { psbt: 'x' })).toHaveLength(1);
    expect(checkShape(fixture('rgb-sdk', 'get_fee_estimation'), 2.5)).toEqual([]);
    expect(checkShape(fixture('rgb-sdk', 'get_fee_estimation'), { '6': 2.5 })).toEqual([]);
    expect(checkShape(fixture('rgb-sdk', 'get_fee_estimation'), 'fast')).toHaveLength(1);
  });

  it('shows the sendbtcend conflict: rgb-sdk types a txid string, the plugin reads {txid}', () => {
    expect(checkShape(fixture('rgb-sdk', 'sendbtcend'), 'ab'.repeat(32))).toEqual([]);
    expect(checkShape(fixture('rgb-sdk', 'sendbtcend'), { txid: 'ab'.repeat(32) })).toHaveLength(1);
    expect(checkShape(fixture('btcpay', 'sendbtcend'), { txid: 'ab'.repeat(32) })).toEqual([]);
    expect(checkShape(fixture('btcpay', 'sendbtcend'), 'ab'.repeat(32))).toHaveLength(1);
  });
});

describe('dotnetJson', () => {
  it('escapes as System.Text.Json does by default', () => {
    expect(dotnetJson({ a: `"'&+<>\`\\/\n\t\u0001\u007f` })).toBe(
      '{"a":"\\u0022\\u0027\\u0026\\u002B\\u003C\\u003E\\u0060\\\\/\\n\\t\\u0001\\u007F"}',
    );
    expect(dotnetJson(['é', '😀', 1, true, null])).toBe('["\\u00E9","\\uD83D\\uDE00",1,true,null]');
  });
});
