/** In-process checks of multipart corner cases that are awkward to produce with fetch. */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ProxyApp } from './app.ts';
import { tempDataDir } from './test-util.ts';

const BOUNDARY = 'XbOuNdArYx';
type Part = { name: string; value: string | Buffer; filename?: string; contentType?: string };

function form(parts: Part[], opts: { close?: boolean } = {}): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `content-type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(p.value), Buffer.from('\r\n'));
  }
  if (opts.close !== false) chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

let px: ProxyApp;
let dataDir: string;

beforeAll(async () => {
  dataDir = tempDataDir();
  px = buildApp({ dataDir, maxUploadBytes: 1000 });
  await px.app.ready();
});

afterAll(async () => {
  await px.app.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function send(payload: Buffer, contentType = `multipart/form-data; boundary=${BOUNDARY}`) {
  const res = await px.app.inject({
    method: 'POST',
    url: '/json-rpc',
    payload,
    headers: { 'content-type': contentType },
  });
  return { status: res.statusCode, json: res.body ? res.json() : undefined };
}

const TXID = 'd'.repeat(64);

describe('multipart handling', () => {
  it('accepts the file part before the fields', async () => {
    const r = await send(
      form([
        { name: 'file', value: Buffer.from('file first'), filename: 'c' },
        { name: 'method', value: 'consignment.post' },
        { name: 'jsonrpc', value: '2.0' },
        { name: 'id', value: 'null' },
        { name: 'params', value: JSON.stringify({ recipient_id: 'ff', txid: TXID }) },
      ]),
    );
    expect(r).toEqual({ status: 200, json: { jsonrpc: '2.0', id: 'null', result: true } });
    expect(px.store.getConsignment('ff')).toMatchObject({ txid: TXID, vout: null, ack: null });
  });

  it('uses the first `file` part and ignores other file parts', async () => {
    const r = await send(
      form([
        { name: 'method', value: 'consignment.post' },
        { name: 'jsonrpc', value: '2.0' },
        { name: 'id', value: '1' },
        { name: 'params', value: JSON.stringify({ recipient_id: 'two', txid: TXID }) },
        { name: 'other', value: Buffer.from('not this'), filename: 'o' },
        { name: 'file', value: Buffer.from('this one'), filename: 'c' },
        { name: 'file', value: Buffer.from('nor this'), filename: 'c2' },
      ]),
    );
    expect(r.json).toEqual({ jsonrpc: '2.0', id: '1', result: true });
    const entry = px.store.getConsignment('two')!;
    expect((await px.store.readConsignmentFile(entry)).toString()).toBe('this one');
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
  });

  it('accepts params sent as a JSON-typed field', async () => {
    const r = await send(
      form([
        { name: 'method', value: 'consignment.get' },
        { name: 'jsonrpc', value: '2.0' },
        { name: 'id', value: 'j' },
        { name: 'params', value: JSON.stringify({ recipient_id: 'two' }), contentType: 'application/json' },
      ]),
    );
    expect(r.json.result.consignment).toBe(Buffer.from('this one').toString('base64'));
  });

  it('answers broken multipart bodies with JSON-RPC errors and keeps nothing', async () => {
    const truncated = form(
      [
        { name: 'method', value: 'consignment.post' },
        { name: 'jsonrpc', value: '2.0' },
        { name: 'id', value: 'tr' },
        { name: 'file', value: Buffer.from('cut'), filename: 'c' },
      ],
      { close: false },
    );
    const a = await send(truncated.subarray(0, truncated.length - 5));
    expect(a.status).toBe(200);
    expect(a.json.error.code).toBe(-32600);
    const b = await send(Buffer.from('garbage'), 'multipart/form-data');
    expect(b).toMatchObject({ status: 200, json: { jsonrpc: '2.0', error: { code: -32600 } } });
    const c = await send(form([{ name: 'constructor', value: 'x' }]));
    expect(c.json.error.code).toBe(-32600);
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
  });

  it('discards an oversize upload and reports -32000', async () => {
    const r = await send(
      form([
        { name: 'method', value: 'media.post' },
        { name: 'jsonrpc', value: '2.0' },
        { name: 'id', value: 'big' },
        { name: 'params', value: JSON.stringify({ attachment_id: 'big' }) },
        { name: 'file', value: Buffer.alloc(1001, 1), filename: 'm' },
      ]),
    );
    expect(r.json).toEqual({
      jsonrpc: '2.0',
      id: 'big',
      error: { code: -32000, message: 'Payload too large', data: { max_upload_bytes: 1000 } },
    });
    expect(px.store.getMedia('big')).toBeUndefined();
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
    expect(readdirSync(join(dataDir, 'media'))).toEqual([]);
  });

  it('drops a file sent to a method that takes none', async () => {
    const r = await send(
      form([
        { name: 'method', value: 'server.info' },
        { name: 'jsonrpc', value: '2.0' },
        { name: 'id', value: 's' },
        { name: 'file', value: Buffer.from('unused'), filename: 'u' },
      ]),
    );
    expect(r.json.result.protocol_version).toBe('0.2');
    expect(readdirSync(join(dataDir, 'tmp'))).toEqual([]);
  });
});
