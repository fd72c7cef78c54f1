/**
 * Server-Sent Events for the SDK's event feeds (the swap service's, the wallet node's): a small parser (the
 * WHATWG `text/event-stream` rules the feeds use: `event`, `data`, `id`, `retry`, comments; CR, LF and CRLF line
 * ends) and the reconnecting iterator behind `SwapClient.events()`, `ResolverClient.events()` and
 * `WalletNodeClient.events()`.
 */

/** One dispatched SSE event. `id` is the last event id in force when it was dispatched. */
export interface SseMessage {
  event: string;
  data: string;
  id: string;
}

/** Incremental parser: feed it text chunks, get the events they complete. */
export class SseParser {
  #buf = '';
  #data: string[] = [];
  #event = '';
  /** The last event id (kept across events, as the SSE rules say). */
  lastEventId = '';
  /** The reconnection delay the server asked for (`retry:`), if any. */
  retryMs: number | undefined;
  #pendingCr = false;

  push(chunk: string): SseMessage[] {
    let text = chunk;
    // A CR at the end of the previous chunk may be the first half of a CRLF.
    if (this.#pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.#pendingCr = text.endsWith('\r');
    this.#buf += text;
    const out: SseMessage[] = [];
    const lines = this.#buf.split(/\r\n|\r|\n/);
    this.#buf = lines.pop() ?? '';
    // A trailing CR ends a line already (split above gave it); nothing left in the buffer then.
    for (const line of lines) {
      const msg = this.#line(line);
      if (msg) out.push(msg);
    }
    return out;
  }

  #line(line: string): SseMessage | undefined {
    if (line === '') {
      const data = this.#data;
      const event = this.#event || 'message';
      this.#data = [];
      this.#event = '';
      if (data.length === 0) return undefined;
      return { event, data: data.join('\n'), id: this.lastEventId };
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.#event = value;
        break;
      case 'data':
        this.#data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
    return undefined;
  }
}

export interface EventsOptions {
  /** Resume after this event id (the `id` of the last item you processed). */
  lastEventId?: string;
  /** Ends the iteration (the iterator returns). */
  signal?: AbortSignal;
  /** Reconnect when nothing (not even a heartbeat) arrives for this long. Default 60 000 ms. */
  idleTimeoutMs?: number;
  /** Longest wait between reconnection attempts. Default 30 000 ms. */
  maxBackoffMs?: number;
}

export interface SseRequest {
  url: URL;
  /** Sent with every (re)connection (credentials, identity). */
  headers: Record<string, string>;
  /** The SSE event names yielded (others are skipped). */
  events: readonly string[];
  fetch: typeof fetch;
  /** Turns a non-2xx answer into the error to throw, or undefined to retry (429, 5xx). */
  failure(res: Response, text: string): Error | undefined;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * The reconnecting iterator: connects, yields events, and after a dropped connection (or a server
 * error, 429, or silence beyond `idleTimeoutMs`) reconnects with `Last-Event-ID` set to the last id
 * seen, waiting 0.5 s, 1 s, 2 s… up to `maxBackoffMs` (reset after a connection that delivered
 * something). A 4xx other than 429 (a bad key) is thrown.
 */
export async function* streamSse<T extends { type: string; id: string; data: unknown }>(
  req: SseRequest,
  opts: EventsOptions = {},
): AsyncGenerator<T> {
  let lastId = opts.lastEventId;
  let backoff = 500;
  const maxBackoff = opts.maxBackoffMs ?? 30_000;
  const idleMs = opts.idleTimeoutMs ?? 60_000;
  while (!opts.signal?.aborted) {
    const ctl = new AbortController();
    const onAbort = () => ctl.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ctl.abort(), idleMs);
    };
    let progressed = false;
    let serverRetry: number | undefined;
    let fatal: Error | undefined;
    try {
      arm();
      const res = await req.fetch(req.url, {
        headers: {
          ...req.headers,
          accept: 'text/event-stream',
          ...(lastId === undefined ? {} : { 'last-event-id': lastId }),
        },
        signal: ctl.signal,
      });
      if (!res.ok || !res.body) {
        const text = await res.text().catch(() => '');
        fatal = req.failure(res, text);
      } else {
        const parser = new SseParser();
        if (lastId !== undefined) parser.lastEventId = lastId;
        const decoder = new TextDecoder();
        const reader = res.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            arm();
            const messages = parser.push(decoder.decode(value, { stream: true }));
            // The position moves with heartbeats and the opening `id:` too, not only with events.
            if (parser.lastEventId !== '' && parser.lastEventId !== lastId) {
              lastId = parser.lastEventId;
              progressed = true;
            }
            serverRetry = parser.retryMs;
            for (const m of messages) {
              if (!req.events.includes(m.event)) continue;
              progressed = true;
              yield { type: m.event, id: m.id, data: JSON.parse(m.data) } as T;
            }
          }
        } finally {
          reader.cancel().catch(() => {});
        }
      }
    } catch {
      // A dropped connection, a network error or an idle stream aborted: reconnect below.
      if (opts.signal?.aborted) return;
    } finally {
      clearTimeout(idle);
      opts.signal?.removeEventListener('abort', onAbort);
      ctl.abort();
    }
    if (fatal) throw fatal;
    if (opts.signal?.aborted) return;
    if (progressed) backoff = serverRetry ?? 500;
    await sleep(backoff, opts.signal);
    backoff = Math.min(backoff * 2, maxBackoff);
  }
}
