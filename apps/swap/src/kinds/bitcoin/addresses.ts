/**
 * Bitcoin addresses: the network's address encoding, the script an address pays, and the check that
 * a source address (P2TR key path or P2WPKH) belongs to the submitted public key.
 */
import type { BtcNetwork } from '@rgbx/chains/btc';
import { Address, NETWORK, OutScript, p2tr, p2wpkh, TEST_NETWORK } from '@scure/btc-signer';
import type { NetworkConfig } from '../../config.ts';
import { E } from '../../errors.ts';

type BtcSignerNetwork = typeof NETWORK;

const REGTEST: BtcSignerNetwork = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };

export function btcNetworkOf(n: NetworkConfig): BtcNetwork {
  return n.bitcoin_network ?? 'regtest';
}

export function btcSignerNetwork(n: BtcNetwork): BtcSignerNetwork {
  if (n === 'mainnet') return NETWORK;
  if (n === 'regtest') return REGTEST;
  return TEST_NETWORK;
}

/** The scriptPubKey of a Bitcoin address, or undefined if it is not one of `network`. */
export function bitcoinScript(address: string, network: BtcNetwork): Uint8Array | undefined {
  try {
    return OutScript.encode(Address(btcSignerNetwork(network)).decode(address));
  } catch {
    return undefined;
  }
}

export interface BitcoinSource {
  /** The key the HTLC refund leaf and the user's inputs use: 32-byte x-only (P2TR) or 33-byte compressed (P2WPKH). */
  pubkey: Uint8Array;
  kind: 'p2tr' | 'p2wpkh';
  script: Uint8Array;
}

/**
 * Checks that a Bitcoin source address belongs to `publicKeyHex`: P2TR key-path (BIP-86, the key is
 * the untweaked internal key, 32-byte x-only or 33-byte compressed) or P2WPKH (33-byte compressed).
 */
export function bitcoinSource(address: string, publicKeyHex: string, network: BtcNetwork): BitcoinSource {
  const script = bitcoinScript(address, network);
  if (!script) throw E.INVALID_ADDRESS.create('sourceAddress', `not a ${network} Bitcoin address`);
  if (!/^([0-9a-fA-F]{64}|[0-9a-fA-F]{66})$/.test(publicKeyHex)) {
    throw E.INVALID_ADDRESS.create(
      'sourcePublicKey',
      'expected a 32-byte x-only or 33-byte compressed key in hex',
    );
  }
  const key = Uint8Array.from(Buffer.from(publicKeyHex, 'hex'));
  const net = btcSignerNetwork(network);
  const decoded = OutScript.decode(script);
  try {
    if (decoded.type === 'tr') {
      const xonly = key.length === 33 ? key.slice(1) : key;
      if (p2tr(xonly, undefined, net).address !== address) throw new Error('mismatch');
      return { pubkey: xonly, kind: 'p2tr', script };
    }
    if (decoded.type === 'wpkh') {
      if (key.length !== 33) throw new Error('mismatch');
      if (p2wpkh(key, net).address !== address) throw new Error('mismatch');
      return { pubkey: key, kind: 'p2wpkh', script };
    }
  } catch {
    throw E.INVALID_ADDRESS.create('sourcePublicKey', 'does not match the source address');
  }
  throw E.INVALID_ADDRESS.create(
    'sourceAddress',
    'Bitcoin sources must be P2TR (key path) or P2WPKH addresses',
  );
}
