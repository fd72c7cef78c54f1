/**
 * Typed facade over rgb-lib 0.3.0-beta.7 watch-only wallets living in the child process.
 *
 * Every method maps to ONE raw c-ffi function (`rgblib_*`, signatures in the binding's
 * `rgb-lib/bindings/c-ffi/rgblib.hpp`), called in the child through {@link RgbHost}. The binding's
 * `wrapper.js` is never used. Bugs of the wrapper avoided this way:
 *
 * - `createUtxosBegin` passes 7 arguments to an 8-argument C function (no `dry_run`) and
 *   `createUtxosEnd` passes 4 to a 3-argument one: both always throw `Illegal number of arguments`.
 * - Results go through `JSON.parse`, which rounds u64 values above 2^53 (`entropy`, `Online.id`,
 *   large balances/supplies); its argument validation caps u64 inputs at `Number.MAX_SAFE_INTEGER`.
 *   Here results are parsed losslessly (`json.ts`) and u64 inputs are written as exact digits.
 * - `sendBegin` returns an unparsed string; `SinglesigKeys` does not know `witnessVersion`
 *   (rgb-lib then silently defaults to Taproot), `goOnline` does not require `vanillaSyncLookback`.
 *
 * c-ffi bug guarded here: a `null` `expiration_timestamp_opt` (blind/witness receive, send_begin)
 * segfaults the process in 0.3.0-beta.7, so an expiration timestamp is required.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { RgbLibError } from './errors.ts';
import { RgbHost } from './host.ts';
import { parseRgbJson, toJson, toU64, type U64, u64String, uintString } from './json.ts';
import type { RawArg, WalletFunction } from './protocol.ts';
import { INVOICE_DATA_RESULT, ONLINE_RESULT, RESULT_SCHEMAS } from './results.ts';
import type {
  AssetCfa,
  AssetIfa,
  AssetMetadata,
  AssetNia,
  AssetSchema,
  Assets,
  AssetUda,
  Balance,
  BitcoinNetwork,
  BtcBalance,
  Keys,
  Online,
  OperationResult,
  ReceiveData,
  RefreshedTransfer,
  RefreshFilter,
  SendBeginResult,
  SyncOptions,
  Transaction,
  Transfer,
  Unspent,
  WatchOnlyKeys,
  WitnessVersion,
} from './types.ts';

const NETWORKS: readonly BitcoinNetwork[] = [
  'Mainnet',
  'Testnet',
  'Testnet4',
  'Signet',
  'SignetCustom',
  'Regtest',
];
const WITNESS_VERSIONS: readonly WitnessVersion[] = ['SegWitV0', 'Taproot'];
/** Used for online-only functions before `goOnline`: rgb-lib answers `Offline` unless skipSync allows local data. */
const DUMMY_ONLINE = '{"id":0}';

let defaultHost: RgbHost | null = null;

/** The process-wide host used when no `host` is given (created lazily). */
export function getDefaultHost(): RgbHost {
  defaultHost ??= new RgbHost();
  return defaultHost;
}

/** Close the default host, if it was created. */
export async function closeDefaultHost(): Promise<void> {
  const h = defaultHost;
  defaultHost = null;
  await h?.close();
}

function invalid(message: string): RgbLibError {
  return new RgbLibError({ kind: 'host', variant: 'InvalidArguments', message });
}

function checkNetwork(network: string): void {
  if (!NETWORKS.includes(network as BitcoinNetwork)) throw invalid(`unknown bitcoin network ${network}`);
}

function checkWitnessVersion(wv: string): void {
  if (!WITNESS_VERSIONS.includes(wv as WitnessVersion)) {
    throw invalid(`witnessVersion must be 'SegWitV0' or 'Taproot', got ${String(wv)}`);
  }
}

/**
 * Generate a new BIP39 mnemonic with its account xpubs (`rgblib_generate_keys`, run in the child).
 */
export async function generateKeys(
  network: BitcoinNetwork,
  witnessVersion: WitnessVersion,
  host: RgbHost = getDefaultHost(),
): Promise<Keys> {
  checkNetwork(network);
  checkWitnessVersion(witnessVersion);
  return parseRgbJson<Keys>(await host.request('generateKeys', network, witnessVersion));
}

/** Derive the keys of an existing mnemonic (`rgblib_restore_keys`, run in the child). */
export async function restoreKeys(
  network: BitcoinNetwork,
  mnemonic: string,
  witnessVersion: WitnessVersion,
  host: RgbHost = getDefaultHost(),
): Promise<Keys> {
  checkNetwork(network);
  checkWitnessVersion(witnessVersion);
  return parseRgbJson<Keys>(await host.request('restoreKeys', network, mnemonic, witnessVersion));
}

/** Decode an RGB invoice (`rgblib_invoice_data`). */
export async function invoiceData(
  invoice: string,
  host: RgbHost = getDefaultHost(),
): Promise<Record<string, unknown>> {
  return parseRgbJson(await host.request('invoiceData', invoice), INVOICE_DATA_RESULT);
}

/**
 * Restore an encrypted rgb-lib backup (`rgblib_restore_backup`, run in the child): the wallet directory
 * `<targetDir>/<masterFingerprint>/` is recreated from the backup file. `targetDir` must exist and must
 * not already hold that wallet.
 */
export async function restoreBackup(
  backupPath: string,
  password: string,
  targetDir: string,
  host: RgbHost = getDefaultHost(),
): Promise<void> {
  await host.request('restoreBackup', backupPath, password, targetDir);
}

export interface OpenWalletOptions {
  /** Existing directory; the wallet lives in `<dataDir>/<masterFingerprint>/`. */
  dataDir: string;
  network: BitcoinNetwork;
  keys: WatchOnlyKeys;
  /** Default 1. */
  maxAllocationsPerUtxo?: number;
  /** Default `['Nia', 'Cfa', 'Uda']`. */
  supportedSchemas?: AssetSchema[];
  /** Vanilla keychain index (u8). Default null (rgb-lib then uses keychain 0). */
  vanillaKeychain?: number | null;
  /**
   * Delete a leftover `<dataDir>/<fingerprint>/rgb_runtime.lock` before opening. rgb-lib creates it
   * during RGB operations and removes it on success/drop; a process that crashed mid-operation leaves
   * it behind and every later RGB operation then waits up to an hour. Only set this when no other
   * process can have the wallet open (the host already cleans up after its own dead children).
   */
  removeStaleLock?: boolean;
  /** Host to run in. Default: {@link getDefaultHost}. */
  host?: RgbHost;
  /**
   * Per-function deadlines (ms) overriding the host's `callTimeoutMs`, e.g. shorter ones for the calls that
   * talk to RGB proxies (`rgblib_send_begin`, `rgblib_send_end`, `rgblib_refresh`). Past it the child is killed.
   */
  deadlines?: Partial<Record<WalletFunction, number>>;
}

export interface GoOnlineOptions {
  /** `tcp://host:port` (Electrum) or an Esplora URL. */
  indexerUrl: string;
  /** false = full scan of both keychains plus DB/RGB consistency check (slower first open). */
  skipConsistencyCheck: boolean;
  /** Vanilla addresses scanned back from the last used one. Default 20. */
  vanillaSyncLookback?: number;
}

/** Assignment argument: u64 values may be `bigint` (any size) or safe-integer `number`. */
export type AssignmentInput =
  | { Fungible: U64 }
  | { InflationRight: U64 }
  | 'NonFungible'
  | 'ReplaceRight'
  | 'Any';

export interface RecipientInput {
  /** Blinded UTXO or script from the receiver's invoice. */
  recipientId: string;
  /** Only for witness recipients: sats to send to the receiver's script. */
  witnessData?: { amountSat: U64; blinding?: U64 | null } | null;
  assignment: AssignmentInput;
  transportEndpoints: string[];
}

/** Recipients per asset ID. */
export type RecipientMap = Record<string, RecipientInput[]>;

/** The assignment as a JSON-ready value (u64 as bigint, written exactly by `toJson`). */
function assignmentValue(a: AssignmentInput): unknown {
  if (typeof a === 'string') {
    if (!['NonFungible', 'ReplaceRight', 'Any'].includes(a)) throw invalid(`unknown assignment ${a}`);
    return a;
  }
  if ('Fungible' in a) return { Fungible: toU64(a.Fungible, 'Fungible') };
  if ('InflationRight' in a) return { InflationRight: toU64(a.InflationRight, 'InflationRight') };
  throw invalid('unknown assignment');
}

function recipientMapJson(map: RecipientMap): string {
  const out: Record<string, unknown[]> = {};
  for (const [assetId, recipients] of Object.entries(map)) {
    out[assetId] = recipients.map((r) => ({
      recipientId: r.recipientId,
      witnessData: r.witnessData
        ? {
            amountSat: toU64(r.witnessData.amountSat, 'amountSat'),
            blinding: r.witnessData.blinding == null ? null : toU64(r.witnessData.blinding, 'blinding'),
          }
        : null,
      assignment: assignmentValue(r.assignment),
      transportEndpoints: r.transportEndpoints,
    }));
  }
  return toJson(out);
}

function expiration(value: U64 | null | undefined, fn: string): string {
  if (value === null || value === undefined) {
    // rgb-lib 0.3.0-beta.7's c-ffi dereferences a null expiration_timestamp_opt: the child would segfault
    throw invalid(`${fn}: expirationTimestamp is required (a null value crashes rgb-lib 0.3.0-beta.7)`);
  }
  return u64String(value, 'expirationTimestamp');
}

/**
 * Open (or create) a watch-only wallet: `rgblib_new_wallet(walletData, keys)` with
 * `mnemonic: null`, `vanillaKeychain: null` and an explicit `witnessVersion`.
 * The master fingerprint is lowercased (it names the wallet directory, which is case-sensitive).
 */
export async function openWallet(opts: OpenWalletOptions): Promise<RgbWallet> {
  const host = opts.host ?? getDefaultHost();
  checkNetwork(opts.network);
  checkWitnessVersion(opts.keys.witnessVersion);
  const fp = opts.keys.masterFingerprint.toLowerCase();
  if (!/^[0-9a-f]{8}$/.test(fp))
    throw invalid(`masterFingerprint must be 8 hex digits, got ${opts.keys.masterFingerprint}`);
  const maxAlloc = opts.maxAllocationsPerUtxo ?? 1;
  uintString(maxAlloc, 32, 'maxAllocationsPerUtxo');
  const walletData = {
    dataDir: opts.dataDir,
    bitcoinNetwork: opts.network,
    databaseType: 'Sqlite',
    maxAllocationsPerUtxo: maxAlloc,
    supportedSchemas: opts.supportedSchemas ?? ['Nia', 'Cfa', 'Uda'],
  };
  const vk = opts.vanillaKeychain ?? null;
  if (vk !== null) uintString(vk, 8, 'vanillaKeychain');
  const keys = {
    accountXpubVanilla: opts.keys.accountXpubVanilla,
    accountXpubColored: opts.keys.accountXpubColored,
    masterFingerprint: fp,
    mnemonic: null,
    vanillaKeychain: vk,
    witnessVersion: opts.keys.witnessVersion,
  };
  if (opts.removeStaleLock) rmSync(join(opts.dataDir, fp, 'rgb_runtime.lock'), { force: true });
  const handle = await host.newWallet(opts.dataDir, fp, toJson(walletData), toJson(keys));
  return new RgbWallet(
    host,
    handle,
    {
      dataDir: opts.dataDir,
      network: opts.network,
      masterFingerprint: fp,
      witnessVersion: opts.keys.witnessVersion,
    },
    opts.deadlines,
  );
}

/**
 * A watch-only rgb-lib wallet open in a child process. Methods are async; calls are executed one
 * at a time by the child. Signing happens elsewhere (PSBTs in, signed PSBTs back).
 */
export class RgbWallet {
  readonly host: RgbHost;
  readonly handle: string;
  readonly dataDir: string;
  readonly network: BitcoinNetwork;
  readonly masterFingerprint: string;
  readonly witnessVersion: WitnessVersion;
  #online: string | null = null;
  #onlineId: bigint | null = null;
  #deadlines: Partial<Record<WalletFunction, number>>;

  /** Use {@link openWallet}. */
  constructor(
    host: RgbHost,
    handle: string,
    info: {
      dataDir: string;
      network: BitcoinNetwork;
      masterFingerprint: string;
      witnessVersion: WitnessVersion;
    },
    deadlines: Partial<Record<WalletFunction, number>> = {},
  ) {
    this.#deadlines = deadlines;
    this.host = host;
    this.handle = handle;
    this.dataDir = info.dataDir;
    this.network = info.network;
    this.masterFingerprint = info.masterFingerprint;
    this.witnessVersion = info.witnessVersion;
  }

  /** The `Online` object from the last successful {@link goOnline}, or null. */
  get online(): Online | null {
    return this.#onlineId === null ? null : { id: this.#onlineId };
  }

  /** Whether this wallet is still open in the host's current child. */
  get isOpen(): boolean {
    return this.host.isOpen(this.handle);
  }

  async #raw(fn: WalletFunction, ...args: RawArg[]): Promise<string | null> {
    return this.host.callWallet(this.handle, fn, args, this.#deadlines[fn]);
  }

  async #json<T>(fn: WalletFunction, ...args: RawArg[]): Promise<T> {
    const out = await this.#raw(fn, ...args);
    if (out === null) throw invalid(`${fn} returned no value`);
    return parseRgbJson<T>(out, RESULT_SCHEMAS[fn]);
  }

  #onlineArg(): string {
    return this.#online ?? DUMMY_ONLINE;
  }

  /**
   * Connect to an indexer: `rgblib_go_online(wallet, {indexerUrl, skipConsistencyCheck,
   * vanillaSyncLookback})`. Blocks the child up to ~10 s if the indexer accepts but never answers.
   */
  async goOnline(opts: GoOnlineOptions): Promise<Online> {
    const lookback = opts.vanillaSyncLookback ?? 20;
    uintString(lookback, 32, 'vanillaSyncLookback');
    const raw = await this.#raw(
      'rgblib_go_online',
      toJson({
        indexerUrl: opts.indexerUrl,
        skipConsistencyCheck: opts.skipConsistencyCheck,
        vanillaSyncLookback: lookback,
      }),
    );
    const { id } = parseRgbJson<{ id: bigint }>(raw ?? '', ONLINE_RESULT);
    this.#onlineId = id;
    this.#online = `{"id":${id}}`;
    return { id };
  }

  /** A new vanilla (funding) address (`rgblib_get_address`); each call reveals a new index, so do not call it needlessly (addresses beyond the sync lookback are missed). */
  async getAddress(): Promise<string> {
    return (await this.#raw('rgblib_get_address')) ?? '';
  }

  /**
   * `rgblib_get_btc_balance(wallet, online|null, skipSync)`. Offline (never went online) it passes
   * `null`, which rgb-lib only accepts with `skipSync = true`.
   */
  async getBtcBalance(skipSync = false): Promise<BtcBalance> {
    return this.#json('rgblib_get_btc_balance', this.#online, skipSync);
  }

  /** `rgblib_list_unspents(wallet, online, settledOnly, skipSync)`. */
  async listUnspents(settledOnly = false, skipSync = false): Promise<Unspent[]> {
    return this.#json('rgblib_list_unspents', this.#onlineArg(), settledOnly, skipSync);
  }

  /** `rgblib_list_transactions(wallet, online, skipSync)`. */
  async listTransactions(skipSync = false): Promise<Transaction[]> {
    return this.#json('rgblib_list_transactions', this.#onlineArg(), skipSync);
  }

  /**
   * Build the PSBT that creates colored UTXOs:
   * `rgblib_create_utxos_begin(wallet, online, upTo, num|null, size|null, feeRate, skipSync, dryRun=false)`
   * (the wrapper omits `dryRun` and always throws).
   * @param num UTXOs to create (rgb-lib default 5), @param size sats each (default 1000),
   * @param feeRate sat/vB. @returns base64 PSBT to sign externally.
   */
  async createUtxosBegin(
    upTo: boolean,
    num: number | null,
    size: number | null,
    feeRate: U64,
    skipSync = false,
  ): Promise<string> {
    return (
      (await this.#raw(
        'rgblib_create_utxos_begin',
        this.#onlineArg(),
        upTo,
        num === null ? null : uintString(num, 8, 'num'),
        size === null ? null : uintString(size, 32, 'size'),
        u64String(feeRate, 'feeRate'),
        skipSync,
        false,
      )) ?? ''
    );
  }

  /**
   * Broadcast the signed (finalized) create-UTXOs PSBT: `rgblib_create_utxos_end(wallet, online,
   * signedPsbt)`. The C function has no `skipSync` parameter (the wrapper passes one and always
   * throws). @returns the number of UTXOs created.
   */
  async createUtxosEnd(signedPsbt: string): Promise<number> {
    return Number(await this.#raw('rgblib_create_utxos_end', this.#onlineArg(), signedPsbt));
  }

  /**
   * Issue an NIA asset: `rgblib_issue_asset_nia(wallet, ticker, name, precision, amounts)`. The c-ffi
   * wants the amounts as a JSON array of decimal STRINGS (`["1000"]`); JSON numbers are rejected.
   */
  async issueAssetNia(ticker: string, name: string, precision: number, amounts: U64[]): Promise<AssetNia> {
    const amountsJson = toJson(amounts.map((a, i) => u64String(a, `amounts[${i}]`)));
    return this.#json(
      'rgblib_issue_asset_nia',
      ticker,
      name,
      uintString(precision, 8, 'precision'),
      amountsJson,
    );
  }

  /**
   * Issue a CFA asset: `rgblib_issue_asset_cfa(wallet, name, details|null, precision, amounts, filePath|null)`.
   * @param filePath media file readable by the child (copied into the wallet's media store).
   */
  async issueAssetCfa(
    name: string,
    details: string | null,
    precision: number,
    amounts: U64[],
    filePath: string | null,
  ): Promise<AssetCfa> {
    return this.#json(
      'rgblib_issue_asset_cfa',
      name,
      details,
      uintString(precision, 8, 'precision'),
      toJson(amounts.map((a, i) => u64String(a, `amounts[${i}]`))),
      filePath,
    );
  }

  /**
   * Issue a UDA (unique digital asset, one token): `rgblib_issue_asset_uda(wallet, ticker, name, details|null,
   * precision, mediaFilePath|null, attachmentsFilePaths)`.
   */
  async issueAssetUda(
    ticker: string,
    name: string,
    details: string | null,
    precision: number,
    mediaFilePath: string | null,
    attachmentsFilePaths: string[],
  ): Promise<AssetUda> {
    return this.#json(
      'rgblib_issue_asset_uda',
      ticker,
      name,
      details,
      uintString(precision, 8, 'precision'),
      mediaFilePath,
      toJson(attachmentsFilePaths),
    );
  }

  /**
   * Issue an IFA (inflatable) asset: `rgblib_issue_asset_ifa(wallet, ticker, name, precision, amounts,
   * inflationAmounts, rejectListUrl|null)`. The wallet must support the `Ifa` schema. Inflating it later needs
   * `rgblib_inflate`, which signs in rgb-lib (a mnemonic on the server): not possible watch-only in this binding.
   */
  async issueAssetIfa(
    ticker: string,
    name: string,
    precision: number,
    amounts: U64[],
    inflationAmounts: U64[],
    rejectListUrl: string | null,
  ): Promise<AssetIfa> {
    return this.#json(
      'rgblib_issue_asset_ifa',
      ticker,
      name,
      uintString(precision, 8, 'precision'),
      toJson(amounts.map((a, i) => u64String(a, `amounts[${i}]`))),
      toJson(inflationAmounts.map((a, i) => u64String(a, `inflationAmounts[${i}]`))),
      rejectListUrl,
    );
  }

  /**
   * Write an encrypted backup of the wallet directory to `backupPath` (`rgblib_backup`); the file must not
   * exist yet. rgb-lib scrypt-derives the key from `password` (slow by design: seconds).
   */
  async backup(backupPath: string, password: string): Promise<void> {
    await this.#raw('rgblib_backup', backupPath, password);
  }

  /** `rgblib_backup_info`: whether data changed since the last backup (`true` = a backup is due). */
  async backupInfo(): Promise<boolean> {
    return this.#json('rgblib_backup_info');
  }

  /** `rgblib_list_assets(wallet, filterAssetSchemas)`; `[]` lists all schemas. */
  async listAssets(filterAssetSchemas: AssetSchema[] = []): Promise<Assets> {
    return this.#json('rgblib_list_assets', toJson(filterAssetSchemas));
  }

  /** `rgblib_get_asset_balance(wallet, assetId)`. */
  async getAssetBalance(assetId: string): Promise<Balance> {
    return this.#json('rgblib_get_asset_balance', assetId);
  }

  /** `rgblib_get_asset_metadata(wallet, assetId)`. */
  async getAssetMetadata(assetId: string): Promise<AssetMetadata> {
    return this.#json('rgblib_get_asset_metadata', assetId);
  }

  /**
   * Receive to a blinded UTXO: `rgblib_blind_receive(wallet, assetId|null, assignment,
   * expirationTimestamp, transportEndpoints, minConfirmations)`.
   * @param assignment e.g. `{Fungible: 100n}` (any u64, written exactly) or `'Any'`.
   * @param expirationTimestamp absolute unix seconds. Required: null crashes rgb-lib 0.3.0-beta.7.
   */
  async blindReceive(
    assetId: string | null,
    assignment: AssignmentInput,
    expirationTimestamp: U64,
    transportEndpoints: string[],
    minConfirmations: number,
  ): Promise<ReceiveData> {
    return this.#receive(
      'rgblib_blind_receive',
      'blindReceive',
      assetId,
      assignment,
      expirationTimestamp,
      transportEndpoints,
      minConfirmations,
    );
  }

  /** Receive to a witness (script) output: `rgblib_witness_receive(...)`, same arguments as {@link blindReceive}. */
  async witnessReceive(
    assetId: string | null,
    assignment: AssignmentInput,
    expirationTimestamp: U64,
    transportEndpoints: string[],
    minConfirmations: number,
  ): Promise<ReceiveData> {
    return this.#receive(
      'rgblib_witness_receive',
      'witnessReceive',
      assetId,
      assignment,
      expirationTimestamp,
      transportEndpoints,
      minConfirmations,
    );
  }

  /** The two receive calls take the same arguments; only the rgb-lib function differs. */
  #receive(
    op: 'rgblib_blind_receive' | 'rgblib_witness_receive',
    name: string,
    assetId: string | null,
    assignment: AssignmentInput,
    expirationTimestamp: U64,
    transportEndpoints: string[],
    minConfirmations: number,
  ): Promise<ReceiveData> {
    return this.#json(
      op,
      assetId,
      toJson(assignmentValue(assignment)),
      expiration(expirationTimestamp, name),
      toJson(transportEndpoints),
      uintString(minConfirmations, 8, 'minConfirmations'),
    );
  }

  /**
   * Prepare a transfer: `rgblib_send_begin(wallet, online, recipientMap, donation, feeRate,
   * minConfirmations, expirationTimestamp, dryRun)`. The result string (unparsed by the wrapper)
   * is parsed losslessly: `details.entropy` is an exact bigint.
   * @param expirationTimestamp unix seconds, normally the invoice expiry. Required (null segfaults).
   */
  async sendBegin(
    recipientMap: RecipientMap,
    donation: boolean,
    feeRate: U64,
    minConfirmations: number,
    expirationTimestamp: U64,
    dryRun = false,
  ): Promise<SendBeginResult> {
    return this.#json(
      'rgblib_send_begin',
      this.#onlineArg(),
      recipientMapJson(recipientMap),
      donation,
      u64String(feeRate, 'feeRate'),
      uintString(minConfirmations, 8, 'minConfirmations'),
      expiration(expirationTimestamp, 'sendBegin'),
      dryRun,
    );
  }

  /** Complete a transfer with the signed PSBT: `rgblib_send_end(wallet, online, signedPsbt)`. */
  async sendEnd(signedPsbt: string): Promise<OperationResult> {
    return this.#json('rgblib_send_end', this.#onlineArg(), signedPsbt);
  }

  /**
   * Advance pending transfers: `rgblib_refresh(wallet, online, assetId|null, filter, skipSync)`.
   * @returns updates keyed by batch transfer index (as a string).
   */
  async refresh(
    assetId: string | null = null,
    filter: RefreshFilter[] = [],
    skipSync = false,
  ): Promise<Record<string, RefreshedTransfer>> {
    return this.#json('rgblib_refresh', this.#onlineArg(), assetId, toJson(filter), skipSync);
  }

  /** `rgblib_list_transfers(wallet, assetId|null)`. */
  async listTransfers(assetId: string | null = null): Promise<Transfer[]> {
    return this.#json('rgblib_list_transfers', assetId);
  }

  /**
   * `rgblib_fail_transfers(wallet, online, batchTransferIdx|null, noAssetOnly, skipSync)`.
   * @returns whether any transfer changed to Failed.
   */
  async failTransfers(
    batchTransferIdx: number | null = null,
    noAssetOnly = false,
    skipSync = false,
  ): Promise<boolean> {
    return this.#json(
      'rgblib_fail_transfers',
      this.#onlineArg(),
      batchTransferIdx === null ? null : String(batchTransferIdx),
      noAssetOnly,
      skipSync,
    );
  }

  /** `rgblib_delete_transfers(wallet, batchTransferIdx|null, noAssetOnly)`. */
  async deleteTransfers(batchTransferIdx: number | null = null, noAssetOnly = false): Promise<boolean> {
    return this.#json(
      'rgblib_delete_transfers',
      batchTransferIdx === null ? null : String(batchTransferIdx),
      noAssetOnly,
    );
  }

  /**
   * Sync with the indexer: `rgblib_sync(wallet, online, options)`, e.g.
   * `{keychain: {Vanilla: {lookback: 20}}, strategy: 'FullScan'}` or `{keychain: 'Colored', strategy: 'FullScan'}`.
   */
  async sync(options: SyncOptions): Promise<void> {
    await this.#raw('rgblib_sync', this.#onlineArg(), toJson(options));
  }

  /** `rgblib_get_fee_estimation(wallet, online, blocks)`; rgb-lib answers sat/vB as a decimal string. */
  async getFeeEstimation(blocks: number): Promise<number> {
    return Number(
      await this.#raw('rgblib_get_fee_estimation', this.#onlineArg(), uintString(blocks, 16, 'blocks')),
    );
  }

  /** Finalize a signed PSBT with the wallet's descriptors: `rgblib_finalize_psbt(wallet, psbt)`. */
  async finalizePsbt(signedPsbt: string): Promise<string> {
    return (await this.#raw('rgblib_finalize_psbt', signedPsbt)) ?? '';
  }

  /**
   * Release the wallet (`free_wallet` in the child; removes its `rgb_runtime.lock`). Idempotent;
   * later calls reject with `RgbWalletClosedError`.
   */
  async drop(): Promise<void> {
    await this.host.freeWallet(this.handle);
  }
}
