/**
 * Errors shared by every swap-crypto subpath (`@rgbx/chains/evm`, `/tron`, `/btc`, `/sol`): one class
 * identity, re-exported from each, so `instanceof VerificationError` works whichever subpath threw.
 */

/**
 * A user-supplied approval (signature, signed PSBT, signed transaction) was rejected. `code` is stable
 * and machine-readable (listed per function in SWAP-INTERFACE.md); `expected`/`received` say what.
 *
 * @example
 * try { verifyPermit2Signature(td, sig, owner) } catch (e) {
 *   if (e instanceof VerificationError) reply(422, { code: e.code, message: e.message });
 * }
 */
export class VerificationError extends Error {
  override readonly name = 'VerificationError';
  readonly code: string;
  readonly expected: string | undefined;
  readonly received: string | undefined;
  constructor(code: string, message: string, detail?: { expected?: string; received?: string }) {
    const parts = [message];
    if (detail?.expected !== undefined) parts.push(`expected ${detail.expected}`);
    if (detail?.received !== undefined) parts.push(`received ${detail.received}`);
    super(parts.join('; '));
    this.code = code;
    this.expected = detail?.expected;
    this.received = detail?.received;
  }
}

/**
 * The caller (the service) passed invalid input to a builder or converter: a malformed address, a
 * wrong key length, insufficient funds for a funding PSBT. Not a verdict on a user's signature.
 *
 * @example
 * try { tronAddressToHex(body.sourceAddress) } catch (e) { if (e instanceof ChainInputError) reply(400, …) }
 */
export class ChainInputError extends Error {
  override readonly name = 'ChainInputError';
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** Why a chain node read failed. */
export type RpcReadErrorCode = 'timeout' | 'unreachable' | 'http' | 'rpc' | 'bad_response';

/**
 * A read from a chain node (EVM or Tron JSON-RPC, Solana RPC) failed: the node was unreachable or slow
 * (`timeout`, `unreachable`), answered a non-2xx status (`http`), a JSON-RPC error (`rpc`, with
 * `rpcCode`; an EVM revert is one, code 3), or something that is not the expected result
 * (`bad_response`, e.g. `0x` from an address without code). Never a verdict on user input.
 *
 * @example
 * try { await readErc20Allowance(url, token, owner, PERMIT2_ADDRESS) } catch (e) {
 *   if (e instanceof RpcReadError && e.code === 'timeout') reply(503, …)
 * }
 */
export class RpcReadError extends Error {
  override readonly name = 'RpcReadError';
  readonly code: RpcReadErrorCode;
  readonly method: string;
  readonly rpcCode: number | undefined;
  constructor(
    code: RpcReadErrorCode,
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
