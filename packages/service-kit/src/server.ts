/**
 * `createServer`: a Fastify instance with the conventions every service shares: request ids,
 * raw-body JSON parsing, one error envelope for every error and 404, and (optionally) OpenAPI +
 * Swagger UI served from local assets.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import AjvCompiler from '@fastify/ajv-compiler';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import ajvFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
  type RawServerDefault,
} from 'fastify';
import {
  classifyError,
  type EnvelopeResponse,
  type ErrorEnvelopeFactory,
  type ErrorInfo,
  KitErrors,
} from './errors.ts';
import {
  type ClientErrorLike,
  clientErrorInfo,
  DEFAULT_JSON_MAX_DEPTH,
  type HttpTimeouts,
  installJsonDepthGuard,
  isHttpClientError,
  responseStarted,
  setHttpTimeouts,
} from './http-guards.ts';
import type { Logger } from './logger.ts';
import { installJsonParser } from './raw-body.ts';

/** The instance type every service works with. */
export type ServiceApp = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface SwaggerOptions {
  title: string;
  description?: string;
  /** Where Swagger UI lives; the document is at `<routePrefix>/json` and `<routePrefix>/yaml`. Default `/_swagger`. */
  routePrefix?: string;
  /** Also serve the document at `/openapi.yaml` and `/openapi.json` (hidden from the document). */
  yamlPath?: boolean;
  /** `components.securitySchemes` of the document, e.g. `{ ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } }`. */
  securitySchemes?: Record<string, Record<string, unknown>>;
  /** Document-wide security requirement, e.g. `[{ ApiKey: [] }]` (routes may override with their own). */
  security?: Array<Record<string, string[]>>;
}

export interface CreateServerOptions {
  name: string;
  version: string;
  logger: Logger;
  /** Maximum request body in bytes for buffered parsers (JSON). Default 1 MiB. */
  bodyLimit?: number;
  /** Builds every error reply (errors, validation failures, 404s). */
  envelope: ErrorEnvelopeFactory;
  swagger?: SwaggerOptions;
  /** Header carrying the request id, in and out. Default `x-request-id`. */
  requestIdHeader?: string;
  /**
   * Strict JSON types: no Ajv coercion (`"5"` is not an integer, `1` is not a string). Default false
   * (Fastify's `coerceTypes: 'array'`), which suits query strings; APIs whose clients expect a type
   * error for a wrong JSON type set this.
   */
  strictTypes?: boolean;
  /**
   * Strict JSON bodies, coercing query strings, params and headers: a body's `"5"` is not an integer
   * and `true` is not a number (no silent coercion of what a client typed), while `?limit=20` still
   * reads as 20 and a repeated `?wallet=` as an array. Ignored with `strictTypes`.
   */
  strictBody?: boolean;
  /**
   * Annotation keywords the service's schemas carry (e.g. OpenAPI `x-` extensions such as `x-u64`): Ajv,
   * strict by default, refuses a schema with a keyword it does not know; these it accepts and ignores.
   */
  schemaKeywords?: readonly string[];
  /**
   * Answer 405 (with `Allow`) for a known path requested with a method it does not serve. Default
   * true; a service that must answer like a peer that says 404 there (the RGB proxy) sets false.
   */
  methodNotAllowed?: boolean;
  /**
   * HTTP timeouts in ms (0 turns one off); each field not given takes the kit default
   * (`DEFAULT_HTTP_TIMEOUTS`): `requestTimeout` 30 000 (whole request, headers and body: a body
   * sent a byte at a time is cut with 408 in the envelope and the connection closed),
   * `headersTimeout` 10 000 (at most `requestTimeout`; 408 likewise), `connectionTimeout` 60 000
   * (a socket silent this long is closed, unless a request on it is being handled),
   * `keepAliveTimeout` 5 000 (idle keep-alive connections). See `HttpTimeouts`; `setHttpTimeouts`
   * changes them before `listen`.
   */
  timeouts?: Partial<HttpTimeouts>;
  /**
   * Deepest `{`/`[` nesting accepted in a JSON body (any parser: the kit's or a service's own);
   * deeper bodies get INVALID_JSON (400) before they are parsed. Default 64.
   */
  jsonMaxDepth?: number;
  /**
   * Per-request log lines at `info`. `'full'` (default): Fastify's two, `incoming request` (method, url, host,
   * remote address) and `request completed` (status, time). `'completed'`: one line per request once it is
   * answered, `request completed` with `method`, `url`, `statusCode` and `responseTime` (ms): half the log writes
   * and no request serializer, for services whose requests are short and many. Errors are logged alike in both.
   */
  requestLog?: 'full' | 'completed';
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
export const DEFAULT_SWAGGER_PREFIX = '/_swagger';

const SANE_REQUEST_ID = /^[A-Za-z0-9_.:+=/-]{1,128}$/;

/** True for ids we accept from clients: 1..128 chars of `[A-Za-z0-9_.:+=/-]`. */
export function isSaneRequestId(value: unknown): value is string {
  return typeof value === 'string' && SANE_REQUEST_ID.test(value);
}

// ajv-formats is CommonJS with a `default` export; depending on the loader the plugin is the
// module itself or its `default`.
const ajvFormats = ((ajvFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  ajvFormatsModule) as unknown as FormatsPlugin;

const FALLBACK_BODY = JSON.stringify({ error: { code: 'INTERNAL_ERROR', message: 'Internal Server Error' } });

interface RenderedEnvelope {
  statusCode: number;
  contentType: string;
  payload: string | Buffer;
}

/** Runs the envelope factory; a factory that throws or returns a bad status gives the fallback 500. */
function renderEnvelope(
  envelope: ErrorEnvelopeFactory,
  e: ErrorInfo,
  log: FastifyBaseLogger,
): RenderedEnvelope {
  try {
    const out: EnvelopeResponse = envelope(e);
    const payload =
      typeof out.body === 'string' || Buffer.isBuffer(out.body) ? out.body : JSON.stringify(out.body ?? null);
    if (!Number.isInteger(out.statusCode) || out.statusCode < 100 || out.statusCode > 599) {
      throw new RangeError(`envelope returned status ${out.statusCode}`);
    }
    return {
      statusCode: out.statusCode,
      contentType: out.contentType ?? 'application/json; charset=utf-8',
      payload,
    };
  } catch (err) {
    log.error({ err }, 'error envelope factory failed');
    return { statusCode: 500, contentType: 'application/json; charset=utf-8', payload: FALLBACK_BODY };
  }
}

/**
 * Sends an error through the envelope factory. The body is serialized here, never by a route's
 * response schema, so an error can never turn into FST_ERR_FAILED_ERROR_SERIALIZATION.
 */
export function sendEnvelope(
  reply: FastifyReply,
  envelope: ErrorEnvelopeFactory,
  e: ErrorInfo,
): FastifyReply {
  const out = renderEnvelope(envelope, e, reply.log);
  return reply.code(out.statusCode).type(out.contentType).send(out.payload);
}

/**
 * Answers an error Node's HTTP parser raised (bad Content-Length or chunking, oversized headers,
 * a request over the timeouts) with the service's envelope, written straight to the socket since
 * there is no Fastify request, then closes the connection.
 */
function clientErrorHandler(
  envelope: ErrorEnvelopeFactory,
  idHeader: string,
  log: FastifyBaseLogger,
): (err: ClientErrorLike, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection has nobody left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // Socket failures (EPIPE, ETIMEDOUT, …) are no request to answer: the connection is only closed.
    if (!isHttpClientError(err)) {
      log.debug({ errCode: err.code }, 'client connection failed');
      socket.destroy();
      return;
    }
    const e = clientErrorInfo(err);
    log.info({ code: e.code, statusCode: e.statusCode, parserCode: err.code }, 'client error');
    // After an answer already on the wire for this request (e.g. a 401 sent before the body was
    // read) another response would be garbage: then the connection is only closed.
    if (socket.writable && !responseStarted(socket)) {
      const out = renderEnvelope(envelope, e, log);
      const body = Buffer.isBuffer(out.payload) ? out.payload : Buffer.from(out.payload, 'utf8');
      const head =
        `HTTP/1.1 ${out.statusCode} ${STATUS_CODES[out.statusCode] ?? 'Error'}\r\n` +
        `content-type: ${out.contentType}\r\n` +
        `content-length: ${body.length}\r\n` +
        `${idHeader}: ${randomUUID()}\r\n` +
        'connection: close\r\n\r\n';
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
    }
    socket.destroy();
  };
}

/** Logs an error the way the kit does: 5xx/unexpected at `error` with the cause, the rest at `info`. */
function logError(log: FastifyBaseLogger, err: unknown, e: ErrorInfo & { internal: boolean }): void {
  if (e.internal || e.statusCode >= 500) {
    log.error({ err, code: e.code, statusCode: e.statusCode }, 'request failed');
  } else {
    log.info({ code: e.code, statusCode: e.statusCode, reason: e.message }, 'request rejected');
  }
}

/**
 * `requestLog: 'completed'`: no `incoming request` line, and `request completed` built from four plain fields
 * (no request/response serializers); errored requests and stream errors are logged as Fastify does.
 */
class CompletedOnlyLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) {
      super.requestCompleted(error, request, reply);
      return;
    }
    reply.log.info(
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        responseTime: reply.elapsedTime,
      },
      'request completed',
    );
  }
}

export function createServer(opts: CreateServerOptions): ServiceApp {
  const idHeader = (opts.requestIdHeader ?? 'x-request-id').toLowerCase();
  const envelope = opts.envelope;

  const app = fastify({
    loggerInstance: opts.logger,
    ...(opts.requestLog === 'completed' ? { logController: new CompletedOnlyLog() } : {}),
    bodyLimit: opts.bodyLimit ?? DEFAULT_BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers[idHeader];
      return isSaneRequestId(incoming) ? incoming : randomUUID();
    },
    ajv: {
      plugins: [ajvFormats as never],
      customOptions: {
        // Errors carry their schema, so a type error on a bounded number can name the bounds.
        verbose: true,
        ...(opts.strictTypes ? { coerceTypes: false, useDefaults: true, removeAdditional: false } : {}),
        ...(opts.schemaKeywords ? { keywords: [...opts.schemaKeywords] } : {}),
      },
    },
    ...(opts.strictBody && !opts.strictTypes
      ? { schemaController: strictBodyController() as FastifyServerOptions['schemaController'] }
      : {}),
    // Errors of Node's HTTP parser and timeouts, before or while Fastify reads a request.
    clientErrorHandler: clientErrorHandler(envelope, idHeader, opts.logger) as never,
    // Errors raised before routing (bad URL encoding and the like) get the envelope too.
    frameworkErrors: (error, request, reply) => {
      reply.header(idHeader, request.id);
      const e = classifyError(error, request);
      logError(request.log, error, e);
      sendEnvelope(reply, envelope, e);
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as ServiceApp;

  setHttpTimeouts(app, opts.timeouts ?? {});
  installJsonDepthGuard(app as unknown as FastifyInstance, opts.jsonMaxDepth ?? DEFAULT_JSON_MAX_DEPTH);

  app.addHook('onRequest', (request, reply, done) => {
    reply.header(idHeader, request.id);
    done();
  });

  installJsonParser(app as unknown as FastifyInstance);

  app.setErrorHandler((error, request, reply) => {
    const e = classifyError(error, request);
    logError(request.log, error, e);
    // Replies may have got a content-type from the route before failing; the envelope decides.
    reply.removeHeader('content-type');
    sendEnvelope(reply, envelope, e);
  });

  // Known paths answer 405 (with `Allow`) for a method they do not serve, unknown paths 404.
  const routes: { methods: string[]; pattern: RegExp }[] = [];
  app.addHook('onRoute', (r) => {
    // Catch-all routes (`OPTIONS *` for CORS preflights) do not make every path "known".
    if (r.url === '*' || r.url === '/*') return;
    routes.push({ methods: ([] as string[]).concat(r.method), pattern: routePattern(r.url) });
  });
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods));
    if (opts.methodNotAllowed !== false && allowed.size > 0 && !allowed.has(request.method)) {
      reply.header('allow', [...allowed].sort().join(', '));
      const e = KitErrors.METHOD_NOT_ALLOWED.create();
      sendEnvelope(reply, envelope, {
        statusCode: e.statusCode,
        code: e.code,
        message: `${request.method} is not allowed on ${path}; allowed: ${[...allowed].sort().join(', ')}`,
      });
      return;
    }
    const e = KitErrors.NOT_FOUND.create(request.method, path);
    sendEnvelope(reply, envelope, { statusCode: e.statusCode, code: e.code, message: e.message });
  });

  if (opts.swagger) registerSwagger(app, opts);
  return app;
}

/** A route URL (`/intents/:id`, `/files/*`) as a regular expression over request paths. */
function routePattern(url: string): RegExp {
  const body = url
    .split('/')
    .map((seg) =>
      seg === '*' ? '.*' : seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${body}/?$`);
}

/**
 * Two Ajv compilers from Fastify's own factory: bodies validated without type coercion, query
 * strings / params / headers with Fastify's default (`coerceTypes: 'array'`).
 */
function strictBodyController() {
  const factory = AjvCompiler();
  return {
    compilersFactory: {
      buildValidator(externalSchemas: unknown, ajvOptions: { customOptions?: object; plugins?: unknown[] }) {
        const coercing = factory(externalSchemas as never, ajvOptions as never);
        const strict = factory(
          externalSchemas as never,
          {
            ...ajvOptions,
            customOptions: { ...ajvOptions.customOptions, coerceTypes: false },
          } as never,
        );
        return (ctx: { httpPart?: string }) => (ctx.httpPart === 'body' ? strict : coercing)(ctx as never);
      },
    },
  };
}

function registerSwagger(app: ServiceApp, opts: CreateServerOptions): void {
  const sw = opts.swagger!;
  const routePrefix = sw.routePrefix ?? DEFAULT_SWAGGER_PREFIX;
  // @fastify/swagger collects routes with an onRoute hook. Registered with `app.register`, it would
  // only load at `ready()`, and routes declared on the root instance before that would be missing
  // from the document. Its plugin function is synchronous, so it is applied to the root instance
  // right away (the root has no encapsulation to skip), and its name is recorded so that
  // @fastify/swagger-ui's dependency check passes.
  const options = {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: sw.title,
        version: opts.version,
        ...(sw.description === undefined ? {} : { description: sw.description }),
      },
      ...(sw.securitySchemes ? { components: { securitySchemes: sw.securitySchemes } } : {}),
      ...(sw.security ? { security: sw.security } : {}),
    },
    refResolver: {
      // Shared schemas added with `app.addSchema({ $id })` keep their name in components.schemas.
      buildLocalReference: (json: Record<string, unknown>, _base: unknown, _frag: string, i: number) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  };
  let loadError: Error | undefined;
  (fastifySwagger as unknown as (i: unknown, o: unknown, done: (err?: Error) => void) => void)(
    app,
    options,
    (err) => {
      if (err) loadError = err;
    },
  );
  if (loadError) throw loadError;
  const registered = (app as unknown as Record<symbol, string[] | undefined>)[
    Symbol.for('registered-plugin')
  ];
  registered?.push('@fastify/swagger');

  app.register(fastifySwaggerUi, { routePrefix, staticCSP: true });
  // Without its trailing slash the UI page links its assets by absolute path, which breaks behind a reverse proxy
  // that mounts the service under a path prefix. A RELATIVE redirect to the slashed form (whose page links
  // `./static/…`) works with any prefix.
  const lastSegment = `${routePrefix.split('/').pop()}/`;
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method === 'GET' && request.url === routePrefix) {
      reply.redirect(lastSegment, 302);
      return;
    }
    done();
  });

  if (sw.yamlPath) {
    const hidden = { schema: { hide: true } };
    app.get('/openapi.json', hidden, async () => app.swagger());
    app.get('/openapi.yaml', hidden, async (_req, reply) =>
      reply.type('application/yaml; charset=utf-8').send(app.swagger({ yaml: true })),
    );
  }
}
