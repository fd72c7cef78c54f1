/**
 * Typed client for the rgbx wallet node (watch-only RGB wallets). Responses keep u64 amounts exact:
 * they come back as `bigint`.
 *
 * @example
 * import { WalletNodeClient, signPsbt } from '@rgbx/sdk';
 * const node = new WalletNodeClient('http://127.0.0.1:3000', {
 *   xpubVanilla: keys.accountXpubVanilla, xpubColored: keys.accountXpubColored, fingerprint: keys.masterFingerprint,
 * });
 * const { address } = await node.register();
 * const psbt = await node.createUtxosBegin({ num: 5, size: 1000, fee_rate: 2 });
 * await node.createUtxosEnd(signPsbt(psbt, mnemonic));
 */

import type * as C from '@rgbx/contracts/wallet-node';
import type {
  AbortBeginResponseT,
  BlindReceiveRequestT,
  CreateUtxosBeginRequestT,
  FailTransfersRequestT,
  GenerateKeysResponseT,
  IssueAssetIfaRequestT,
  PendingBeginT,
  RgbLibInvoiceDataT,
  SendBeginRequestT,
  SendBtcBeginRequestT,
  VersionInfoT,
  WalletBackupResponseT,
  WalletErrorEnvelopeT,
  WalletRestoreResponseT,
} from '@rgbx/contracts/wallet-node';
import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';

export interface WalletHeaders {
  xpubVanilla: string;
  xpubColored: string;
  fingerprint: string;
}

// The replies' types are the wallet node's own schemas (`Static<>`); u64 amounts are `bigint`.
type Refs = {
  Balance: typeof C.Balance;
  BtcBalance: typeof C.BtcBalance;
  AssetNia: typeof C.AssetNia;
  Media: typeof C.Media;
};
export type Balance = C.Static<typeof C.Balance>;
export type BtcBalance = C.Static<typeof C.BtcBalance, Refs>;
export type AssetNia = C.Static<typeof C.AssetNia, Refs>;
export type ReceiveData = C.Static<typeof C.ReceiveData>;
/**
 * A transfer as rgb-lib reports it (fields a newer rgb-lib adds come along): the SDK asks for rgb-lib's names
 * (`?format=rgb-lib`); the node's default is the field's format (integer enums, flat amounts).
 */
export type Transfer = C.Static<typeof C.RgbLibTransfer> & Record<string, unknown>;
export type Unspent = C.Static<typeof C.RgbLibUnspent> & Record<string, unknown>;
export type Transaction = C.Static<typeof C.RgbLibTransaction>;

/** An error answered by the wallet node (its `{error:{code,status,message,details}}` envelope, or the 401 text). */
export class WalletNodeError extends Error {
  override readonly name = 'WalletNodeError';
  readonly httpStatus: number;
  readonly code: number | null;
  readonly status: string | null;
  readonly details: Record<string, unknown>;
  constructor(httpStatus: number, body: string) {
    let env: WalletErrorEnvelopeT | undefined;
    try {
      env = JSON.parse(body) as WalletErrorEnvelopeT;
    } catch {}
    super(env?.error ? `${httpStatus} ${env.error.status}: ${env.error.message}` : `${httpStatus}: ${body}`);
    this.httpStatus = httpStatus;
    this.code = env?.error?.code ?? null;
    this.status = env?.error?.status ?? null;
    this.details = env?.error?.details ?? {};
  }
}

const U64_FIELDS = new Set([
  'settled',
  'future',
  'spendable',
  'issued_supply',
  'btc_amount',
  'received',
  'sent',
  'fee',
  'Fungible',
  'InflationRight',
]);

function parse(text: string): unknown {
  if (text.length === 0) return undefined;
  return losslessParse(text, (key, value) => {
    if (value && typeof value === 'object' && 'isLosslessNumber' in value) {
      const s = String(value);
      return U64_FIELDS.has(key) ? BigInt(s) : Number(s);
    }
    return value;
  });
}

export class WalletNodeClient {
  /**
   * `POST /wallet/generate_keys`: a fresh mnemonic and its xpubs generated **by the node** (the BTCPay plugin's
   * setup call; the node answers 403/1017 unless its operator set `wallet.allow_generate_keys`). The mnemonic
   * crosses the wire: prefer generating keys on the client (`generateKeys` of `@rgbx/rgb`, or any BIP-32 tooling).
   * Needs no wallet, so it is static.
   */
  static async generateKeys(baseUrl: string): Promise<GenerateKeysResponseT> {
    const res = await fetch(`${baseUrl.replace(/\/$/, '')}/wallet/generate_keys`, { method: 'POST' });
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text);
    return JSON.parse(text) as GenerateKeysResponseT;
  }

  readonly baseUrl: string;
  readonly #headers: Record<string, string>;

  constructor(baseUrl: string, wallet: WalletHeaders) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.#headers = {
      'xpub-van': wallet.xpubVanilla,
      'xpub-col': wallet.xpubColored,
      'master-fingerprint': wallet.fingerprint,
    };
  }

  async #post<T>(path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.baseUrl + path, {
      method: 'POST',
      headers: { ...this.#headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: losslessStringify(body) ?? 'null' }),
    });
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text);
    return parse(text) as T;
  }

  async #postForm<T>(path: string, form: FormData): Promise<T> {
    // fetch sets the multipart content type with its boundary.
    const res = await fetch(this.baseUrl + path, { method: 'POST', headers: this.#headers, body: form });
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text);
    return parse(text) as T;
  }

  register(): Promise<C.Static<typeof C.RegisterResponse, Refs>> {
    return this.#post('/wallet/register');
  }
  address(): Promise<string> {
    return this.#post('/wallet/address');
  }
  btcBalance(): Promise<BtcBalance> {
    return this.#post('/wallet/btcbalance');
  }
  listAssets(): Promise<C.Static<typeof C.Assets, Refs>> {
    return this.#post('/wallet/listassets');
  }
  assetBalance(assetId: string): Promise<Balance> {
    return this.#post('/wallet/assetbalance', { asset_id: assetId });
  }
  listUnspents(): Promise<Unspent[]> {
    return this.#post('/wallet/listunspents?format=rgb-lib');
  }
  listTransactions(): Promise<Transaction[]> {
    return this.#post('/wallet/listtransactions?format=rgb-lib');
  }
  /** Transfers of one asset, or of every asset (and asset-less receives) when `assetId` is omitted. */
  listTransfers(assetId?: string): Promise<Transfer[]> {
    return this.#post(
      '/wallet/listtransfers?format=rgb-lib',
      assetId === undefined ? undefined : { asset_id: assetId },
    );
  }
  failTransfers(req: FailTransfersRequestT = {}): Promise<boolean> {
    return this.#post('/wallet/failtransfers', req);
  }
  /** Returns the unsigned PSBT (base64). */
  createUtxosBegin(req: CreateUtxosBeginRequestT = {}): Promise<string> {
    return this.#post('/wallet/createutxosbegin', req);
  }
  /** Returns the number of UTXOs created. */
  createUtxosEnd(signedPsbt: string): Promise<number> {
    return this.#post('/wallet/createutxosend', { signed_psbt: signedPsbt });
  }
  issueAssetNia(req: {
    ticker: string;
    name: string;
    precision?: number;
    amounts: Array<bigint | number>;
  }): Promise<AssetNia> {
    return this.#post('/wallet/issueassetnia', req);
  }
  blindReceive(
    req: Omit<BlindReceiveRequestT, 'amount'> & { amount?: bigint | number | null } = {},
  ): Promise<ReceiveData> {
    return this.#post('/wallet/blindreceive', req);
  }
  /** A witness receive invoice: the sender pays `witness_data.amount_sat` to a script of this wallet. */
  witnessReceive(
    req: Omit<BlindReceiveRequestT, 'amount'> & { amount?: bigint | number | null } = {},
  ): Promise<ReceiveData> {
    return this.#post('/wallet/witnessreceive', req);
  }
  /** Decodes an RGB invoice (no wallet is read). */
  decodeRgbInvoice(invoice: string): Promise<RgbLibInvoiceDataT> {
    return this.#post('/wallet/decodergbinvoice?format=rgb-lib', { invoice });
  }
  /** Syncs both keychains with the indexer. */
  sync(): Promise<null> {
    return this.#post('/wallet/sync');
  }
  /** Fee rate in sat/vB for confirmation within `blocks`. */
  getFeeEstimation(blocks: number): Promise<number> {
    return this.#post('/wallet/get_fee_estimation', { blocks });
  }
  /**
   * Unsigned PSBT (base64) paying `amount` sats to `address` from vanilla UTXOs only; sign it locally and pass it
   * to `sendBtcEnd`.
   *
   * @example
   * const psbt = await node.sendBtcBegin({ address, amount: 50_000n, fee_rate: 2 });
   * const { txid } = await node.sendBtcEnd(signPsbt(psbt, mnemonic));
   */
  sendBtcBegin(req: Omit<SendBtcBeginRequestT, 'amount'> & { amount: bigint | number }): Promise<string> {
    return this.#post('/wallet/sendbtcbegin', req);
  }
  sendBtcEnd(signedPsbt: string, opts: { skip_sync?: boolean } = {}): Promise<{ txid: string }> {
    return this.#post('/wallet/sendbtcend', { signed_psbt: signedPsbt, ...opts });
  }
  /**
   * Makes an encrypted backup kept on the node for 24 h; fetch it with `downloadBackup`.
   *
   * @example
   * const { backup_id } = await node.backup('correct horse battery');
   * const file = await node.downloadBackup(backup_id);
   */
  backup(password: string): Promise<WalletBackupResponseT> {
    return this.#post('/wallet/backup', { password });
  }
  /** The backup file's bytes (only this wallet may download it). */
  async downloadBackup(backupId: string): Promise<Uint8Array> {
    const res = await fetch(`${this.baseUrl}/wallet/backup/${encodeURIComponent(backupId)}`, {
      headers: this.#headers,
    });
    if (!res.ok) throw new WalletNodeError(res.status, await res.text());
    return new Uint8Array(await res.arrayBuffer());
  }
  /** Restores this client's wallet from a backup file into a node that does not have it yet. */
  restore(file: Uint8Array, password: string): Promise<WalletRestoreResponseT> {
    const form = new FormData();
    // A copy on a plain ArrayBuffer: what DOM's `BlobPart` type accepts (a Uint8Array may view a SharedArrayBuffer).
    form.append('file', new Blob([new Uint8Array(file)]), 'wallet.backup');
    form.append('password', password);
    form.append('xpub_van', this.#headers['xpub-van']!);
    form.append('xpub_col', this.#headers['xpub-col']!);
    form.append('master_fingerprint', this.#headers['master-fingerprint']!);
    return this.#postForm('/wallet/restore', form);
  }
  /** Begins never ended (createutxosbegin, sendbegin, sendbtcbegin): what each holds and when it is released. */
  listPendingBegins(): Promise<PendingBeginT[]> {
    return this.#post('/wallet/listpendingbegins');
  }
  /**
   * Releases what an unfinished begin holds, named by its PSBT (or `{ txid }`): its TXOs are spendable again, and
   * an RGB send's batch transfer is failed.
   *
   * @example
   * const psbt = await node.createUtxosBegin({ num: 5 });
   * await node.abortBegin({ psbt }); // changed our mind: the funds are spendable again
   */
  abortBegin(begin: { psbt: string } | { txid: string }): Promise<AbortBeginResponseT> {
    return this.#post('/wallet/abortbegin', begin);
  }
  /** IFA issuance; the node's operator must enable it (`[wallet] issue_schemas`), else 403. */
  issueAssetIfa(req: IssueAssetIfaRequestT): Promise<unknown> {
    return this.#post('/wallet/issueassetifa', req);
  }
  /** Returns the unsigned PSBT (base64). Amounts may be bigint. */
  sendBegin(req: SendBeginRequestT): Promise<string> {
    return this.#post('/wallet/sendbegin', req);
  }
  sendEnd(signedPsbt: string): Promise<C.Static<typeof C.SendResult>> {
    return this.#post('/wallet/sendend', { signed_psbt: signedPsbt });
  }
  refresh(): Promise<null> {
    return this.#post('/wallet/refresh');
  }
  drop(): Promise<null> {
    return this.#post('/wallet/drop');
  }
  async version(): Promise<VersionInfoT> {
    const res = await fetch(`${this.baseUrl}/version`);
    if (!res.ok) throw new WalletNodeError(res.status, await res.text());
    return (await res.json()) as VersionInfoT;
  }
}
