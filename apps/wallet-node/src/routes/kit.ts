/**
 * What every wallet route shares: the identity headers, the documented error replies, rgb-lib error mapping,
 * lossless serialization, and `walletRoute`, which declares one POST route that runs on the wallet's child.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RgbCallTimeoutError, RgbLibError, type RgbWallet } from '@rgbx/rgb';
import type { FastifyReply, FastifyRequest, ServiceApp } from '@rgbx/service-kit';
import { ServiceError, Type } from '@rgbx/service-kit';
import { psbtTxid } from '../begins.ts';
import { BudgetWaitTimeout } from '../budget.ts';
import type { WalletNodeConfig } from '../config.ts';
import { E, RGB_VARIANTS } from '../errors.ts';
import {
  HEADER_FINGERPRINT,
  HEADER_XPUB_COL,
  HEADER_XPUB_VAN,
  MISSING_HEADERS_TEXT,
  type WalletIdentity,
} from '../identity.ts';
import { classifyIndexerError, describeFailure, type IndexerHealth } from '../indexer.ts';
import { replyJson, snakeKeys } from '../json.ts';
import type { WalletContext, WalletRegistry } from '../wallets.ts';

declare module 'fastify' {
  interface FastifyRequest {
    walletIdentity?: WalletIdentity;
  }
  interface FastifyContextConfig {
    /** The route takes no body: whatever body or content type arrives is drained and ignored (as the reference). */
    bodyless?: boolean;
  }
}

export const WalletHeaders = Type.Object({
  [HEADER_XPUB_VAN]: Type.String({ description: 'vanilla account xpub (BTC UTXOs)' }),
  [HEADER_XPUB_COL]: Type.String({ description: 'colored account xpub (RGB UTXOs)' }),
  [HEADER_FINGERPRINT]: Type.String({ description: 'BIP-32 master fingerprint, 8 hex characters' }),
});

export const errorResponses = {
  400: Type.Ref('WalletErrorEnvelope', {
    description: 'malformed header value or a request rgb-lib refused (see code)',
  }),
  401: {
    description: 'a wallet header is missing or empty (checked before the body)',
    content: {
      'text/plain': {
        schema: Type.Literal('Missing xpub-van/xpub-col/master-fingerprint header'),
      },
    },
  },
  404: Type.Ref('WalletErrorEnvelope', {
    description: 'no wallet registered for these headers (1015), or asset/transfer not found (1000)',
  }),
  409: Type.Ref('WalletErrorEnvelope', {
    description: 'wallet identity mismatch (1012) or conflicting transfer state (1009)',
  }),
  413: Type.Ref('WalletErrorEnvelope', { description: 'body larger than api.body_limit_bytes (code 1013)' }),
  422: Type.Ref('WalletErrorEnvelope', { description: 'body cannot be deserialized (code 1001)' }),
  503: Type.Ref('WalletErrorEnvelope', {
    description:
      'the indexer refused or dropped the connection, or did not answer (code 1018, indexer_unavailable), or every ' +
      'budget place is taken by a wallet with a call in flight (code 1019, wallets_busy); with Retry-After (seconds)',
  }),
  504: Type.Ref('WalletErrorEnvelope', {
    description: 'the call outlived its deadline and was stopped (code 1016); other wallets are unaffected',
  }),
  500: Type.Ref('WalletErrorEnvelope', {
    description: 'indexer, proxy, bitcoind, storage or rgb-lib failure (code 500)',
  }),
};

/** Seconds a client told `wallets_busy` waits before trying again. */
const BUSY_RETRY_AFTER_SECS = 2;

/**
 * rgb-lib errors a client can fix become their documented 4xx; the indexer refusing, dropping or not answering
 * becomes 503 `indexer_unavailable` (with the seconds to wait, from `health`), a full budget 503 `wallets_busy`;
 * anything else stays a 500.
 */
export function mapRgbError(err: unknown, health?: IndexerHealth): unknown {
  if (err instanceof BudgetWaitTimeout) {
    const limit = err.online ? 'max_online_wallets' : 'max_open_wallets';
    return E.WALLETS_BUSY.createWith(
      {
        details: {
          limit: `wallet.${limit}`,
          waited_ms: err.waitedMs,
          retry_after_secs: BUSY_RETRY_AFTER_SECS,
        },
        cause: err,
      },
      `${err.online ? 'online' : 'open'} wallet (wallet.${limit})`,
    );
  }
  const problem = classifyIndexerError(err);
  if (problem && health) {
    return E.INDEXER_UNAVAILABLE.createWith(
      {
        details: {
          indexer: health.address,
          failure: problem.kind,
          kind: problem.source,
          indexer_error: problem.detail.slice(0, 500),
          retry_after_secs: health.retryAfterSecs(),
        },
        cause: err,
      },
      health.address,
      describeFailure(problem.kind),
    );
  }
  if (err instanceof RgbCallTimeoutError) {
    const op = /killed after (\S+) exceeded/.exec(err.message)?.[1] ?? 'the rgb-lib call';
    return E.CALL_TIMEOUT.createWith({ details: { kind: 'CallTimeout' }, cause: err }, op);
  }
  if (!(err instanceof RgbLibError)) return err;
  const key = RGB_VARIANTS[err.variant];
  if (!key) return err;
  const text = Object.keys(err.details ?? {}).length > 0 ? JSON.stringify(err.details) : err.variant;
  const details = { kind: err.variant, ...(err.details ?? {}) };
  switch (key) {
    case 'NOT_FOUND':
      return E.NOT_FOUND.createWith(
        { details, cause: err },
        err.variant === 'AssetNotFound' ? 'asset' : 'transfer',
      );
    case 'INSUFFICIENT_ALLOCATION_SLOTS':
      return E.INSUFFICIENT_ALLOCATION_SLOTS.createWith({ details, cause: err });
    default:
      return (E[key as keyof typeof E] as { createWith: (o: object, d: string) => Error }).createWith(
        { details, cause: err },
        text,
      );
  }
}

/** The `Retry-After` header of a 503 we answer on purpose (its seconds are in `details.retry_after_secs`). */
export function setRetryAfter(reply: FastifyReply, err: unknown): void {
  if (!(err instanceof ServiceError) || err.statusCode !== 503) return;
  const secs = (err.details as { retry_after_secs?: unknown } | undefined)?.retry_after_secs;
  reply.header('retry-after', String(typeof secs === 'number' ? secs : BUSY_RETRY_AFTER_SECS));
}

/** JSON reply of an rgb-lib value: snake_case keys, u64 exact (bigint → JSON integer). */
export function send(reply: FastifyReply, value: unknown): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(replyJson(snakeKeys(value)));
}

/** JSON reply of a bare value (a PSBT string, a count, a boolean), as the spec's bare responses. */
export function jsonString(reply: FastifyReply, value: unknown): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(replyJson(value));
}

export interface RouteDeps {
  cfg: WalletNodeConfig;
  registry: WalletRegistry;
  version: { app: string; version: string; build: string; commit: string };
}

export interface WalletRouteOptions {
  summary: string;
  description?: string;
  /** Body schema; absent = the route takes no body and ignores any (bodyless). */
  body?: unknown;
  /** Query string schema (e.g. `RecordFormatQuery`); absent = none documented. */
  querystring?: unknown;
  response: unknown;
  /** The call needs the indexer (goes online first). */
  online: boolean;
  deprecated?: boolean;
  /** Content types documented for the body (default JSON); e.g. `['multipart/form-data']`. */
  consumes?: string[];
  /** The call can start or move a transfer: the background refresh looks at the wallet again. */
  movesTransfers?: boolean;
  /** The call talks to RGB proxies (sendbegin/sendend/refresh/failtransfers): the short isolation budget applies. */
  transport?: boolean;
  /**
   * Repeating the call changes nothing (a read that syncs): an attempt the indexer refused or dropped at once is
   * tried again (bounded, see `WalletRegistry.use`). Going online is always retried; other calls never are.
   */
  idempotent?: boolean;
  /** Only this route may make a wallet that does not exist yet (register); elsewhere an unknown one is 404/1015. */
  createsWallet?: boolean;
  /** Checked after the identity, before the handler (e.g. a capability the operator turned off): throw to refuse. */
  precondition?: () => void;
}

export type WalletHandler<B> = (
  ctx: WalletContext,
  w: RgbWallet,
  body: B,
  req: FastifyRequest,
) => Promise<unknown>;

/** A handler that runs outside the wallet's child (it decides itself what to queue there). */
export type ContextHandler<B> = (ctx: WalletContext, body: B, req: FastifyRequest) => Promise<unknown>;

/** The 401 reply for a wallet route without a valid identity. */
/** The txid of a PSBT a client sent (begin's or signed); one that does not parse is 400 invalid_psbt. */
export function psbtTxidOf(psbt: string): string {
  try {
    return psbtTxid(psbt);
  } catch (err) {
    throw E.INVALID_PSBT.createWith({ details: { kind: 'InvalidPsbt' } }, (err as Error).message);
  }
}

export function missingHeaders(reply: FastifyReply): FastifyReply {
  return reply.code(401).type('text/plain; charset=utf-8').send(MISSING_HEADERS_TEXT);
}

/**
 * Route declarers bound to one app: `walletRoute` runs the handler on the wallet's child (headers checked
 * first, then the body, then the call); `contextRoute` hands the handler the wallet context to queue work itself.
 */
export function routeKit(app: ServiceApp, deps: RouteDeps) {
  const { registry } = deps;

  function schemaOf(o: WalletRouteOptions) {
    // A named body schema (registered with addSchema) is referenced, so the OpenAPI names it too.
    const id = (o.body as { $id?: string } | undefined)?.$id;
    const body = id ? Type.Ref(id) : o.body;
    return {
      schema: {
        summary: o.summary,
        ...(o.description ? { description: o.description } : {}),
        tags: ['wallet'],
        headers: WalletHeaders,
        ...(body ? { body: body as never } : {}),
        ...(o.querystring ? { querystring: o.querystring as never } : {}),
        ...(o.consumes ? { consumes: o.consumes } : {}),
        ...(o.deprecated ? { deprecated: true } : {}),
        response: { 200: o.response as never, ...errorResponses },
      },
      config: { bodyless: o.body === undefined },
    };
  }

  function contextRoute<B>(
    path: string,
    o: WalletRouteOptions,
    handler: ContextHandler<B>,
    wrap: (reply: FastifyReply, value: unknown) => FastifyReply = send,
  ): void {
    app.post(path, schemaOf(o), async (req, reply) => {
      if (!req.walletIdentity) return missingHeaders(reply);
      const ctx = registry.resolve(req.walletIdentity, { create: o.createsWallet === true });
      const body = (o.body === undefined ? {} : (req.body ?? {})) as B;
      o.precondition?.();
      // Marked on disk before the call is queued, so a transfer it starts is refreshed after a restart too.
      if (o.movesTransfers) registry.beginMove(ctx);
      // A wallet created by this call starts its events from an empty snapshot (see events/hub.ts).
      const fresh =
        o.createsWallet === true && !existsSync(join(registry.walletDir(ctx), 'wallet_manifest.json'));
      try {
        const value = await handler(ctx, body, req);
        if (fresh) registry.events?.created(ctx, registry.walletDir(ctx));
        // An issuance adds a transfer and a balance (moving calls are observed by registry.endMove).
        if (path.startsWith('/wallet/issueasset')) registry.events?.request(ctx);
        return wrap(reply, value);
      } catch (err) {
        const mapped = mapRgbError(err, registry.health);
        setRetryAfter(reply, mapped);
        throw mapped;
      } finally {
        // Answered or failed (a failed sendend may still have moved something): looked at again.
        if (o.movesTransfers) registry.endMove(ctx);
      }
    });
  }

  function walletRoute<B>(
    path: string,
    o: WalletRouteOptions,
    handler: WalletHandler<B>,
    wrap: (reply: FastifyReply, value: unknown) => FastifyReply = send,
  ): void {
    contextRoute<B>(
      path,
      o,
      (ctx, body, req) =>
        registry.use(
          ctx,
          { online: o.online, transport: o.transport === true, idempotent: o.idempotent === true },
          (w) => handler(ctx, w, body, req),
        ),
      wrap,
    );
  }

  return { walletRoute, contextRoute };
}
