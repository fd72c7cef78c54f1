import { preview } from '../bytes.ts';
import { type EvmAddress, requireEvmAddress } from './permit2.ts';

/** Why an EVM JSON-RPC read failed. */
export type EvmRpcErrorCode = 'timeout' | 'unreachable' | 'http' | 'rpc' | 'bad_response';

/**
 * An EVM JSON-RPC call failed: the node was unreachable or slow (`timeout`, `unreachable`), answered a
 * non-2xx status (`http`), a JSON-RPC error (`rpc`, with `rpcCode`; a revert is one), or something that
 * is not the expected result (`bad_response`, e.g. `0x` from an address without code).
 */
export class EvmRpcError extends Error {
  override readonly name = 'EvmRpcError';
  readonly code: EvmRpcErrorCode;
  readonly method: string;
  readonly rpcCode: number | undefined;
  constructor(
    code: EvmRpcErrorCode,
    method: string,
    message: string,
    opts?: { rpcCode?: number; cause?: unknown },
  ) {
    super(`${method}: ${message}`, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.method = method;
    this.rpcCode = opts?.rpcCode;
  }
}

let nextId = 1;

/**
 * One JSON-RPC 2.0 call over HTTP POST with a timeout; returns `result` or throws {@link EvmRpcError}.
 *
 * @example
 * const chainId = BigInt(await evmRpcCall<string>(url, 'eth_chainId', []));
 */
export async function evmRpcCall<T>(
  rpcUrl: string,
  method: string,
  params: unknown[],
  opts: { timeoutMs?: number } = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let res: Response;
  try {
    res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const name = (e as { name?: string } | undefined)?.name;
    if (name === 'TimeoutError' || name === 'AbortError')
      throw new EvmRpcError('timeout', method, `no answer from ${rpcUrl} within ${timeoutMs} ms`, {
        cause: e,
      });
    const inner = (e as { cause?: { code?: string; message?: string } } | undefined)?.cause;
    const reason = inner?.code ?? inner?.message ?? (e instanceof Error ? e.message : String(e));
    throw new EvmRpcError('unreachable', method, `cannot reach ${rpcUrl}: ${reason}`, { cause: e });
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw new EvmRpcError('timeout', method, `body from ${rpcUrl} not received within ${timeoutMs} ms`, {
      cause: e,
    });
  }
  if (!res.ok) throw new EvmRpcError('http', method, `HTTP ${res.status} from ${rpcUrl}: ${preview(text)}`);
  let body: { result?: unknown; error?: { code?: unknown; message?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    throw new EvmRpcError('bad_response', method, `expected a JSON-RPC response, received ${preview(text)}`);
  }
  if (body && typeof body === 'object' && body.error) {
    const code = typeof body.error.code === 'number' ? body.error.code : undefined;
    throw new EvmRpcError(
      'rpc',
      method,
      `node answered error ${code ?? '?'}: ${preview(body.error.message)}`,
      {
        ...(code === undefined ? {} : { rpcCode: code }),
      },
    );
  }
  if (!body || typeof body !== 'object' || !('result' in body))
    throw new EvmRpcError('bad_response', method, `expected a JSON-RPC result, received ${preview(text)}`);
  return body.result as T;
}

/** `allowance(address,address)` selector: first 4 bytes of keccak256 of the signature. */
const ALLOWANCE_SELECTOR = 'dd62ed3e';

function word(address: EvmAddress): string {
  return address.slice(2).toLowerCase().padStart(64, '0');
}

/**
 * Reads an ERC-20 allowance with `eth_call` at the `latest` block: `token.allowance(owner, spender)`.
 * The swap service calls it with `spender` = the Permit2 contract before accepting a permit2 approval.
 *
 * @throws EvmRpcError on timeout (default 10 s), transport failure, JSON-RPC error (e.g. revert) or a
 *   result that is not one 32-byte word (e.g. `0x` when `token` has no code).
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
  opts: { timeoutMs?: number } = {},
): Promise<bigint> {
  const data = `0x${ALLOWANCE_SELECTOR}${word(requireEvmAddress(owner, 'owner'))}${word(requireEvmAddress(spender, 'spender'))}`;
  const to = requireEvmAddress(token, 'token');
  const result = await evmRpcCall<unknown>(rpcUrl, 'eth_call', [{ to, data }, 'latest'], opts);
  if (typeof result !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(result))
    throw new EvmRpcError(
      'bad_response',
      'eth_call',
      `allowance() of ${to} expected one 32-byte word, received ${preview(result)}${result === '0x' ? ' (no contract code at the token address?)' : ''}`,
    );
  return BigInt(result);
}
