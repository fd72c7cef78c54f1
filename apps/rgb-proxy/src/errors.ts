/**
 * The proxy's JSON-RPC error codes. Codes and messages are those of rgb-proxy-server 0.3.0
 * (protocol 0.2): clients branch on the code (rgb-lib maps -101 to RecipientIDAlreadyUsed and
 * tolerates the -100 text when NACKing), so both must stay exactly as they are.
 */

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;
  readonly data?: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    if (data !== undefined) this.data = data;
  }

  /** Like the reference server (json-rpc-2.0), `data` is only sent when it is truthy. */
  toJSON(): RpcErrorObject {
    return { code: this.code, message: this.message, ...(this.data ? { data: this.data } : {}) };
  }
}

const TABLE = {
  // JSON-RPC 2.0 standard codes.
  PARSE_ERROR: { code: -32700, message: 'Parse error' },
  INVALID_REQUEST: { code: -32600, message: 'Invalid Request' },
  METHOD_NOT_FOUND: { code: -32601, message: 'Method not found' },
  INVALID_PARAMS: { code: -32602, message: 'Invalid params' },
  INTERNAL_ERROR: { code: -32603, message: 'Internal error' },
  // Implementation-defined server error (-32000..-32099): the reference has no upload limit.
  PAYLOAD_TOO_LARGE: { code: -32000, message: 'Payload too large' },
  // rgb-proxy-server codes.
  CANNOT_CHANGE_ACK: { code: -100, message: 'Cannot change ACK' },
  CANNOT_CHANGE_UPLOADED_FILE: { code: -101, message: 'Cannot change uploaded file' },
  INVALID_ACK: { code: -200, message: 'Invalid ACK' },
  INVALID_ATTACHMENT_ID: { code: -201, message: 'Invalid attachment ID' },
  INVALID_RECIPIENT_ID: { code: -202, message: 'Invalid recipient ID' },
  INVALID_TXID: { code: -203, message: 'Invalid TXID' },
  INVALID_VOUT: { code: -204, message: 'Invalid vout' },
  MISSING_ACK: { code: -300, message: 'Missing ACK' },
  MISSING_ATTACHMENT_ID: { code: -301, message: 'Missing attachment ID' },
  MISSING_RECIPIENT_ID: { code: -302, message: 'Missing recipient ID' },
  // Upstream uses -303 for both a missing file and a missing txid.
  MISSING_FILE: { code: -303, message: 'Missing file' },
  MISSING_TXID: { code: -303, message: 'Missing TXID' },
  NOT_FOUND_CONSIGNMENT: { code: -400, message: 'Consignment file not found' },
  NOT_FOUND_MEDIA: { code: -401, message: 'Media file not found' },
} as const satisfies Record<string, { code: number; message: string }>;

export type RpcErrorName = keyof typeof TABLE;

/** `E.MISSING_RECIPIENT_ID(params)` builds the error; `data` is usually the request params. */
export const E = Object.fromEntries(
  Object.entries(TABLE).map(([name, def]) => [
    name,
    (data?: unknown) => new RpcError(def.code, def.message, data),
  ]),
) as { readonly [K in RpcErrorName]: (data?: unknown) => RpcError };

/** The table, for docs. */
export function listRpcErrors(): { name: RpcErrorName; code: number; message: string }[] {
  return (Object.keys(TABLE) as RpcErrorName[]).map((name) => ({ name, ...TABLE[name] }));
}
