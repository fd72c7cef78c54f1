import { readFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';

/**
 * A free loopback port for a process that binds it later, and again after each restart (a config holds it).
 *
 * Picked at random below the kernel's ephemeral range, where outgoing connections never take their local
 * port: a port the kernel hands out for `listen(0)` lies inside that range, and any client connection of any
 * process on the machine may hold it a moment later, so a service started (or restarted minutes later) on
 * it fails with EADDRINUSE (CI saw it for a resolver restarted on its configured RFQ port). Checked by binding
 * it; this process never hands out the same port twice. Falls back to the kernel's pick when the range leaves
 * no room below it.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  if (low - PICK_FLOOR >= 1024) {
    // A long-lived process (the cloud picks one per hosted node) forgets its oldest picks in the end.
    if (handedOut.size > (low - PICK_FLOOR) / 2) handedOut.clear();
    for (let i = 0; i < 64; i++) {
      const port = PICK_FLOOR + Math.floor(Math.random() * (low - PICK_FLOOR));
      if (handedOut.has(port)) continue;
      if ((await bindOnce(port)) === port) {
        handedOut.add(port);
        return port;
      }
    }
  }
  const port = await bindOnce(0);
  handedOut.add(port);
  return port;
}

/** Below this, ports that well-known servers use (5432, 8080, 9090, …). */
const PICK_FLOOR = 10_000;
const handedOut = new Set<number>();

/** The kernel's ephemeral port range (Linux: /proc; elsewhere the IANA range 49152–65535). */
export function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo! > 0 && hi! >= lo!) return [lo!, hi!];
  } catch {
    // not Linux
  }
  return [49152, 65535];
}

/** Binds 127.0.0.1:port (0: the kernel's pick) and releases it: the port bound, or 0 if it was taken. */
function bindOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (err: NodeJS.ErrnoException) =>
      err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(0) : reject(err),
    );
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const addr = srv.address();
      const bound = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(bound));
    });
  });
}

/** True once something accepts TCP connections on 127.0.0.1:port. */
export function isListening(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.connect(port, '127.0.0.1');
  });
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  opts: { timeoutMs?: number; intervalMs?: number; isAlive?: () => boolean } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let lastErr: unknown;
  while (Date.now() < deadline) {
    if (opts.isAlive && !opts.isAlive())
      throw new Error(`${what}: the process exited before it became ready`);
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
  throw new Error(
    `${what}: not ready after ${opts.timeoutMs ?? 30_000} ms${lastErr ? ` (${(lastErr as Error).message})` : ''}`,
  );
}
