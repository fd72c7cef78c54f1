/**
 * `@rgbx/rgb`: the only package that touches the rgb-lib native binding, and only from a child
 * process. Import this from anywhere: the addon is never loaded in the importing process.
 */
export { killLeftoverChildren, LEFTOVER_KILL_WAIT_MS } from './children.ts';
export {
  classifyErrorMessage,
  parseDebugFields,
  RgbCallTimeoutError,
  RgbChildDiedError,
  type RgbErrorKind,
  type RgbErrorPayload,
  RgbLibError,
  RgbWalletClosedError,
} from './errors.ts';
export { RgbHost, type RgbHostEvents, type RgbHostOptions } from './host.ts';
export { parseRgbJson, toJson, type U64, u64String } from './json.ts';
export { WALLET_FUNCTIONS, type WalletFunction } from './protocol.ts';
export { RESULT_SCHEMAS } from './results.ts';
export type * from './types.ts';
export {
  type AssignmentInput,
  closeDefaultHost,
  type GoOnlineOptions,
  generateKeys,
  getDefaultHost,
  invoiceData,
  type OpenWalletOptions,
  openWallet,
  type RecipientInput,
  type RecipientMap,
  RgbWallet,
  restoreBackup,
  restoreKeys,
} from './wallet.ts';
