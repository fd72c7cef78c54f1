/**
 * Electrum JSON-RPC error codes. JSON-RPC 2.0 framing errors use the standard codes; request-level
 * failures follow ElectrumX/electrs (1 = bad request, 2 = daemon error). bitcoind errors on
 * `transaction.get` and `transaction.broadcast` are passed through with bitcoind's own code and message,
 * because clients (rgb-lib) match on bitcoind's texts.
 */
export const ErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  BAD_REQUEST: 1,
  DAEMON_ERROR: 2,
} as const;

export class ElectrumError extends Error {
  override readonly name = 'ElectrumError';
  readonly code: number;
  /** The connection is closed once this error is sent (a failed `server.version` negotiation). */
  readonly closeConnection: boolean;
  constructor(code: number, message: string, opts: { closeConnection?: boolean } = {}) {
    super(message);
    this.code = code;
    this.closeConnection = opts.closeConnection ?? false;
  }
}

export const badParams = (method: string, expected: string, got: unknown): ElectrumError =>
  new ElectrumError(
    ErrorCode.INVALID_PARAMS,
    `${method}: expected ${expected}, got ${JSON.stringify(got) ?? 'nothing'}`,
  );
