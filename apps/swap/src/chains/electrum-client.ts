/**
 * The service's Bitcoin reads and broadcasts over Electrum: UTXOs of the user's address, broadcasts, and
 * on-chain checks of reported transactions. The protocol is `@rgbx/chains/btc`'s `ElectrumConnection` (through its `ReconnectingElectrum`);
 * this keeps one lazily opened connection (re-opened after a failure) and maps its errors to
 * {@link IndexerError}, whose `isTransport` the gateway turns into "upstream unavailable".
 */
import {
  type ElectrumHistoryEntry,
  ElectrumServerError,
  type ElectrumUtxo,
  parseElectrumUrl,
  ReconnectingElectrum,
} from '@rgbx/chains/btc';

export type { ElectrumHistoryEntry, ElectrumUtxo } from '@rgbx/chains/btc';

/** A failure of the swap's Electrum client: a server's JSON-RPC error (`code`) or a transport failure. */
export class IndexerError extends Error {
  override readonly name = 'IndexerError';
  /** The server's JSON-RPC error code; undefined for transport failures (unreachable, timeout). */
  readonly code: number | undefined;
  constructor(message: string, code?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
  get isTransport(): boolean {
    return this.code === undefined;
  }
}

/** A server error keeps the server's own text (callers match on it); anything else is a transport failure. */
function toIndexerError(err: unknown): IndexerError {
  if (err instanceof IndexerError) return err;
  if (err instanceof ElectrumServerError)
    return new IndexerError(err.serverMessage, err.code ?? -1, { cause: err });
  return new IndexerError(err instanceof Error ? err.message : String(err), undefined, { cause: err });
}

export class ElectrumClient {
  readonly url: string;
  readonly #electrum: ReconnectingElectrum;

  constructor(url: string, opts: { timeoutMs?: number } = {}) {
    try {
      parseElectrumUrl(url);
    } catch (err) {
      throw new IndexerError(`electrum url must be tcp://host:port, got ${url}`, undefined, { cause: err });
    }
    this.url = url;
    this.#electrum = new ReconnectingElectrum(url, {
      timeoutMs: opts.timeoutMs ?? 10_000,
      clientName: 'rgbx-swap',
      maxLineBytes: 16 * 1024 * 1024,
    });
  }

  async request<T>(method: string, params: unknown[] = []): Promise<T> {
    try {
      const c = await this.#electrum.get();
      return await c.request<T>(method, params);
    } catch (err) {
      throw toIndexerError(err);
    }
  }

  listUnspent(scripthash: string): Promise<ElectrumUtxo[]> {
    return this.request('blockchain.scripthash.listunspent', [scripthash]);
  }

  history(scripthash: string): Promise<ElectrumHistoryEntry[]> {
    return this.request('blockchain.scripthash.get_history', [scripthash]);
  }

  broadcast(txHex: string): Promise<string> {
    return this.request('blockchain.transaction.broadcast', [txHex]);
  }

  async ping(): Promise<void> {
    await this.request('server.ping');
  }

  close(): void {
    // A connection still being opened is closed as soon as it is up (the next request opens a new one).
    void this.#electrum.close();
  }
}
