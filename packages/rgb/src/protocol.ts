/**
 * IPC protocol between {@link RgbHost} (parent) and the rgb-lib child process (`child.ts`).
 *
 * Parent → child: `{id, op, args}`. Child → parent: `{id, ok: true, value}` or
 * `{id, ok: false, error: {kind, variant, message}}`, plus one unsolicited `{type: 'ready', …}` once
 * the addon is loaded. Every argument and result is a JSON value (default `json` IPC
 * serialization): numbers travel as strings and results are the raw JSON strings returned by
 * rgb-lib, which the parent parses losslessly.
 */
import type { RgbErrorPayload } from './errors.ts';

/**
 * Raw c-ffi functions that take a wallet (`const COpaqueStruct *`) as their first argument, with
 * the number of arguments after it (from `rgblib.hpp` of 0.3.0-beta.7). The child refuses anything
 * else.
 */
export const WALLET_FUNCTIONS = {
  rgblib_backup: 2,
  rgblib_backup_info: 0,
  rgblib_blind_receive: 5,
  rgblib_burn_begin: 6,
  rgblib_burn_end: 2,
  rgblib_create_utxos_begin: 7,
  rgblib_create_utxos_end: 2,
  rgblib_delete_transfers: 2,
  rgblib_fail_transfers: 4,
  rgblib_finalize_psbt: 1,
  rgblib_get_address: 0,
  rgblib_get_asset_balance: 1,
  rgblib_get_asset_metadata: 1,
  rgblib_get_btc_balance: 2,
  rgblib_get_fee_estimation: 2,
  rgblib_go_online: 1,
  rgblib_issue_asset_cfa: 5,
  rgblib_issue_asset_ifa: 6,
  rgblib_issue_asset_nia: 4,
  rgblib_issue_asset_uda: 6,
  rgblib_list_assets: 1,
  rgblib_list_transactions: 2,
  rgblib_list_transfers: 1,
  rgblib_list_unspents: 3,
  rgblib_refresh: 4,
  rgblib_send_begin: 7,
  rgblib_send_end: 2,
  rgblib_sync: 2,
  rgblib_witness_receive: 5,
} as const;

export type WalletFunction = keyof typeof WALLET_FUNCTIONS;

/** Argument of a raw call: a string, a boolean or null (the only C argument types in use). */
export type RawArg = string | boolean | null;

/** Requests, by op name: `[args tuple, result]`. */
export interface Ops {
  ping: [[], 'pong'];
  /** The URLs of the modules the child and its watchdog thread run (null until the watchdog has started). */
  modules: [[], { child: string; watchdog: string | null }];
  /** `rgblib_generate_keys(network, witnessVersion)` → raw JSON. */
  generateKeys: [[network: string, witnessVersion: string], string];
  /** `rgblib_restore_keys(network, mnemonic, witnessVersion)` → raw JSON. */
  restoreKeys: [[network: string, mnemonic: string, witnessVersion: string], string];
  /** `rgblib_invoice_data(invoice)` → raw JSON. */
  invoiceData: [[invoice: string], string];
  /** `rgblib_restore_backup(backupPath, password, targetDir)`: writes `<targetDir>/<fingerprint>/`. */
  restoreBackup: [[backupPath: string, password: string, targetDir: string], true];
  /** `rgblib_new_wallet(walletData, keys)`; the wallet is stored under the parent-chosen handle. */
  newWallet: [[handle: string, walletDataJson: string, keysJson: string], true];
  /** One raw wallet function; the child prepends the wallet object. */
  call: [[handle: string, fn: WalletFunction, ...args: RawArg[]], string | null];
  /** `free_wallet(wallet)` and forget the handle. */
  freeWallet: [[handle: string], true];
  /** Free every wallet, reply, then exit 0. */
  shutdown: [[], true];
  /** Block the child's thread for `ms` (test helper for the host's crash/timeout handling). */
  sleep: [[ms: number], true];
}

export type OpName = keyof Ops;

export interface RequestMessage {
  id: number;
  op: OpName;
  args: unknown[];
}

export type ResponseMessage =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: RgbErrorPayload };

export interface ReadyMessage {
  type: 'ready';
  pid: number;
  /** Milliseconds spent in `require()` of the addon. */
  loadMs: number;
}

/**
 * First argument of every child (`fork(entry, [CHILD_MARKER_ARG=<pidDir>, …])`): it marks the process in
 * `/proc/<pid>/cmdline` as an rgb-lib child, and, with a pid directory, as a child recorded there, so that a
 * pid recorded in a pid file but reused meanwhile by another process (even another host's child) is never
 * taken for ours. See `children.ts`.
 */
export const CHILD_MARKER_ARG = '--rgbx-rgb-child';

/** Second argument of every child: `--rgbx-rgb-parent=<pid>`, the pid its parent-death watchdog watches. */
export const PARENT_PID_ARG = '--rgbx-rgb-parent=';
