/**
 * Protocol suite against the real process (`node dist/main.js --port 0 --data-dir <tmp>`):
 * every method, every error code, id echoing, notifications, multipart uploads, limits.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type ProxyProcess, postJson, startProxy, upload, uploadFields } from './test-util.ts';

let proxy: ProxyProcess;
let url: string;

beforeAll(async () => {
  proxy = await startProxy();
  url = proxy.rpcUrl;
});

afterAll(async () => {
  const { code } = await proxy.stop();
  expect(code).toBe(0);
  rmSync(proxy.dataDir, { recursive: true, force: true });
});

let seq = 0;
const rid = (p = 'rcpt') => `${p}-${++seq}-${randomBytes(4).toString('hex')}`;
const TXID = 'a'.repeat(64);
const bytes = (s: string) => new Uint8Array(Buffer.from(s));
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

function expectError(
  r: { status: number; json: { error?: { code: number; message: string } } },
  code: number,
  message?: string,
) {
  expect(r.status).toBe(200);
  expect(r.json.error?.code).toBe(code);
  if (message !== undefined) expect(r.json.error?.message).toBe(message);
}

describe('framing', () => {
  it('server.info answers protocol 0.2, version 0.3.0 and an integer uptime', async () => {
    const r = await call(url, 'server.info');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      jsonrpc: '2.0',
      id: null,
      result: { protocol_version: '0.2', version: '0.3.0', uptime: expect.any(Number) },
    });
    expect(Number.isInteger(r.json.result.uptime)).toBe(true);
  });

  it('echoes ids exactly: null, "null", "abc", 7', async () => {
    for (const id of [null, 'null', 'abc', 7]) {
      const r = await call(url, 'server.info', undefined, id);
      expect(r.json.id).toStrictEqual(id);
      expect(r.text).toContain(`"id":${JSON.stringify(id)}`);
    }
    const mp = await upload(url, 'server.info', undefined, undefined, { id: 'null' });
    expect(mp.json.id).toBe('null');
    const err = await call(url, 'consignment.get', {}, 'abc');
    expect(err.json.id).toBe('abc');
  });

  it('answers with JSON content type, HTTP 200, open CORS', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://example.test' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server.info' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const pre = await fetch(url, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://x',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toBe('content-type');
  });

  it('accepts POST / as an alias', async () => {
    const r = await call(`${proxy.url}/`, 'server.info', undefined, 'alias');
    expect(r.json.result.protocol_version).toBe('0.2');
    expect(r.json.id).toBe('alias');
  });

  it('treats a request without id as a notification: 204, no body (JSON and multipart)', async () => {
    const r = await postJson(url, { jsonrpc: '2.0', method: 'server.info' });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    const e = await postJson(url, { jsonrpc: '2.0', method: 'no.such.method' });
    expect(e.status).toBe(204);
    const mp = await upload(url, 'server.info', undefined, undefined, { id: null });
    expect(mp.status).toBe(204);
  });

  it('-32700 for malformed JSON', async () => {
    for (const body of ['{"jsonrpc":"2.0",', '{', 'nul', '{"a":1}}', '\u0000']) {
      const r = await postJson(url, body);
      expect(r.json).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
  });

  it('-32600 for invalid requests', async () => {
    const cases: unknown[] = [
      {},
      { id: 1, method: 'server.info' },
      { jsonrpc: '1.0', id: 1, method: 'server.info' },
      { jsonrpc: '2.0', id: 1, method: 5 },
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: { x: 1 }, method: 'server.info' },
      { jsonrpc: '2.0', id: 1, method: 'server.info', result: 1 },
      5,
      'x',
      null,
      [],
    ];
    for (const c of cases) {
      const r = await postJson(url, JSON.stringify(c));
      expectError(r, -32600, 'Invalid Request');
    }
    const keepsId = await postJson(url, { jsonrpc: '1.0', id: 'k', method: 'server.info' });
    expect(keepsId.json.id).toBe('k');
    const text = await postJson(url, '{"jsonrpc":"2.0","id":1,"method":"server.info"}', 'text/plain');
    expectError(text, -32600);
    const empty = await postJson(url, '');
    expectError(empty, -32600);
  });

  it('-32601 for unknown methods, including prototype names', async () => {
    for (const m of ['nope', 'toString', '__proto__', 'constructor', 'server.info ']) {
      const r = await call(url, m, undefined, 3);
      expect(r.json).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'Method not found' } });
    }
  });

  it('-32602 for params given as a string that is not JSON', async () => {
    const r = await call(url, 'consignment.get', '{not json', 'p');
    expect(r.json).toEqual({ jsonrpc: '2.0', id: 'p', error: { code: -32602, message: 'Invalid params' } });
    const mp = await upload(url, 'consignment.post', '{broken', bytes('x'));
    expectError(mp, -32602);
  });

  it('parses params given as a JSON string (as multipart does) in JSON bodies too', async () => {
    const r = await call(url, 'consignment.get', JSON.stringify({ recipient_id: 'nobody' }));
    expectError(r, -400);
  });

  it('handles batches', async () => {
    const r = await postJson(url, [
      { jsonrpc: '2.0', id: 1, method: 'server.info' },
      { jsonrpc: '2.0', method: 'server.info' },
      { jsonrpc: '2.0', id: 2, method: 'nope' },
    ]);
    expect(r.status).toBe(200);
    expect(r.json).toHaveLength(2);
    expect(r.json[0].id).toBe(1);
    expect(r.json[1].error.code).toBe(-32601);
    const notes = await postJson(url, [{ jsonrpc: '2.0', method: 'server.info' }]);
    expect(notes.status).toBe(204);
  });

  it('answers other routes with a JSON-RPC shaped envelope', async () => {
    const res = await fetch(`${proxy.url}/nothing/here`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32601, message: 'Route GET /nothing/here not found' },
    });
    const get = await fetch(url);
    expect(get.status).toBe(404);
  });
});

describe('consignments', () => {
  it('post (multipart) then get returns the same bytes, txid and vout', async () => {
    const r = rid();
    const file = randomBytes(5133);
    const post = await upload(url, 'consignment.post', { recipient_id: r, txid: TXID, vout: 1 }, file);
    expect(post.json).toEqual({ jsonrpc: '2.0', id: 'null', result: true });
    const get = await call(url, 'consignment.get', { recipient_id: r });
    expect(get.json.result).toEqual({
      consignment: Buffer.from(file).toString('base64'),
      txid: TXID,
      vout: 1,
    });
    expect(Object.keys(get.json.result)).toEqual(['consignment', 'txid', 'vout']);
    expect(readdirSync(join(proxy.dataDir, 'consignments'))).toContain(sha256(file));
  });

  it('omits vout when none was posted; accepts a numeric string vout like the reference', async () => {
    const a = rid();
    expect(
      (await upload(url, 'consignment.post', { recipient_id: a, txid: TXID }, bytes('no vout'))).json.result,
    ).toBe(true);
    const getA = await call(url, 'consignment.get', { recipient_id: a });
    expect(getA.json.result).toEqual({ consignment: Buffer.from('no vout').toString('base64'), txid: TXID });
    const b = rid();
    expect(
      (await upload(url, 'consignment.post', { recipient_id: b, txid: TXID, vout: '3' }, bytes('s'))).json
        .result,
    ).toBe(true);
    expect((await call(url, 'consignment.get', { recipient_id: b })).json.result.vout).toBe(3);
    const c = rid();
    expect(
      (await upload(url, 'consignment.post', { recipient_id: c, txid: TXID, vout: 0 }, bytes('z'))).json
        .result,
    ).toBe(true);
    expect((await call(url, 'consignment.get', { recipient_id: c })).json.result.vout).toBe(0);
  });

  it('accepts an empty file', async () => {
    const r = rid();
    expect(
      (await upload(url, 'consignment.post', { recipient_id: r, txid: TXID }, new Uint8Array(0))).json.result,
    ).toBe(true);
    expect((await call(url, 'consignment.get', { recipient_id: r })).json.result.consignment).toBe('');
  });

  it('is write-once: identical re-upload answers false, a different file -101 with the params as data', async () => {
    const r = rid();
    const params = { recipient_id: r, txid: TXID, vout: 2 };
    const file = randomBytes(1000);
    expect((await upload(url, 'consignment.post', params, file)).json.result).toBe(true);
    expect((await upload(url, 'consignment.post', params, file)).json).toEqual({
      jsonrpc: '2.0',
      id: 'null',
      result: false,
    });
    const other = await upload(url, 'consignment.post', params, randomBytes(1000), { id: 'abc' });
    expect(other.json).toEqual({
      jsonrpc: '2.0',
      id: 'abc',
      error: { code: -101, message: 'Cannot change uploaded file', data: params },
    });
    // Same file under a different txid is still "identical" (the file is what is compared).
    expect(
      (await upload(url, 'consignment.post', { ...params, txid: 'b'.repeat(64) }, file)).json.result,
    ).toBe(false);
    const get = await call(url, 'consignment.get', { recipient_id: r });
    expect(get.json.result.consignment).toBe(Buffer.from(file).toString('base64'));
    expect(readdirSync(join(proxy.dataDir, 'tmp'))).toEqual([]);
  });

  it('validates in the reference order: file, recipient_id, txid, vout', async () => {
    const f = bytes('f');
    // no file wins over everything else
    expectError(await upload(url, 'consignment.post', {}), -303, 'Missing file');
    expectError(await call(url, 'consignment.post', { recipient_id: 'r', txid: TXID }), -303, 'Missing file');
    expectError(await upload(url, 'consignment.post', undefined, f), -302, 'Missing recipient ID');
    expectError(await upload(url, 'consignment.post', {}, f), -302, 'Missing recipient ID');
    expectError(await upload(url, 'consignment.post', { recipient_id: '' }, f), -202, 'Invalid recipient ID');
    expectError(
      await upload(url, 'consignment.post', { recipient_id: 5, txid: 1 }, f),
      -202,
      'Invalid recipient ID',
    );
    expectError(await upload(url, 'consignment.post', { recipient_id: 'r' }, f), -303, 'Missing TXID');
    expectError(
      await upload(url, 'consignment.post', { recipient_id: 'r', txid: '' }, f),
      -203,
      'Invalid TXID',
    );
    expectError(
      await upload(url, 'consignment.post', { recipient_id: 'r', txid: 7 }, f),
      -203,
      'Invalid TXID',
    );
    expectError(
      await upload(url, 'consignment.post', { recipient_id: 'r', txid: TXID, vout: 'x' }, f),
      -204,
      'Invalid vout',
    );
    expectError(
      await upload(url, 'consignment.post', { recipient_id: 'r', txid: TXID, vout: null }, f),
      -204,
    );
    expectError(await upload(url, 'consignment.post', { recipient_id: 'r', txid: TXID, vout: 1.5 }, f), -204);
    // a file under another field name is not "the file"
    expectError(
      await upload(url, 'consignment.post', { recipient_id: 'r', txid: TXID }, f, { fileField: 'upload' }),
      -303,
    );
    // nothing was stored by any of these
    expectError(await call(url, 'consignment.get', { recipient_id: 'r' }), -400);
    expect(readdirSync(join(proxy.dataDir, 'tmp'))).toEqual([]);
  });

  it('get: -302 missing, -202 invalid, -400 not found (data = params)', async () => {
    expectError(await call(url, 'consignment.get'), -302, 'Missing recipient ID');
    expectError(await call(url, 'consignment.get', []), -302);
    expectError(await call(url, 'consignment.get', { recipient_id: null }), -202, 'Invalid recipient ID');
    const nf = await call(url, 'consignment.get', { recipient_id: 'unknown' }, 'q');
    expect(nf.json).toEqual({
      jsonrpc: '2.0',
      id: 'q',
      error: { code: -400, message: 'Consignment file not found', data: { recipient_id: 'unknown' } },
    });
    // no params: no data member (json-rpc-2.0 drops falsy data)
    expect('data' in (await call(url, 'consignment.get')).json.error).toBe(false);
  });

  it('concurrent posts for one recipient: one true, the identical ones false, different ones -101', async () => {
    const r = rid('race');
    const file = randomBytes(20_000);
    const same = await Promise.all(
      Array.from({ length: 8 }, () => upload(url, 'consignment.post', { recipient_id: r, txid: TXID }, file)),
    );
    expect(same.map((x) => x.json.result).sort()).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      true,
    ]);

    const r2 = rid('race');
    const files = Array.from({ length: 8 }, () => randomBytes(20_000));
    const diff = await Promise.all(
      files.map((f) => upload(url, 'consignment.post', { recipient_id: r2, txid: TXID }, f)),
    );
    const winners = diff.flatMap((x, i) => (x.json.result === true ? [i] : []));
    expect(winners).toHaveLength(1);
    expect(diff.filter((x) => x.json.error?.code === -101)).toHaveLength(7);
    const stored = await call(url, 'consignment.get', { recipient_id: r2 });
    expect(stored.json.result.consignment).toBe(files[winners[0]!]!.toString('base64'));
    expect(readdirSync(join(proxy.dataDir, 'tmp'))).toEqual([]);
  });
});

describe("the reference's multipart form: params[...] fields", () => {
  const form = (method: string, id: string, params: Array<[string, string]>): Array<[string, string]> => [
    ['jsonrpc', '2.0'],
    ['id', id],
    ['method', method],
    ...params.map(([k, v]): [string, string] => [`params[${k}]`, v]),
  ];

  it('consignment.post: true, then false for the same file, -101 for another; get returns it with vout', async () => {
    const r = rid('bracket');
    const file = randomBytes(2048);
    const fields = form('consignment.post', '1', [
      ['recipient_id', r],
      ['txid', TXID],
      ['vout', '2'],
    ]);
    expect((await uploadFields(url, fields, file)).json).toEqual({ jsonrpc: '2.0', id: '1', result: true });
    expect((await uploadFields(url, fields, file)).json).toEqual({ jsonrpc: '2.0', id: '1', result: false });
    expect((await uploadFields(url, fields, randomBytes(10))).json).toEqual({
      jsonrpc: '2.0',
      id: '1',
      error: {
        code: -101,
        message: 'Cannot change uploaded file',
        data: { recipient_id: r, txid: TXID, vout: '2' },
      },
    });
    const get = await call(url, 'consignment.get', { recipient_id: r }, '2');
    expect(get.json).toEqual({
      jsonrpc: '2.0',
      id: '2',
      result: { consignment: Buffer.from(file).toString('base64'), txid: TXID, vout: 2 },
    });
    // ack.post/ack.get work on it as on any consignment
    expect((await call(url, 'ack.post', { recipient_id: r, ack: true })).json.result).toBe(true);
  });

  it('media.post with params[attachment_id]; media.get returns it', async () => {
    const file = randomBytes(777);
    const id = sha256(file);
    const fields = form('media.post', '1', [['attachment_id', id]]);
    expect((await uploadFields(url, fields, file)).json.result).toBe(true);
    expect((await uploadFields(url, fields, file)).json.result).toBe(false);
    expect((await call(url, 'media.get', { attachment_id: id })).json.result).toBe(
      Buffer.from(file).toString('base64'),
    );
  });

  it('validates in the same order with the same codes as with JSON params', async () => {
    const f = bytes('x');
    expectError(
      await uploadFields(url, form('consignment.post', '1', [['recipient_id', 'r']])),
      -303,
      'Missing file',
    );
    expectError(await uploadFields(url, form('consignment.post', '1', [['txid', TXID]]), f), -302);
    expectError(await uploadFields(url, form('consignment.post', '1', [['recipient_id', '']]), f), -202);
    expectError(
      await uploadFields(url, form('consignment.post', '1', [['recipient_id', 'r']]), f),
      -303,
      'Missing TXID',
    );
    expectError(
      await uploadFields(
        url,
        form('consignment.post', '1', [
          ['recipient_id', 'r'],
          ['txid', TXID],
          ['vout', 'x'],
        ]),
        f,
      ),
      -204,
    );
    // a key sent twice becomes an array, as multer makes it in the reference: not a valid ID
    expectError(
      await uploadFields(
        url,
        form('consignment.post', '1', [
          ['recipient_id', 'r'],
          ['recipient_id', 's'],
          ['txid', TXID],
        ]),
        f,
      ),
      -202,
    );
    expectError(
      await uploadFields(url, form('media.post', '1', [['attachment_id', 'a']])),
      -303,
      'Missing file',
    );
    expectError(await call(url, 'consignment.get', { recipient_id: 'r' }), -400);
    expect(readdirSync(join(proxy.dataDir, 'tmp'))).toEqual([]);
  });

  it('reads urlencoded forms as the reference does (express.urlencoded): bracket or JSON-string params', async () => {
    const r = rid('urlenc');
    await upload(url, 'consignment.post', { recipient_id: r, txid: TXID }, bytes('u'));
    const form = (q: Record<string, string>) =>
      postJson(url, new URLSearchParams(q).toString(), 'application/x-www-form-urlencoded');
    const get = await form({
      jsonrpc: '2.0',
      id: 'u1',
      method: 'consignment.get',
      'params[recipient_id]': r,
    });
    expect(get.json).toEqual({
      jsonrpc: '2.0',
      id: 'u1',
      result: { consignment: Buffer.from('u').toString('base64'), txid: TXID },
    });
    const asJson = await form({
      jsonrpc: '2.0',
      id: 'u2',
      method: 'ack.get',
      params: JSON.stringify({ recipient_id: r }),
    });
    expect(asJson.json).toEqual({ jsonrpc: '2.0', id: 'u2', result: null });
    // Form values are strings: "true" is not a boolean ACK, there as here.
    expectError(
      await form({
        jsonrpc: '2.0',
        id: 'u3',
        method: 'ack.post',
        'params[recipient_id]': r,
        'params[ack]': 'true',
      }),
      -200,
    );
    // No file can travel in such a form.
    expectError(
      await form({ jsonrpc: '2.0', id: 'u4', method: 'consignment.post', 'params[recipient_id]': rid() }),
      -303,
    );
    expect((await form({ jsonrpc: '2.0', method: 'server.info' })).status).toBe(204);
  });

  it('refuses unreadable params with -32602: both forms at once, nested or empty brackets', async () => {
    const f = bytes('y');
    const both = await uploadFields(
      url,
      [
        ...form('consignment.post', 'b', [['recipient_id', 'r']]),
        ['params', JSON.stringify({ recipient_id: 'r', txid: TXID })],
      ],
      f,
    );
    expect(both.json).toEqual({
      jsonrpc: '2.0',
      id: 'b',
      error: { code: -32602, message: 'Invalid params' },
    });
    for (const field of ['params[recipient_id][x]', 'params[]', 'params[a]b']) {
      const r = await uploadFields(
        url,
        [
          ['jsonrpc', '2.0'],
          ['id', 'n'],
          ['method', 'consignment.post'],
          [field, 'v'],
        ],
        f,
      );
      expect({ field, reply: r.json }).toEqual({
        field,
        reply: { jsonrpc: '2.0', id: 'n', error: { code: -32602, message: 'Invalid params' } },
      });
    }
    expect(readdirSync(join(proxy.dataDir, 'tmp'))).toEqual([]);
  });
});

describe('rejected uploads leave no file behind', () => {
  it('10 concurrent different uploads to one recipient (or attachment): one stored file, no orphan, at once', async () => {
    const px = await startProxy();
    try {
      const u = px.rpcUrl;
      const files = (sub: string) => readdirSync(join(px.dataDir, sub)).sort();
      let rejected = 0;
      const winners: string[] = [];
      for (let round = 0; round < 3; round++) {
        const r = rid('orphan');
        const uploads = Array.from({ length: 10 }, () => randomBytes(1_600_000));
        const replies = await Promise.all(
          uploads.map((f) => upload(u, 'consignment.post', { recipient_id: r, txid: TXID }, f)),
        );
        const won = replies.flatMap((x, i) => (x.json.result === true ? [i] : []));
        expect(won).toHaveLength(1);
        expect(replies.filter((x) => x.json.error?.code === -101)).toHaveLength(9);
        rejected += 9;
        winners.push(sha256(uploads[won[0]!]!));
        // Checked as soon as the replies are in: only the winners' files exist.
        expect(files('consignments')).toEqual([...winners].sort());
        expect(files('tmp')).toEqual([]);
        // A second wave on the now-taken recipient changes nothing either.
        const late = await Promise.all(
          Array.from({ length: 10 }, () =>
            upload(u, 'consignment.post', { recipient_id: r, txid: TXID }, randomBytes(200_000)),
          ),
        );
        expect(late.every((x) => x.json.error?.code === -101)).toBe(true);
        rejected += 10;
        expect(files('consignments')).toEqual([...winners].sort());
      }
      const aid = 'attachment-race';
      const media = Array.from({ length: 10 }, () => randomBytes(1_000_000));
      const mr = await Promise.all(media.map((f) => upload(u, 'media.post', { attachment_id: aid }, f)));
      const mWon = mr.flatMap((x, i) => (x.json.result === true ? [i] : []));
      expect(mWon).toHaveLength(1);
      rejected += 9;
      expect(files('media')).toEqual([sha256(media[mWon[0]!]!)]);
      expect(files('tmp')).toEqual([]);
      console.info(`rgb-proxy: ${rejected} rejected concurrent uploads, 0 orphan files`);
    } finally {
      await px.stop();
      rmSync(px.dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('media', () => {
  it('post then get; identical re-upload false; different -101', async () => {
    const file = randomBytes(3000);
    const id = sha256(file);
    expect((await upload(url, 'media.post', { attachment_id: id }, file)).json.result).toBe(true);
    expect((await upload(url, 'media.post', { attachment_id: id }, file)).json.result).toBe(false);
    expectError(
      await upload(url, 'media.post', { attachment_id: id }, randomBytes(10)),
      -101,
      'Cannot change uploaded file',
    );
    const get = await call(url, 'media.get', { attachment_id: id }, 'm');
    expect(get.json).toEqual({ jsonrpc: '2.0', id: 'm', result: Buffer.from(file).toString('base64') });
  });

  it('validates attachment_id before the file', async () => {
    expectError(await upload(url, 'media.post', {}), -301, 'Missing attachment ID');
    expectError(await call(url, 'media.post', { attachment_id: '' }), -201, 'Invalid attachment ID');
    expectError(await call(url, 'media.post', { attachment_id: 'abc' }), -303, 'Missing file');
    expectError(await call(url, 'media.get', {}), -301);
    expectError(await call(url, 'media.get', { attachment_id: 12 }), -201);
    expectError(
      await call(url, 'media.get', { attachment_id: 'f'.repeat(64) }),
      -401,
      'Media file not found',
    );
  });
});

describe('acks', () => {
  it('ack.get: null before, then the posted value; ack.post: true, same again false, different -100', async () => {
    const r = rid();
    expectError(await call(url, 'ack.get', { recipient_id: r }), -400);
    expectError(await call(url, 'ack.post', { recipient_id: r, ack: true }), -400);
    await upload(url, 'consignment.post', { recipient_id: r, txid: TXID }, bytes('c'));
    const before = await call(url, 'ack.get', { recipient_id: r });
    expect(before.json).toEqual({ jsonrpc: '2.0', id: null, result: null });
    expect((await call(url, 'ack.post', { recipient_id: r, ack: true })).json.result).toBe(true);
    expect((await call(url, 'ack.get', { recipient_id: r })).json.result).toBe(true);
    expect((await call(url, 'ack.post', { recipient_id: r, ack: true })).json.result).toBe(false);
    const change = await call(url, 'ack.post', { recipient_id: r, ack: false }, 'n');
    expect(change.json).toEqual({
      jsonrpc: '2.0',
      id: 'n',
      error: { code: -100, message: 'Cannot change ACK', data: { recipient_id: r, ack: false } },
    });
    expect((await call(url, 'ack.get', { recipient_id: r })).json.result).toBe(true);
  });

  it('a NACK is final too', async () => {
    const r = rid();
    await upload(url, 'consignment.post', { recipient_id: r, txid: TXID }, bytes('n'));
    expect((await call(url, 'ack.post', { recipient_id: r, ack: false })).json.result).toBe(true);
    expect((await call(url, 'ack.get', { recipient_id: r })).json.result).toBe(false);
    expect((await call(url, 'ack.post', { recipient_id: r, ack: false })).json.result).toBe(false);
    expectError(await call(url, 'ack.post', { recipient_id: r, ack: true }), -100);
  });

  it('validates recipient_id, then the consignment, then ack', async () => {
    const r = rid();
    await upload(url, 'consignment.post', { recipient_id: r, txid: TXID }, bytes('v'));
    expectError(await call(url, 'ack.post', {}), -302, 'Missing recipient ID');
    expectError(await call(url, 'ack.post', { recipient_id: '' }), -202);
    expectError(await call(url, 'ack.post', { recipient_id: 'nobody' }), -400, 'Consignment file not found');
    expectError(await call(url, 'ack.post', { recipient_id: r }), -300, 'Missing ACK');
    expectError(await call(url, 'ack.post', { recipient_id: r, ack: 'true' }), -200, 'Invalid ACK');
    expectError(await call(url, 'ack.post', { recipient_id: r, ack: 1 }), -200);
    expectError(await call(url, 'ack.post', { recipient_id: r, ack: null }), -200);
    expectError(await call(url, 'ack.get', {}), -302);
    expectError(await call(url, 'ack.get', { recipient_id: 3 }), -202);
    expect((await call(url, 'ack.get', { recipient_id: r })).json.result).toBe(null);
  });
});

describe('upload size limit', () => {
  it('accepts up to the limit, rejects one byte more with -32000 and keeps nothing', async () => {
    const small = await startProxy({ args: ['--max-upload-bytes', '4096'] });
    try {
      const u = small.rpcUrl;
      const ok = rid();
      expect(
        (await upload(u, 'consignment.post', { recipient_id: ok, txid: TXID }, randomBytes(4096))).json
          .result,
      ).toBe(true);
      const big = rid();
      const r = await upload(u, 'consignment.post', { recipient_id: big, txid: TXID }, randomBytes(4097), {
        id: 'big',
      });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({
        jsonrpc: '2.0',
        id: 'big',
        error: { code: -32000, message: 'Payload too large', data: { max_upload_bytes: 4096 } },
      });
      expectError(await call(u, 'consignment.get', { recipient_id: big }), -400);
      const huge = await upload(u, 'media.post', { attachment_id: 'x' }, randomBytes(300_000));
      expectError(huge, -32000);
      expect(readdirSync(join(small.dataDir, 'tmp'))).toEqual([]);
      // still healthy afterwards
      expect((await call(u, 'server.info')).json.result.protocol_version).toBe('0.2');
      // oversize JSON bodies are refused too (max_json_bytes defaults to 1 MiB)
      const bigJson = await postJson(u, {
        jsonrpc: '2.0',
        id: 1,
        method: 'server.info',
        params: { pad: 'x'.repeat(1_100_000) },
      });
      expectError(bigJson, -32000);
    } finally {
      await small.stop();
      rmSync(small.dataDir, { recursive: true, force: true });
    }
  });
});

describe('robustness (property)', () => {
  it('arbitrary malformed bodies always get 200/204 with a JSON-RPC reply, never a crash', async () => {
    const contentTypes = fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/octet-stream',
      'multipart/form-data',
      'multipart/form-data; boundary=xyz',
      'application/x-www-form-urlencoded',
    );
    const request = fc.record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), fc.jsonValue()),
        id: fc.oneof(fc.constant(null), fc.string(), fc.integer(), fc.jsonValue()),
        method: fc.oneof(
          fc.constantFrom(
            'server.info',
            'consignment.get',
            'consignment.post',
            'media.get',
            'media.post',
            'ack.get',
            'ack.post',
          ),
          fc.jsonValue(),
        ),
        params: fc.oneof(
          fc.jsonValue(),
          fc.record(
            {
              recipient_id: fc.jsonValue(),
              ack: fc.jsonValue(),
              attachment_id: fc.jsonValue(),
              vout: fc.jsonValue(),
            },
            {
              requiredKeys: [],
            },
          ),
        ),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      request.map((v) => JSON.stringify(v)),
      fc.array(request, { maxLength: 3 }).map((v) => JSON.stringify(v)),
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
    );
    await fc.assert(
      fc.asyncProperty(body, contentTypes, async (b, ct) => {
        const r = await postJson(url, b, ct);
        expect([200, 204]).toContain(r.status);
        if (r.status === 200) {
          const replies = Array.isArray(r.json) ? r.json : [r.json];
          for (const rep of replies) {
            expect(rep.jsonrpc).toBe('2.0');
            expect('result' in rep || 'error' in rep).toBe(true);
            if (rep.error) {
              expect(Number.isInteger(rep.error.code)).toBe(true);
              expect(JSON.stringify(rep.error)).not.toMatch(/at .*\.(js|ts):\d+/);
            }
          }
        } else {
          expect(r.text).toBe('');
        }
      }),
      { numRuns: 250 },
    );
    expect((await call(url, 'server.info')).json.result.protocol_version).toBe('0.2');
    expect(proxy.child.exitCode).toBeNull();
  });
});
