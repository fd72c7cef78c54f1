import { describe, expect, it } from 'vitest';
import type { NetworkConfig, TokenConfig } from '../config.ts';
import { ReferenceResolver, type Resolver, type RfqRequest, requestForQuote } from './resolvers.ts';

const net = (id: number, type: NetworkConfig['type']): NetworkConfig =>
  ({
    id,
    name: `n${id}`,
    type,
    icon_url: '',
    supports_custom_tokens: false,
    supports_optimized_swap: false,
    verify_allowance: false,
  }) as NetworkConfig;
const tok = (network_id: number, address: string, decimals: number, rgb = false): TokenConfig =>
  ({ network_id, symbol: address, name: address, address, decimals, icon_url: '', rgb }) as TokenConfig;

const req: RfqRequest = {
  sourceNetwork: net(1, 'BITCOIN'),
  sourceToken: tok(1, 'BTC', 8),
  destNetwork: net(2, 'EVM'),
  destToken: tok(2, '0xAbC', 6),
  amountLots: 1_000_000n,
};

const fake = (id: string, answer: bigint | null | 'throw' | 'hang', enabled = true): Resolver => ({
  id,
  name: id,
  enabled,
  identity: {},
  quote: async () => {
    if (answer === 'throw') throw new Error('boom');
    if (answer === 'hang') return new Promise(() => {});
    return answer === null ? null : { resolverId: id, destAmountLots: answer };
  },
});

describe('request for quote', () => {
  it('asks every enabled resolver and keeps the largest destination amount (ties: first)', async () => {
    const errors: string[] = [];
    const best = await requestForQuote(
      [
        fake('a', 100n),
        fake('b', 300n),
        fake('c', 300n),
        fake('d', 999n, false),
        fake('e', 'throw'),
        fake('f', 'hang'),
        fake('g', null),
      ],
      req,
      50,
      (id) => errors.push(id),
    );
    expect(best).toEqual({ resolverId: 'b', destAmountLots: 300n });
    expect(errors).toEqual(['e']);
    expect(await requestForQuote([fake('g', null)], req, 50)).toBeNull();
  });

  it('reference resolver: configured rate and fee, limits, needs an identity on the source network, never RGB', async () => {
    const cfg = {
      id: 'ref',
      name: 'ref',
      enabled: true,
      api_key_sha256: '00'.repeat(32),
      bitcoin_claim_pubkey: 'AB'.repeat(32),
      rates: [
        {
          source_network: 1,
          source_token: 'BTC',
          dest_network: 2,
          dest_token: '0xabc',
          rate: '60000',
          fee_bps: 100,
          min_source_lots: '1000',
          max_source_lots: '2000000',
        },
      ],
    };
    const r = new ReferenceResolver(cfg);
    expect(await r.quote(req)).toEqual({ resolverId: 'ref', destAmountLots: 594_000_000n });
    expect(await r.quote({ ...req, amountLots: 999n })).toBeNull();
    expect(await r.quote({ ...req, amountLots: 2_000_001n })).toBeNull();
    expect(await r.quote({ ...req, sourceToken: tok(1, 'BTC', 8, true) })).toBeNull();
    expect(await new ReferenceResolver({ ...cfg, bitcoin_claim_pubkey: undefined }).quote(req)).toBeNull();
  });
});
