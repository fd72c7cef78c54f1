/**
 * Resolvers and the request for quote (RFQ). A resolver answers a quote request with the
 * destination amount it commits to deliver (after its own fee), or `null` when it does not quote the
 * pair. The service asks every enabled resolver at once, each with a timeout, and keeps the best
 * answer (largest destination amount; ties go to the first resolver in the configuration).
 *
 * The reference resolver quotes from configured rates; a resolver with `quote_url` is remote and asked
 * over HTTP with a signed request (`RemoteResolver`, rfq-client.ts). Both are behind the `Resolver`
 * interface.
 */

import { HttpClient } from '@rgbx/service-kit/http-client';
import type { NetworkConfig, NetworkType, RateConfig, ResolverConfig, TokenConfig } from '../config.ts';
import { kindOf } from '../kinds/registry.ts';
import { convert, minusBps, parseDecimal, parseLots } from './amounts.ts';
import { RemoteResolver, RfqStats } from './rfq-client.ts';

export interface RfqRequest {
  sourceNetwork: NetworkConfig;
  sourceToken: TokenConfig;
  destNetwork: NetworkConfig;
  destToken: TokenConfig;
  amountLots: bigint;
}

export interface ResolverQuote {
  resolverId: string;
  /** What the resolver delivers for the full source amount, after its own fee. */
  destAmountLots: bigint;
}

/** On-chain identities a resolver uses, per network type. */
export interface ResolverIdentity {
  bitcoinClaimPubkey?: string;
  evmAddress?: string;
  tronAddress?: string;
  solanaAddress?: string;
}

export interface Resolver {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly identity: ResolverIdentity;
  /** `signal` aborts the question when the RFQ stops waiting (`swap.resolver_timeout_ms`). */
  quote(req: RfqRequest, opts?: { signal?: AbortSignal }): Promise<ResolverQuote | null>;
}

/** The identities of a `[[resolvers]]` entry. */
export function resolverIdentity(cfg: ResolverConfig): ResolverIdentity {
  return {
    ...(cfg.bitcoin_claim_pubkey ? { bitcoinClaimPubkey: cfg.bitcoin_claim_pubkey.toLowerCase() } : {}),
    ...(cfg.evm_address ? { evmAddress: cfg.evm_address } : {}),
    ...(cfg.tron_address ? { tronAddress: cfg.tron_address } : {}),
    ...(cfg.solana_address ? { solanaAddress: cfg.solana_address } : {}),
  };
}

/** The resolver's identity on a network of `type`, or undefined when it has none. */
export function identityFor(identity: ResolverIdentity, type: NetworkType): string | undefined {
  return kindOf(type).identity(identity);
}

function sameToken(a: string, b: string): boolean {
  return a.startsWith('0x') ? a.toLowerCase() === b.toLowerCase() : a === b;
}

/** Quotes from `[[resolvers.rates]]`: `dest = amount × rate − fee_bps`, within the configured limits. */
export class ReferenceResolver implements Resolver {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly identity: ResolverIdentity;
  readonly #rates: readonly RateConfig[];

  constructor(cfg: ResolverConfig) {
    this.id = cfg.id;
    this.name = cfg.name;
    this.enabled = cfg.enabled;
    this.identity = resolverIdentity(cfg);
    this.#rates = cfg.rates;
  }

  async quote(req: RfqRequest): Promise<ResolverQuote | null> {
    if (req.sourceToken.rgb || req.destToken.rgb) return null;
    if (!identityFor(this.identity, req.sourceNetwork.type)) return null;
    const rate = this.#rates.find(
      (r) =>
        r.source_network === req.sourceNetwork.id &&
        r.dest_network === req.destNetwork.id &&
        sameToken(r.source_token, req.sourceToken.address) &&
        sameToken(r.dest_token, req.destToken.address),
    );
    if (!rate) return null;
    if (req.amountLots < parseLots(rate.min_source_lots)) return null;
    if (rate.max_source_lots !== undefined && req.amountLots > parseLots(rate.max_source_lots)) return null;
    const gross = convert(
      req.amountLots,
      parseDecimal(rate.rate),
      req.sourceToken.decimals,
      req.destToken.decimals,
    );
    const net = minusBps(gross, rate.fee_bps);
    if (net <= 0n) return null;
    return { resolverId: this.id, destAmountLots: net };
  }
}

export interface BuildResolversOptions {
  /** Where the remote resolvers count their RFQ outcomes (default: a new one, shared by them). */
  stats?: RfqStats;
  /** The remote resolvers' outbound client (default: a new one, shared by them). */
  http?: HttpClient;
  /** The remote resolvers' clock (request timestamps; default `Date.now`). */
  now?: () => number;
}

/** Remote resolvers for the entries with `quote_url`, reference resolvers for the others. */
export function buildResolvers(
  configs: readonly ResolverConfig[],
  opts: BuildResolversOptions = {},
): Resolver[] {
  const stats = opts.stats ?? new RfqStats();
  let http = opts.http;
  return configs.map((c) => {
    if (!c.quote_url) return new ReferenceResolver(c);
    http ??= new HttpClient({ maxSockets: 16, maxFreeSockets: 4 });
    return new RemoteResolver(c, { http, stats, ...(opts.now ? { now: opts.now } : {}) });
  });
}

/** The RFQ counters the remote resolvers among `resolvers` share (empty when there is none). */
export function rfqStatsOf(resolvers: readonly Resolver[]): RfqStats {
  return resolvers.find((r): r is RemoteResolver => r instanceof RemoteResolver)?.stats ?? new RfqStats();
}

/**
 * Asks every enabled resolver; the best answer or null. A resolver that throws or times out is
 * skipped: a throw is reported to `onResolverError`, and at the timeout the question is aborted (a
 * resolver that honours the signal then throws, and that is reported too). `onResolverDone` is told
 * how long each resolver took (to its answer, its error or the timeout).
 */
export async function requestForQuote(
  resolvers: readonly Resolver[],
  req: RfqRequest,
  timeoutMs: number,
  onResolverError?: (resolverId: string, err: unknown) => void,
  onResolverDone?: (resolverId: string, seconds: number) => void,
): Promise<ResolverQuote | null> {
  const enabled = resolvers.filter((r) => r.enabled);
  const answers = await Promise.all(
    enabled.map((r) => {
      const t0 = performance.now();
      const abort = new AbortController();
      const asked = Promise.resolve()
        .then(() => r.quote(req, { signal: abort.signal }))
        .catch((err: unknown) => {
          onResolverError?.(r.id, err);
          return null;
        });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<null>((resolve) => {
        timer = setTimeout(() => {
          abort.abort(new Error(`no answer within ${timeoutMs} ms`));
          resolve(null);
        }, timeoutMs);
      });
      return Promise.race([asked, timeout]).finally(() => {
        clearTimeout(timer);
        onResolverDone?.(r.id, (performance.now() - t0) / 1000);
      });
    }),
  );
  let best: ResolverQuote | null = null;
  for (const a of answers) {
    if (a && a.destAmountLots > 0n && (best === null || a.destAmountLots > best.destAmountLots)) best = a;
  }
  return best;
}
