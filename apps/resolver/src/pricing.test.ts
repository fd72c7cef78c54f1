/**
 * Pricing: exact conversion on known vectors and properties (fast-check), the reasons a quote is
 * refused, and the inventory reservations a new quote must leave out.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PairConfig } from './config.ts';
import {
  convertLots,
  type FetchPrice,
  findPair,
  type PriceRequest,
  parseDecimal,
  priceQuote,
  Reservations,
  sameToken,
} from './pricing.ts';

const USDC = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';

const BTC_TO_USDC: PairConfig = {
  source_network: 1,
  source_token: 'BTC',
  dest_network: 2,
  dest_token: USDC,
  rate: '60000',
  spread_bps: 30,
  min_source_lots: '10000',
  max_source_lots: '100000000',
  price_feed_max_age_secs: 60,
};

const REQ: PriceRequest = {
  sourceNetwork: 1,
  sourceToken: 'BTC',
  sourceDecimals: 8,
  destNetwork: 2,
  destToken: USDC,
  destDecimals: 18,
  amountLots: 12_345_678n,
};

const plenty = async () => 10n ** 30n;

describe('convertLots', () => {
  it('converts BTC (8 dp) to an 18 dp token at 60000 exactly', () => {
    expect(convertLots(100_000_000n, '60000', 8, 18)).toBe(60_000n * 10n ** 18n);
    // 0.12345678 BTC × 60000 = 7407.4068 tokens
    expect(convertLots(12_345_678n, '60000', 8, 18)).toBe(7_407_406_800_000_000_000_000n);
    expect(convertLots(1n, '60000', 8, 18)).toBe(600_000_000_000_000n);
  });

  it('converts an 18 dp token to BTC at 0.0000166, rounding down', () => {
    expect(convertLots(1000n * 10n ** 18n, '0.0000166', 18, 8)).toBe(1_660_000n);
    // 123.456789012345678901 × 0.0000166 BTC = 204938.2697… sat
    expect(convertLots(123_456_789_012_345_678_901n, '0.0000166', 18, 8)).toBe(204_938n);
    // one base unit short of 1 token: 1659.99… sat → 1659, never 1660
    expect(convertLots(10n ** 18n - 1n, '0.0000166', 18, 8)).toBe(1659n);
    // far below one satoshi
    expect(convertLots(10n ** 12n, '0.0000166', 18, 8)).toBe(0n);
  });

  const decimalRate = fc
    .tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 0, max: 18 }))
    .map(([n, scale]) => {
      const digits = n.toString().padStart(scale + 1, '0');
      return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
    });
  const decimals = fc.integer({ min: 0, max: 24 });
  const lots = fc.bigInt({ min: 0n, max: 10n ** 30n });

  it('is monotonic in the amount', () => {
    fc.assert(
      fc.property(lots, lots, decimalRate, decimals, decimals, (a, b, rate, sd, dd) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(convertLots(lo, rate, sd, dd)).toBeLessThanOrEqual(convertLots(hi, rate, sd, dd));
      }),
    );
  });

  it('never exceeds the exact rational value, and is within one unit of it', () => {
    fc.assert(
      fc.property(lots, decimalRate, decimals, decimals, (amount, rate, sd, dd) => {
        const out = convertLots(amount, rate, sd, dd);
        const { n, scale } = parseDecimal(rate);
        // exact value = amount × n × 10^dd / (10^sd × 10^scale); compare cross-multiplied
        const num = amount * n * 10n ** BigInt(dd);
        const den = 10n ** BigInt(sd) * 10n ** BigInt(scale);
        expect(out * den).toBeLessThanOrEqual(num);
        expect((out + 1n) * den).toBeGreaterThan(num);
      }),
    );
  });

  it('parseDecimal round-trips a decimal string', () => {
    fc.assert(
      fc.property(decimalRate, (s) => {
        const { n, scale } = parseDecimal(s);
        const digits = n.toString().padStart(scale + 1, '0');
        const back = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
        // equal as written, up to leading zeros of the integer part
        expect(back.replace(/^0+(?=\d)/, '')).toBe(s.replace(/^0+(?=\d)/, ''));
      }),
    );
    expect(parseDecimal('0.0000166')).toEqual({ n: 166n, scale: 7 });
    expect(parseDecimal('60000')).toEqual({ n: 60000n, scale: 0 });
    for (const bad of ['', '.5', '1.', '-1', '1e5', '1,5', 'abc']) expect(() => parseDecimal(bad)).toThrow();
  });

  it('a spread never increases the quoted amount', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 10_000n, max: 100_000_000n }),
        fc.integer({ min: 0, max: 10_000 }),
        decimalRate,
        async (amount, spread, rate) => {
          const withSpread = await priceQuote(
            [{ ...BTC_TO_USDC, rate, spread_bps: spread }],
            { ...REQ, amountLots: amount },
            plenty,
          );
          const gross = convertLots(amount, rate, 8, 18);
          if ('destLots' in withSpread) expect(withSpread.destLots).toBeLessThanOrEqual(gross);
          else expect(withSpread.none).toBe('too_small');
        },
      ),
    );
  });
});

describe('priceQuote', () => {
  it('quotes the converted amount minus the spread', async () => {
    const q = await priceQuote([BTC_TO_USDC], REQ, plenty);
    // 7407.4068 tokens − 0.30 %
    expect(q).toEqual({ destLots: (7_407_406_800_000_000_000_000n * 9970n) / 10_000n });
  });

  it('finds the pair by network and token (0x addresses in any case)', async () => {
    const lower = await priceQuote([BTC_TO_USDC], { ...REQ, destToken: USDC.toLowerCase() }, plenty);
    expect('destLots' in lower).toBe(true);
    expect(sameToken('BTC', 'btc')).toBe(false);
    expect(findPair([BTC_TO_USDC], { ...REQ, sourceToken: 'btc' })).toBeUndefined();
  });

  it('refuses with the reason', async () => {
    expect(await priceQuote([BTC_TO_USDC], { ...REQ, destNetwork: 3 }, plenty)).toEqual({ none: 'no_pair' });
    expect(await priceQuote([BTC_TO_USDC], { ...REQ, sourceNetwork: 2, destNetwork: 1 }, plenty)).toEqual({
      none: 'no_pair',
    });
    expect(await priceQuote([BTC_TO_USDC], { ...REQ, amountLots: 9_999n }, plenty)).toEqual({
      none: 'below_min',
    });
    expect(await priceQuote([BTC_TO_USDC], { ...REQ, amountLots: 10_000n }, plenty)).toHaveProperty(
      'destLots',
    );
    expect(await priceQuote([BTC_TO_USDC], { ...REQ, amountLots: 100_000_001n }, plenty)).toEqual({
      none: 'above_max',
    });
    const tiny: PairConfig = { ...BTC_TO_USDC, rate: '0.0000001', min_source_lots: '1' };
    expect(await priceQuote([tiny], { ...REQ, destDecimals: 0, amountLots: 100n }, plenty)).toEqual({
      none: 'too_small',
    });
    const all: PairConfig = { ...BTC_TO_USDC, spread_bps: 10_000 };
    expect(await priceQuote([all], REQ, plenty)).toEqual({ none: 'too_small' });
  });

  it('refuses what the destination inventory cannot pay, asking for the destination only', async () => {
    const asked: [number, string][] = [];
    const net = (7_407_406_800_000_000_000_000n * 9970n) / 10_000n;
    const available = (free: bigint) => async (network: number, token: string) => {
      asked.push([network, token]);
      return free;
    };
    expect(await priceQuote([BTC_TO_USDC], REQ, available(net - 1n))).toEqual({ none: 'no_inventory' });
    expect(await priceQuote([BTC_TO_USDC], REQ, available(net))).toEqual({ destLots: net });
    expect(asked).toEqual([
      [2, USDC],
      [2, USDC],
    ]);
  });

  it('uses a fresh price feed instead of the rate; a stale or failing feed means no quote', async () => {
    const feedPair: PairConfig = {
      ...BTC_TO_USDC,
      spread_bps: 0,
      price_feed_url: 'http://feed.invalid/btc-usdc',
      price_feed_max_age_secs: 60,
    };
    const now = 1_700_000_000_000;
    const urls: string[] = [];
    const feed =
      (answer: { price: string; timestamp: number } | Error): FetchPrice =>
      async (url) => {
        urls.push(url);
        if (answer instanceof Error) throw answer;
        return answer;
      };
    expect(
      await priceQuote([feedPair], REQ, plenty, {
        now,
        fetchPrice: feed({ price: '50000', timestamp: now / 1000 - 60 }),
      }),
    ).toEqual({ destLots: convertLots(REQ.amountLots, '50000', 8, 18) });
    expect(urls).toEqual(['http://feed.invalid/btc-usdc']);
    expect(
      await priceQuote([feedPair], REQ, plenty, {
        now,
        fetchPrice: feed({ price: '50000', timestamp: now / 1000 - 61 }),
      }),
    ).toEqual({ none: 'stale_price' });
    expect(
      await priceQuote([feedPair], REQ, plenty, { now, fetchPrice: feed(new Error('connection refused')) }),
    ).toEqual({ none: 'price_feed_error' });
    expect(
      await priceQuote([feedPair], REQ, plenty, {
        now,
        fetchPrice: feed({ price: '-5', timestamp: now / 1000 }),
      }),
    ).toEqual({ none: 'price_feed_error' });
    // without a feed the injected fetchPrice is never called
    urls.length = 0;
    await priceQuote([BTC_TO_USDC], REQ, plenty, { now, fetchPrice: feed(new Error('unused')) });
    expect(urls).toEqual([]);
  });
});

describe('Reservations', () => {
  it('counts a quote until its expiry time, then drops it', () => {
    const r = new Reservations();
    r.reserveQuote('q1', 2, USDC, 100n, 1_000);
    r.reserveQuote('q2', 2, USDC, 50n, 2_000);
    expect(r.reserved(2, USDC, 999)).toBe(150n);
    expect(r.reserved(2, USDC, 1_000)).toBe(50n);
    expect(r.reserved(2, USDC, 1_999)).toBe(50n);
    expect(r.reserved(2, USDC, 2_000)).toBe(0n);
  });

  it('counts fills until released; reservedFills leaves out the given intent', () => {
    const r = new Reservations();
    r.reserveFill('i1', 2, USDC, 70n);
    r.reserveFill('i2', 2, USDC, 30n);
    r.reserveFill('i3', 1, 'BTC', 5n);
    r.reserveQuote('q', 2, USDC, 1n, 10_000);
    expect(r.reserved(2, USDC, 0)).toBe(101n);
    expect(r.reserved(2, USDC, 20_000)).toBe(100n); // fills never expire
    expect(r.reservedFills(2, USDC)).toBe(100n);
    expect(r.reservedFills(2, USDC, 'i1')).toBe(30n);
    expect(r.reservedFills(1, 'BTC', 'i1')).toBe(5n);
    r.release('i1');
    expect(r.reservedFills(2, USDC)).toBe(30n);
    expect(r.reserved(2, USDC, 20_000)).toBe(30n);
    r.release('i1');
    expect(r.reservedFills(2, USDC)).toBe(30n);
  });

  it('keys 0x tokens case-insensitively, other tokens exactly, per network', () => {
    const r = new Reservations();
    r.reserveFill('i1', 2, USDC.toLowerCase(), 10n);
    r.reserveQuote('q1', 2, USDC.toUpperCase().replace('0X', '0x'), 5n, 10_000);
    expect(r.reserved(2, USDC, 0)).toBe(15n);
    expect(r.reservedFills(2, USDC)).toBe(10n);
    expect(r.reserved(3, USDC, 0)).toBe(0n);
    const sol = 'So11111111111111111111111111111111111111112';
    r.reserveFill('i2', 4, sol, 7n);
    expect(r.reservedFills(4, sol)).toBe(7n);
    expect(r.reservedFills(4, sol.toLowerCase())).toBe(0n);
  });
});
