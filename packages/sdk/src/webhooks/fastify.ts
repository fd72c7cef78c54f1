/**
 * Fastify adapter: an encapsulated plugin that replaces every body parser of its own scope by a
 * raw Buffer reader (so nothing parses before the signature check) and registers one POST route.
 * Types are structural: the SDK does not depend on Fastify.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { DEFAULT_WEBHOOK_BODY_LIMIT, handleWebhook, type WebhookReceiverOptions } from './receiver.ts';

interface FastifyLikeRequest {
  body: unknown;
  headers: IncomingHttpHeaders;
}
interface FastifyLikeReply {
  code(statusCode: number): FastifyLikeReply;
  type(contentType: string): FastifyLikeReply;
  send(payload: unknown): unknown;
}
/** The members of a Fastify instance the plugin uses. */
export interface FastifyLikeInstance {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    opts: { parseAs: 'buffer'; bodyLimit?: number },
    parser: (req: unknown, body: Buffer, done: (err: Error | null, body?: unknown) => void) => void,
  ): void;
  post(
    path: string,
    opts: { bodyLimit?: number },
    handler: (req: FastifyLikeRequest, reply: FastifyLikeReply) => Promise<unknown>,
  ): unknown;
}

export interface FastifyWebhookOptions extends WebhookReceiverOptions {
  /** Route path inside the plugin's prefix. Default `/`. */
  path?: string;
}

/**
 * Register with `app.register(fastifyWebhookPlugin, { prefix: '/webhook', publicKey, expectedNodeId, onEvent })`.
 * Bodies over `maxBodyBytes` get Fastify's 413.
 */
export async function fastifyWebhookPlugin(
  instance: FastifyLikeInstance,
  opts: FastifyWebhookOptions,
): Promise<void> {
  const bodyLimit = opts.maxBodyBytes ?? DEFAULT_WEBHOOK_BODY_LIMIT;
  instance.removeAllContentTypeParsers();
  instance.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) =>
    done(null, body),
  );
  instance.post(opts.path ?? '/', { bodyLimit }, async (req, reply) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const a = await handleWebhook(raw, req.headers, opts);
    return reply.code(a.statusCode).type('application/json; charset=utf-8').send(JSON.stringify(a.body));
  });
}
