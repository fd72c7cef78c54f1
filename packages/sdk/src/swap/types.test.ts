// Type-level checks (run by `npm run typecheck`): the SDK's swap types are the service's schemas.
import { describe, expectTypeOf, it } from 'vitest';
import type { ApprovalBody, IntentCreated, Quote, ResolverIntent, SwapRecord } from './types.ts';

describe('swap wire types', () => {
  it('are Static<> of the contracts, not any/unknown', () => {
    expectTypeOf<Quote['sourceAmountLots']>().toEqualTypeOf<string>();
    expectTypeOf<Quote['approvalMechanism']>().toEqualTypeOf<'permit2' | 'htlc' | 'cosign'>();
    expectTypeOf<NonNullable<IntentCreated['htlc']>['inputs']>().toEqualTypeOf<number[]>();
    expectTypeOf<SwapRecord['settlement'][number]['blockHeight']>().toEqualTypeOf<string | null>();
    expectTypeOf<ResolverIntent['intent']['additional_info']['source_amount_lots']>().toEqualTypeOf<string>();
    expectTypeOf<{ psbt: string }>().toExtend<ApprovalBody>();
    expectTypeOf<{ psbt: string; permit2: string }>().not.toExtend<ApprovalBody>();
  });
});
