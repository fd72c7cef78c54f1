/**
 * `buildApp`: the RGB proxy as a Fastify app (no listening), for `main.ts` and in-process tests.
 *
 * HTTP surface:
 * - `POST /json-rpc` (and `POST /` as an alias): JSON bodies, multipart/form-data uploads, or
 *   urlencoded forms (as the reference's express.urlencoded reads them).
 *   Always HTTP 200 with a JSON-RPC response, or 204 for notifications; transport problems
 *   (bad JSON, oversize bodies, broken multipart, other content types) become JSON-RPC errors.
 * - CORS open to any origin, like the reference (express `cors()` defaults).
 * - Anything else: the kit's 404/error handling, with a JSON-RPC shaped envelope.
 */
import multipart from '@fastify/multipart';
import {
  createLogger,
  createServer,
  type ErrorEnvelopeFactory,
  type ErrorInfo,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  installJsonParser,
  type Logger,
  type ServiceApp,
} from '@rgbx/service-kit';
import { E, type RpcError } from './errors.ts';
import { createMethods, type MethodContext, SERVER_VERSION } from './methods.ts';
import { ProxyMetrics } from './metrics.ts';
import {
  encodeResponse,
  failure,
  isRpcId,
  RpcDispatcher,
  type RpcId,
  type RpcResponse,
  UNREADABLE_PARAMS,
} from './rpc.ts';
import { ProxyStore, type StagedFile, UploadTooLargeError } from './store.ts';

export const DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_JSON_BYTES = 1024 * 1024;

export interface BuildAppOptions {
  /** Where app.db, consignments/, media/ and tmp/ live (created if missing). */
  dataDir: string;
  /** Largest accepted upload (the `file` part). Default 64 MiB. */
  maxUploadBytes?: number;
  /** Largest accepted JSON body. Default 1 MiB. */
  maxJsonBytes?: number;
  /** Default: a silent logger. */
  logger?: Logger;
  /** Default: a new registry with Node's process metrics (served by main.ts on its own listener). */
  metrics?: ProxyMetrics;
}

export interface ProxyApp {
  app: ServiceApp;
  store: ProxyStore;
  metrics: ProxyMetrics;
}

/** Marks a body that came with a content type the RPC endpoint does not read. */
const UNREADABLE_BODY = Symbol('unreadable-body');

const RPC_PATHS = ['/json-rpc', '/'];

function rpcCodeFor(e: ErrorInfo): number {
  if (e.code === 'INVALID_JSON') return -32700;
  if (e.statusCode === 404 || e.statusCode === 405) return -32601;
  if (e.statusCode === 413) return -32000;
  if (e.statusCode >= 500) return -32603;
  return -32600;
}

/** Non-RPC routes: the kit's error information in a JSON-RPC error shape (HTTP status kept). */
export const proxyEnvelope: ErrorEnvelopeFactory = (e) => ({
  statusCode: e.statusCode,
  body: { jsonrpc: '2.0', id: null, error: { code: rpcCodeFor(e), message: e.message } },
});

function sendRpc(reply: FastifyReply, response: RpcResponse | RpcResponse[] | null): FastifyReply {
  if (response === null) return reply.code(204).send();
  return reply.code(200).type('application/json; charset=utf-8').send(encodeResponse(response));
}

/** Maps a transport-level failure (body parsing, multipart, limits) to a JSON-RPC error. */
function transportError(err: unknown, maxUploadBytes: number, maxJsonBytes: number): RpcError {
  const e = err as { code?: unknown; statusCode?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (err instanceof UploadTooLargeError || code === 'FST_REQ_FILE_TOO_LARGE') {
    return E.PAYLOAD_TOO_LARGE({ max_upload_bytes: maxUploadBytes });
  }
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e?.statusCode === 413) {
    return E.PAYLOAD_TOO_LARGE({ max_json_bytes: maxJsonBytes });
  }
  if (code === 'INVALID_JSON' || code === 'FST_ERR_CTP_INVALID_JSON_BODY') return E.PARSE_ERROR();
  return E.INVALID_REQUEST();
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // discard
  }
}

interface FormState {
  fields: Record<string, unknown>;
  /** `params[key]` fields (the reference's documented curl form), in order; a repeated key collects an array. */
  bracketParams: Map<string, string[]>;
  /** A `params[...]` field that is not `params[key]` (nested or empty brackets). */
  unreadableParamsField?: string;
}

interface MultipartState extends FormState {
  file?: StagedFile;
}

/** `params[recipient_id]` → `recipient_id`; other bracket forms → '' (unreadable); not a params field → null. */
function bracketParamKey(fieldname: string): string | null {
  if (!fieldname.startsWith('params[')) return null;
  const m = /^params\[([^[\]]+)\]$/.exec(fieldname);
  return m ? m[1]! : '';
}

async function readMultipart(
  request: FastifyRequest,
  store: ProxyStore,
  maxUploadBytes: number,
  state: MultipartState,
): Promise<void> {
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      if (part.fieldname === 'file' && !state.file) {
        const stream = part.file;
        state.file = await store.stage(stream, maxUploadBytes, () => stream.truncated);
      } else {
        await drain(part.file);
      }
    } else {
      if (part.valueTruncated) throw new UploadTooLargeError(maxUploadBytes);
      addField(state, part.fieldname, part.value);
    }
  }
}

/** One text field of a form: a `params[key]` field, or a top-level member (the first value counts). */
function addField(state: FormState, name: string, value: unknown): void {
  const key = bracketParamKey(name);
  if (key === '') state.unreadableParamsField ??= name;
  else if (key !== null) {
    const values = state.bracketParams.get(key) ?? [];
    values.push(String(value));
    state.bracketParams.set(key, values);
  } else if (!Object.hasOwn(state.fields, name)) state.fields[name] = value;
}

/** An `application/x-www-form-urlencoded` body (the reference reads it with express.urlencoded). */
class UrlEncodedBody {
  readonly state: FormState = { fields: {}, bracketParams: new Map() };
  constructor(text: string) {
    for (const [name, value] of new URLSearchParams(text)) addField(this.state, name, value);
  }
}

/**
 * The request object a form (multipart or urlencoded) describes (only the JSON-RPC members are taken). `params` is
 * either one field holding JSON text (rgb-lib's form) or `params[key]` fields (the reference's
 * documented curl form and its own tests), whose values are strings; a key sent twice becomes an
 * array, as the reference's multer makes it (so it fails validation there and here alike). Both
 * forms at once, or a nested/empty bracket form, make the params unreadable (-32602).
 */
function requestFromFields(state: FormState): Record<string, unknown> {
  const { fields, bracketParams } = state;
  const req: Record<string, unknown> = {};
  for (const k of ['jsonrpc', 'method', 'params', 'id']) if (Object.hasOwn(fields, k)) req[k] = fields[k];
  if (
    state.unreadableParamsField !== undefined ||
    (bracketParams.size > 0 && Object.hasOwn(fields, 'params'))
  ) {
    req.params = UNREADABLE_PARAMS;
  } else if (bracketParams.size > 0) {
    const params: Record<string, string | string[]> = {};
    for (const [k, values] of bracketParams) params[k] = values.length === 1 ? values[0]! : values;
    req.params = params;
  }
  return req;
}

export function buildApp(opts: BuildAppOptions): ProxyApp {
  const maxUploadBytes = opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
  const maxJsonBytes = opts.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES;
  const logger = opts.logger ?? createLogger({ name: 'rgb-proxy', level: 'silent' });
  const store = ProxyStore.open(opts.dataDir);
  const metrics = opts.metrics ?? new ProxyMetrics();
  metrics.watchStore(store, logger);
  const startedAt = Date.now();
  if (store.openReport.removedTmp + store.openReport.removedOrphans > 0) {
    logger.warn(store.openReport, 'removed leftovers of interrupted uploads');
  }

  const app = createServer({
    name: 'rgb-proxy',
    version: SERVER_VERSION,
    logger,
    bodyLimit: maxJsonBytes,
    envelope: proxyEnvelope,
    // rgb-proxy-server answers 404 (-32601) for every other route and method: so do we.
    methodNotAllowed: false,
  });
  metrics.instrument(app);

  const dispatcher = new RpcDispatcher<MethodContext>(
    createMethods(store, () => startedAt),
    {
      onInternalError: (err, method) => logger.error({ err, method }, 'rpc method failed'),
      onCall: (method, code) => metrics.call(method, code),
    },
  );

  // CORS, as express `cors()` with its defaults.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('access-control-allow-origin', '*');
  });
  app.options('*', async (request, reply) => {
    const asked = request.headers['access-control-request-headers'];
    reply.header('access-control-allow-methods', 'GET,HEAD,PUT,PATCH,POST,DELETE');
    if (asked)
      reply.header('access-control-allow-headers', asked).header('vary', 'Access-Control-Request-Headers');
    return reply.code(204).header('content-length', '0').send();
  });

  app.register(async (rpc) => {
    const instance = rpc as unknown as FastifyInstance;
    instance.removeAllContentTypeParsers();
    installJsonParser(instance);
    await instance.register(multipart, {
      throwFileSizeLimit: true,
      limits: { fileSize: maxUploadBytes, files: 4, fields: 32, parts: 64, fieldSize: maxJsonBytes },
    });
    instance.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_req, body, done) => done(null, new UrlEncodedBody(body as string)),
    );
    // Other content types: the reference (express.json, express.urlencoded) ignores such bodies, so
    // the request has no JSON-RPC members and is answered "Invalid Request".
    instance.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) =>
      done(null, UNREADABLE_BODY),
    );

    instance.setErrorHandler((err, request, reply) => {
      const rpcErr = transportError(err, maxUploadBytes, maxJsonBytes);
      request.log.info({ err, rpcCode: rpcErr.code }, 'rejected json-rpc request');
      sendRpc(reply, failure(null, rpcErr));
    });

    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.isMultipart()) {
        const state: MultipartState = { fields: {}, bracketParams: new Map() };
        let response: RpcResponse | RpcResponse[] | null;
        try {
          await readMultipart(request, store, maxUploadBytes, state);
          const ctx: MethodContext = state.file ? { file: state.file } : {};
          response = await dispatcher.handle(requestFromFields(state), ctx);
          logCall(request, state.fields.method, response);
        } catch (err) {
          const id: RpcId = isRpcId(state.fields.id) ? state.fields.id : null;
          const rpcErr = transportError(err, maxUploadBytes, maxJsonBytes);
          request.log.info({ err, rpcCode: rpcErr.code }, 'rejected multipart upload');
          metrics.rejectedTransfer(rpcErr.code);
          response = failure(id, rpcErr);
        } finally {
          // Committed files were renamed away; anything still in tmp/ is dropped before replying.
          if (state.file) await store.discard(state.file);
        }
        return sendRpc(reply, response);
      }
      let body = request.body;
      if (body instanceof UrlEncodedBody) body = requestFromFields(body.state);
      const response =
        body === UNREADABLE_BODY || body === undefined
          ? failure(null, E.INVALID_REQUEST())
          : await dispatcher.handle(body, {});
      logCall(request, (body as { method?: unknown } | undefined)?.method, response);
      return sendRpc(reply, response);
    };
    for (const url of RPC_PATHS) instance.post(url, handler);
  });

  app.addHook('onClose', async () => {
    store.close();
  });

  return { app, store, metrics };
}

function logCall(
  request: FastifyRequest,
  method: unknown,
  response: RpcResponse | RpcResponse[] | null,
): void {
  if (response === null || Array.isArray(response)) {
    request.log.info({ rpcMethod: method }, 'json-rpc');
    return;
  }
  if ('error' in response) {
    request.log.info(
      { rpcMethod: method, rpcId: response.id, rpcError: response.error.code },
      'json-rpc error',
    );
  } else {
    request.log.info({ rpcMethod: method, rpcId: response.id }, 'json-rpc ok');
  }
}
