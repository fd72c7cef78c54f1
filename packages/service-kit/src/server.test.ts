import { Writable } from 'node:stream';
import fc from 'fast-check';
import { Type } from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { defineErrors, ErrorEnvelope, type ErrorEnvelopeFactory, type ErrorInfo } from './errors.ts';
import { createLogger } from './logger.ts';
import { createServer, type ServiceApp } from './server.ts';

/** A logger whose lines are kept in memory, so tests can look at what was logged. */
function memoryLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: createLogger({ name: 'test', level: 'info', destination: stream }), lines };
}

const E = defineErrors({
  ASSET_NOT_FOUND: { status: 404, message: (id: string) => `asset ${id} not found` },
  CONFLICT_STATE: { status: 409, message: 'state conflict' },
});

const Quote = Type.Object({ id: Type.String(), amount: Type.Integer() }, { $id: 'Quote' });

let current: ServiceApp | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});

function build(
  opts: { envelope?: ErrorEnvelopeFactory; bodyLimit?: number; swagger?: boolean; logger?: unknown } = {},
) {
  const mem = memoryLogger();
  const app = createServer({
    name: 'test',
    version: '9.9.9',
    logger: mem.logger,
    envelope: opts.envelope ?? ErrorEnvelope.factory,
    ...(opts.bodyLimit === undefined ? {} : { bodyLimit: opts.bodyLimit }),
    ...(opts.swagger ? { swagger: { title: 'Test API', description: 'for tests', yamlPath: true } } : {}),
  });
  app.addSchema(ErrorEnvelope.schema);
  app.addSchema(Quote);
  // Root-level routes, declared right after createServer (they must still reach the OpenAPI document).
  app.post(
    '/quotes',
    {
      schema: {
        operationId: 'createQuote',
        body: Type.Object({ amount: Type.Integer({ minimum: 1 }) }),
        response: { 200: Type.Ref('Quote'), 400: ErrorEnvelope.ref, 404: ErrorEnvelope.ref },
      },
    },
    async (req) => ({ id: 'q1', amount: req.body.amount }),
  );
  app.post('/echo', async (req) => ({
    raw: req.rawBody?.toString('base64') ?? null,
    body: req.body ?? null,
  }));
  app.get(
    '/assets/:id',
    {
      schema: {
        params: Type.Object({ id: Type.String() }),
        // A strict success schema plus a 4xx/5xx schema the envelope does NOT match: errors must
        // still come out as envelopes, never as FST_ERR_FAILED_ERROR_SERIALIZATION.
        response: {
          200: Type.Object({ ok: Type.Boolean() }),
          404: Type.Object({ unrelated: Type.Integer() }, { additionalProperties: false }),
          500: Type.Object({ mustHave: Type.String() }),
        },
      },
    },
    async (req) => {
      if (req.params.id === 'boom') throw new Error('db password=hunter2 at /srv/x.ts:12');
      throw E.ASSET_NOT_FOUND.create(req.params.id);
    },
  );
  // Nested plugin routes appear in the document as well.
  app.register(
    async (child) => {
      child.get(
        '/ping',
        { schema: { response: { 200: Type.Object({ pong: Type.Boolean() }) } } },
        async () => ({
          pong: true,
        }),
      );
    },
    { prefix: '/v1' },
  );
  current = app;
  return { app, lines: mem.lines };
}

describe('createServer: error envelope', () => {
  it('answers unknown routes with the envelope (404)', async () => {
    const { app } = build();
    const res = await app.inject({ method: 'GET', url: '/nope?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'Route GET /nope not found' } });
  });

  it('answers validation errors with 400 and the issues', async () => {
    const { app } = build();
    const res = await app.inject({ method: 'POST', url: '/quotes', payload: { amount: 'x' } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.message).toBe('body/amount must be integer');
    expect(body.error.details.validation[0]).toMatchObject({ path: '/amount', keyword: 'type' });
  });

  it('lets the envelope factory choose the status and shape (e.g. 422 for validation)', async () => {
    const seen: ErrorInfo[] = [];
    const envelope: ErrorEnvelopeFactory = (e) => {
      seen.push(e);
      return {
        statusCode: e.code === 'VALIDATION_ERROR' ? 422 : e.statusCode,
        body: { fail: { c: e.code } },
        contentType: 'application/problem+json',
      };
    };
    const { app } = build({ envelope });
    const res = await app.inject({ method: 'POST', url: '/quotes', payload: { amount: 0 } });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toEqual({ fail: { c: 'VALIDATION_ERROR' } });
    expect(seen[0]?.validation?.context).toBe('body');
    expect(seen[0]?.validation?.issues[0]?.keyword).toBe('minimum');
  });

  it('answers malformed JSON with 400 INVALID_JSON', async () => {
    const { app } = build();
    const res = await app.inject({
      method: 'POST',
      url: '/quotes',
      payload: '{"amount": 1',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('INVALID_JSON');
  });

  it('rejects prototype poisoning as bad JSON', async () => {
    const { app } = build();
    const res = await app.inject({
      method: 'POST',
      url: '/echo',
      payload: '{"a":1,"__proto__":{"polluted":true}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('INVALID_JSON');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers bodies over the limit with 413', async () => {
    const { app } = build({ bodyLimit: 64 });
    const res = await app.inject({
      method: 'POST',
      url: '/echo',
      payload: JSON.stringify({ pad: 'x'.repeat(200) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is too large' },
    });
  });

  it('answers unsupported media types with 415', async () => {
    const { app } = build();
    const res = await app.inject({
      method: 'POST',
      url: '/echo',
      payload: '<a/>',
      headers: { 'content-type': 'application/xml' },
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(res.json().error.message).toContain('application/xml');
  });

  it('answers a thrown ServiceError with its status, even when a 404 schema does not fit', async () => {
    const { app } = build();
    const res = await app.inject({ method: 'GET', url: '/assets/abc' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'ASSET_NOT_FOUND', message: 'asset abc not found' } });
    expect(res.body).not.toContain('FST_ERR');
  });

  it('answers unexpected throws with a generic 500 and logs the error with the request id', async () => {
    const { app, lines } = build();
    const res = await app.inject({
      method: 'GET',
      url: '/assets/boom',
      headers: { 'x-request-id': 'req-boom-1' },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: { code: 'INTERNAL_ERROR', message: 'Internal Server Error' } });
    expect(res.body).not.toMatch(/hunter2|stack|\.ts:|FST_ERR/);
    const logged = lines.find((l) => l.msg === 'request failed');
    expect(logged?.reqId).toBe('req-boom-1');
    expect(JSON.stringify(logged?.err)).toContain('hunter2');
  });

  it('answers errors raised before routing (bad URL encoding) with the envelope', async () => {
    const { app } = build();
    const res = await app.inject({ method: 'GET', url: '/%E0%A4%A', headers: { 'x-request-id': 'bad-url' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('BAD_REQUEST');
    expect(res.headers['x-request-id']).toBe('bad-url');
  });

  it('falls back to a plain 500 when the envelope factory itself throws', async () => {
    const { app } = build({
      envelope: () => {
        throw new Error('broken factory');
      },
    });
    const res = await app.inject({ method: 'GET', url: '/nope' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: { code: 'INTERNAL_ERROR', message: 'Internal Server Error' } });
  });
});

describe('createServer: raw body and request ids', () => {
  it('keeps the exact bytes on request.rawBody', async () => {
    const { app } = build();
    const sent = Buffer.from('{ "b" : [1, 2.50, "\\u00e9é"],\n"a":null }  ', 'utf8');
    const res = await app.inject({
      method: 'POST',
      url: '/echo',
      payload: sent,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.statusCode).toBe(200);
    expect(Buffer.from(res.json().raw, 'base64').equals(sent)).toBe(true);
    expect(res.json().body).toEqual({ b: [1, 2.5, 'éé'], a: null });
  });

  it('parses an empty JSON body as undefined', async () => {
    const { app } = build();
    const res = await app.inject({
      method: 'POST',
      url: '/echo',
      payload: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ raw: '', body: null });
  });

  it('echoes a sane incoming x-request-id and replaces an insane one', async () => {
    const { app } = build();
    const ok = await app.inject({
      method: 'GET',
      url: '/v1/ping',
      headers: { 'x-request-id': 'abc-123.X_y' },
    });
    expect(ok.headers['x-request-id']).toBe('abc-123.X_y');
    const bad = await app.inject({
      method: 'GET',
      url: '/v1/ping',
      headers: { 'x-request-id': 'a b<script>' },
    });
    expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const none = await app.inject({ method: 'GET', url: '/nope' });
    expect(none.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const err = await app.inject({ method: 'GET', url: '/assets/boom', headers: { 'x-request-id': 'e-1' } });
    expect(err.headers['x-request-id']).toBe('e-1');
  });

  it('property: any body, valid JSON or not, never gives a 5xx; valid JSON round-trips rawBody', async () => {
    const { app } = build({ bodyLimit: 4096 });
    await app.ready();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.json().map((s) => ({ valid: true, text: s })),
          fc.string({ unit: 'binary', maxLength: 300 }).map((s) => ({ valid: false, text: s })),
        ),
        async ({ valid, text }) => {
          const bytes = Buffer.from(text, 'utf8');
          const res = await app.inject({
            method: 'POST',
            url: '/echo',
            payload: bytes,
            headers: { 'content-type': 'application/json' },
          });
          expect(res.statusCode).toBeLessThan(500);
          if (valid && res.statusCode === 200) {
            expect(Buffer.from(res.json().raw, 'base64').equals(bytes)).toBe(true);
          }
          if (valid && !text.includes('__proto__') && !text.includes('constructor')) {
            expect(res.statusCode).toBe(200);
          }
          if (res.statusCode !== 200) expect(res.json().error.code).toMatch(/^[A-Z_]+$/);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('createServer: OpenAPI and Swagger UI', () => {
  it('lists routes (root and nested) and named shared schemas', async () => {
    const { app } = build({ swagger: true });
    await app.ready();
    const res = await app.inject({ method: 'GET', url: '/_swagger/json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info).toMatchObject({ title: 'Test API', version: '9.9.9', description: 'for tests' });
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/quotes', '/echo', '/assets/{id}', '/v1/ping']),
    );
    expect(
      Object.keys(doc.paths).some((p: string) => p.startsWith('/_swagger') || p.startsWith('/openapi')),
    ).toBe(false);
    expect(doc.components.schemas.Quote).toMatchObject({ type: 'object', required: ['id', 'amount'] });
    expect(doc.components.schemas.ErrorEnvelope).toBeDefined();
    const op = doc.paths['/quotes'].post;
    expect(op.operationId).toBe('createQuote');
    expect(JSON.stringify(op.responses['200'])).toContain('#/components/schemas/Quote');
    expect(JSON.stringify(op.responses['400'])).toContain('#/components/schemas/ErrorEnvelope');
  });

  it('serves the Swagger UI HTML and its local assets, and the YAML document', async () => {
    const { app } = build({ swagger: true });
    // Behind a reverse proxy at /node the redirect must stay under /node: it is relative.
    const bare = await app.inject({ method: 'GET', url: '/_swagger' });
    expect(bare.statusCode).toBe(302);
    expect(bare.headers.location).toBe('_swagger/');
    expect(new URL(bare.headers.location as string, 'http://h/node/_swagger').pathname).toBe(
      '/node/_swagger/',
    );
    const html = await app.inject({ method: 'GET', url: '/_swagger/' });
    expect(html.statusCode).toBe(200);
    // Assets are linked relatively, so they resolve under any mount path.
    expect(html.body).toContain('href="./static/swagger-ui.css"');
    expect(html.body).not.toMatch(/(href|src)="\//);
    expect(html.headers['content-type']).toMatch(/text\/html/);
    expect(html.body).toContain('swagger-ui');
    expect(html.body).not.toMatch(/https?:\/\/(cdn|unpkg)/);
    const css = await app.inject({ method: 'GET', url: '/_swagger/static/swagger-ui.css' });
    expect(css.statusCode).toBe(200);
    const yaml = await app.inject({ method: 'GET', url: '/openapi.yaml' });
    expect(yaml.statusCode).toBe(200);
    expect(yaml.body).toMatch(/^openapi: 3\./);
    expect(yaml.body).toContain('/quotes:');
  });

  it('serves no docs without the swagger option', async () => {
    const { app } = build();
    const res = await app.inject({ method: 'GET', url: '/_swagger' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });
});

describe('createServer: security schemes', () => {
  it('declares components.securitySchemes and the document-wide requirement', async () => {
    const app = createServer({
      name: 'sec',
      version: '1',
      logger: createLogger({ name: 'sec', level: 'silent' }),
      envelope: ErrorEnvelope.factory,
      swagger: {
        title: 'sec',
        securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
        security: [{ ApiKey: [] }],
      },
    });
    app.get('/x', async () => ({}));
    await app.ready();
    const doc = (app as unknown as { swagger(): Record<string, unknown> }).swagger() as {
      components?: { securitySchemes?: unknown };
      security?: unknown;
    };
    expect(doc.components?.securitySchemes).toEqual({
      ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    });
    expect(doc.security).toEqual([{ ApiKey: [] }]);
    await app.close();
  });
});

describe('createServer requestLog', () => {
  async function requestLines(requestLog?: 'full' | 'completed') {
    const mem = memoryLogger();
    const app = createServer({
      name: 'log',
      version: '1',
      logger: mem.logger,
      envelope: ErrorEnvelope.factory,
      ...(requestLog ? { requestLog } : {}),
    });
    app.get('/ok', async () => ({ ok: true }));
    app.get('/boom', async () => {
      throw new Error('kaboom');
    });
    const ok = await app.inject({ method: 'GET', url: '/ok?x=1', headers: { 'x-request-id': 'r-ok' } });
    const boom = await app.inject({ method: 'GET', url: '/boom', headers: { 'x-request-id': 'r-boom' } });
    await app.close();
    expect([ok.statusCode, boom.statusCode]).toEqual([200, 500]);
    return mem.lines;
  }

  it("keeps Fastify's two lines per request by default", async () => {
    const lines = await requestLines();
    expect(lines.filter((l) => l.reqId === 'r-ok').map((l) => l.msg)).toEqual([
      'incoming request',
      'request completed',
    ]);
    expect(lines.find((l) => l.reqId === 'r-ok' && l.msg === 'incoming request')?.req).toMatchObject({
      method: 'GET',
      url: '/ok?x=1',
    });
  });

  it("'completed' logs one line per request with method, url, status and time; errors as before", async () => {
    const lines = await requestLines('completed');
    const ok = lines.filter((l) => l.reqId === 'r-ok');
    expect(ok).toHaveLength(1);
    expect(ok[0]).toMatchObject({ msg: 'request completed', method: 'GET', url: '/ok?x=1', statusCode: 200 });
    expect(typeof ok[0]?.responseTime).toBe('number');
    expect(lines.some((l) => l.msg === 'incoming request')).toBe(false);
    const boom = lines.filter((l) => l.reqId === 'r-boom');
    expect(boom.map((l) => l.msg)).toEqual(['request failed', 'request completed']);
    expect(boom[1]).toMatchObject({ method: 'GET', url: '/boom', statusCode: 500 });
  });
});
