/**
 * Resolvers and the request for quote (RFQ). A resolver answers a quote request with the
 * destination amount it commits to deliver (after its own fee), or `null` when it does not quote the
 * pair. The service asks every enabled resolver at once, each with a timeout, and keeps the best
 * answer (largest destination amount; ties go to the first resolver in the configuration).
 *
 * The reference resolver quotes from configured rates. Resolvers are in-process objects behind the
 * `Resolver` interface; a remote resolver is one more implementation of it.
 */

import type { NetworkConfig, NetworkType, RateConfig, ResolverConfig, TokenConfig } from '../config.ts';
import { kindOf } from '../kinds/registry.ts';
import { convert, minusBps, parseDecimal, parseLots } from './amounts.ts';

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
  quote(req: RfqRequest): Promise<ResolverQuote | null>;
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
    this.identity = {
      ...(cfg.bitcoin_claim_pubkey ? { bitcoinClaimPubkey: cfg.bitcoin_claim_pubkey.toLowerCase() } : {}),
      ...(cfg.evm_address ? { evmAddress: cfg.evm_address } : {}),
      ...(cfg.tron_address ? { tronAddress: cfg.tron_address } : {}),
      ...(cfg.solana_address ? { solanaAddress: cfg.solana_address } : {}),
    };
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

export function buildResolvers(configs: readonly ResolverConfig[]): Resolver[] {
  return configs.map((c) => new ReferenceResolver(c));
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Asks every enabled resolver; the best answer or null. A resolver that throws or times out is skipped. */
export async function requestForQuote(
  resolvers: readonly Resolver[],
  req: RfqRequest,
  timeoutMs: number,
  onResolverError?: (resolverId: string, err: unknown) => void,
): Promise<ResolverQuote | null> {
  const enabled = resolvers.filter((r) => r.enabled);
  const answers = await Promise.all(
    enabled.map((r) =>
      withTimeout(
        Promise.resolve().then(() => r.quote(req)),
        timeoutMs,
      ).catch((err: unknown) => {
        onResolverError?.(r.id, err);
        return null;
      }),
    ),
  );
  let best: ResolverQuote | null = null;
  for (const a of answers) {
    if (a && a.destAmountLots > 0n && (best === null || a.destAmountLots > best.destAmountLots)) best = a;
  }
  return best;
}
