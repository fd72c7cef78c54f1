/**
 * The `application/json` parser: keeps the exact request bytes on `request.rawBody` (for signature
 * checks and content hashes) and then parses them with Fastify's own secure parser, which rejects
 * `__proto__` and `constructor.prototype` keys (prototype poisoning).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { KitErrors } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The exact bytes of a JSON body (set by the kit's JSON parser; undefined for other bodies). */
    rawBody?: Buffer;
  }
}

type JsonParser = (
  req: FastifyRequest,
  body: string,
  done: (err: Error | null, value?: unknown) => void,
) => void;

/**
 * Replaces the instance's `application/json` parser. `createServer` calls it on the root instance;
 * call it again inside a plugin that removed all content-type parsers.
 */
export function installJsonParser(app: FastifyInstance): void {
  if (!app.hasRequestDecorator('rawBody')) app.decorateRequest('rawBody', undefined);
  const secureParse = app.getDefaultJsonParser('error', 'error') as unknown as JsonParser;
  if (app.hasContentTypeParser('application/json')) app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    request.rawBody = bytes;
    if (bytes.length === 0) {
      done(null, undefined);
      return;
    }
    secureParse(request, bytes.toString('utf8'), (err, value) => {
      if (err) {
        done(KitErrors.INVALID_JSON.createWith({ cause: err }, err.message));
        return;
      }
      done(null, value);
    });
  });
}
