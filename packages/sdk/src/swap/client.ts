/**
 * Typed HTTP clients for the swap service: `SwapClient` (Surface A, the user/affiliate side) and
 * `ResolverClient` (the resolver API). Both send `X-API-Key` and turn error envelopes into
 * `SwapApiError`.
 */

import { type EventsOptions, type FeedItem, streamEvents } from './events.ts';
import type {
  Affiliate,
  ApprovalBody,
  IntentCreated,
  IntentEvent,
  IntentRequest,
  IntentStatusChange,
  Network,
  Pagination,
  Quote,
  QuoteRequest,
  ResolverEvent,
  ResolverIntent,
  SwapErrorBody,
  SwapListQuery,
  SwapPage,
  SwapRecord,
  SwapStatus,
  TokenPage,
} from './types.ts';

/** A non-2xx answer of the service: its envelope, or a stand-in when the body was not one. */
export class SwapApiError extends Error {
  override readonly name = 'SwapApiError';
  readonly status: number;
  readonly code: number;
  readonly type: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, body: SwapErrorBody) {
    super(`${body.type} (${body.code}): ${body.message}`);
    this.status = status;
    this.code = body.code;
    this.type = body.type;
    this.details = body.details;
  }
}

export interface ClientOptions {
  /** e.g. `http://127.0.0.1:3100` (no trailing slash needed). */
  baseUrl: string;
  apiKey: string;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Per-request timeout, default 30 s. */
  timeoutMs?: number;
}

function isEnvelope(v: unknown): v is SwapErrorBody {
  const o = v as SwapErrorBody | null;
  return !!o && typeof o === 'object' && typeof o.code === 'number' && typeof o.message === 'string';
}

class HttpBase {
  readonly #base: string;
  readonly #key: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(opts: ClientOptions) {
    this.#base = opts.baseUrl.replace(/\/+$/, '');
    this.#key = opts.apiKey;
    this.#fetch = opts.fetch ?? fetch;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
  }

  /** The reconnecting SSE iterator over `path` (see `streamEvents`). */
  protected stream<T>(path: string, opts: EventsOptions): AsyncGenerator<FeedItem<T>> {
    return streamEvents<T>(
      {
        url: new URL(this.#base + path),
        apiKey: this.#key,
        fetch: this.#fetch,
        failure: (res, text) => {
          // Busy (429) or unavailable (5xx): retried with backoff. Anything else (a bad key) is thrown.
          if (res.status === 429 || res.status >= 500) return undefined;
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          return new SwapApiError(
            res.status,
            isEnvelope(parsed)
              ? parsed
              : { code: 0, type: 'HTTP_ERROR', message: `HTTP ${res.status}: ${text.slice(0, 200)}` },
          );
        },
      },
      opts,
    );
  }

  protected async request<T>(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    query?: Record<string, unknown>,
  ): Promise<T> {
    const url = new URL(this.#base + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined) continue;
      // A list filter is sent as repeated parameters (`wallet=a&wallet=b`).
      for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(item));
    }
    const res = await this.#fetch(url, {
      method,
      headers: {
        'x-api-key': this.#key,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      throw new SwapApiError(
        res.status,
        isEnvelope(parsed)
          ? parsed
          : { code: 0, type: 'HTTP_ERROR', message: `HTTP ${res.status}: ${text.slice(0, 200)}` },
      );
    }
    return parsed as T;
  }
}

/**
 * Surface A client.
 *
 * @example
 * ```ts
 * const swap = new SwapClient({ baseUrl: 'http://127.0.0.1:3100', apiKey: process.env.SWAP_KEY! });
 * const quote = await swap.quote({ sourceChain: 1, sourceToken: 'BTC', destChain: 2, destToken: usdc, amount: '0.01' });
 * const intent = await swap.createIntent({ quoteId: quote.quoteId, sourceAddress, sourcePublicKey, refundAddress, destinationAddress });
 * await swap.addApproval(intent.intentId, { psbt: signHtlcPsbt(intent.htlc!, privateKey) });
 * ```
 */
export class SwapClient extends HttpBase {
  /** Resolves when healthy; throws SwapApiError (503) otherwise. */
  async healthcheck(): Promise<void> {
    await this.request<void>('GET', '/healthcheck');
  }

  async networks(token?: string): Promise<Network[]> {
    return (await this.request<{ networks: Network[] }>('GET', '/networks', undefined, { token })).networks;
  }

  tokens(q: { limit?: number; offset?: number; q?: string; networkId?: number } = {}): Promise<TokenPage> {
    return this.request('GET', '/tokens', undefined, {
      limit: q.limit,
      offset: q.offset,
      q: q.q,
      'network-id': q.networkId,
    });
  }

  quote(req: QuoteRequest): Promise<Quote> {
    return this.request('POST', '/quote', req);
  }

  createIntent(req: IntentRequest): Promise<IntentCreated> {
    return this.request('POST', '/intents', req);
  }

  addApproval(intentId: string, body: ApprovalBody): Promise<IntentStatusChange> {
    return this.request('POST', `/intents/${encodeURIComponent(intentId)}/approvals`, body);
  }

  async status(intentId: string): Promise<SwapStatus> {
    return (
      await this.request<{ status: SwapStatus }>('GET', `/intents/${encodeURIComponent(intentId)}/status`)
    ).status;
  }

  /** Polls the status until `done(status)` or the timeout. */
  async waitForStatus(
    intentId: string,
    done: (s: SwapStatus) => boolean,
    opts: { intervalMs?: number; timeoutMs?: number } = {},
  ): Promise<SwapStatus> {
    const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
    for (;;) {
      const s = await this.status(intentId);
      if (done(s) || Date.now() >= deadline) return s;
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 3000));
    }
  }

  requestRefund(intentId: string): Promise<IntentStatusChange> {
    return this.request('POST', `/intents/${encodeURIComponent(intentId)}/refund-request`);
  }

  reportRefundTx(intentId: string, txHash: string): Promise<IntentStatusChange> {
    return this.request('POST', `/intents/${encodeURIComponent(intentId)}/refund-tx`, { txHash });
  }

  /**
   * Reports the user's deposit of an intent that ended (Declined, Expired, RefundRequested) with none
   * recorded: the resolver used the approval and never reported it. Proven on chain; the status stays,
   * the refund path opens (then {@link requestRefund}, and the refund).
   *
   * @example
   * await swap.reportDepositTx(intentId, depositSignature); // the co-signed transfer seen in the wallet
   * await swap.requestRefund(intentId);
   */
  reportDepositTx(intentId: string, txHash: string): Promise<IntentStatusChange> {
    return this.request('POST', `/intents/${encodeURIComponent(intentId)}/deposit-tx`, { txHash });
  }

  swaps(q: SwapListQuery = {}): Promise<SwapPage> {
    return this.request('GET', '/swaps', undefined, { ...q });
  }

  swap(intentId: string): Promise<SwapRecord> {
    return this.request('GET', `/swaps/${encodeURIComponent(intentId)}`);
  }

  createAffiliate(a: Omit<Affiliate, 'apiKeyName'>): Promise<Affiliate> {
    return this.request('POST', '/affiliates', a);
  }

  async affiliates(): Promise<Affiliate[]> {
    return (await this.request<{ affiliates: Affiliate[] }>('GET', '/affiliates')).affiliates;
  }

  /**
   * The status changes of this key's intents as they happen (`GET /events`, Server-Sent Events), in
   * order, each once. Reconnects by itself after a dropped connection, resuming after the last id it
   * saw (backoff 0.5 s doubling to `maxBackoffMs`); pass `lastEventId` to resume after a restart. A
   * `reset` item means the resume point was older than the service's retention: re-read `swaps()`.
   *
   * @example
   * ```ts
   * const ac = new AbortController();
   * for await (const ev of swap.events({ lastEventId: saved, signal: ac.signal })) {
   *   if (ev.type === 'reset') await resync();
   *   else console.log(ev.data.intentId, ev.data.from, '→', ev.data.to);
   *   saved = ev.id; // persist to resume later
   * }
   * ```
   */
  events(opts: EventsOptions = {}): AsyncGenerator<FeedItem<IntentEvent>> {
    return this.stream<IntentEvent>('/events', opts);
  }
}

type Changed = { intent_id: string; status: SwapStatus };

/** Resolver API client (`/resolver/v1`), for resolvers and tests. */
export class ResolverClient extends HttpBase {
  intents(
    q: { status?: SwapStatus; limit?: number; offset?: number } = {},
  ): Promise<{ data: ResolverIntent[]; pagination: Pagination }> {
    return this.request('GET', '/resolver/v1/intents', undefined, q);
  }
  intent(id: string): Promise<ResolverIntent> {
    return this.request('GET', `/resolver/v1/intents/${encodeURIComponent(id)}`);
  }
  accept(id: string): Promise<Changed> {
    return this.request('POST', `/resolver/v1/intents/${encodeURIComponent(id)}/accept`, {});
  }
  decline(id: string, reason?: string): Promise<Changed> {
    return this.request(
      'POST',
      `/resolver/v1/intents/${encodeURIComponent(id)}/decline`,
      reason === undefined ? {} : { reason },
    );
  }
  deposit(id: string, txHash: string): Promise<Changed> {
    return this.request('POST', `/resolver/v1/intents/${encodeURIComponent(id)}/deposit`, {
      tx_hash: txHash,
    });
  }
  fulfil(id: string, txHash: string): Promise<Changed> {
    return this.request('POST', `/resolver/v1/intents/${encodeURIComponent(id)}/fulfil`, { tx_hash: txHash });
  }
  claim(id: string, txHash: string): Promise<Changed> {
    return this.request('POST', `/resolver/v1/intents/${encodeURIComponent(id)}/claim`, { tx_hash: txHash });
  }
  refund(id: string, txHash: string): Promise<Changed> {
    return this.request('POST', `/resolver/v1/intents/${encodeURIComponent(id)}/refund`, { tx_hash: txHash });
  }
  /**
   * Status changes of the intents this resolver quoted (`GET /resolver/v1/events`, Server-Sent
   * Events), in order, each once; reconnects and resumes by itself (see `SwapClient.events`).
   *
   * @example
   * ```ts
   * for await (const ev of resolver.events({ lastEventId: saved })) {
   *   if (ev.type === 'status' && ev.data.to === 'ApprovalAdded') await fill(await resolver.intent(ev.data.intent_id));
   *   saved = ev.id;
   * }
   * ```
   */
  events(opts: EventsOptions = {}): AsyncGenerator<FeedItem<ResolverEvent>> {
    return this.stream<ResolverEvent>('/resolver/v1/events', opts);
  }

  /** The 0x-hex preimage (only once the intent is Fulfilled). */
  async secret(id: string): Promise<string> {
    return (
      await this.request<{ preimage: string }>('GET', `/resolver/v1/intents/${encodeURIComponent(id)}/secret`)
    ).preimage;
  }
}
