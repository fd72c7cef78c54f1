/**
 * Server-Sent Events for the swap service's event feeds: a small parser (the WHATWG `text/event-stream`
 * rules the feeds use: `event`, `data`, `id`, `retry`, comments; CR, LF and CRLF line ends) and the
 * reconnecting iterator behind `SwapClient.events()` and `ResolverClient.events()`.
 */
import type { EventsReset } from '@rgbx/contracts/swap';
import { type EventsOptions, streamSse } from '../sse.ts';

export { type EventsOptions, type SseMessage, SseParser } from '../sse.ts';

/** What a feed yields: a status change, or a `reset` (re-read your intents: the resume point was too old). */
export type FeedItem<T> =
  | { type: 'status'; id: string; data: T }
  | { type: 'reset'; id: string; data: EventsReset };

export interface StreamRequest {
  url: URL;
  apiKey: string;
  fetch: typeof fetch;
  /** Turns a non-2xx answer into the error to throw, or undefined to retry (429, 5xx). */
  failure(res: Response, text: string): Error | undefined;
}

/** The swap feeds' iterator: `streamSse` with the API key, yielding `status` and `reset` (see `streamSse`). */
export function streamEvents<T>(req: StreamRequest, opts: EventsOptions = {}): AsyncGenerator<FeedItem<T>> {
  return streamSse<FeedItem<T>>(
    {
      url: req.url,
      headers: { 'x-api-key': req.apiKey },
      events: ['status', 'reset'],
      fetch: req.fetch,
      failure: req.failure,
    },
    opts,
  );
}
