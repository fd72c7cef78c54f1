/**
 * Typed client for the rgbx wallet node (watch-only RGB wallets). Responses keep u64 amounts exact: each
 * reply is parsed losslessly and read against its route's response schema from `@rgbx/contracts`, so every
 * field the schema marks u64 is a `bigint` (any size), any other integer a `number` (or a `bigint` above 2^53,
 * never rounded).
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

import { retryAfterMs } from '@rgbx/codecs/http';
import type {
  AbortBeginResponseT,
  BlindReceiveRequestT,
  CreateUtxosBeginRequestT,
  FailTransfersRequestT,
  GenerateKeysResponseT,
  IssueAssetCfaRequestT,
  IssueAssetIfaRequestT,
  IssueAssetNiaRequestT,
  IssueAssetUdaRequestT,
  PendingBeginT,
  RgbLibInvoiceDataT,
  SendBeginRequestT,
  SendBtcBeginRequestT,
  VersionInfoT,
  WalletBackupResponseT,
  WalletErrorEnvelopeT,
  WalletRestoreResponseT,
} from '@rgbx/contracts/wallet-node';
import * as C from '@rgbx/contracts/wallet-node';
import { isLosslessNumber, parse as losslessParse, stringify as losslessStringify } from 'lossless-json';
import { type EventsOptions, streamSse } from '../sse.ts';

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
  AssetCfa: typeof C.AssetCfa;
  AssetUda: typeof C.AssetUda;
  AssetIfa: typeof C.AssetIfa;
  Media: typeof C.Media;
  TokenLight: typeof C.TokenLight;
};
export type Balance = C.Static<typeof C.Balance>;
export type BtcBalance = C.Static<typeof C.BtcBalance, Refs>;
export type AssetNia = C.Static<typeof C.AssetNia, Refs>;
export type AssetCfa = C.Static<typeof C.AssetCfa, Refs> & Record<string, unknown>;
export type AssetUda = C.Static<typeof C.AssetUda, Refs> & Record<string, unknown>;
export type AssetIfa = C.Static<typeof C.AssetIfa, Refs> & Record<string, unknown>;
export type Assets = C.Static<typeof C.Assets, Refs>;
export type ReceiveData = C.Static<typeof C.ReceiveData>;
/**
 * A transfer as rgb-lib reports it (fields a newer rgb-lib adds come along): the SDK asks for rgb-lib's names
 * (`?format=rgb-lib`); the node's default is the field's format (integer enums, flat amounts).
 */
export type Transfer = C.Static<typeof C.RgbLibTransfer> & Record<string, unknown>;
export type Unspent = C.Static<typeof C.RgbLibUnspent> & Record<string, unknown>;
export type Transaction = C.Static<typeof C.RgbLibTransaction>;

/** Balances in a balance event (decimal strings). */
export type WalletBalanceAmounts = C.WalletBalanceAmounts;
/**
 * A transfer's status changed (`old_status` null: seen for the first time). Amounts are decimal strings. Every event
 * has `id` (per wallet, increasing), `at` (ISO 8601 UTC time the node found the change), `wallet` (the master
 * fingerprint) and `source` (`refresh`: the node's background refresh, `call`: after a client call, `abortbegin`,
 * `begin_ttl`).
 */
export type WalletTransferEvent = C.WalletTransferEvent;
/** An asset's balance changed (`old` null: the asset appeared). */
export type WalletBalanceEvent = C.WalletBalanceEvent;
/** A begin's holds were released: by `abortbegin` (`aborted`) or after the node's begin TTL (`expired`). */
export type WalletBeginReleasedEvent = C.WalletBeginReleasedEvent;
export type WalletEvent = C.WalletEvent;
/** What `WalletNodeClient.events()` yields: `id` is the SSE id (pass the last one as `lastEventId` to resume). */
export type WalletEventItem =
  | { type: 'transfer'; id: string; data: WalletTransferEvent }
  | { type: 'balance'; id: string; data: WalletBalanceEvent }
  | { type: 'begin_released'; id: string; data: WalletBeginReleasedEvent }
  | { type: 'reset'; id: string; data: C.WalletEventsReset };

/** `GET /wallet/webhook`: a wallet's webhook and its delivery. */
export type WalletWebhookStatus = C.WalletWebhookStatus;

/** An error answered by the wallet node (its `{error:{code,status,message,details}}` envelope, or the 401 text). */
export class WalletNodeError extends Error {
  override readonly name = 'WalletNodeError';
  readonly httpStatus: number;
  readonly code: number | null;
  readonly status: string | null;
  readonly details: Record<string, unknown>;
  /**
   * Seconds the node asks to wait before retrying (its `Retry-After`: a 503 when the indexer refuses or every
   * online place is busy), null when it sent none.
   *
   * @example
   * catch (e) { if (e instanceof WalletNodeError && e.retryAfterSecs !== null) await sleep(e.retryAfterSecs * 1000); }
   */
  readonly retryAfterSecs: number | null;
  constructor(httpStatus: number, body: string, retryAfter?: string | null) {
    let env: WalletErrorEnvelopeT | undefined;
    try {
      env = JSON.parse(body) as WalletErrorEnvelopeT;
    } catch {}
    super(env?.error ? `${httpStatus} ${env.error.status}: ${env.error.message}` : `${httpStatus}: ${body}`);
    this.httpStatus = httpStatus;
    this.code = env?.error?.code ?? null;
    this.status = env?.error?.status ?? null;
    this.details = env?.error?.details ?? {};
    this.retryAfterSecs = retryAfterSeconds(retryAfter);
  }
}

/** `Retry-After` as seconds from now: delta-seconds, or an HTTP-date (RFC 9110 §10.2.3); null if absent or unreadable. */
export function retryAfterSeconds(value: string | null | undefined, now = Date.now()): number | null {
  const ms = retryAfterMs(value, now);
  return ms === undefined ? null : Math.ceil(ms / 1000);
}

const digitsOf = (v: unknown) => (isLosslessNumber(v) ? v.value : undefined);

/**
 * A reply read against its route's response schema (`C.WALLET_NODE_REFS` resolves its `$ref`s): the schema's
 * u64 fields become `bigint`, other integers `number` (`bigint` if unsafe), nothing is rounded.
 */
export function parseReply(text: string, schema: unknown): unknown {
  if (text.length === 0) return undefined;
  return C.reviveNumbers(losslessParse(text), schema, C.WALLET_NODE_REFS, { digitsOf });
}

// Response schemas of routes whose reply is not a named schema.
const Bare = {};
const ListOf = (id: string) => ({ type: 'array', items: { $ref: id } });

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
    if (!res.ok) throw new WalletNodeError(res.status, text, res.headers.get('retry-after'));
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

  /** POST `body` (bigint written as exact JSON digits) and read the reply against `reply`, its schema. */
  async #post<T>(path: string, reply: unknown, body?: unknown): Promise<T> {
    const res = await fetch(this.baseUrl + path, {
      method: 'POST',
      headers: { ...this.#headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: losslessStringify(body) ?? 'null' }),
    });
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text, res.headers.get('retry-after'));
    return parseReply(text, reply) as T;
  }

  async #postForm<T>(path: string, reply: unknown, form: FormData): Promise<T> {
    // fetch sets the multipart content type with its boundary.
    const res = await fetch(this.baseUrl + path, { method: 'POST', headers: this.#headers, body: form });
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text, res.headers.get('retry-after'));
    return parseReply(text, reply) as T;
  }

  register(): Promise<C.Static<typeof C.RegisterResponse, Refs>> {
    return this.#post('/wallet/register', C.RegisterResponse);
  }
  address(): Promise<string> {
    return this.#post('/wallet/address', Bare);
  }
  btcBalance(): Promise<BtcBalance> {
    return this.#post('/wallet/btcbalance', C.BtcBalance);
  }
  listAssets(): Promise<Assets> {
    return this.#post('/wallet/listassets', C.Assets);
  }
  assetBalance(assetId: string): Promise<Balance> {
    return this.#post('/wallet/assetbalance', C.Balance, { asset_id: assetId });
  }
  listUnspents(): Promise<Unspent[]> {
    return this.#post('/wallet/listunspents?format=rgb-lib', ListOf('RgbLibUnspent'));
  }
  listTransactions(): Promise<Transaction[]> {
    return this.#post('/wallet/listtransactions?format=rgb-lib', ListOf('RgbLibTransaction'));
  }
  /** Transfers of one asset, or of every asset (and asset-less receives) when `assetId` is omitted. */
  listTransfers(assetId?: string): Promise<Transfer[]> {
    return this.#post(
      '/wallet/listtransfers?format=rgb-lib',
      ListOf('RgbLibTransfer'),
      assetId === undefined ? undefined : { asset_id: assetId },
    );
  }
  failTransfers(req: FailTransfersRequestT = {}): Promise<boolean> {
    return this.#post('/wallet/failtransfers', Bare, req);
  }
  /** Returns the unsigned PSBT (base64). */
  createUtxosBegin(req: CreateUtxosBeginRequestT = {}): Promise<string> {
    return this.#post('/wallet/createutxosbegin', Bare, req);
  }
  /** Returns the number of UTXOs created. */
  createUtxosEnd(signedPsbt: string): Promise<number> {
    return this.#post('/wallet/createutxosend', Bare, { signed_psbt: signedPsbt });
  }
  issueAssetNia(req: IssueAssetNiaRequestT): Promise<AssetNia> {
    return this.#post('/wallet/issueassetnia', C.AssetNia, req);
  }
  blindReceive(req: BlindReceiveRequestT = {}): Promise<ReceiveData> {
    return this.#post('/wallet/blindreceive', C.ReceiveData, req);
  }
  /** A witness receive invoice: the sender pays `witness_data.amount_sat` to a script of this wallet. */
  witnessReceive(req: BlindReceiveRequestT = {}): Promise<ReceiveData> {
    return this.#post('/wallet/witnessreceive', C.ReceiveData, req);
  }
  /** Decodes an RGB invoice (no wallet is read). */
  decodeRgbInvoice(invoice: string): Promise<RgbLibInvoiceDataT> {
    return this.#post('/wallet/decodergbinvoice?format=rgb-lib', C.RgbLibInvoiceData, { invoice });
  }
  /** Syncs both keychains with the indexer. */
  sync(): Promise<null> {
    return this.#post('/wallet/sync', Bare);
  }
  /** Fee rate in sat/vB for confirmation within `blocks`. */
  getFeeEstimation(blocks: number): Promise<number> {
    return this.#post('/wallet/get_fee_estimation', Bare, { blocks });
  }
  /**
   * Unsigned PSBT (base64) paying `amount` sats to `address` from vanilla UTXOs only; sign it locally and pass it
   * to `sendBtcEnd`.
   *
   * @example
   * const psbt = await node.sendBtcBegin({ address, amount: 50_000n, fee_rate: 2 });
   * const { txid } = await node.sendBtcEnd(signPsbt(psbt, mnemonic));
   */
  sendBtcBegin(req: SendBtcBeginRequestT): Promise<string> {
    return this.#post('/wallet/sendbtcbegin', Bare, req);
  }
  sendBtcEnd(signedPsbt: string, opts: { skip_sync?: boolean } = {}): Promise<{ txid: string }> {
    return this.#post('/wallet/sendbtcend', C.SendBtcEndResponse, { signed_psbt: signedPsbt, ...opts });
  }
  /**
   * Makes an encrypted backup kept on the node for 24 h; fetch it with `downloadBackup`.
   *
   * @example
   * const { backup_id } = await node.backup('correct horse battery');
   * const file = await node.downloadBackup(backup_id);
   */
  backup(password: string): Promise<WalletBackupResponseT> {
    return this.#post('/wallet/backup', C.WalletBackupResponse, { password });
  }
  /** The backup file's bytes (only this wallet may download it). */
  async downloadBackup(backupId: string): Promise<Uint8Array> {
    const res = await fetch(`${this.baseUrl}/wallet/backup/${encodeURIComponent(backupId)}`, {
      headers: this.#headers,
    });
    if (!res.ok) throw new WalletNodeError(res.status, await res.text(), res.headers.get('retry-after'));
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
    return this.#postForm('/wallet/restore', C.WalletRestoreResponse, form);
  }
  /** Begins never ended (createutxosbegin, sendbegin, sendbtcbegin): what each holds and when it is released. */
  listPendingBegins(): Promise<PendingBeginT[]> {
    return this.#post('/wallet/listpendingbegins', ListOf('PendingBegin'));
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
    return this.#post('/wallet/abortbegin', C.AbortBeginResponse, begin);
  }
  /** IFA issuance; the node's operator must enable it (`[wallet] issue_schemas`), else 403. */
  issueAssetIfa(req: IssueAssetIfaRequestT): Promise<AssetIfa> {
    return this.#post('/wallet/issueassetifa', C.AssetIfa, req);
  }
  /**
   * CFA issuance (JSON body, no media); the node's operator must enable it (`[wallet] issue_schemas`), else 403.
   *
   * @example
   * const cfa = await node.issueAssetCfa({ name: 'Collectible', amounts: [2n ** 64n - 1n] });
   * cfa.issued_supply; // 18446744073709551615n, exact
   */
  issueAssetCfa(req: IssueAssetCfaRequestT): Promise<AssetCfa> {
    return this.#post('/wallet/issueassetcfa', C.AssetCfa, req);
  }
  /** UDA issuance (JSON body, no media); the node's operator must enable it (`[wallet] issue_schemas`), else 403. */
  issueAssetUda(req: IssueAssetUdaRequestT): Promise<AssetUda> {
    return this.#post('/wallet/issueassetuda', C.AssetUda, req);
  }
  /** Returns the unsigned PSBT (base64). Amounts may be bigint. */
  sendBegin(req: SendBeginRequestT): Promise<string> {
    return this.#post('/wallet/sendbegin', Bare, req);
  }
  sendEnd(signedPsbt: string): Promise<C.Static<typeof C.SendResult>> {
    return this.#post('/wallet/sendend', C.SendResult, { signed_psbt: signedPsbt });
  }
  refresh(): Promise<null> {
    return this.#post('/wallet/refresh', Bare);
  }
  drop(): Promise<null> {
    return this.#post('/wallet/drop', Bare);
  }
  /**
   * The wallet's events as they happen (`GET /wallet/events`, Server-Sent Events): one `transfer` per transfer
   * status change, one `balance` per asset balance change, one `begin_released` per begin released, and a `reset`
   * when the resume point is past the node's retention. Reconnects by itself and resumes with `Last-Event-ID`
   * (each event once, in order); pass the `id` of the last item you processed as `lastEventId` to resume across
   * restarts. Amounts are decimal strings.
   *
   * @example
   * for await (const ev of node.events({ signal: ac.signal })) {
   *   if (ev.type === 'transfer' && ev.data.new_status === 'Settled') console.log('settled', ev.data.idx);
   *   saved = ev.id;
   * }
   */
  events(opts: EventsOptions = {}): AsyncGenerator<WalletEventItem> {
    return streamSse<WalletEventItem>(
      {
        url: new URL(`${this.baseUrl}/wallet/events`),
        headers: this.#headers,
        events: ['transfer', 'balance', 'begin_released', 'reset'],
        fetch,
        failure: (res, text) =>
          res.status === 429 || res.status >= 500
            ? undefined
            : new WalletNodeError(res.status, text, res.headers.get('retry-after')),
      },
      opts,
    );
  }
  /**
   * `POST /wallet/webhook`: the wallet's events (those of `events()`) are POSTed to `url` from its next event on,
   * one per request in id order, signed like the cloud's webhooks; at least once, retried until accepted. Verify
   * them with `verifyWalletWebhook` and the key of `webhookPublicKey()`.
   *
   * @example
   * await node.setWebhook('https://app.example/rgb-events');
   * const { data: pem } = await WalletNodeClient.webhookPublicKey(node.baseUrl);
   */
  setWebhook(url: string): Promise<WalletWebhookStatus> {
    return this.#post('/wallet/webhook', Bare, { url });
  }
  /** `GET /wallet/webhook`: the URL (null: none) and how delivery goes (pending, failures, next attempt). */
  async webhook(): Promise<WalletWebhookStatus> {
    return this.#send('GET', '/wallet/webhook');
  }
  /**
   * `POST /wallet/webhook/redeliver`: the events from `fromEventId` on are sent again now (a receiver that lost
   * what it stored), with their own event ids. Refused (`WalletNodeError`, code 1022) without a webhook or for an
   * id the log no longer holds or not yet delivered; the error's message gives the range.
   *
   * @example
   * const { delivered_through } = await node.redeliverWebhook(1); // every event the log holds, again
   */
  redeliverWebhook(fromEventId: number): Promise<WalletWebhookStatus> {
    return this.#post('/wallet/webhook/redeliver', Bare, { from_event_id: fromEventId });
  }
  /** `DELETE /wallet/webhook`; `removed: false` when there was none. */
  async deleteWebhook(): Promise<{ removed: boolean }> {
    return this.#send('DELETE', '/wallet/webhook');
  }
  async #send<T>(method: 'GET' | 'DELETE', path: string): Promise<T> {
    const res = await fetch(this.baseUrl + path, { method, headers: this.#headers });
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text, res.headers.get('retry-after'));
    return JSON.parse(text) as T;
  }
  /** `GET /wallet/webhook/public-key` of a node: the PEM that verifies its webhooks (needs no wallet). */
  static async webhookPublicKey(baseUrl: string): Promise<{ data: string; keyId: string }> {
    const res = await fetch(`${baseUrl.replace(/\/$/, '')}/wallet/webhook/public-key`);
    const text = await res.text();
    if (!res.ok) throw new WalletNodeError(res.status, text, res.headers.get('retry-after'));
    return JSON.parse(text) as { data: string; keyId: string };
  }
  async version(): Promise<VersionInfoT> {
    const res = await fetch(`${this.baseUrl}/version`);
    if (!res.ok) throw new WalletNodeError(res.status, await res.text(), res.headers.get('retry-after'));
    return (await res.json()) as VersionInfoT;
  }
}
