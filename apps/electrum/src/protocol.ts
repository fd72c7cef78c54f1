import { createHash } from 'node:crypto';
import {
  type BitcoindRpc,
  BitcoindRpcError,
  BitcoindUnavailableError,
  losslessToJson,
  merkleBranch,
  merkleRoot,
} from '@rgbx/chains/btc';
import type { ChainIndex } from './chain-index.ts';
import { badParams, ElectrumError, ErrorCode } from './errors.ts';

/** A result already serialized as JSON text (keeps bitcoind's exact number formatting). */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

export const SUPPORTED_VERSIONS = ['1.4', '1.6'] as const;
export type ProtocolVersion = (typeof SUPPORTED_VERSIONS)[number];

export interface SessionState {
  version: ProtocolVersion;
  versionNegotiated: boolean;
  headersSubscribed: boolean;
  /** scripthash → last status sent (null = no history). */
  scripthashes: Map<string, string | null>;
}

export interface ProtocolContext {
  index: ChainIndex;
  rpc: BitcoindRpc;
  software: string;
  banner: string;
  /** BTC/kvB decimal answered by `estimatefee` when bitcoind has no estimate; null answers -1. */
  feeFallback: string | null;
  protocolMax: ProtocolVersion;
  /** `server.features` hosts: the listening address (filled once the server listens). */
  hosts: Record<string, { tcp_port: number; ssl_port: null }>;
  /** Called after a broadcast so the mempool view (and notifications) catch up at once. */
  onBroadcast: () => void;
}

const MAX_HEADERS = 2016;
const HEX64 = /^[0-9a-fA-F]{64}$/;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;

function versionKey(v: string): number[] {
  return v.split('.').map((x) => Number(x));
}
function cmpVersion(a: string, b: string): number {
  const x = versionKey(a);
  const y = versionKey(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Picks the highest version we implement inside the client's [min, max] range. */
export function negotiateVersion(requested: unknown, protocolMax: ProtocolVersion): ProtocolVersion {
  let min: string;
  let max: string;
  if (typeof requested === 'string') min = max = requested;
  else if (
    Array.isArray(requested) &&
    requested.length === 2 &&
    requested.every((v) => typeof v === 'string')
  ) {
    [min, max] = requested as [string, string];
  } else if (requested === undefined || requested === null) min = max = '1.4';
  else throw noCommonVersion(requested);
  if (!/^\d+(\.\d+){0,2}$/.test(min) || !/^\d+(\.\d+){0,2}$/.test(max)) {
    throw noCommonVersion(requested);
  }
  const candidates = SUPPORTED_VERSIONS.filter(
    (v) => cmpVersion(v, protocolMax) <= 0 && cmpVersion(v, max) <= 0 && cmpVersion(v, min) >= 0,
  );
  const best = candidates[candidates.length - 1];
  if (!best) throw noCommonVersion(requested);
  return best;
}

/** No version in common (or none readable): error 1, and the connection is closed after it. */
function noCommonVersion(requested: unknown): ElectrumError {
  return new ElectrumError(
    ErrorCode.BAD_REQUEST,
    `unsupported protocol version: ${JSON.stringify(requested)} (this server speaks ${SUPPORTED_VERSIONS.join(', ')})`,
    { closeConnection: true },
  );
}

/** Electrum status: sha256 over "tx_hash:height:" of every history entry, hex; null without history. */
export function statusHash(ctx: ProtocolContext, sh: string): string | null {
  const confirmed = ctx.index.confirmedHistory(sh);
  const mempool = ctx.index.mempoolEntries(sh);
  if (confirmed.length === 0 && mempool.length === 0) return null;
  const h = createHash('sha256');
  for (const e of confirmed) h.update(`${e.txid}:${e.height}:`);
  for (const e of mempool) h.update(`${e.tx_hash}:${e.height}:`);
  return h.digest('hex');
}

function int(method: string, v: unknown, name: string, min = 0, max = 0xffffffff): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw badParams(method, `${name} as an integer in ${min}..${max}`, v);
  }
  return v;
}
function hex64(method: string, v: unknown, name: string): string {
  if (typeof v !== 'string' || !HEX64.test(v)) throw badParams(method, `${name} as 64 hex characters`, v);
  return v.toLowerCase();
}
function bool(method: string, v: unknown, name: string, dflt: boolean): boolean {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw badParams(method, `${name} as a boolean`, v);
  return v;
}

function headerAt(ctx: ProtocolContext, method: string, height: number): Buffer {
  const h = ctx.index.headers[height];
  if (!h) {
    throw new ElectrumError(
      ErrorCode.BAD_REQUEST,
      `${method}: height ${height} out of range (tip is ${ctx.index.height})`,
    );
  }
  return h;
}

/** Electrum's header checkpoint proof: branch of block hashes 0..cp_height. */
function checkpointProof(ctx: ProtocolContext, method: string, height: number, cpHeight: number) {
  if (cpHeight < height || cpHeight > ctx.index.height) {
    throw new ElectrumError(
      ErrorCode.BAD_REQUEST,
      `${method}: cp_height ${cpHeight} must be between ${height} and the tip ${ctx.index.height}`,
    );
  }
  const leaves = ctx.index.hashes.slice(0, cpHeight + 1);
  return { branch: merkleBranch(leaves, height), root: merkleRoot(leaves) };
}

/** bitcoind's own error (code and message) travels to the client unchanged. */
function passThrough(err: unknown): never {
  if (err instanceof BitcoindRpcError) throw new ElectrumError(err.code, err.message);
  if (err instanceof BitcoindUnavailableError) throw new ElectrumError(ErrorCode.DAEMON_ERROR, err.message);
  throw err;
}

type Handler = (ctx: ProtocolContext, session: SessionState, params: unknown[]) => unknown | Promise<unknown>;

/** Methods whose answers depend on the index; the server syncs it first if it is older than its freshness window. */
export const INDEX_METHODS = new Set([
  'blockchain.block.header',
  'blockchain.block.headers',
  'blockchain.headers.subscribe',
  'blockchain.scripthash.get_history',
  'blockchain.scripthash.get_balance',
  'blockchain.scripthash.listunspent',
  'blockchain.scripthash.get_mempool',
  'blockchain.scripthash.subscribe',
  'blockchain.transaction.get',
  'blockchain.transaction.get_merkle',
  'blockchain.transaction.id_from_pos',
  'mempool.get_fee_histogram',
]);

/**
 * Parameter names of every method (the protocol's names), for requests that pass params by name
 * (JSON-RPC 2.0 named parameters, as ElectrumX accepts them).
 */
export const PARAM_NAMES: Record<string, readonly string[]> = {
  'server.version': ['client_name', 'protocol_version'],
  'server.banner': [],
  'server.donation_address': [],
  'server.ping': [],
  'server.peers.subscribe': [],
  'server.add_peer': ['features'],
  'server.features': [],
  'blockchain.block.header': ['height', 'cp_height'],
  'blockchain.block.headers': ['start_height', 'count', 'cp_height'],
  'blockchain.headers.subscribe': [],
  'blockchain.headers.unsubscribe': [],
  'blockchain.scripthash.get_history': ['scripthash'],
  'blockchain.scripthash.get_mempool': ['scripthash'],
  'blockchain.scripthash.get_balance': ['scripthash'],
  'blockchain.scripthash.listunspent': ['scripthash'],
  'blockchain.scripthash.subscribe': ['scripthash'],
  'blockchain.scripthash.unsubscribe': ['scripthash'],
  'blockchain.transaction.get': ['tx_hash', 'verbose'],
  'blockchain.transaction.get_merkle': ['tx_hash', 'height'],
  'blockchain.transaction.id_from_pos': ['height', 'tx_pos', 'merkle'],
  'blockchain.transaction.broadcast': ['raw_tx'],
  'blockchain.transaction.broadcast_package': ['raw_txs', 'verbose'],
  'blockchain.estimatefee': ['number', 'mode'],
  'blockchain.relayfee': [],
  'mempool.get_fee_histogram': [],
  'mempool.get_info': [],
};

/**
 * Named params → positional ones. Unknown names are an error (-32602), except for `server.version`,
 * whose extraneous arguments must be ignored (protocol 1.6).
 */
export function positionalParams(method: string, named: Record<string, unknown>): unknown[] {
  const names = PARAM_NAMES[method] ?? [];
  const unknown = Object.keys(named).filter((k) => !names.includes(k));
  if (unknown.length > 0 && method !== 'server.version') {
    throw new ElectrumError(
      ErrorCode.INVALID_PARAMS,
      `${method}: unknown parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}; its parameters are ${names.length > 0 ? names.join(', ') : 'none'}`,
    );
  }
  const out = names.map((n) => (Object.hasOwn(named, n) ? named[n] : undefined));
  while (out.length > 0 && out[out.length - 1] === undefined) out.pop();
  return out;
}

export const handlers: Record<string, Handler> = {
  'server.version'(ctx, session, [_client, requested]) {
    // Only the first server.version of a connection counts (extra arguments are ignored, 1.6).
    if (session.versionNegotiated) {
      throw new ElectrumError(ErrorCode.BAD_REQUEST, 'server.version already sent');
    }
    session.versionNegotiated = true;
    session.version = negotiateVersion(requested, ctx.protocolMax);
    return [ctx.software, session.version];
  },
  'server.banner': (ctx) => ctx.banner,
  'server.donation_address': () => '',
  'server.ping': () => null,
  'server.peers.subscribe': () => [],
  'server.add_peer': () => false,
  'server.features'(ctx) {
    return {
      genesis_hash: ctx.index.hashes[0] ?? null,
      hosts: ctx.hosts,
      protocol_min: SUPPORTED_VERSIONS[0],
      protocol_max: ctx.protocolMax,
      pruning: null,
      server_version: ctx.software,
      hash_function: 'sha256',
    };
  },

  'blockchain.block.header'(ctx, _s, [height, cpHeight]) {
    const m = 'blockchain.block.header';
    const h = int(m, height, 'height');
    const cp = cpHeight === undefined ? 0 : int(m, cpHeight, 'cp_height');
    const header = headerAt(ctx, m, h).toString('hex');
    if (cp === 0) return header;
    return { header, ...checkpointProof(ctx, m, h, cp) };
  },
  'blockchain.block.headers'(ctx, session, [start, count, cpHeight]) {
    const m = 'blockchain.block.headers';
    const s = int(m, start, 'start_height');
    const c = int(m, count, 'count');
    const cp = cpHeight === undefined ? 0 : int(m, cpHeight, 'cp_height');
    const end = Math.min(s + Math.min(c, MAX_HEADERS), ctx.index.height + 1);
    const hs = s > ctx.index.height ? [] : ctx.index.headers.slice(s, end).map((h) => h.toString('hex'));
    const base =
      session.version === '1.6'
        ? { count: hs.length, headers: hs, max: MAX_HEADERS }
        : { count: hs.length, hex: hs.join(''), max: MAX_HEADERS };
    if (cp === 0 || hs.length === 0) return base;
    return { ...base, ...checkpointProof(ctx, m, s + hs.length - 1, cp) };
  },
  'blockchain.headers.subscribe'(ctx, session) {
    session.headersSubscribed = true;
    const h = ctx.index.height;
    return { height: h, hex: headerAt(ctx, 'blockchain.headers.subscribe', h).toString('hex') };
  },
  'blockchain.headers.unsubscribe'(_ctx, session) {
    const was = session.headersSubscribed;
    session.headersSubscribed = false;
    return was;
  },

  'blockchain.scripthash.get_history'(ctx, _s, [sh]) {
    const h = hex64('blockchain.scripthash.get_history', sh, 'scripthash');
    return [
      ...ctx.index.confirmedHistory(h).map((e) => ({ tx_hash: e.txid, height: e.height })),
      ...ctx.index.mempoolEntries(h),
    ];
  },
  'blockchain.scripthash.get_mempool'(ctx, _s, [sh]) {
    return ctx.index.mempoolEntries(hex64('blockchain.scripthash.get_mempool', sh, 'scripthash'));
  },
  'blockchain.scripthash.get_balance'(ctx, _s, [sh]) {
    const b = ctx.index.balance(hex64('blockchain.scripthash.get_balance', sh, 'scripthash'));
    return { confirmed: Number(b.confirmed), unconfirmed: Number(b.unconfirmed) };
  },
  'blockchain.scripthash.listunspent'(ctx, _s, [sh]) {
    return ctx.index
      .listUnspent(hex64('blockchain.scripthash.listunspent', sh, 'scripthash'))
      .map((u) => ({ ...u, value: Number(u.value) }));
  },
  'blockchain.scripthash.subscribe'(ctx, session, [sh]) {
    const h = hex64('blockchain.scripthash.subscribe', sh, 'scripthash');
    const status = statusHash(ctx, h);
    session.scripthashes.set(h, status);
    return status;
  },
  'blockchain.scripthash.unsubscribe'(_ctx, session, [sh]) {
    return session.scripthashes.delete(hex64('blockchain.scripthash.unsubscribe', sh, 'scripthash'));
  },

  async 'blockchain.transaction.get'(ctx, _s, [txid, verbose]) {
    const m = 'blockchain.transaction.get';
    const id = hex64(m, txid, 'tx_hash');
    if (bool(m, verbose, 'verbose', false)) {
      // Mirrors bitcoind's getrawtransaction object exactly (numbers re-serialized with their original text).
      const obj = await ctx.rpc.callLossless('getrawtransaction', [id, true]).catch(passThrough);
      return new RawJson(losslessToJson(obj));
    }
    return ctx.rpc.call<string>('getrawtransaction', [id, false]).catch(passThrough);
  },
  'blockchain.transaction.get_merkle'(ctx, _s, [txid, height]) {
    const m = 'blockchain.transaction.get_merkle';
    const id = hex64(m, txid, 'tx_hash');
    const h = int(m, height, 'height');
    const txids = ctx.index.blockTxids[h];
    const pos = txids ? txids.indexOf(id) : -1;
    if (!txids || pos < 0)
      throw new ElectrumError(ErrorCode.BAD_REQUEST, `${m}: tx ${id} is not in the block at height ${h}`);
    return { block_height: h, merkle: merkleBranch(txids, pos), pos };
  },
  'blockchain.transaction.id_from_pos'(ctx, _s, [height, pos, merkle]) {
    const m = 'blockchain.transaction.id_from_pos';
    const h = int(m, height, 'height');
    const p = int(m, pos, 'tx_pos');
    const txids = ctx.index.blockTxids[h];
    if (!txids)
      throw new ElectrumError(
        ErrorCode.BAD_REQUEST,
        `${m}: height ${h} out of range (tip is ${ctx.index.height})`,
      );
    const txid = txids[p];
    if (!txid)
      throw new ElectrumError(
        ErrorCode.BAD_REQUEST,
        `${m}: no tx at position ${p} in block ${h} (${txids.length} txs)`,
      );
    return bool(m, merkle, 'merkle', false) ? { tx_hash: txid, merkle: merkleBranch(txids, p) } : txid;
  },
  async 'blockchain.transaction.broadcast'(ctx, _s, [raw]) {
    if (typeof raw !== 'string' || !HEX.test(raw)) {
      throw badParams('blockchain.transaction.broadcast', 'raw transaction hex', raw);
    }
    const txid = await ctx.rpc.call<string>('sendrawtransaction', [raw]).catch(passThrough);
    ctx.onBroadcast();
    return txid;
  },
  async 'blockchain.transaction.broadcast_package'(ctx, _s, [rawTxs, verbose]) {
    const m = 'blockchain.transaction.broadcast_package';
    if (
      !Array.isArray(rawTxs) ||
      rawTxs.length === 0 ||
      !rawTxs.every((r) => typeof r === 'string' && HEX.test(r))
    ) {
      throw badParams(m, 'raw_txs as a non-empty array of raw transaction hex strings', rawTxs);
    }
    const v = bool(m, verbose, 'verbose', false);
    // A malformed package (topology, decoding) is a bitcoind RPC error, passed through like broadcast's.
    const result = (await ctx.rpc.callLossless('submitpackage', [rawTxs]).catch(passThrough)) as {
      package_msg?: unknown;
      'tx-results'?: Record<string, { txid?: unknown; error?: unknown }>;
    };
    ctx.onBroadcast();
    if (v) return new RawJson(losslessToJson(result));
    const errors = Object.values(result['tx-results'] ?? {})
      .filter((t) => typeof t.error === 'string' && t.error !== '')
      .map((t) => ({ txid: t.txid, error: t.error }));
    return { success: result.package_msg === 'success', ...(errors.length > 0 ? { errors } : {}) };
  },

  async 'blockchain.estimatefee'(ctx, _s, [blocks, mode]) {
    const m = 'blockchain.estimatefee';
    const n = int(m, blocks, 'number', 1, 1008);
    const params: unknown[] = [n];
    if (mode !== undefined && mode !== null) {
      if (mode !== 'CONSERVATIVE' && mode !== 'ECONOMICAL' && mode !== 'UNSET') {
        throw badParams(m, 'mode CONSERVATIVE, ECONOMICAL or UNSET', mode);
      }
      params.push(mode);
    }
    const est = (await ctx.rpc.callLossless('estimatesmartfee', params).catch(passThrough)) as {
      feerate?: unknown;
    };
    if (est.feerate !== undefined) return new RawJson(losslessToJson(est.feerate));
    return new RawJson(ctx.feeFallback ?? '-1');
  },
  async 'blockchain.relayfee'(ctx) {
    const info = (await ctx.rpc.callLossless('getnetworkinfo').catch(passThrough)) as { relayfee: unknown };
    return new RawJson(losslessToJson(info.relayfee));
  },
  'mempool.get_fee_histogram': (ctx) => ctx.index.feeHistogram(),
  async 'mempool.get_info'(ctx) {
    const info = (await ctx.rpc.callLossless('getmempoolinfo').catch(passThrough)) as Record<string, unknown>;
    return new RawJson(
      `{"mempoolminfee":${losslessToJson(info.mempoolminfee)},"minrelaytxfee":${losslessToJson(info.minrelaytxfee)},"incrementalrelayfee":${losslessToJson(info.incrementalrelayfee ?? info.minrelaytxfee)}}`,
    );
  },
};
