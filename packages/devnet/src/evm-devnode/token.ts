import type { EvmAddress } from '@rgbx/chains/evm';
import {
  type Abi,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { PERMIT2_DIGEST_PROBE, TEST_TOKEN } from './artifacts.ts';

/** Per-request timeout of the devnode clients (ms). */
const DEVNODE_RPC_TIMEOUT_MS = 60_000;

/** viem clients for a devnode (or any node) at `rpcUrl` signing with `privateKey`. Shared with escrow.ts. */
export function devnodeClients(
  rpcUrl: string,
  chainId: bigint,
  privateKey: `0x${string}`,
): {
  account: PrivateKeyAccount;
  public: PublicClient<Transport, Chain>;
  wallet: WalletClient<Transport, Chain, PrivateKeyAccount>;
} {
  const chain = defineChain({
    id: Number(chainId),
    name: 'rgbx-evm-devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const account = privateKeyToAccount(privateKey);
  // viem's default 10 s per request is too short for a devnode sharing a loaded CI machine (CI saw a
  // contract deployment's eth_sendRawTransaction time out); a retried send of the same signed bytes is
  // harmless (same hash), but a timed-out deploy fails the caller.
  const transport = http(rpcUrl, { timeout: DEVNODE_RPC_TIMEOUT_MS });
  return {
    account,
    public: createPublicClient({ chain, transport }),
    wallet: createWalletClient({ account, chain, transport }),
  };
}

/** Deploys `bytecode` with constructor `args` and waits for the receipt; throws unless it succeeded. Shared with escrow.ts. */
export async function deploy(
  rpcUrl: string,
  chainId: bigint,
  privateKey: `0x${string}`,
  abi: Abi,
  bytecode: `0x${string}`,
  args: unknown[],
): Promise<EvmAddress> {
  const c = devnodeClients(rpcUrl, chainId, privateKey);
  const hash = await c.wallet.deployContract({ abi, bytecode, args });
  const receipt = await c.public.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  if (receipt.status !== 'success' || !receipt.contractAddress)
    throw new Error(`deployment ${hash} failed: ${receipt.status}`);
  return receipt.contractAddress;
}

/**
 * Deploys the test ERC-20 (`test/evm/TestToken.sol`, compiled by solc-js; see artifacts.ts): the whole
 * `supply` goes to the deployer.
 *
 * @example
 * const token = await deployTestToken(node.rpcUrl, node.chainId, node.accounts[0].privateKey, { supply: 10n ** 24n });
 */
export function deployTestToken(
  rpcUrl: string,
  chainId: bigint,
  privateKey: `0x${string}`,
  opts: { name?: string; symbol?: string; supply: bigint },
): Promise<EvmAddress> {
  return deploy(rpcUrl, chainId, privateKey, TEST_TOKEN.abi, TEST_TOKEN.bytecode, [
    opts.name ?? 'Test Token',
    opts.symbol ?? 'TST',
    opts.supply,
  ]);
}

/** Deploys `Permit2DigestProbe` (recomputes Permit2's witness digest on chain and ecrecovers). */
export function deployPermit2DigestProbe(
  rpcUrl: string,
  chainId: bigint,
  privateKey: `0x${string}`,
): Promise<EvmAddress> {
  return deploy(rpcUrl, chainId, privateKey, PERMIT2_DIGEST_PROBE.abi, PERMIT2_DIGEST_PROBE.bytecode, []);
}

/**
 * Sends `token.approve(spender, amount)` from `privateKey`'s account and waits for the receipt.
 *
 * @example
 * await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2_ADDRESS, 10n ** 18n);
 */
export async function approveErc20(
  rpcUrl: string,
  chainId: bigint,
  privateKey: `0x${string}`,
  token: EvmAddress,
  spender: EvmAddress,
  amount: bigint,
): Promise<`0x${string}`> {
  const c = devnodeClients(rpcUrl, chainId, privateKey);
  const hash = await c.wallet.writeContract({
    address: token,
    abi: TEST_TOKEN.abi,
    functionName: 'approve',
    args: [spender, amount],
  });
  const receipt = await c.public.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  if (receipt.status !== 'success') throw new Error(`approve ${hash} reverted`);
  return hash;
}
