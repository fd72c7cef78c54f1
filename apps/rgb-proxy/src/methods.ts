/**
 * The seven protocol-0.2 methods. Parameter checks, their order and the error codes are those of
 * rgb-proxy-server 0.3.0:
 * - IDs and txid must be non-empty strings (missing key: -30x, wrong value: -20x);
 * - `vout` is optional and passes when `Number.isInteger(Number(vout))` (so "3" is accepted);
 * - `ack` must be a real boolean;
 * - consignment.post checks file, recipient_id, txid, vout; media.post checks attachment_id, then file;
 * - ack.post looks the consignment up (-400) before checking `ack`.
 */
import { E } from './errors.ts';
import { base64JsonString, RawJson, type RpcMethod } from './rpc.ts';
import type { ProxyStore, StagedFile } from './store.ts';

export const PROTOCOL_VERSION = '0.2';
export const SERVER_VERSION = '0.3.0';

export interface MethodContext {
  /** The uploaded `file` part, staged in tmp/, if the request had one. */
  file?: StagedFile;
}

type Params = Record<string, unknown>;

function isDict(v: unknown): v is Params {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function requiredString(
  params: unknown,
  key: string,
  missing: (d?: unknown) => Error,
  invalid: (d?: unknown) => Error,
): string {
  if (!isDict(params) || !Object.hasOwn(params, key)) throw missing(params);
  const v = params[key];
  if (typeof v !== 'string' || v === '') throw invalid(params);
  return v;
}

const recipientId = (p: unknown) =>
  requiredString(p, 'recipient_id', E.MISSING_RECIPIENT_ID, E.INVALID_RECIPIENT_ID);
const attachmentId = (p: unknown) =>
  requiredString(p, 'attachment_id', E.MISSING_ATTACHMENT_ID, E.INVALID_ATTACHMENT_ID);
const txid = (p: unknown) => requiredString(p, 'txid', E.MISSING_TXID, E.INVALID_TXID);

function vout(params: unknown): number | null {
  if (!isDict(params) || !Object.hasOwn(params, 'vout')) return null;
  const v = params.vout;
  const n = Number(v);
  if (v === null || !Number.isInteger(n)) throw E.INVALID_VOUT(params);
  return n;
}

function ack(params: unknown): boolean {
  if (!isDict(params) || !Object.hasOwn(params, 'ack')) throw E.MISSING_ACK(params);
  const v = params.ack;
  if (typeof v !== 'boolean') throw E.INVALID_ACK(params);
  return v;
}

export function createMethods(
  store: ProxyStore,
  startedAt: () => number,
): Record<string, RpcMethod<MethodContext>> {
  return {
    'server.info': () => ({
      protocol_version: PROTOCOL_VERSION,
      version: SERVER_VERSION,
      uptime: Math.trunc((Date.now() - startedAt()) / 1000),
    }),

    'consignment.get': async (params) => {
      const entry = store.getConsignment(recipientId(params));
      if (!entry) throw E.NOT_FOUND_CONSIGNMENT(params);
      const bytes = await store.readConsignmentFile(entry);
      // {consignment: <base64>, txid, vout?}, serialized directly (see RawJson)
      return new RawJson([
        '{"consignment":',
        base64JsonString(bytes),
        `,"txid":${JSON.stringify(entry.txid)}`,
        entry.vout === null ? '' : `,"vout":${JSON.stringify(entry.vout)}`,
        '}',
      ]);
    },

    'consignment.post': async (params, ctx) => {
      if (!ctx.file) throw E.MISSING_FILE(params);
      const rid = recipientId(params);
      const tx = txid(params);
      const vo = vout(params);
      const outcome = await store.postConsignment(ctx.file, { recipientId: rid, txid: tx, vout: vo });
      if (outcome === 'conflict') throw E.CANNOT_CHANGE_UPLOADED_FILE(params);
      return outcome === 'created';
    },

    'media.get': async (params) => {
      const entry = store.getMedia(attachmentId(params));
      if (!entry) throw E.NOT_FOUND_MEDIA(params);
      return new RawJson([base64JsonString(await store.readMediaFile(entry))]);
    },

    'media.post': async (params, ctx) => {
      const aid = attachmentId(params);
      if (!ctx.file) throw E.MISSING_FILE(params);
      const outcome = await store.postMedia(ctx.file, aid);
      if (outcome === 'conflict') throw E.CANNOT_CHANGE_UPLOADED_FILE(params);
      return outcome === 'created';
    },

    'ack.get': (params) => {
      const entry = store.getConsignment(recipientId(params));
      if (!entry) throw E.NOT_FOUND_CONSIGNMENT(params);
      return entry.ack;
    },

    'ack.post': (params) => {
      const rid = recipientId(params);
      if (!store.getConsignment(rid)) throw E.NOT_FOUND_CONSIGNMENT(params);
      const value = ack(params);
      const outcome = store.setAck(rid, value);
      if (outcome === 'not-found') throw E.NOT_FOUND_CONSIGNMENT(params);
      if (outcome === 'conflict') throw E.CANNOT_CHANGE_ACK(params);
      return outcome === 'set';
    },
  };
}
