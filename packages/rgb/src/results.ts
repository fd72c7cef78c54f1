/**
 * What each rgb-lib call returns, as a schema for {@link parseRgbJson}: the wallet node's wire schemas of
 * rgb-lib's shapes (`@rgbx/contracts`), whose u64 marks decide which integers are `bigint`. rgb-lib's camelCase
 * keys are matched to their snake_case names. Results with no wire schema are written here with the same
 * `U64Out`, never as a list of keys; a call not listed has no u64 in its result.
 */
import { U64Out } from '@rgbx/contracts/wallet-node';
import type { WalletFunction } from './protocol.ts';

const ref = (id: string) => ({ $ref: id });
const listOf = (id: string) => ({ type: 'array', items: ref(id) });
const object = (properties: Record<string, unknown>) => ({ type: 'object', properties });

/** `rgblib_go_online`'s `Online`. */
export const ONLINE_RESULT = object({ id: U64Out });
/** `rgblib_invoice_data`. */
export const INVOICE_DATA_RESULT = ref('RgbLibInvoiceData');

export const RESULT_SCHEMAS: Partial<Record<WalletFunction, unknown>> = {
  rgblib_get_btc_balance: ref('BtcBalance'),
  rgblib_get_asset_balance: ref('Balance'),
  rgblib_list_unspents: listOf('RgbLibUnspent'),
  rgblib_list_transactions: listOf('RgbLibTransaction'),
  rgblib_list_transfers: listOf('RgbLibTransfer'),
  rgblib_list_assets: ref('Assets'),
  rgblib_issue_asset_nia: ref('AssetNia'),
  rgblib_issue_asset_cfa: ref('AssetCfa'),
  rgblib_issue_asset_uda: ref('AssetUda'),
  rgblib_issue_asset_ifa: ref('AssetIfa'),
  rgblib_get_asset_metadata: object({ issued_supply: U64Out }),
  rgblib_blind_receive: ref('ReceiveData'),
  rgblib_witness_receive: ref('ReceiveData'),
  rgblib_send_begin: object({ details: object({ entropy: U64Out }) }),
  rgblib_send_end: object({ entropy: U64Out }),
};
