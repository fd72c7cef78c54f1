import fc from 'fast-check';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { fieldMap, snakeCase } from './field-map.ts';
import type * as A from './surface-a.ts';
import * as B from './surface-b.ts';

/** Every property name of a JSON schema, with its path (records' keys are data, not names). */
function propertyNames(schema: unknown, path = ''): string[] {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => propertyNames(s, `${path}[${i}]`));
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Record<string, unknown>;
  const own = s.properties ? Object.keys(s.properties as object).map((k) => `${path}.${k}`) : [];
  return [
    ...own,
    ...Object.entries(s.properties ?? {}).flatMap(([k, v]) => propertyNames(v, `${path}.${k}`)),
    ...propertyNames(s.anyOf, path),
    ...propertyNames(s.items, `${path}[]`),
    ...Object.values(s.patternProperties ?? {}).flatMap((v) => propertyNames(v, `${path}{}`)),
  ];
}

const quote: A.Quote = {
  quoteId: '0b8f6c1e-1f0a-4d7e-9a3c-2f7e0c1d2b3a',
  sourceChain: 1,
  sourceToken: '0x0000000000000000000000000000000000000001',
  destChain: 1000,
  destToken: 'btc',
  sourceAmountLots: '250000000',
  sourceAmountDecimals: 6,
  minDestAmountLots: '99000',
  maxDestAmountLots: '100000',
  destAmountDecimals: 8,
  slippageBps: 100,
  expiry: 1_900_000_000,
  swapType: 'standard',
  depositType: 'escrowed',
  approvalMechanism: 'permit2',
  affiliateFees: {
    myAffiliate: { feeBps: 25, networkId: 1, token: 'usdc', feeAmountLots: '6250', feeAmountDecimals: 6 },
  },
};

describe('fieldMap', () => {
  it('snake_cases camelCase keys and leaves other characters alone', () => {
    expect(snakeCase('sourceAmountLots')).toBe('source_amount_lots');
    expect(snakeCase('network-id')).toBe('network-id');
    expect(snakeCase('q')).toBe('q');
  });

  it('derives Surface B schemas with no camelCase name left, except the ones Hotpot keeps', () => {
    const schemas = {
      TokenPageB: B.TokenPageB.schema,
      QuoteRequestB: B.QuoteRequestB.schema,
      QuoteB: B.QuoteB.schema,
      IntentRequestB: B.IntentRequestB.schema,
      IntentCreatedB: B.IntentCreatedB.schema,
      SwapPageB: B.SwapPageB.schema,
      TokensQueryB: B.TokensQueryB.schema,
      SwapsQueryB: B.SwapsQueryB.schema,
    };
    const camel = Object.entries(schemas).flatMap(([n, s]) =>
      propertyNames(s)
        .filter((p) => /[A-Z]/.test(p.split('.').pop()!))
        .map((p) => `${n}${p}`),
    );
    // Hotpot's Permit2 params keep `secretHash` inside `additional_data` (its SDK reads that name).
    expect(camel).toEqual(['IntentCreatedB.params_to_sign[0].additional_data.secretHash']);
  });

  it('renames a quote for Surface B: record keys are data and keep their names', () => {
    const b = B.QuoteB.toWire(quote);
    expect(b).toEqual({
      quote_id: quote.quoteId,
      id: quote.quoteId,
      source_chain: 1,
      source_token: quote.sourceToken,
      dest_chain: 1000,
      dest_token: 'btc',
      source_amount_lots: '250000000',
      source_amount_decimals: 6,
      min_dest_amount_lots: '99000',
      max_dest_amount_lots: '100000',
      dest_amount_decimals: 8,
      slippage_bps: '100',
      expiry: 1_900_000_000,
      swap_type: 'standard',
      deposit_type: 'escrowed',
      approval_mechanism: 'permit2',
      affiliate_fees: {
        myAffiliate: {
          fee_bps: 25,
          network_id: 1,
          token: 'usdc',
          fee_amount_lots: '6250',
          fee_amount_decimals: 6,
        },
      },
    });
    expect(Value.Check(B.QuoteB.schema, b)).toBe(true);
  });

  it('maps a Surface B request back to Surface A, dropping what A does not have', () => {
    expect(
      B.IntentRequestB.fromWire({
        quote_id: 'q',
        refund_address: 'r',
        user_destination_address: 'd',
        user_source_address: 's',
        user_source_public_key: null,
        referrer_id: 'ignored',
      } as Parameters<typeof B.IntentRequestB.fromWire>[0]),
    ).toEqual({
      quoteId: 'q',
      refundAddress: 'r',
      destinationAddress: 'd',
      sourceAddress: 's',
      sourcePublicKey: null,
    });
  });

  it('leaves opaque JSON (EIP-712 domains, messages) untouched', () => {
    const params: A.Permit2Approval = {
      escrowContractAddress: '0xe',
      permit2ContractAddress: '0xp',
      resolverDepositAddress: '0xr',
      nonce: 7,
      additionalData: {
        domain: { verifyingContract: '0xp', chainId: 1 },
        types: { TokenPermissions: [{ name: 'token', type: 'address' }] },
        witness: { secretHash: '0xs', intentId: 'i' },
        witnessTypeString: 'T',
        witnessHash: '0xw',
        secretHash: '0xs',
      },
      typedData: { domain: {}, types: {}, primaryType: 'P', message: {} },
    };
    const b = B.IntentCreatedB.toWire({
      intentId: 'i',
      deadlineSecs: 1,
      secretHash: '0xs',
      approvalMechanism: 'permit2',
      permit2: params,
    });
    expect(b.params_to_sign).toEqual({
      escrow_contract_address: '0xe',
      permit2_contract_address: '0xp',
      resolver_deposit_address: '0xr',
      nonce: 7,
      additional_data: {
        domain: { verifyingContract: '0xp', chainId: 1 },
        types: { TokenPermissions: [{ name: 'token', type: 'address' }] },
        witness: { secretHash: '0xs', intentId: 'i' },
        witness_type_string: 'T',
        witness_hash: '0xw',
        secretHash: '0xs',
      },
    });
  });

  it('round-trips any object of a schema with records and nested objects (property)', () => {
    const S = Type.Object({
      someKey: Type.String(),
      nestedThing: Type.Optional(
        Type.Object({ innerValue: Type.Integer(), list: Type.Array(Type.Object({ aB: Type.Boolean() })) }),
      ),
      byName: Type.Record(Type.String(), Type.Object({ feeBps: Type.Integer() })),
    });
    const m = fieldMap(S, { someKey: 'key_of_some' });
    const arb = fc.record(
      {
        someKey: fc.string(),
        nestedThing: fc.record({
          innerValue: fc.integer(),
          list: fc.array(fc.record({ aB: fc.boolean() })),
        }),
        byName: fc.dictionary(fc.string({ minLength: 1 }), fc.record({ feeBps: fc.integer() })),
      },
      { requiredKeys: ['someKey', 'byName'] },
    );
    fc.assert(
      fc.property(arb, (a) => {
        const b = m.toWire(a);
        expect(Value.Check(m.schema, b)).toBe(true);
        expect(Object.keys(b.by_name)).toEqual(Object.keys(a.byName));
        expect(m.fromWire(b)).toEqual(a);
      }),
      { numRuns: 300 },
    );
  });
});
