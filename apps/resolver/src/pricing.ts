/**
 * Pricing: what the resolver answers to an RFQ. From the pair's rate (or its price feed, within its
 * staleness limit), minus the spread, within the pair's min/max; and never more than the inventory on
 * the destination chain can pay, counting what recent quotes and unfinished fills already promised.
 */
import type { PairConfig } from './config.ts';

/** What the pricing needs of an RFQ (the swap service's request, already authenticated). */
export interface PriceRequest {
  sourceNetwork: number;
  sourceToken: string;
  sourceDecimals: number;
  destNetwork: number;
  destToken: string;
  destDecimals: number;
  amountLots: bigint;
}

/** A decimal string as numerator / 10^scale. */
export function parseDecimal(s: string): { n: bigint; scale: number } {
  const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(s.trim());
  if (!m) throw new Error(`expected a decimal number, got ${JSON.stringify(s)}`);
  const frac = m[2] ?? '';
  return { n: BigInt(m[1]! + frac), scale: frac.length };
}

/** `lots` of the source converted at `rate` (destination units per source unit), rounded down. */
export function convertLots(
  lots: bigint,
  rate: string,
  sourceDecimals: number,
  destDecimals: number,
): bigint {
  const r = parseDecimal(rate);
  return (
    (lots * r.n * 10n ** BigInt(destDecimals)) / (10n ** BigInt(sourceDecimals) * 10n ** BigInt(r.scale))
  );
}

export function sameToken(a: string, b: string): boolean {
  return a.startsWith('0x') ? a.toLowerCase() === b.toLowerCase() : a === b;
}

export function findPair(pairs: readonly PairConfig[], r: PriceRequest): PairConfig | undefined {
  return pairs.find(
    (p) =>
      p.source_network === r.sourceNetwork &&
      p.dest_network === r.destNetwork &&
      sameToken(p.source_token, r.sourceToken) &&
      sameToken(p.dest_token, r.destToken),
  );
}

export type FetchPrice = (url: string) => Promise<{ price: string; timestamp: number }>;

/** Reads a price feed answering `{"price": "<decimal>", "timestamp": <unix secs>}`. */
export const fetchPrice: FetchPrice = async (url) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  if (!res.ok) throw new Error(`price feed answered ${res.status}`);
  const body = (await res.json()) as { price?: unknown; timestamp?: unknown };
  if (typeof body.price !== 'string' || typeof body.timestamp !== 'number')
    throw new Error('price feed answer must be {"price": "<decimal>", "timestamp": <unix secs>}');
  return { price: body.price, timestamp: body.timestamp };
};

export type NoQuote =
  | 'no_pair'
  | 'below_min'
  | 'above_max'
  | 'stale_price'
  | 'price_feed_error'
  | 'too_small'
  | 'no_inventory';

/**
 * The destination amount for `r` (after the spread), or why not. `available` is what the destination
 * wallet can still promise (balance minus reservations).
 */
export async function priceQuote(
  pairs: readonly PairConfig[],
  r: PriceRequest,
  available: (network: number, token: string) => Promise<bigint>,
  opts: { now?: number; fetchPrice?: FetchPrice } = {},
): Promise<{ destLots: bigint } | { none: NoQuote }> {
  const pair = findPair(pairs, r);
  if (!pair) return { none: 'no_pair' };
  if (r.amountLots < BigInt(pair.min_source_lots)) return { none: 'below_min' };
  if (r.amountLots > BigInt(pair.max_source_lots)) return { none: 'above_max' };
  let rate = pair.rate;
  if (pair.price_feed_url) {
    try {
      const p = await (opts.fetchPrice ?? fetchPrice)(pair.price_feed_url);
      const now = opts.now ?? Date.now();
      if (now / 1000 - p.timestamp > pair.price_feed_max_age_secs) return { none: 'stale_price' };
      parseDecimal(p.price);
      rate = p.price;
    } catch {
      return { none: 'price_feed_error' };
    }
  }
  const gross = convertLots(r.amountLots, rate, r.sourceDecimals, r.destDecimals);
  const net = (gross * BigInt(10_000 - pair.spread_bps)) / 10_000n;
  if (net <= 0n) return { none: 'too_small' };
  if (net > (await available(r.destNetwork, r.destToken))) return { none: 'no_inventory' };
  return { destLots: net };
}

/**
 * Amounts promised per destination (network, token): quotes until they expire, and fills until they
 * are paid. What a new quote may promise is the balance minus these.
 */
export class Reservations {
  readonly #quotes = new Map<string, { key: string; lots: bigint; until: number }>();
  readonly #fills = new Map<string, { key: string; lots: bigint }>();

  static key(network: number, token: string): string {
    return `${network}:${token.startsWith('0x') ? token.toLowerCase() : token}`;
  }

  reserveQuote(requestId: string, network: number, token: string, lots: bigint, until: number): void {
    this.#quotes.set(requestId, { key: Reservations.key(network, token), lots, until });
  }

  /** An intent being filled: its payment is promised until `release`. */
  reserveFill(intentId: string, network: number, token: string, lots: bigint): void {
    this.#fills.set(intentId, { key: Reservations.key(network, token), lots });
  }

  release(intentId: string): void {
    this.#fills.delete(intentId);
  }

  /** Amounts promised to accepted intents other than `except`. */
  reservedFills(network: number, token: string, except?: string): bigint {
    const key = Reservations.key(network, token);
    let sum = 0n;
    for (const [id, f] of this.#fills) if (f.key === key && id !== except) sum += f.lots;
    return sum;
  }

  reserved(network: number, token: string, now = Date.now()): bigint {
    const key = Reservations.key(network, token);
    let sum = 0n;
    for (const [id, q] of this.#quotes) {
      if (q.until <= now) this.#quotes.delete(id);
      else if (q.key === key) sum += q.lots;
    }
    for (const f of this.#fills.values()) if (f.key === key) sum += f.lots;
    return sum;
  }
}
