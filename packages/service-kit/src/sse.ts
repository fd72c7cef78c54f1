/**
 * Server-Sent Events on a hijacked Fastify reply, as the wallet node's `GET /wallet/events` and the swap's event
 * feeds serve them: the response head (no caching, no proxy buffering) with the starting position, and the wait
 * for a slow client's socket to drain (bounded, so a stalled reader cannot hold the node's memory).
 *
 * @example
 * reply.hijack();
 * const res = writeSseHead(reply, cursor); // a client that drops before any event resumes from `cursor`
 * if (!res.write(frame) && !(await drained(res, 30_000))) res.destroy();
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/** Writes the 200 head (with the headers the reply carries so far, e.g. CORS) and `retry:` + `id: startId`. */
export function writeSseHead(reply: FastifyReply, startId: number | string): ServerResponse {
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  // The starting position, so a client that drops before any event resumes from here.
  res.write(`retry: 1000\nid: ${startId}\n\n`);
  return res;
}

/** Resolves true once `res` drained, false if it closed or did not drain within `stallMs`. */
export function drained(res: ServerResponse, stallMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    if (res.destroyed || res.writableEnded) return resolve(false);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), stallMs);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}
