/**
 * Everything the service reads from or sends to chains, behind one interface: the Electrum indexer
 * for Bitcoin, JSON-RPC for EVM/Tron (allowance, receipts) and Solana (recent blockhash). The real
 * implementation is `createChainGateway`; unit tests of pure logic may pass another one.
 * Transport failures become UPSTREAM_UNAVAILABLE (503).
 */
import { createHash } from 'node:crypto';
import { readErc20Allowance } from '@rgbx/chains/evm';
import { tronAddressToEvm } from '@rgbx/chains/tron';
import { base58 } from '@scure/base';
import { type EvmReceipt, readReceipt, solanaLatestBlockhash } from './chain-rpc.ts';
import type { NetworkConfig } from './config.ts';
import {
  ElectrumClient,
  ElectrumError,
  type ElectrumHistoryEntry,
  type ElectrumUtxo,
} from './electrum-client.ts';
import { E } from './errors.ts';

export interface BitcoinGateway {
  listUnspent(scripthash: string): Promise<ElectrumUtxo[]>;
  history(scripthash: string): Promise<ElectrumHistoryEntry[]>;
  transactionHex(txid: string): Promise<string | null>;
  confirmations(txid: string): Promise<number | null>;
  /** Broadcasts; a transaction the node already has counts as broadcast. Returns the txid. */
  broadcast(txHex: string, txid: string): Promise<string>;
  ping(): Promise<void>;
}

export interface ChainGateway {
  bitcoin(): BitcoinGateway;
  /** ERC-20/TRC-20 allowance (owner → spender) on `network`. */
  allowance(network: NetworkConfig, token: string, owner: string, spender: string): Promise<bigint>;
  /** Receipt of an EVM/Tron transaction, or null while unknown. */
  evmReceipt(network: NetworkConfig, txHash: string): Promise<EvmReceipt | null>;
  /** Recent blockhash for a Solana transaction (see cosign-approval.ts for the offline fallback). */
  solanaBlockhash(
    network: NetworkConfig,
    intentId: string,
  ): Promise<{ blockhash: string; lastValidBlockHeight: bigint }>;
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
      if (err instanceof ElectrumError && err.isTransport) {
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
  transactionHex(txid: string) {
    return this.#wrap(async () => {
      try {
        return await this.#client.transactionHex(txid);
      } catch (err) {
        if (err instanceof ElectrumError && !err.isTransport) return null;
        throw err;
      }
    });
  }
  confirmations(txid: string) {
    return this.#wrap(async () => {
      try {
        return await this.#client.confirmations(txid);
      } catch (err) {
        if (err instanceof ElectrumError && !err.isTransport) return null;
        throw err;
      }
    });
  }
  broadcast(txHex: string, txid: string) {
    return this.#wrap(async () => {
      try {
        return await this.#client.broadcast(txHex);
      } catch (err) {
        if (err instanceof ElectrumError && !err.isTransport && ALREADY_KNOWN.test(err.message)) return txid;
        if (err instanceof ElectrumError && !err.isTransport) {
          throw E.TX_NOT_VERIFIED.createWith(
            { details: { broadcast: err.message } },
            `broadcast refused: ${err.message}`,
          );
        }
        throw err;
      }
    });
  }
  ping() {
    return this.#wrap(() => this.#client.ping());
  }
  close() {
    this.#client.close();
  }
}

/** The 20-byte 0x form used by JSON-RPC for an EVM or Tron address. */
export function rpcAddress(network: NetworkConfig, address: string): `0x${string}` {
  return (network.type === 'TRON' ? tronAddressToEvm(address) : address.toLowerCase()) as `0x${string}`;
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
    async allowance(network, token, owner, spender) {
      if (!network.rpc_url) throw E.UPSTREAM_UNAVAILABLE.create(`The RPC of network ${network.id}`);
      try {
        return await readErc20Allowance(
          network.rpc_url,
          rpcAddress(network, token),
          rpcAddress(network, owner),
          rpcAddress(network, spender),
        );
      } catch (err) {
        throw E.UPSTREAM_UNAVAILABLE.createWith(
          { cause: err, details: { network: network.id, reason: (err as Error).message } },
          `The RPC of network ${network.id}`,
        );
      }
    },
    async evmReceipt(network, txHash) {
      if (!network.rpc_url) throw E.UPSTREAM_UNAVAILABLE.create(`The RPC of network ${network.id}`);
      try {
        return await readReceipt(network.rpc_url, txHash);
      } catch (err) {
        throw E.UPSTREAM_UNAVAILABLE.createWith({ cause: err }, `The RPC of network ${network.id}`);
      }
    },
    async solanaBlockhash(network, intentId) {
      if (!network.rpc_url) {
        // No Solana node configured (devnet): a deterministic stand-in, so the transaction is well
        // formed and verifiable; it cannot land on a real cluster.
        const h = createHash('sha256').update(`rgbx-swap-offline-blockhash:${intentId}`).digest();
        return { blockhash: base58.encode(h), lastValidBlockHeight: 0n };
      }
      try {
        return await solanaLatestBlockhash(network.rpc_url);
      } catch (err) {
        throw E.UPSTREAM_UNAVAILABLE.createWith({ cause: err }, `The RPC of network ${network.id}`);
      }
    },
    close() {
      btc?.close();
    },
  };
}
