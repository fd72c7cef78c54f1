/**
 * Remote resolvers: a `[[resolvers]]` entry with `quote_url` is asked over HTTP with the signed RFQ of
 * `@rgbx/contracts/swap` (`Rfq`): `POST {quote_url}` with the request and `x-rgbx-timestamp` /
 * `x-rgbx-signature`; the answer must be signed for that request id, and its `dest_amount_lots` a
 * positive integer string or null.
 *
 * Whatever goes wrong with one resolver — no answer in time, a transport error, a status other than
 * 200, a body over {@link RFQ_MAX_ANSWER_BYTES}, not JSON, not an answer, a bad signature, an answer to
 * another request — skips that resolver for this quote and never fails the quote. Each exchange is
 * counted per resolver by outcome in {@link RfqStats}; failures are also thrown as {@link RfqSkip} so
 * `requestForQuote`'s `onResolverError` logs them (the secret is never part of an error).
 */
import { randomUUID } from 'node:crypto';
import { Rfq } from '@rgbx/contracts/swap';
import { type HttpClient, HttpReplyTooLargeError, HttpTimeoutError } from '@rgbx/service-kit/http-client';
import type { NetworkConfig, ResolverConfig, TokenConfig } from '../config.ts';
import { kindOf } from '../kinds/registry.ts';
import {
  identityFor,
  type Resolver,
  type ResolverIdentity,
  type ResolverQuote,
  type RfqRequest,
  resolverIdentity,
} from './resolvers.ts';

/** The most of an answer body read (an answer is ~100 bytes). */
export const RFQ_MAX_ANSWER_BYTES = 16 * 1024;

export const RFQ_OUTCOMES = ['quoted', 'no_quote', 'timeout', 'error', 'malformed', 'bad_signature'] as const;
/**
 * How one exchange ended. `error`: transport failure or a status other than 200; `malformed`: not
 * JSON, not an answer, or over the size cap; `bad_signature`: not signed with the secret for this
 * request (including a signed answer to another request).
 */
export type RfqOutcome = (typeof RFQ_OUTCOMES)[number];
export type RfqOutcomeCounts = Record<RfqOutcome, number>;

/** Counters of the remote resolvers' RFQ exchanges, per resolver id and outcome (for metrics). */
export class RfqStats {
  readonly byResolver: Record<string, RfqOutcomeCounts> = {};
  /** Told of each outcome as it is counted (the service's metrics). */
  listener: ((resolverId: string, outcome: RfqOutcome) => void) | undefined;

  count(resolverId: string, outcome: RfqOutcome): void {
    const counts = this.of(resolverId);
    counts[outcome] += 1;
    this.listener?.(resolverId, outcome);
  }

  /** The live counters of one resolver (all zero before its first exchange). */
  of(resolverId: string): RfqOutcomeCounts {
    let counts = this.byResolver[resolverId];
    if (!counts) {
      counts = Object.fromEntries(RFQ_OUTCOMES.map((o) => [o, 0])) as RfqOutcomeCounts;
      this.byResolver[resolverId] = counts;
    }
    return counts;
  }

  /** A copy of every counter. */
  snapshot(): Record<string, RfqOutcomeCounts> {
    return Object.fromEntries(Object.entries(this.byResolver).map(([id, c]) => [id, { ...c }]));
  }
}

/** A remote resolver skipped for one quote, and why. */
export class RfqSkip extends Error {
  override readonly name = 'RfqSkip';
  readonly outcome: Exclude<RfqOutcome, 'quoted' | 'no_quote'>;
  /** The contract's refusal code (`bad_signature`, `request_id_mismatch`, `malformed`), or the HTTP status. */
  readonly detail: string | number | undefined;
  constructor(outcome: RfqSkip['outcome'], message: string, detail?: string | number) {
    super(message);
    this.outcome = outcome;
    this.detail = detail;
  }
}

export interface RemoteResolverOptions {
  /** The shared outbound client (one per service). */
  http: HttpClient;
  /** Where outcomes are counted. */
  stats: RfqStats;
  /**
   * The longest one exchange may take, a backstop to `requestForQuote`'s abort at
   * `swap.resolver_timeout_ms` (default 60 000, the largest allowed timeout).
   */
  timeoutMs?: number;
  /** Default {@link RFQ_MAX_ANSWER_BYTES}. */
  maxAnswerBytes?: number;
  /** Unix milliseconds (default `Date.now`). */
  now?: () => number;
}

function wireNetwork(n: NetworkConfig): Rfq.RfqNetwork {
  // EVM/Tron: the chain id; Bitcoin: its network name (only Bitcoin networks have one); else null.
  const chainId = n.chain_id !== undefined ? String(n.chain_id) : (n.bitcoin_network ?? null);
  return { id: n.id, type: n.type, chain_id: chainId };
}

function wireToken(t: TokenConfig): Rfq.RfqToken {
  return { address: t.address, symbol: t.symbol, decimals: t.decimals };
}

/** Asks a resolver's `quote_url` with the signed RFQ (see the module comment). */
export class RemoteResolver implements Resolver {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly identity: ResolverIdentity;
  readonly quoteUrl: string;
  readonly stats: RfqStats;
  readonly #secret: string;
  readonly #http: HttpClient;
  readonly #timeoutMs: number;
  readonly #maxAnswerBytes: number;
  readonly #now: () => number;

  constructor(cfg: ResolverConfig, opts: RemoteResolverOptions) {
    if (!cfg.quote_url || !cfg.rfq_secret)
      throw new TypeError(`resolver ${cfg.id}: quote_url and its secret`);
    this.id = cfg.id;
    this.name = cfg.name;
    this.enabled = cfg.enabled;
    this.identity = resolverIdentity(cfg);
    this.quoteUrl = cfg.quote_url;
    this.#secret = cfg.rfq_secret;
    this.#http = opts.http;
    this.stats = opts.stats;
    this.#timeoutMs = opts.timeoutMs ?? 60_000;
    this.#maxAnswerBytes = opts.maxAnswerBytes ?? RFQ_MAX_ANSWER_BYTES;
    this.#now = opts.now ?? Date.now;
  }

  async quote(req: RfqRequest, opts: { signal?: AbortSignal } = {}): Promise<ResolverQuote | null> {
    // Not asked where it could not take part: it receives the source, and where the chain shows a
    // sender the fulfilment is checked as sent from its identity.
    if (req.sourceToken.rgb || req.destToken.rgb) return null;
    if (!identityFor(this.identity, req.sourceNetwork.type)) return null;
    if (kindOf(req.destNetwork).fulfilBySender && !identityFor(this.identity, req.destNetwork.type))
      return null;

    const requestId = randomUUID();
    const signed = Rfq.signRfqRequest(this.#secret, {
      request_id: requestId,
      resolver_id: this.id,
      timestamp: Math.floor(this.#now() / 1000),
      source_network: wireNetwork(req.sourceNetwork),
      source_token: wireToken(req.sourceToken),
      dest_network: wireNetwork(req.destNetwork),
      dest_token: wireToken(req.destToken),
      amount_lots: req.amountLots.toString(),
    });
    let reply: Awaited<ReturnType<HttpClient['request']>>;
    try {
      reply = await this.#http.request(this.quoteUrl, {
        method: 'POST',
        headers: { ...signed.headers, accept: 'application/json' },
        body: signed.body,
        timeoutMs: this.#timeoutMs,
        maxReplyBytes: this.#maxAnswerBytes,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
    } catch (err) {
      if (opts.signal?.aborted || err instanceof HttpTimeoutError)
        throw this.#skip('timeout', `no answer from ${this.quoteUrl} in time`);
      if (err instanceof HttpReplyTooLargeError)
        throw this.#skip('malformed', `answer over ${this.#maxAnswerBytes} bytes`);
      const code = (err as NodeJS.ErrnoException).code;
      throw this.#skip(
        'error',
        `request to ${this.quoteUrl} failed: ${code ?? (err as Error).message}`,
        code,
      );
    }
    if (reply.status !== 200)
      throw this.#skip('error', `${this.quoteUrl} answered HTTP ${reply.status}`, reply.status);
    let answer: Rfq.RfqAnswer;
    try {
      answer = Rfq.verifyRfqAnswer(
        this.#secret,
        requestId,
        reply.body,
        reply.headers[Rfq.RFQ_HEADERS.signature],
      );
    } catch (err) {
      if (!(err instanceof Rfq.RfqError)) throw err;
      throw this.#skip(err.code === 'malformed' ? 'malformed' : 'bad_signature', err.message, err.code);
    }
    if (answer.dest_amount_lots === null) {
      this.stats.count(this.id, 'no_quote');
      return null;
    }
    this.stats.count(this.id, 'quoted');
    return { resolverId: this.id, destAmountLots: BigInt(answer.dest_amount_lots) };
  }

  #skip(outcome: RfqSkip['outcome'], message: string, detail?: string | number): RfqSkip {
    this.stats.count(this.id, outcome);
    return new RfqSkip(outcome, `resolver ${this.id}: ${message}`, detail);
  }
}
