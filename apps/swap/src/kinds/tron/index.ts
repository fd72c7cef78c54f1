/**
 * Tron: the EVM kind's Permit2 escrow and legs (`../evm`), signed as TIP-712 and read through the
 * Tron full node's Ethereum-compatible JSON-RPC; addresses are base58check (`T…`) on the wire and
 * mapped to their 20-byte hex form for the RPC.
 */
import { isTronAddress, tronAddressToEvm } from '@rgbx/chains/tron';
import { permit2Kind } from '../evm/index.ts';
import { exactTokenKey, type NetworkKind } from '../kind.ts';

export const tron: NetworkKind = permit2Kind({
  type: 'TRON',
  permit2: 'tron',
  identityKey: 'tron_address',
  resolver: (r) => r.tronAddress,
  isAddress: isTronAddress,
  tokenKey: exactTokenKey,
  toRpc: (address) => tronAddressToEvm(address) as `0x${string}`,
});
