/**
 * The Solana reads settlement needs, through `@solana/kit`'s RPC client: a transaction's wire bytes
 * and status, the slot, the latest blockhash. Every failure is an {@link RpcReadError}; "not found"
 * is `null`.
 */
import {
  createSolanaRpc,
  isSolanaError,
  type Rpc,
  type Signature,
  SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR,
  SolanaError,
  type SolanaRpcApi,
} from '@solana/kit';
import { RpcReadError } from '../errors.ts';

export interface SolanaReadOptions {
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface SolanaTx {
  slot: bigint;
  blockTime: number | null;
  /** The wire transaction as executed. */
  wire: Uint8Array;
  /** null when it executed successfully. */
  err: unknown;
  /** Number of confirmations; null once finalized (rooted). */
  confirmations: number | null;
  confirmationStatus: string | null;
}

const DEFAULT_TIMEOUT_MS = 10_000;

// One client per node URL (from the operator's configuration).
const clients = new Map<string, Rpc<SolanaRpcApi>>();

function rpcFor(url: string): Rpc<SolanaRpcApi> {
  let c = clients.get(url);
  if (!c) {
    c = createSolanaRpc(url);
    clients.set(url, c);
  }
  return c;
}

function readError(err: unknown, method: string, url: string, timeoutMs: number): RpcReadError {
  const name = (err as { name?: string } | undefined)?.name;
  if (name === 'TimeoutError' || name === 'AbortError')
    return new RpcReadError('timeout', method, `no answer from ${url} within ${timeoutMs} ms`, {
      cause: err,
    });
  if (isSolanaError(err, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR))
    return new RpcReadError('http', method, `HTTP ${err.context.statusCode} from ${url}`, { cause: err });
  if (err instanceof SolanaError) {
    // JSON-RPC errors keep the node's (negative) code as the kit's error code.
    const code = err.context.__code;
    return new RpcReadError('rpc', method, `node answered error ${code}: ${err.message}`, {
      ...(code < 0 ? { rpcCode: code } : {}),
      cause: err,
    });
  }
  if (name === 'SyntaxError')
    return new RpcReadError('bad_response', method, `expected a JSON-RPC response from ${url}`, {
      cause: err,
    });
  const inner = (err as { cause?: { code?: string } } | undefined)?.cause?.code;
  return new RpcReadError('unreachable', method, `cannot reach ${url}: ${inner ?? String(err)}`, {
    cause: err,
  });
}

async function read<T>(
  url: string,
  method: string,
  opts: SolanaReadOptions,
  fn: (rpc: Rpc<SolanaRpcApi>, abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  try {
    return await fn(rpcFor(url), AbortSignal.timeout(timeoutMs));
  } catch (err) {
    throw readError(err, method, url, timeoutMs);
  }
}

/** `getLatestBlockhash` at `finalized`. */
export async function solanaLatestBlockhash(
  rpcUrl: string,
  opts: SolanaReadOptions = {},
): Promise<{ blockhash: string; lastValidBlockHeight: bigint }> {
  const r = await read(rpcUrl, 'getLatestBlockhash', opts, (rpc, abortSignal) =>
    rpc.getLatestBlockhash({ commitment: 'finalized' }).send({ abortSignal }),
  );
  return { blockhash: r.value.blockhash, lastValidBlockHeight: r.value.lastValidBlockHeight };
}

/** `getSlot` at `confirmed`. */
export async function solanaSlot(rpcUrl: string, opts: SolanaReadOptions = {}): Promise<bigint> {
  return read(rpcUrl, 'getSlot', opts, (rpc, abortSignal) =>
    rpc.getSlot({ commitment: 'confirmed' }).send({ abortSignal }),
  );
}

/** A transaction by signature (wire bytes and execution status), or null when the node does not know it. */
export async function solanaTransaction(
  rpcUrl: string,
  signature: string,
  opts: SolanaReadOptions = {},
): Promise<SolanaTx | null> {
  // The node validates the signature's encoding; a malformed one is its error, as for any unknown input.
  const sig = signature as Signature;
  const t = await read(rpcUrl, 'getTransaction', opts, (rpc, abortSignal) =>
    rpc
      .getTransaction(sig, {
        encoding: 'base64',
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
      })
      .send({ abortSignal }),
  );
  if (!t) return null;
  const s = await read(rpcUrl, 'getSignatureStatuses', opts, (rpc, abortSignal) =>
    rpc.getSignatureStatuses([sig], { searchTransactionHistory: true }).send({ abortSignal }),
  );
  const status = s.value[0] ?? null;
  return {
    slot: t.slot,
    blockTime: t.blockTime === null ? null : Number(t.blockTime),
    wire: new Uint8Array(Buffer.from(t.transaction[0], 'base64')),
    // The kit reads every JSON number as bigint; the error is shown to people as JSON, so numbers again.
    err:
      t.meta?.err == null
        ? null
        : JSON.parse(JSON.stringify(t.meta.err, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))),
    confirmations: status ? (status.confirmations === null ? null : Number(status.confirmations)) : 0,
    confirmationStatus: status?.confirmationStatus ?? null,
  };
}
