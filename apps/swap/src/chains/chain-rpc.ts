/**
 * JSON-RPC reads of EVM/Tron and Solana nodes that settlement verification needs: EVM receipts with
 * their logs, transactions (sender, recipient, value), the block number and block times; Solana
 * transactions (wire bytes + status meta), signature statuses, the slot and recent blockhashes.
 * Tron is read through its full node's Ethereum-compatible `/jsonrpc` endpoint (the same calls,
 * 20-byte hex addresses). The allowance read is the chains module's `readErc20Allowance`.
 */

export class RpcReadError extends Error {
  override readonly name = 'RpcReadError';
}

export interface EvmLog {
  address: string;
  topics: string[];
  data: string;
  logIndex: number;
}

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

async function call<T>(url: string, method: string, params: unknown[], timeoutMs: number): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new RpcReadError(`${method}: ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok) throw new RpcReadError(`${method}: HTTP ${res.status}`);
  const body = (await res.json().catch(() => null)) as {
    result?: T;
    error?: { code?: number; message?: string };
  } | null;
  if (!body || body.error || !('result' in body))
    throw new RpcReadError(`${method}: ${body?.error?.message ?? 'bad response'}`);
  return body.result as T;
}

const lower = (s: string) => s.toLowerCase();

/** The receipt of `txHash`, or null while it is not mined. */
export async function evmReceipt(
  url: string,
  txHash: string,
  timeoutMs = 10_000,
): Promise<EvmReceipt | null> {
  const r = await call<{
    status?: string;
    blockNumber?: string;
    blockHash?: string;
    from?: string;
    to?: string | null;
    logs?: { address: string; topics: string[]; data: string; logIndex?: string }[];
  } | null>(url, 'eth_getTransactionReceipt', [txHash], timeoutMs);
  if (!r) return null;
  if (!r.blockNumber) return null;
  return {
    status: r.status === '0x1' ? 'success' : 'reverted',
    blockNumber: BigInt(r.blockNumber),
    blockHash: lower(r.blockHash ?? ''),
    from: lower(r.from ?? ''),
    to: r.to ? lower(r.to) : null,
    logs: (r.logs ?? []).map((l, i) => ({
      address: lower(l.address),
      topics: (l.topics ?? []).map(lower),
      data: lower(l.data ?? '0x'),
      logIndex: l.logIndex === undefined ? i : Number(BigInt(l.logIndex)),
    })),
  };
}

/** The transaction `txHash` (sender, recipient, native value), or null when unknown. */
export async function evmTransaction(url: string, txHash: string, timeoutMs = 10_000): Promise<EvmTx | null> {
  const t = await call<{
    from?: string;
    to?: string | null;
    value?: string;
    blockNumber?: string | null;
  } | null>(url, 'eth_getTransactionByHash', [txHash], timeoutMs);
  if (!t?.from) return null;
  return {
    from: lower(t.from),
    to: t.to ? lower(t.to) : null,
    value: BigInt(t.value ?? '0x0'),
    blockNumber: t.blockNumber ? BigInt(t.blockNumber) : null,
  };
}

export async function evmBlockNumber(url: string, timeoutMs = 10_000): Promise<bigint> {
  return BigInt(await call<string>(url, 'eth_blockNumber', [], timeoutMs));
}

/** Unix seconds of block `n`, or null when the node does not know it. */
export async function evmBlockTime(url: string, n: bigint, timeoutMs = 10_000): Promise<number | null> {
  const b = await call<{ timestamp?: string } | null>(
    url,
    'eth_getBlockByNumber',
    [`0x${n.toString(16)}`, false],
    timeoutMs,
  );
  return b?.timestamp ? Number(BigInt(b.timestamp)) : null;
}

/** Solana `getLatestBlockhash` (finalized). */
export async function solanaLatestBlockhash(
  url: string,
  timeoutMs = 10_000,
): Promise<{ blockhash: string; lastValidBlockHeight: bigint }> {
  const r = await call<{ value?: { blockhash?: string; lastValidBlockHeight?: number } }>(
    url,
    'getLatestBlockhash',
    [{ commitment: 'finalized' }],
    timeoutMs,
  );
  if (!r?.value?.blockhash) throw new RpcReadError('getLatestBlockhash: bad response');
  return { blockhash: r.value.blockhash, lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight ?? 0) };
}

export async function solanaSlot(url: string, timeoutMs = 10_000): Promise<bigint> {
  return BigInt(await call<number>(url, 'getSlot', [{ commitment: 'confirmed' }], timeoutMs));
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

/** A Solana transaction by signature (wire bytes and execution status), or null when unknown. */
export async function solanaTransaction(
  url: string,
  signature: string,
  timeoutMs = 10_000,
): Promise<SolanaTx | null> {
  const t = await call<{
    slot: number;
    blockTime?: number | null;
    meta?: { err?: unknown } | null;
    transaction: [string, string];
  } | null>(
    url,
    'getTransaction',
    [signature, { encoding: 'base64', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }],
    timeoutMs,
  );
  if (!t) return null;
  const s = await call<{
    value: ({ confirmations: number | null; confirmationStatus?: string | null } | null)[];
  }>(url, 'getSignatureStatuses', [[signature], { searchTransactionHistory: true }], timeoutMs);
  const status = s.value?.[0] ?? null;
  return {
    slot: BigInt(t.slot),
    blockTime: t.blockTime ?? null,
    wire: new Uint8Array(Buffer.from(t.transaction[0], 'base64')),
    err: t.meta?.err ?? null,
    confirmations: status ? status.confirmations : 0,
    confirmationStatus: status?.confirmationStatus ?? null,
  };
}
