/**
 * The wallet events routes: `GET /wallet/events` (Server-Sent Events, stream.ts). Registered outside the JSON
 * route kit: the reply is a stream written on the raw response (`reply.hijack()`), not a body.
 *
 * Identity: the usual three headers, or (for a browser's `EventSource`, which cannot send headers) the query
 * parameters `xpub_van`, `xpub_col`, `master_fingerprint`: the same values, validated the same way.
 */
import { WalletEvent, WalletEventsReset } from '@rgbx/contracts/wallet-node';
import { type FastifyReply, type FastifyRequest, type ServiceApp, Type } from '@rgbx/service-kit';
import { writeSseHead } from '@rgbx/service-kit/sse';
import { E } from '../errors.ts';
import {
  HEADER_FINGERPRINT,
  HEADER_XPUB_COL,
  HEADER_XPUB_VAN,
  type IdentityCache,
  type WalletIdentity,
} from '../identity.ts';
import { errorResponses, missingHeaders } from '../routes/kit.ts';
import type { WalletRegistry } from '../wallets.ts';
import type { WalletEvents } from './hub.ts';
import { EventStream, resumePoint } from './stream.ts';

export interface EventRouteDeps {
  registry: WalletRegistry;
  events: WalletEvents;
  identities: IdentityCache;
  heartbeatMs: number;
  maxStreamsPerWallet: number;
}

const EventsQuery = Type.Object({
  xpub_van: Type.Optional(
    Type.String({ description: 'the xpub-van header, for clients that cannot send headers' }),
  ),
  xpub_col: Type.Optional(Type.String({ description: 'the xpub-col header, likewise' })),
  master_fingerprint: Type.Optional(Type.String({ description: 'the master-fingerprint header, likewise' })),
});

const EventsHeaders = Type.Object({
  [HEADER_XPUB_VAN]: Type.Optional(
    Type.String({ description: 'vanilla account xpub (or the query parameter)' }),
  ),
  [HEADER_XPUB_COL]: Type.Optional(
    Type.String({ description: 'colored account xpub (or the query parameter)' }),
  ),
  [HEADER_FINGERPRINT]: Type.Optional(
    Type.String({ description: 'master fingerprint (or the query parameter)' }),
  ),
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^(0|[1-9][0-9]{0,14})$',
      description: 'Resume after this event id (the SSE `id:` last received)',
    }),
  ),
});

const DESCRIPTION = [
  'Server-Sent Events of the calling wallet: one event per transfer status change (`event: transfer`), per asset',
  'balance change (`event: balance`) and per begin released (`event: begin_released`), found by the background',
  "refresh or after a client's call, each with `id:` (per wallet, increasing). Reconnect with `Last-Event-ID` to",
  'get exactly the events after it, from the log on disk; one older than `wallet.events_retention_secs` (or',
  'unknown) gets `event: reset` first. A heartbeat comment (with `id:`) every `wallet.events_heartbeat_secs`.',
  'Without `Last-Event-ID` the stream starts now. A browser `EventSource` may pass the identity as query parameters.',
].join(' ');

/** The identity of a request: the headers (as every wallet route), else the query parameters. */
function identityOf(req: FastifyRequest, identities: IdentityCache): WalletIdentity | null {
  const fromHeaders = identities.read(req.headers);
  if (fromHeaders) return fromHeaders;
  const q = req.query as Record<string, string | undefined>;
  return identities.read({
    [HEADER_XPUB_VAN]: q.xpub_van,
    [HEADER_XPUB_COL]: q.xpub_col,
    [HEADER_FINGERPRINT]: q.master_fingerprint,
  });
}

export function registerEventRoutes(
  app: ServiceApp,
  deps: EventRouteDeps,
): { close(): void; readonly open: number } {
  const { registry, events } = deps;
  app.addSchema(WalletEvent);
  app.addSchema(WalletEventsReset);
  const perWallet = new Map<string, Set<EventStream>>();
  app.get(
    '/wallet/events',
    {
      schema: {
        summary: "The wallet's transfer, balance and begin events, as Server-Sent Events",
        description: DESCRIPTION,
        tags: ['wallet'],
        headers: EventsHeaders,
        querystring: EventsQuery,
        response: {
          200: {
            description: '`text/event-stream`: WalletEvent per event, WalletEventsReset for `event: reset`',
            content: {
              'text/event-stream': {
                schema: Type.Union([Type.Ref('WalletEvent'), Type.Ref('WalletEventsReset')]),
              },
            },
          },
          400: errorResponses[400],
          401: errorResponses[401],
          404: errorResponses[404],
          409: errorResponses[409],
          429: Type.Ref('WalletErrorEnvelope', {
            description: 'wallet.events_max_streams_per_wallet streams of this wallet are open (code 1020)',
          }),
        },
      },
    },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const id = identityOf(req, deps.identities);
      if (!id) return missingHeaders(reply);
      const ctx = registry.resolve(id); // 404 for a wallet this node does not have, 409 for other xpubs
      const wallet = id.fingerprint;
      const open = perWallet.get(wallet) ?? new Set<EventStream>();
      if (open.size >= deps.maxStreamsPerWallet) throw E.TOO_MANY_STREAMS.create(deps.maxStreamsPerWallet);
      const log = events.logOf(wallet, registry.walletDir(ctx));
      const header = req.headers['last-event-id'];
      const { cursor, reset } = resumePoint(log, typeof header === 'string' ? Number(header) : undefined);
      reply.hijack();
      const res = writeSseHead(reply, cursor);
      if (reset) res.write(`id: ${cursor}\nevent: reset\ndata: ${JSON.stringify(reset)}\n\n`);
      // The request's own timeouts do not apply to a stream: heartbeats keep it busy.
      req.raw.socket.setTimeout(0);
      let unlisten = () => {};
      const stream = new EventStream(log, res, cursor, {
        heartbeatMs: deps.heartbeatMs,
        onClose: () => {
          unlisten();
          open.delete(stream);
          if (open.size === 0 && perWallet.get(wallet) === open) perWallet.delete(wallet);
        },
      });
      open.add(stream);
      perWallet.set(wallet, open);
      unlisten = events.listen(wallet, stream);
      stream.start();
    },
  );
  return {
    close() {
      for (const set of [...perWallet.values()]) for (const s of [...set]) s.close();
    },
    get open() {
      let n = 0;
      for (const set of perWallet.values()) n += set.size;
      return n;
    },
  };
}
