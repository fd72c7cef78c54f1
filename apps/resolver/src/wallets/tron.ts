/**
 * The resolver's hot wallet on a Tron network, for the devnet only.
 *
 * Why only the devnet: our devnet's "Tron" network is the same EVM devnode as the EVM network, read
 * through its Ethereum-compatible JSON-RPC, with addresses written in Tron base58. There an
 * Ethereum-style signed transaction (RLP, EIP-1559) is what the node executes, so this wallet is an
 * {@link EvmWallet} on the same key with base58 addresses at its edges. A real Tron network does NOT
 * accept Ethereum-style signed transactions: its JSON-RPC (`eth_sendRawTransaction` is not served
 * there) only reads, and a transaction is broadcast as a protobuf Tron `Transaction` (raw_data with ref
 * block bytes/hash, expiration, fee_limit, a TriggerSmartContract) signed over sha256(raw_data), through
 * the full node's HTTP `/wallet/broadcasttransaction`. That is not implemented, so the constructor
 * refuses unless `devnetJsonRpcBroadcast: true` says the network is the devnode; the resolver then
 * declines Tron intents instead of signing transactions it could never broadcast.
 *
 * Addresses: `identity` is the key's Tron base58 address (what the swap service's `[[resolvers]]`
 * `tron_address` lists); tokens, recipients, the escrow and the intents' owners are base58 and are
 * converted to their 20-byte hex form for the node. Transaction ids are the EVM transaction hashes.
 */
import { tronAddressFromHex, tronAddressToEvm } from '@rgbx/chains/tron';
import { getAddress } from 'viem';
import { EvmWallet } from './evm.ts';
import type { ChainWallet, IntentView, PaymentRequest, SignedTx, TxState } from './wallet.ts';

type Hex = `0x${string}`;

export interface TronWalletOptions {
  /** The node's Ethereum-compatible JSON-RPC endpoint (on the devnet: the EVM devnode's). */
  rpcUrl: string;
  /** The chain id the node's `eth_chainId` answers (signed into every transaction). */
  chainId: number | bigint;
  /** The hot wallet's secp256k1 key (0x + 64 hex). */
  privateKey: Hex;
  /** The `SwapEscrow` contract, Tron base58. */
  escrow: string;
  /** As {@link EvmWallet}'s. */
  gasPriceFallback?: bigint;
  /**
   * Must be `true`: the network takes Ethereum-style signed transactions over `eth_sendRawTransaction`
   * (our devnet's Tron network, an EVM devnode). A real Tron network does not; see the module comment.
   */
  devnetJsonRpcBroadcast: boolean;
}

/** A Tron base58 address (`T…`) as its checksummed 0x EVM form; 0x addresses are refused. */
export function tronToEvmAddress(address: string, field: string): Hex {
  if (typeof address !== 'string' || address.startsWith('0x'))
    throw new Error(`Tron wallet: ${field} must be a Tron base58 address (T…), received ${String(address)}`);
  try {
    return getAddress(tronAddressToEvm(address));
  } catch (e) {
    throw new Error(`Tron wallet: ${field} is not a valid Tron address: ${address}`, { cause: e });
  }
}

export class TronWallet implements ChainWallet {
  readonly type = 'TRON' as const;
  /** The hot wallet's Tron base58 address. */
  readonly identity: string;
  /** The EVM wallet on the same key and node that signs and sends. */
  readonly evm: EvmWallet;

  constructor(opts: TronWalletOptions) {
    if (opts.devnetJsonRpcBroadcast !== true)
      throw new Error(
        'Tron wallet: a real Tron network does not accept Ethereum-style signed transactions over JSON-RPC ' +
          '(it needs a protobuf Tron transaction sent to /wallet/broadcasttransaction, not implemented); ' +
          'only the devnet, whose Tron network is an EVM devnode, is supported (devnetJsonRpcBroadcast: true)',
      );
    this.evm = new EvmWallet({
      rpcUrl: opts.rpcUrl,
      chainId: opts.chainId,
      privateKey: opts.privateKey,
      escrow: tronToEvmAddress(opts.escrow, 'escrow'),
      ...(opts.gasPriceFallback !== undefined ? { gasPriceFallback: opts.gasPriceFallback } : {}),
      toEvmAddress: tronToEvmAddress,
    });
    this.identity = tronAddressFromHex(this.evm.address);
  }

  balance(token: string): Promise<bigint> {
    return this.evm.balance(token);
  }

  signPayment(p: PaymentRequest): Promise<SignedTx> {
    return this.evm.signPayment(p);
  }

  signDeposit(intent: IntentView): Promise<SignedTx | null> {
    return this.evm.signDeposit(intent);
  }

  signClaim(intent: IntentView, preimage: string): Promise<SignedTx | null> {
    return this.evm.signClaim(intent, preimage);
  }

  broadcast(tx: SignedTx): Promise<void> {
    return this.evm.broadcast(tx);
  }

  status(tx: SignedTx): Promise<TxState> {
    return this.evm.status(tx);
  }

  track(tx: SignedTx): void {
    this.evm.track(tx);
  }

  close(): Promise<void> {
    return this.evm.close();
  }
}
