import { describe, expect, it } from 'vitest';
import { E, listRpcErrors, RpcError } from './errors.ts';
import { RpcDispatcher } from './rpc.ts';

const internal: unknown[] = [];
const d = new RpcDispatcher<{ tag: string }>(
  {
    echo: (params, ctx) => ({ params, tag: ctx.tag }),
    nothing: () => undefined,
    fails: (params) => {
      throw E.NOT_FOUND_MEDIA(params);
    },
    crashes: () => {
      throw new Error('secret detail');
    },
  },
  { onInternalError: (err) => internal.push(err) },
);
const ctx = { tag: 't' };

describe('RpcDispatcher', () => {
  it('answers results with the id echoed as is', async () => {
    for (const id of [null, 'null', 'x', 0, 7.5]) {
      expect(await d.handle({ jsonrpc: '2.0', id, method: 'echo', params: [1] }, ctx)).toEqual({
        jsonrpc: '2.0',
        id,
        result: { params: [1], tag: 't' },
      });
    }
  });

  it('sends undefined results as null', async () => {
    expect(await d.handle({ jsonrpc: '2.0', id: 1, method: 'nothing' }, ctx)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: null,
    });
  });

  it('returns null for notifications, whatever happens', async () => {
    for (const method of ['echo', 'fails', 'crashes', 'missing']) {
      expect(await d.handle({ jsonrpc: '2.0', method }, ctx)).toBeNull();
    }
  });

  it('maps RpcErrors with params as data, and drops falsy data', async () => {
    expect(await d.handle({ jsonrpc: '2.0', id: 1, method: 'fails', params: { a: 1 } }, ctx)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -401, message: 'Media file not found', data: { a: 1 } },
    });
    expect(await d.handle({ jsonrpc: '2.0', id: 1, method: 'fails' }, ctx)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -401, message: 'Media file not found' },
    });
  });

  it('hides unexpected errors behind -32603 and reports them', async () => {
    internal.length = 0;
    const r = await d.handle({ jsonrpc: '2.0', id: 'c', method: 'crashes' }, ctx);
    expect(r).toEqual({ jsonrpc: '2.0', id: 'c', error: { code: -32603, message: 'Internal error' } });
    expect(JSON.stringify(r)).not.toContain('secret');
    expect(internal).toHaveLength(1);
  });

  it('parses string params', async () => {
    expect(await d.handle({ jsonrpc: '2.0', id: 1, method: 'echo', params: '{"a":[1]}' }, ctx)).toMatchObject(
      {
        result: { params: { a: [1] } },
      },
    );
    expect(await d.handle({ jsonrpc: '2.0', id: 1, method: 'echo', params: '{' }, ctx)).toMatchObject({
      error: { code: -32602 },
    });
  });

  it('rejects invalid requests, keeping a valid id', async () => {
    expect(await d.handle({ jsonrpc: '2.0', id: 4, method: 1 }, ctx)).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32600, message: 'Invalid Request' },
    });
    expect(await d.handle({ jsonrpc: '2.0', id: [1], method: 'echo' }, ctx)).toMatchObject({ id: null });
    expect(await d.handle('str', ctx)).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await d.handle([], ctx)).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('does not resolve methods through the prototype chain', async () => {
    for (const method of ['toString', '__proto__', 'hasOwnProperty', 'constructor']) {
      expect(await d.handle({ jsonrpc: '2.0', id: 1, method }, ctx)).toMatchObject({
        error: { code: -32601 },
      });
    }
  });

  it('runs batches in order and leaves notifications out', async () => {
    const r = await d.handle(
      [{ jsonrpc: '2.0', id: 1, method: 'echo', params: 1 }, { jsonrpc: '2.0', method: 'echo' }, 5],
      ctx,
    );
    expect(r).toEqual([
      { jsonrpc: '2.0', id: 1, result: { params: 1, tag: 't' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } },
    ]);
  });
});

describe('error table', () => {
  it('matches the reference codes and messages', () => {
    const byName = Object.fromEntries(listRpcErrors().map((e) => [e.name, [e.code, e.message]]));
    expect(byName).toMatchObject({
      CANNOT_CHANGE_ACK: [-100, 'Cannot change ACK'],
      CANNOT_CHANGE_UPLOADED_FILE: [-101, 'Cannot change uploaded file'],
      INVALID_ACK: [-200, 'Invalid ACK'],
      INVALID_ATTACHMENT_ID: [-201, 'Invalid attachment ID'],
      INVALID_RECIPIENT_ID: [-202, 'Invalid recipient ID'],
      INVALID_TXID: [-203, 'Invalid TXID'],
      INVALID_VOUT: [-204, 'Invalid vout'],
      MISSING_ACK: [-300, 'Missing ACK'],
      MISSING_ATTACHMENT_ID: [-301, 'Missing attachment ID'],
      MISSING_RECIPIENT_ID: [-302, 'Missing recipient ID'],
      MISSING_FILE: [-303, 'Missing file'],
      MISSING_TXID: [-303, 'Missing TXID'],
      NOT_FOUND_CONSIGNMENT: [-400, 'Consignment file not found'],
      NOT_FOUND_MEDIA: [-401, 'Media file not found'],
    });
    expect(E.INVALID_VOUT({ vout: 'x' })).toBeInstanceOf(RpcError);
  });
});
