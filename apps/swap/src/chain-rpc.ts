/**
 * JSON-RPC reads of EVM/Tron and Solana nodes the service needs beyond the chains module: receipts
 * and their ERC-20 `Transfer` logs (deposit and fulfilment checks). The allowance read is the
 * chains module's `readErc20Allowance`. Tron exposes the same calls on its `/jsonrpc` endpoint.
 */

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export class EvmReadError extends Error {
  override readonly name = 'EvmReadError';
}

export interface Erc20Transfer {
  token: string;
  from: string;
  to: string;
  value: bigint;
}

export interface EvmReceipt {
  status: 'success' | 'reverted';
  blockNumber: bigint;
  transfers: Erc20Transfer[];
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
    throw new EvmReadError(`${method}: ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok) throw new EvmReadError(`${method}: HTTP ${res.status}`);
  const body = (await res.json().catch(() => null)) as { result?: T; error?: { message?: string } } | null;
  if (!body || body.error) throw new EvmReadError(`${method}: ${body?.error?.message ?? 'bad response'}`);
  return body.result as T;
}

function topicAddress(topic: string): string {
  return `0x${topic.slice(-40)}`.toLowerCase();
}

/** The receipt of `txHash`, or null while it is not mined. */
export async function readReceipt(
  url: string,
  txHash: string,
  timeoutMs = 10_000,
): Promise<EvmReceipt | null> {
  const r = await call<{
    status?: string;
    blockNumber?: string;
    logs?: { address: string; topics: string[]; data: string }[];
  } | null>(url, 'eth_getTransactionReceipt', [txHash], timeoutMs);
  if (!r) return null;
  const transfers: Erc20Transfer[] = [];
  for (const log of r.logs ?? []) {
    if (log.topics?.[0]?.toLowerCase() !== TRANSFER_TOPIC || log.topics.length !== 3) continue;
    transfers.push({
      token: log.address.toLowerCase(),
      from: topicAddress(log.topics[1]!),
      to: topicAddress(log.topics[2]!),
      value: BigInt(log.data === '0x' ? 0 : log.data),
    });
  }
  return {
    status: r.status === '0x1' ? 'success' : 'reverted',
    blockNumber: BigInt(r.blockNumber ?? 0),
    transfers,
  };
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
  if (!r?.value?.blockhash) throw new EvmReadError('getLatestBlockhash: bad response');
  return { blockhash: r.value.blockhash, lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight ?? 0) };
}
