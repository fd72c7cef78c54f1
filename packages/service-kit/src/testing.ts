/**
 * Raw-socket clients for tests of a listening service: exact bytes in, the bytes the server sent
 * and when it closed the connection out. Used by the kit's and the services' hardening tests
 * (`@rgbx/service-kit/testing`); nothing here is used by the services themselves.
 */
import { connect, type Socket } from 'node:net';

export interface RawExchange {
  /** Everything the server sent, as latin1 text. */
  text: string;
  /** True when the server ended or reset the connection before `timeoutMs`. */
  closed: boolean;
  /** Milliseconds from the first byte sent to the close (or to the give-up). */
  elapsedMs: number;
  /** Body bytes actually written (slow bodies). */
  bytesSent: number;
}

export interface ParsedResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
}

/** Parses the first HTTP/1.1 response in `text` (its body by Content-Length). Throws if there is none. */
export function parseResponse(text: string): ParsedResponse {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no HTTP response in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!m) throw new Error(`bad status line ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const rest = Buffer.from(text.slice(end + 4), 'latin1');
  const len = headers['content-length'] === undefined ? rest.length : Number(headers['content-length']);
  return { status: Number(m[1]), headers, body: rest.subarray(0, len).toString('utf8') };
}

function open(port: number, host: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host }, () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Collects what the server sends and resolves when it closes the connection (or after `timeoutMs`). */
function watch(s: Socket, timeoutMs: number, started: () => number) {
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  return new Promise<{ closed: boolean; elapsedMs: number; text: () => string }>((resolve) => {
    const done = (closed: boolean) => {
      clearTimeout(timer);
      resolve({
        closed,
        elapsedMs: Date.now() - started(),
        text: () => Buffer.concat(chunks).toString('latin1'),
      });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    s.once('end', () => done(true));
    s.once('close', () => done(true));
    // A reset after the server closed is a close too.
    s.on('error', () => done(true));
  });
}

/** Sends `data` on a fresh connection and waits until the server closes it (at most `timeoutMs`). */
export async function rawExchange(
  port: number,
  data: string | Buffer,
  o: { host?: string; timeoutMs?: number } = {},
): Promise<RawExchange> {
  const s = await open(port, o.host ?? '127.0.0.1');
  let t0 = Date.now();
  const closed = watch(s, o.timeoutMs ?? 10_000, () => t0);
  t0 = Date.now();
  s.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  const r = await closed;
  s.destroy();
  return { text: r.text(), closed: r.closed, elapsedMs: r.elapsedMs, bytesSent: 0 };
}

export interface SlowBodyOptions {
  host?: string;
  method?: string;
  path: string;
  /** Extra request headers (Host, Content-Length and Content-Type are set unless given). */
  headers?: Record<string, string>;
  /** Announced body length (never reached; keep it under the body limit). Default 1000. */
  contentLength?: number;
  /** One body byte is sent every `intervalMs`. Default 200. */
  intervalMs?: number;
  /** Give up (and report `closed: false`) after this long. Default 20 000. */
  timeoutMs?: number;
}

/**
 * The slow-body attack: headers announcing a large body, then one byte of it every `intervalMs`
 * until the server closes the connection. Resolves with what the server sent and when it closed.
 */
export async function slowBody(port: number, o: SlowBodyOptions): Promise<RawExchange> {
  const s = await open(port, o.host ?? '127.0.0.1');
  const contentLength = o.contentLength ?? 1000;
  const headers: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    'content-type': 'application/json',
    'content-length': String(contentLength),
    ...o.headers,
  };
  const head = `${o.method ?? 'POST'} ${o.path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  let t0 = Date.now();
  const closed = watch(s, o.timeoutMs ?? 20_000, () => t0);
  t0 = Date.now();
  s.write(head);
  const body = Buffer.from('{"a":"'.padEnd(contentLength, 'x'), 'latin1');
  let sent = 0;
  let finished = false;
  const tick = setInterval(() => {
    if (finished || s.destroyed || sent >= contentLength - 1) return;
    s.write(body.subarray(sent, sent + 1), () => undefined);
    sent++;
  }, o.intervalMs ?? 200);
  const r = await closed;
  finished = true;
  clearInterval(tick);
  s.destroy();
  return { text: r.text(), closed: r.closed, elapsedMs: r.elapsedMs, bytesSent: sent };
}

/**
 * The slow-headers attack: a request line, then one byte of a header value every `intervalMs`,
 * never ending the headers. Resolves with what the server sent and when it closed.
 */
export async function slowHeaders(
  port: number,
  o: { host?: string; method?: string; path: string; intervalMs?: number; timeoutMs?: number },
): Promise<RawExchange> {
  const s = await open(port, o.host ?? '127.0.0.1');
  let t0 = Date.now();
  const closed = watch(s, o.timeoutMs ?? 20_000, () => t0);
  t0 = Date.now();
  s.write(`${o.method ?? 'POST'} ${o.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
  let sent = 0;
  const tick = setInterval(() => {
    if (s.destroyed || !s.writable) return;
    s.write('a', () => undefined);
    sent++;
  }, o.intervalMs ?? 200);
  const r = await closed;
  clearInterval(tick);
  s.destroy();
  return { text: r.text(), closed: r.closed, elapsedMs: r.elapsedMs, bytesSent: sent };
}

/** Opens `n` slow-body connections at once. */
export function slowBodies(port: number, n: number, o: SlowBodyOptions): Promise<RawExchange[]> {
  return Promise.all(Array.from({ length: n }, () => slowBody(port, o)));
}

/** What a client of a slow request saw, reduced to what a request-timeout test asserts. */
export interface CutSummary {
  closed: boolean;
  /** Cut within [timeoutMs − 50 ms, timeoutMs + 1 s). */
  atTimeout: boolean;
  status: number;
  connection: string | undefined;
  /** The JSON body. */
  body: unknown;
}

/**
 * Summarises a slow request's exchange for one `toEqual` against what the service must answer:
 * closed, at the request timeout, the status, `Connection`, the JSON envelope.
 *
 * @example
 * expect((await slowBodies(port, 10, o)).map((r) => cutSummary(r, 1000))).toEqual(
 *   Array(10).fill(timedOut(envelope)),
 * );
 */
export function cutSummary(r: RawExchange, timeoutMs: number): CutSummary {
  const res = parseResponse(r.text);
  return {
    closed: r.closed,
    atTimeout: r.elapsedMs >= timeoutMs - 50 && r.elapsedMs < timeoutMs + 1000,
    status: res.status,
    connection: res.headers.connection,
    body: JSON.parse(res.body),
  };
}

/** What a slow request must see: closed at the request timeout with 408, `Connection: close` and `envelope`. */
export function timedOut(envelope: unknown): CutSummary {
  return { closed: true, atTimeout: true, status: 408, connection: 'close', body: envelope };
}
