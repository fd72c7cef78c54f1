/**
 * The event feeds as Server-Sent Events: `GET /events` (Surface A, camelCase), `GET
 * /affiliate/v1/events` (Surface B, snake_case) for the intents of the caller's API key, and `GET
 * /resolver/v1/events` for the intents the resolver quoted. Registered here rather than in the JSON
 * operation table: the reply is a stream written on the raw response (`reply.hijack()`), not a body.
 *
 * Framing: `event: status` with `id: <event id>` and the JSON payload in `data:`; `event: reset`
 * when the `Last-Event-ID` is beyond the retention; a heartbeat comment carrying `id:` (the position
 * the stream reached) every `swap.event_heartbeat_secs`.
 */
import type { ServerResponse } from 'node:http';
import { A, ApiKeyHeader, B, EventsReset, Resolver } from '@rgbx/contracts/swap';
import { type FastifyReply, type FastifyRequest, type ServiceApp, Type } from '@rgbx/service-kit';
import { drained, writeSseHead } from '@rgbx/service-kit/sse';
import type { SwapContext } from '../context.ts';
import { EventFeed, type FeedEvent, type FeedSink } from '../domain/event-feed.ts';
import { errorReplies } from '../errors.ts';
import type { IntentScope } from '../store/intent-store.ts';
import { apiKeyHook, apiKeyOf, resolverKeyHook, resolverOf } from './auth.ts';

/** A client whose socket buffer does not drain for this long is disconnected (it resumes later). */
export const STALL_MS = 60_000;

const EventHeaders = Type.Object({
  ...ApiKeyHeader.properties,
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^(0|[1-9][0-9]{0,14})$',
      description: 'Resume after this event id (the SSE `id:` last received)',
    }),
  ),
});

function eventA(e: FeedEvent): A.IntentEvent {
  return {
    intentId: e.intentId,
    from: e.from as A.IntentEvent['from'],
    to: e.to as A.IntentEvent['to'],
    trigger: e.trigger as A.IntentEvent['trigger'],
    at: new Date(e.at).toISOString(),
  };
}

function eventResolver(e: FeedEvent): Resolver.ResolverEvent {
  return { ...B.IntentEventB.toWire(eventA(e)), deadline_secs: e.deadline };
}

interface Feed {
  prefix: string;
  tag: string;
  operationId: string;
  schema: unknown;
  hook(ctx: SwapContext): (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  scope(req: FastifyRequest): IntentScope;
  render(e: FeedEvent): unknown;
}

const FEEDS: readonly Feed[] = [
  {
    prefix: '',
    tag: 'Surface A',
    operationId: 'events',
    schema: A.IntentEvent,
    hook: apiKeyHook,
    scope: (req) => ({ apiKeyId: apiKeyOf(req) }),
    render: eventA,
  },
  {
    prefix: '/affiliate/v1',
    tag: 'Surface B (affiliate v1)',
    operationId: 'affiliateEvents',
    schema: B.IntentEventB.schema,
    hook: apiKeyHook,
    scope: (req) => ({ apiKeyId: apiKeyOf(req) }),
    render: (e) => B.IntentEventB.toWire(eventA(e)),
  },
  {
    prefix: '/resolver/v1',
    tag: 'Resolver API',
    operationId: 'resolverEvents',
    schema: Resolver.ResolverEvent,
    hook: resolverKeyHook,
    scope: (req) => ({ resolverId: resolverOf(req) }),
    render: eventResolver,
  },
];

/** An SSE stream over the raw response; writes report whether the socket takes more. */
function sseSink(res: ServerResponse, render: (e: FeedEvent) => unknown): FeedSink {
  const write = (text: string): boolean => !res.writableEnded && !res.destroyed && res.write(text);
  return {
    event: (e) => write(`id: ${e.id}\nevent: status\ndata: ${JSON.stringify(render(e))}\n\n`),
    reset: (info, id) => {
      write(`id: ${id}\nevent: reset\ndata: ${JSON.stringify(info)}\n\n`);
    },
    heartbeat: (id) => {
      write(`: heartbeat\nid: ${id}\n\n`);
    },
    blocked: () => res.writableNeedDrain,
    drained: () => drained(res, STALL_MS),
    end: () => {
      if (!res.writableEnded) res.end();
    },
  };
}

const DESCRIPTION = [
  'Server-Sent Events: one `event: status` per status change of an intent in scope, in order, with `id:` the',
  'event id (increasing over the service). Reconnect with `Last-Event-ID` to get exactly the events after it;',
  'an id older than `swap.event_retention_secs` (or unknown) answers `event: reset` (data `EventsReset`) and',
  'the stream goes on from now. A heartbeat comment (with `id:`) comes every `swap.event_heartbeat_secs`.',
  'Without `Last-Event-ID` the stream starts at the current position.',
].join(' ');

/** Registers the three feeds; the feed ends every stream at `preClose` (before the server waits for them). */
export function registerEventFeeds(app: ServiceApp, ctx: SwapContext): EventFeed {
  const s = ctx.config.swap;
  const feed = new EventFeed(ctx, {
    pollMs: s.event_poll_ms,
    heartbeatMs: s.event_heartbeat_secs * 1000,
    retentionMs: s.event_retention_secs * 1000,
    maxStreamsPerKey: s.event_max_streams_per_key,
  });
  app.addHook('preClose', async () => {
    await feed.close();
  });
  for (const f of FEEDS) {
    app.register(
      async (instance) => {
        const scope = instance as unknown as ServiceApp;
        scope.addHook('onRequest', f.hook(ctx));
        scope.get(
          '/events',
          {
            schema: {
              tags: [f.tag],
              operationId: f.operationId,
              summary: 'Status changes of the intents in scope, as Server-Sent Events',
              description: DESCRIPTION,
              headers: EventHeaders,
              response: {
                200: {
                  description:
                    '`text/event-stream`: `event: status` (this schema) and `event: reset` (EventsReset)',
                  content: {
                    'text/event-stream': { schema: Type.Union([f.schema as never, EventsReset]) },
                  },
                },
                ...errorReplies(400, 401, 429, 503),
              },
            },
          },
          async (req, reply) => {
            const header = req.headers['last-event-id'];
            const lastId = typeof header === 'string' ? Number(header) : undefined;
            const pending = await feed.open(f.scope(req), lastId);
            reply.hijack();
            const res = reply.raw;
            try {
              writeSseHead(reply, pending.cursor);
            } catch (err) {
              pending.cancel();
              throw err;
            }
            const sub = pending.attach(sseSink(res, f.render));
            res.on('close', () => sub.close());
          },
        );
      },
      { prefix: f.prefix },
    );
  }
  return feed;
}
