import { request, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { drained, writeSseHead } from './sse.ts';

const apps: ReturnType<typeof Fastify>[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) {
    a.server.closeAllConnections();
    await a.close();
  }
});

/** A server whose one route opens an SSE stream and hands its response to `onOpen`. */
async function serve(onOpen: (res: ServerResponse) => void): Promise<number> {
  const app = Fastify();
  apps.push(app);
  app.get('/s', (_req, reply) => {
    reply.header('access-control-allow-origin', 'https://app.example');
    reply.hijack();
    onOpen(writeSseHead(reply, 7));
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

describe('writeSseHead', () => {
  it('answers 200 event-stream, unbuffered, with the reply’s headers and the starting id', async () => {
    const port = await serve((res) => res.end());
    const got = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
      (resolve, reject) => {
        request({ host: '127.0.0.1', port, path: '/s' }, (r) => {
          let body = '';
          r.setEncoding('utf8');
          r.on('data', (c: string) => {
            body += c;
          });
          r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers, body }));
        })
          .on('error', reject)
          .end();
      },
    );
    expect(got.status).toBe(200);
    expect(got.headers).toMatchObject({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      'access-control-allow-origin': 'https://app.example',
    });
    expect(got.body).toBe('retry: 1000\nid: 7\n\n');
  });
});

describe('drained', () => {
  /** Writes until the socket stops taking data (the kernel's buffers full too): false once nothing drained for 300 ms. */
  async function fillUntilStuck(res: ServerResponse): Promise<void> {
    const chunk = `data: ${'x'.repeat(65_536)}\n\n`;
    for (;;) {
      while (res.write(chunk)) {}
      const moved = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), 300);
        res.once('drain', () => {
          clearTimeout(t);
          resolve(true);
        });
      });
      if (!moved) return;
    }
  }

  it('true once a reading client took the backlog; false for a client that stops reading, or leaves', async () => {
    const opened: ServerResponse[] = [];
    const port = await serve((res) => opened.push(res));
    /** A client whose socket stops reading once the head arrived (`resume()` it to read again). */
    const open = () =>
      new Promise<{ socket: Socket; read: () => void }>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path: '/s' }, (r) => {
          r.socket.pause();
          resolve({
            socket: r.socket,
            read: () => {
              r.resume();
              r.socket.resume();
            },
          });
        })
          .on('error', reject)
          .end();
      });
    const serverSide = async (n: number) => {
      while (opened.length < n) await new Promise((r) => setTimeout(r, 10));
      return opened[n - 1]!;
    };

    // A client that stops reading: the backlog stays, drained() gives up after its bound.
    const stalled = await open();
    const res1 = await serverSide(1);
    await fillUntilStuck(res1);
    const t0 = Date.now();
    expect(await drained(res1, 400)).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    // A client that reads again: the backlog drains.
    const reading = await open();
    const res2 = await serverSide(2);
    await fillUntilStuck(res2);
    const waiting = drained(res2, 10_000);
    reading.read();
    expect(await waiting).toBe(true);
    // A client that leaves: false at once.
    const leaving = drained(res1, 10_000);
    stalled.socket.destroy();
    expect(await leaving).toBe(false);
  });
});
