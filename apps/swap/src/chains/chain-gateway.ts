/**
 * Everything the service reads from or sends to chains, behind one interface: the Electrum indexer
 * for Bitcoin, `@rgbx/chains`' readers for EVM/Tron (viem: allowance, receipts, blocks) and Solana
 * (`@solana/kit`: transactions, slots, recent blockhashes). The real
 * implementation is `createChainGateway`; unit tests of pure logic may pass another one.
 * Transport failures become UPSTREAM_UNAVAILABLE (503).
 */
import {
  type EvmReceipt,
  type EvmTx,
  evmBlockNumber,
  evmBlockTime,
  evmReceipt,
  evmTransaction,
  readErc20Allowance,
} from '@rgbx/chains/evm';
import { type SolanaTx, solanaLatestBlockhash, solanaSlot, solanaTransaction } from '@rgbx/chains/sol';
import type { NetworkConfig } from '../config.ts';
import { E } from '../errors.ts';
import {
  ElectrumClient,
  type ElectrumHistoryEntry,
  type ElectrumUtxo,
  IndexerError,
} from './electrum-client.ts';

export interface BitcoinGateway {
  listUnspent(scripthash: string): Promise<ElectrumUtxo[]>;
  history(scripthash: string): Promise<ElectrumHistoryEntry[]>;
  /** A transaction with where it is mined (null when unknown to the node). */
  transaction(txid: string): Promise<BitcoinTxInfo | null>;
  /** Height of the best block. */
  tip(): Promise<number>;
  /** The 80-byte header of the best chain's block at `height`, hex. */
  blockHeader(height: number): Promise<string>;
  /** Broadcasts; a transaction the node already has counts as broadcast. Returns the txid. */
  broadcast(txHex: string, txid: string): Promise<string>;
  ping(): Promise<void>;
}

export interface BitcoinTxInfo {
  hex: string;
  /** 0 in the mempool. */
  confirmations: number;
  blockHash: string | null;
  blockTime: number | null;
}

/** EVM and Tron (through its Ethereum-compatible JSON-RPC) reads. */
export interface EvmGateway {
  receipt(txHash: string): Promise<EvmReceipt | null>;
  transaction(txHash: string): Promise<EvmTx | null>;
  blockNumber(): Promise<bigint>;
  blockTime(n: bigint): Promise<number | null>;
}

export interface SolanaGateway {
  transaction(signature: string): Promise<SolanaTx | null>;
  slot(): Promise<bigint>;
  latestBlockhash(): Promise<{ blockhash: string; lastValidBlockHeight: bigint }>;
}

export interface ChainGateway {
  bitcoin(): BitcoinGateway;
  /** ERC-20/TRC-20 allowance (owner → spender) on `network`; addresses in their 20-byte 0x form. */
  allowance(
    network: NetworkConfig,
    token: `0x${string}`,
    owner: `0x${string}`,
    spender: `0x${string}`,
  ): Promise<bigint>;
  evm(network: NetworkConfig): EvmGateway;
  solana(network: NetworkConfig): SolanaGateway;
  close(): void;
}

const ALREADY_KNOWN =
  /already in (block ?chain|the mempool|utxo set)|txn-already-(in-mempool|known)|already known/i;

class ElectrumBitcoinGateway implements BitcoinGateway {
  readonly #client: ElectrumClient;
  constructor(client: ElectrumClient) {
    this.#client = client;
  }

  async #wrap<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof IndexerError && err.isTransport) {
        throw E.UPSTREAM_UNAVAILABLE.createWith({ cause: err }, 'The Bitcoin indexer (Electrum)');
      }
      throw err;
    }
  }

  listUnspent(scripthash: string) {
    return this.#wrap(() => this.#client.listUnspent(scripthash));
  }
  history(scripthash: string) {
    return this.#wrap(() => this.#client.history(scripthash));
  }
  broadcast(txHex: string, txid: string) {
    return this.#wrap(async () => {
      try {
        return await this.#client.broadcast(txHex);
      } catch (err) {
        if (err instanceof IndexerError && !err.isTransport && ALREADY_KNOWN.test(err.message)) return txid;
        if (err instanceof IndexerError && !err.isTransport) {
          throw E.TX_NOT_VERIFIED.createWith(
            { details: { broadcast: err.message } },
            `broadcast refused: ${err.message}`,
          );
        }
        throw err;
      }
    });
  }
  transaction(txid: string) {
    return this.#wrap(async () => {
      try {
        const v = await this.#client.request<{
          hex?: string;
          confirmations?: number;
          blockhash?: string;
          blocktime?: number;
        }>('blockchain.transaction.get', [txid, true]);
        if (typeof v?.hex !== 'string') return null;
        return {
          hex: v.hex,
          confirmations: typeof v.confirmations === 'number' ? v.confirmations : 0,
          blockHash: v.blockhash ?? null,
          blockTime: v.blocktime ?? null,
        };
      } catch (err) {
        if (err instanceof IndexerError && !err.isTransport) return null;
        throw err;
      }
    });
  }
  tip() {
    return this.#wrap(async () => {
      const h = await this.#client.request<{ height?: number }>('blockchain.headers.subscribe');
      if (typeof h?.height !== 'number') throw new IndexerError('blockchain.headers.subscribe: no height');
      return h.height;
    });
  }
  blockHeader(height: number) {
    return this.#wrap(async () => {
      const h = await this.#client.request<unknown>('blockchain.block.header', [height]);
      if (typeof h !== 'string' || !/^[0-9a-f]{160}$/i.test(h))
        throw new IndexerError(`blockchain.block.header ${height}: not an 80-byte header`);
      return h;
    });
  }
  ping() {
    return this.#wrap(() => this.#client.ping());
  }
  close() {
    this.#client.close();
  }
}

/** Runs a read against the network's RPC; a failure to reach it becomes UPSTREAM_UNAVAILABLE (503). */
function rpcOf(network: NetworkConfig) {
  return async <T>(fn: (url: string) => Promise<T>): Promise<T> => {
    if (!network.rpc_url) throw E.UPSTREAM_UNAVAILABLE.create(`The RPC of network ${network.id}`);
    try {
      return await fn(network.rpc_url);
    } catch (err) {
      throw E.UPSTREAM_UNAVAILABLE.createWith(
        { cause: err, details: { network: network.id, reason: (err as Error).message } },
        `The RPC of network ${network.id}`,
      );
    }
  };
}

export function createChainGateway(opts: { electrumUrl?: string; electrumTimeoutMs: number }): ChainGateway {
  let btc: ElectrumBitcoinGateway | undefined;
  return {
    bitcoin() {
      if (!opts.electrumUrl) {
        throw E.UPSTREAM_UNAVAILABLE.createWith(
          { details: { reason: 'bitcoin.electrum_url is not configured' } },
          'The Bitcoin indexer',
        );
      }
      btc ??= new ElectrumBitcoinGateway(
        new ElectrumClient(opts.electrumUrl, { timeoutMs: opts.electrumTimeoutMs }),
      );
      return btc;
    },
    allowance(network, token, owner, spender) {
      return rpcOf(network)((url) => readErc20Allowance(url, token, owner, spender));
    },
    evm(network) {
      const wrap = rpcOf(network);
      return {
        receipt: (h) => wrap((u) => evmReceipt(u, h)),
        transaction: (h) => wrap((u) => evmTransaction(u, h)),
        blockNumber: () => wrap((u) => evmBlockNumber(u)),
        blockTime: (n) => wrap((u) => evmBlockTime(u, n)),
      };
    },
    solana(network) {
      const wrap = rpcOf(network);
      return {
        transaction: (sig) => wrap((u) => solanaTransaction(u, sig)),
        slot: () => wrap((u) => solanaSlot(u)),
        latestBlockhash: () => wrap((u) => solanaLatestBlockhash(u)),
      };
    },
    close() {
      btc?.close();
    },
  };
}
