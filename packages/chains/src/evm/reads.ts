/**
 * The EVM reads the swap needs, through viem's public client over a kept-alive `node:http` JSON-RPC
 * transport (`transport.ts`, for its CPU per call): the ERC-20 allowance a Permit2 approval
 * depends on, and what settlement checks (receipts with their logs, transactions, the block number,
 * block times). Tron is read through its full node's Ethereum-compatible `/jsonrpc` endpoint with the
 * same calls (20-byte hex addresses). Every failure is an {@link RpcReadError}; "not found" is `null`.
 */
import {
  BaseError,
  BlockNotFoundError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  createPublicClient,
  custom,
  erc20Abi,
  type Hash,
  type PublicClient,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from 'viem';
import { preview } from '../bytes.ts';
import { RpcReadError } from '../errors.ts';
import { type EvmAddress, requireEvmAddress } from './permit2.ts';
import { JsonRpcAnswerError, jsonRpcTransport } from './transport.ts';

export interface EvmReadOptions {
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface EvmLog {
  address: string;
  topics: string[];
  data: string;
  logIndex: number;
}

/** A mined receipt; addresses, hashes and data lower-case. */
export interface EvmReceipt {
  status: 'success' | 'reverted';
  blockNumber: bigint;
  blockHash: string;
  from: string;
  to: string | null;
  logs: EvmLog[];
}

export interface EvmTx {
  from: string;
  to: string | null;
  value: bigint;
  blockNumber: bigint | null;
}

const DEFAULT_TIMEOUT_MS = 10_000;

// One client per (node, timeout): the URLs come from the operator's configuration, so this stays small.
const clients = new Map<string, PublicClient>();

function clientFor(url: string, timeoutMs: number): PublicClient {
  const key = `${timeoutMs} ${url}`;
  let c = clients.get(key);
  if (!c) {
    // No retries here: callers decide (settlement re-checks later; an approval answers 503 at once).
    c = createPublicClient({ transport: custom(jsonRpcTransport(url, timeoutMs), { retryCount: 0 }) });
    clients.set(key, c);
  }
  return c;
}

/** viem's error chain → one {@link RpcReadError} naming the method, the node and what went wrong. */
function readError(err: unknown, method: string, url: string): RpcReadError {
  if (err instanceof RpcReadError) return err;
  if (!(err instanceof BaseError))
    return new RpcReadError('unreachable', method, `cannot reach ${url}: ${String(err)}`, { cause: err });
  // The transport's own failure (timeout, unreachable, http, bad_response), wrapped by viem.
  const own = err.walk((e) => e instanceof RpcReadError);
  if (own instanceof RpcReadError) return own;
  const found = (cls: abstract new (...a: never[]) => Error) => err.walk((e) => e instanceof cls);
  if (found(ContractFunctionZeroDataError))
    return new RpcReadError(
      'bad_response',
      method,
      `expected one 32-byte word, received "0x" (no contract code at the address?)`,
      { cause: err },
    );
  const rpc = found(JsonRpcAnswerError) as JsonRpcAnswerError | null;
  if (rpc)
    return new RpcReadError('rpc', method, `node answered error ${rpc.code}: ${preview(rpc.message)}`, {
      rpcCode: rpc.code,
      cause: err,
    });
  if (found(ContractFunctionRevertedError))
    // EIP-1474 "execution reverted"; viem keeps the revert reason, not the node's code.
    return new RpcReadError('rpc', method, `the call reverted: ${preview(err.shortMessage)}`, {
      rpcCode: 3,
      cause: err,
    });
  return new RpcReadError('bad_response', method, err.shortMessage, { cause: err });
}

async function read<T>(
  url: string,
  method: string,
  opts: EvmReadOptions,
  fn: (c: PublicClient) => Promise<T>,
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  try {
    return await fn(clientFor(url, timeoutMs));
  } catch (err) {
    throw readError(err, method, url);
  }
}

/** `null` when viem says the node does not know the object (its NotFound errors). */
async function orNull<T>(p: Promise<T>, notFound: abstract new (...a: never[]) => Error): Promise<T | null> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof BaseError && err.walk((e) => e instanceof notFound)) return null;
    throw err;
  }
}

/**
 * Reads an ERC-20 allowance with `eth_call` at the `latest` block: `token.allowance(owner, spender)`.
 * The swap service calls it with `spender` = the Permit2 contract before accepting a permit2 approval.
 *
 * @throws RpcReadError on timeout (default 10 s), transport failure, JSON-RPC error (a revert is `rpc`
 *   with `rpcCode` 3) or a result that is not one 32-byte word (`bad_response`, e.g. no code at `token`).
 * @throws ChainInputError when an address is malformed
 * @example
 * const allowance = await readErc20Allowance(rpcUrl, usdc, owner, PERMIT2_ADDRESS);
 * if (allowance < amount) throw apiError(25, 'approve Permit2 for this token first');
 */
export async function readErc20Allowance(
  rpcUrl: string,
  token: EvmAddress,
  owner: EvmAddress,
  spender: EvmAddress,
  opts: EvmReadOptions = {},
): Promise<bigint> {
  const address = requireEvmAddress(token, 'token');
  const args = [requireEvmAddress(owner, 'owner'), requireEvmAddress(spender, 'spender')] as const;
  return read(rpcUrl, 'eth_call', opts, (c) =>
    c.readContract({ address, abi: erc20Abi, functionName: 'allowance', args }),
  );
}

const lower = (s: string) => s.toLowerCase();

/** The receipt of `txHash`, or null while it is not mined (or unknown). */
export async function evmReceipt(
  rpcUrl: string,
  txHash: string,
  opts: EvmReadOptions = {},
): Promise<EvmReceipt | null> {
  const r = await read(rpcUrl, 'eth_getTransactionReceipt', opts, (c) =>
    orNull(c.getTransactionReceipt({ hash: txHash as Hash }), TransactionReceiptNotFoundError),
  );
  if (!r?.blockNumber) return null;
  return {
    status: r.status === 'success' ? 'success' : 'reverted',
    blockNumber: r.blockNumber,
    blockHash: lower(r.blockHash ?? ''),
    from: lower(r.from ?? ''),
    to: r.to ? lower(r.to) : null,
    logs: (r.logs ?? []).map((l, i) => ({
      address: lower(l.address),
      topics: (l.topics ?? []).map(lower),
      data: lower(l.data ?? '0x'),
      logIndex: l.logIndex ?? i,
    })),
  };
}

/** The transaction `txHash` (sender, recipient, native value), or null when unknown. */
export async function evmTransaction(
  rpcUrl: string,
  txHash: string,
  opts: EvmReadOptions = {},
): Promise<EvmTx | null> {
  const t = await read(rpcUrl, 'eth_getTransactionByHash', opts, (c) =>
    orNull(c.getTransaction({ hash: txHash as Hash }), TransactionNotFoundError),
  );
  if (!t?.from) return null;
  return {
    from: lower(t.from),
    to: t.to ? lower(t.to) : null,
    value: t.value ?? 0n,
    blockNumber: t.blockNumber ?? null,
  };
}

/** The best block's number. */
export async function evmBlockNumber(rpcUrl: string, opts: EvmReadOptions = {}): Promise<bigint> {
  // cacheTime 0: viem otherwise serves the block number from a 4 s cache, and confirmations count blocks.
  return read(rpcUrl, 'eth_blockNumber', opts, (c) => c.getBlockNumber({ cacheTime: 0 }));
}

/** Unix seconds of block `n`, or null when the node does not know it. */
export async function evmBlockTime(
  rpcUrl: string,
  n: bigint,
  opts: EvmReadOptions = {},
): Promise<number | null> {
  const b = await read(rpcUrl, 'eth_getBlockByNumber', opts, (c) =>
    orNull(c.getBlock({ blockNumber: n }), BlockNotFoundError),
  );
  return b ? Number(b.timestamp) : null;
}
