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
import type {
  BlindReceiveRequestT,
  CreateUtxosBeginRequestT,
  FailTransfersRequestT,
  SendBeginRequestT,
  VersionInfoT,
  WalletErrorEnvelopeT,
} from '@rgbx/contracts/wallet-node';
import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';

export interface WalletHeaders {
  xpubVanilla: string;
  xpubColored: string;
  fingerprint: string;
}

export interface Balance {
  settled: bigint;
  future: bigint;
  spendable: bigint;
}
export interface BtcBalance {
  vanilla: Balance;
  colored: Balance;
}
export interface AssetNia {
  asset_id: string;
  ticker: string;
  name: string;
  details: string | null;
  precision: number;
  issued_supply: bigint;
  timestamp: number;
  added_at: number;
  balance: Balance;
  media: unknown;
}
export interface ReceiveData {
  invoice: string;
  recipient_id: string;
  expiration_timestamp: number | null;
  batch_transfer_idx: number;
}
export interface Transfer {
  idx: number;
  batch_transfer_idx: number;
  status: string;
  kind: string;
  txid: string | null;
  recipient_id: string | null;
  assignments: unknown[];
  [k: string]: unknown;
}
export interface Unspent {
  utxo: { outpoint: { txid: string; vout: number }; btc_amount: bigint; colorable: boolean; exists: boolean };
  rgb_allocations: Array<{ asset_id: string | null; assignment: unknown; settled: boolean }>;
  [k: string]: unknown;
}
export interface Transaction {
  transaction_type: string;
  txid: string;
  received: bigint;
  sent: bigint;
  fee: bigint;
  confirmation_time: { height: number; timestamp: number } | null;
}

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

  register(): Promise<{ address: string; btc_balance: BtcBalance }> {
    return this.#post('/wallet/register');
  }
  address(): Promise<string> {
    return this.#post('/wallet/address');
  }
  btcBalance(): Promise<BtcBalance> {
    return this.#post('/wallet/btcbalance');
  }
  listAssets(): Promise<{ nia: AssetNia[] | null; uda: unknown[] | null; cfa: unknown[] | null }> {
    return this.#post('/wallet/listassets');
  }
  assetBalance(assetId: string): Promise<Balance> {
    return this.#post('/wallet/assetbalance', { asset_id: assetId });
  }
  listUnspents(): Promise<Unspent[]> {
    return this.#post('/wallet/listunspents');
  }
  listTransactions(): Promise<Transaction[]> {
    return this.#post('/wallet/listtransactions');
  }
  listTransfers(assetId: string): Promise<Transfer[]> {
    return this.#post('/wallet/listtransfers', { asset_id: assetId });
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
  /** Returns the unsigned PSBT (base64). Amounts may be bigint. */
  sendBegin(req: SendBeginRequestT): Promise<string> {
    return this.#post('/wallet/sendbegin', req);
  }
  sendEnd(signedPsbt: string): Promise<{ txid: string; batch_transfer_idx: number }> {
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
