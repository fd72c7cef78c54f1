/**
 * Errors shared by every service: the coded `ServiceError`, per-service code tables built with
 * `defineErrors`, the envelope factory contract, and `classifyError`, which turns anything thrown
 * inside a request (our errors, Fastify/Ajv errors, plugin errors, plain bugs) into one `ErrorInfo`.
 */

import { type Static, Type } from 'typebox';
import { describeSchema } from './config.ts';

export interface ServiceErrorOptions {
  details?: unknown;
  cause?: unknown;
}

/** An error the service throws on purpose: its code, status and message are safe to show to clients. */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly code: string;
  readonly statusCode: number;
  readonly details?: unknown;

  constructor(code: string, statusCode: number, message: string, options: ServiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.statusCode = statusCode;
    if (options.details !== undefined) this.details = options.details;
  }

  toJSON(): { code: string; statusCode: number; message: string; details?: unknown } {
    return {
      code: this.code,
      statusCode: this.statusCode,
      message: this.message,
      ...(this.details === undefined ? {} : { details: this.details }),
    };
  }
}

// biome-ignore lint/suspicious/noExplicitAny: message builders take arbitrary argument lists
type MessageBuilder = (...args: any[]) => string;

/** One row of a service's error code table. */
export interface ErrorDefinition {
  /** HTTP status answered for this code. */
  status: number;
  /** A fixed message, or a function building it from `create(...)`'s arguments. */
  message: string | MessageBuilder;
  /** Optional documentation text (listed by `listErrors`). */
  description?: string;
}

export type ErrorTable = Record<string, ErrorDefinition>;

type MessageArgs<D extends ErrorDefinition> = D['message'] extends (...args: infer A) => string ? A : [];

/** The factory `defineErrors` builds for each code. */
export interface ErrorFactory<C extends string = string, A extends unknown[] = unknown[]> {
  readonly code: C;
  readonly status: number;
  readonly description?: string;
  /** Builds the error; arguments go to the message builder. */
  create(...args: A): ServiceError;
  /** Same as `create`, with details (sent to clients) and/or a cause (logged only). */
  createWith(options: ServiceErrorOptions, ...args: A): ServiceError;
  /** True when `err` is a `ServiceError` carrying this code. */
  is(err: unknown): err is ServiceError;
}

export type DefinedErrors<T extends ErrorTable> = {
  readonly [K in keyof T & string]: ErrorFactory<K, MessageArgs<T[K]>>;
};

/** A listed code, for docs and OpenAPI descriptions. */
export interface ErrorCodeInfo {
  code: string;
  status: number;
  description?: string;
  /** The message, or `undefined` when it is built from arguments. */
  message?: string;
}

const TABLE_ROWS = Symbol('service-kit.error-table');

/**
 * Builds a central code table, in the style of fastify's `errors.js`:
 *
 * ```ts
 * const E = defineErrors({ ASSET_NOT_FOUND: { status: 404, message: (id: string) => `asset ${id} not found` } });
 * throw E.ASSET_NOT_FOUND.create('abc');
 * ```
 */
export function defineErrors<const T extends ErrorTable>(table: T): DefinedErrors<T> {
  const out: Record<string, ErrorFactory> = {};
  const rows: ErrorCodeInfo[] = [];
  for (const [code, def] of Object.entries(table)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(code)) {
      throw new TypeError(`defineErrors: code "${code}" must be UPPER_SNAKE_CASE`);
    }
    if (!Number.isInteger(def.status) || def.status < 400 || def.status > 599) {
      throw new TypeError(`defineErrors: code "${code}" has status ${def.status}, expected 400..599`);
    }
    const build = (options: ServiceErrorOptions, args: unknown[]): ServiceError => {
      const message = typeof def.message === 'function' ? def.message(...args) : def.message;
      return new ServiceError(code, def.status, message, options);
    };
    out[code] = Object.freeze({
      code,
      status: def.status,
      ...(def.description === undefined ? {} : { description: def.description }),
      create: (...args: unknown[]) => build({}, args),
      createWith: (options: ServiceErrorOptions, ...args: unknown[]) => build(options, args),
      is: (err: unknown): err is ServiceError => err instanceof ServiceError && err.code === code,
    });
    rows.push({
      code,
      status: def.status,
      ...(def.description === undefined ? {} : { description: def.description }),
      ...(typeof def.message === 'string' ? { message: def.message } : {}),
    });
  }
  Object.defineProperty(out, TABLE_ROWS, { value: rows, enumerable: false });
  return Object.freeze(out) as DefinedErrors<T>;
}

/** Lists a table built by `defineErrors` (in definition order). */
export function listErrors(errors: DefinedErrors<ErrorTable>): ErrorCodeInfo[] {
  const rows = (errors as unknown as { [TABLE_ROWS]?: ErrorCodeInfo[] })[TABLE_ROWS];
  if (rows) return rows.map((r) => ({ ...r }));
  return Object.values(errors).map((f) => ({ code: f.code, status: f.status }));
}

/** The codes the kit itself answers with. Services may list them in their docs. */
export const KitErrors = defineErrors({
  VALIDATION_ERROR: { status: 400, message: 'Request validation failed', description: 'schema validation' },
  INVALID_JSON: { status: 400, message: (reason: string) => `Invalid JSON body: ${reason}` },
  BAD_REQUEST: { status: 400, message: 'Bad Request' },
  MALFORMED_REQUEST: {
    status: 400,
    message: (what: string) => `Malformed HTTP request: ${what}`,
    description: 'rejected by the HTTP parser: bad Content-Length, bad chunked encoding, bad syntax',
  },
  NOT_FOUND: { status: 404, message: (method: string, url: string) => `Route ${method} ${url} not found` },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method Not Allowed' },
  NOT_ACCEPTABLE: { status: 406, message: 'Not Acceptable' },
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'Request not received in time',
    description: 'headers or body slower than the server’s headers/request timeout; the connection is closed',
  },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'Request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: (contentType: string) => `Unsupported media type: ${contentType}`,
  },
  TOO_MANY_REQUESTS: { status: 429, message: 'Too Many Requests' },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: 'Request headers are too large',
    description: 'request line and headers over 16 KiB; the connection is closed',
  },
  INTERNAL_ERROR: { status: 500, message: 'Internal Server Error' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'Service Unavailable' },
});

/** One validation failure, taken from Ajv's output. */
export interface ValidationIssue {
  /** JSON pointer inside the validated part, e.g. `/amount`. */
  path: string;
  message: string;
  keyword: string;
  params?: Record<string, unknown>;
}

export interface ValidationInfo {
  /** Which part of the request failed: `body`, `querystring`, `params` or `headers`. */
  context: string;
  issues: ValidationIssue[];
}

/** What the kit hands to a service's envelope factory. */
export interface ErrorInfo {
  statusCode: number;
  code: string;
  message: string;
  details?: unknown;
  validation?: ValidationInfo;
}

export interface EnvelopeResponse {
  statusCode: number;
  /** Strings and Buffers are sent as they are; anything else is JSON-encoded. */
  body: unknown;
  /** Defaults to `application/json; charset=utf-8`. */
  contentType?: string;
}

/** Each service decides the shape (and, if it wants, the status) of its error replies. */
export type ErrorEnvelopeFactory = (e: ErrorInfo) => EnvelopeResponse;

const STATUS_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  411: 'LENGTH_REQUIRED',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  416: 'RANGE_NOT_SATISFIABLE',
  422: 'UNPROCESSABLE_ENTITY',
  429: 'TOO_MANY_REQUESTS',
  431: 'HEADERS_TOO_LARGE',
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/**
 * Ajv's message, with the bounds of a bounded number where Ajv names only the type: an integer too large
 * for a JSON number arrives as digits and reads "must be integer"; it says "must be integer >= 0 and
 * <= 4294967295" instead (the schema comes with the error: the kit's Ajv runs `verbose`).
 */
function issueMessage(v: Record<string, unknown>): string {
  const message = typeof v.message === 'string' ? v.message : 'is invalid';
  const schema = v.parentSchema;
  if (v.keyword !== 'type' || !isRecord(schema)) return message;
  if (schema.type !== 'integer' && schema.type !== 'number') return message;
  const bounded = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].some((k) => k in schema);
  return bounded ? `must be ${describeSchema(schema as never)}` : message;
}

function toValidationInfo(err: Record<string, unknown>): ValidationInfo {
  const raw = Array.isArray(err.validation) ? (err.validation as unknown[]) : [];
  const issues: ValidationIssue[] = raw.filter(isRecord).map((v) => ({
    path: typeof v.instancePath === 'string' ? v.instancePath : '',
    message: issueMessage(v),
    keyword: typeof v.keyword === 'string' ? v.keyword : 'unknown',
    ...(isRecord(v.params) ? { params: v.params } : {}),
  }));
  return { context: typeof err.validationContext === 'string' ? err.validationContext : 'body', issues };
}

/**
 * Maps anything thrown while serving a request to the information an envelope needs.
 * `internal` is true for unexpected errors: their real message is never sent, only logged.
 */
export function classifyError(
  err: unknown,
  request?: { headers: Record<string, string | string[] | undefined> },
): ErrorInfo & { internal: boolean } {
  if (err instanceof ServiceError) {
    return {
      statusCode: err.statusCode,
      code: err.code,
      message: err.message,
      ...(err.details === undefined ? {} : { details: err.details }),
      internal: false,
    };
  }
  if (isRecord(err)) {
    const code = typeof err.code === 'string' ? err.code : undefined;
    const status = typeof err.statusCode === 'number' ? err.statusCode : undefined;
    const message = typeof err.message === 'string' ? err.message : '';
    if (Array.isArray(err.validation)) {
      return {
        statusCode: 400,
        code: 'VALIDATION_ERROR',
        message: message || 'Request validation failed',
        validation: toValidationInfo(err),
        internal: false,
      };
    }
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || status === 413) {
      return { ...info(KitErrors.PAYLOAD_TOO_LARGE.create()), internal: false };
    }
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || status === 415) {
      const header = request?.headers['content-type'];
      const ct = (typeof header === 'string' ? header.split(';')[0]?.trim() : undefined) || 'none';
      return { ...info(KitErrors.UNSUPPORTED_MEDIA_TYPE.create(ct)), internal: false };
    }
    if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return { ...info(KitErrors.INVALID_JSON.create(message)), internal: false };
    }
    if (status !== undefined && status >= 400 && status < 500) {
      return {
        statusCode: status,
        code: STATUS_CODES[status] ?? 'BAD_REQUEST',
        message: message || 'Bad Request',
        internal: false,
      };
    }
    if (status === 503) {
      return { ...info(KitErrors.SERVICE_UNAVAILABLE.create()), internal: false };
    }
  }
  return { ...info(KitErrors.INTERNAL_ERROR.create()), internal: true };
}

function info(e: ServiceError): ErrorInfo {
  return { statusCode: e.statusCode, code: e.code, message: e.message };
}

/** The common JSON error shape `{ error: { code, message, details? } }`. */
export const ErrorEnvelopeSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'Stable machine-readable code, e.g. ASSET_NOT_FOUND' }),
      message: Type.String({ description: 'Human-readable message' }),
      details: Type.Optional(Type.Unknown()),
    }),
  },
  { $id: 'ErrorEnvelope', description: 'Error reply' },
);

export type ErrorEnvelope = Static<typeof ErrorEnvelopeSchema>;

/**
 * Helpers for the common envelope. `ErrorEnvelope.factory` is a ready `ErrorEnvelopeFactory`;
 * validation issues go to `details.validation` unless the error already carries details.
 */
export const ErrorEnvelope = {
  schema: ErrorEnvelopeSchema,
  /** `{ $ref: 'ErrorEnvelope#' }`, for response schemas once `app.addSchema(ErrorEnvelope.schema)` ran. */
  ref: Type.Unsafe<ErrorEnvelope>({ $ref: 'ErrorEnvelope#' }),
  body(code: string, message: string, details?: unknown): ErrorEnvelope {
    return { error: { code, message, ...(details === undefined ? {} : { details }) } };
  },
  factory(e: ErrorInfo): EnvelopeResponse {
    const details = e.details ?? (e.validation ? { validation: e.validation.issues } : undefined);
    return { statusCode: e.statusCode, body: ErrorEnvelope.body(e.code, e.message, details) };
  },
};
