// Type-level checks (run by `npm run typecheck`): the SDK's reply types come from the wallet node's
// schemas and keep u64 amounts as bigint; a regression to `unknown` or `number` fails the build.
import { describe, expectTypeOf, it } from 'vitest';
import type { AssetNia, BtcBalance, Transaction, Transfer, Unspent } from './client.ts';

describe('wallet node reply types', () => {
  it('are the service schemas with u64 as bigint', () => {
    expectTypeOf<BtcBalance['vanilla']['spendable']>().toEqualTypeOf<bigint>();
    expectTypeOf<AssetNia['issued_supply']>().toEqualTypeOf<bigint>();
    expectTypeOf<AssetNia['balance']['future']>().toEqualTypeOf<bigint>();
    expectTypeOf<Transaction['fee']>().toEqualTypeOf<bigint>();
    expectTypeOf<Unspent['utxo']['btc_amount']>().toEqualTypeOf<bigint>();
    expectTypeOf<Transfer['status']>().toEqualTypeOf<
      | 'Initiated'
      | 'WaitingCounterparty'
      | 'WaitingSafeHeight'
      | 'WaitingBroadcast'
      | 'WaitingConfirmations'
      | 'Settled'
      | 'Failed'
    >();
  });
});
