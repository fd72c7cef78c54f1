/**
 * Adapters for `node:http` and Express: both read the raw request stream themselves (with a size
 * limit) and verify before anything parses the body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  DEFAULT_WEBHOOK_BODY_LIMIT,
  handleWebhook,
  WEBHOOK_MESSAGES,
  type WebhookAnswer,
  type WebhookReceiverOptions,
} from './receiver.ts';

class BodyTooLarge extends Error {}

/** Reads the whole body, failing once it exceeds `limit` bytes. */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new BodyTooLarge());
      return;
    }
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge());
        return;
      }
      parts.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(parts)));
    req.once('error', reject);
  });
}

function send(res: ServerResponse, a: Pick<WebhookAnswer, 'statusCode' | 'body'>): void {
  const body = JSON.stringify(a.body);
  res.writeHead(a.statusCode, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  raw: Buffer | undefined,
  opts: WebhookReceiverOptions,
) {
  let body = raw;
  if (body === undefined) {
    try {
      body = await readRawBody(req, opts.maxBodyBytes ?? DEFAULT_WEBHOOK_BODY_LIMIT);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        res.setHeader('connection', 'close');
        send(res, { statusCode: 413, body: { message: WEBHOOK_MESSAGES.tooLarge } });
      } else {
        res.destroy();
      }
      return;
    }
  }
  send(res, await handleWebhook(body, req.headers, opts));
}

/**
 * A `node:http` request listener for one webhook endpoint (it answers every request it gets).
 *
 * @example
 * https.createServer({ key, cert }, createWebhookListener({ publicKey, expectedNodeId, onEvent })).listen(8443);
 */
export function createWebhookListener(
  opts: WebhookReceiverOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      send(res, { statusCode: 405, body: { message: WEBHOOK_MESSAGES.methodNotAllowed } });
      req.resume();
      return;
    }
    serve(req, res, undefined, opts).catch(() => res.destroy());
  };
}

/** The parts of an Express request the middleware uses (no dependency on Express itself). */
export interface ExpressLikeRequest extends IncomingMessage {
  body?: unknown;
}

/**
 * Express middleware for a webhook route. Mount it on the route before any body parser
 * (`app.post('/webhook', expressWebhookMiddleware(opts))`); if `express.raw()` ran first, its Buffer
 * is used. A body already parsed into an object cannot be verified: that is reported through `next`.
 */
export function expressWebhookMiddleware(
  opts: WebhookReceiverOptions,
): (req: ExpressLikeRequest, res: ServerResponse, next: (err?: unknown) => void) => void {
  return (req, res, next) => {
    const pre = req.body;
    if (Buffer.isBuffer(pre)) {
      serve(req, res, pre, opts).catch(next);
      return;
    }
    if (req.readableEnded) {
      next(
        new Error(
          'expressWebhookMiddleware: the body was already consumed by a parser; mount the webhook route before express.json()',
        ),
      );
      return;
    }
    serve(req, res, undefined, opts).catch(next);
  };
}
