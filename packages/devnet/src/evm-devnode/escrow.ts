import {
  ESCROW_CALL_ABI,
  type EscrowDepositParams,
  type EvmAddress,
  escrowDepositArgs,
} from '@rgbx/chains/evm';
import { encodeAbiParameters, keccak256, toEventSelector } from 'viem';
import { SIGNATURE_TRANSFER, SWAP_ESCROW } from './artifacts.ts';
import { deploy, deployTestToken, devnodeClients } from './token.ts';

/**
 * topic0 of the `SwapEscrow` events (`test/evm/SwapEscrow.sol`). These signatures are a contract with
 * the swap service's settlement verifier: they do not change.
 */
export const SWAP_ESCROW_EVENTS = {
  Deposited: toEventSelector(
    'event Deposited(bytes32 indexed intentId, address indexed owner, address indexed token, uint256 amount, address resolver, bytes32 secretHash, uint256 refundAfter)',
  ),
  Claimed: toEventSelector(
    'event Claimed(bytes32 indexed intentId, address indexed resolver, bytes32 preimage)',
  ),
  Refunded: toEventSelector('event Refunded(bytes32 indexed intentId, address indexed owner)'),
} as const;

// ESCROW_CALL_ABI (@rgbx/chains/evm) has the escrow's errors and SignatureTransfer's: a deposit that
// SignatureTransfer rejects reverts with its custom error (passed up unchanged), which viem decodes only
// if the ABI has it.

type Clients = ReturnType<typeof devnodeClients>;

/** Waits for the receipt of `hash`; throws if the transaction reverted. */
async function confirmed(c: Clients, hash: `0x${string}`, what: string): Promise<`0x${string}`> {
  const receipt = await c.public.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  if (receipt.status !== 'success') throw new Error(`${what} ${hash} reverted`);
  return hash;
}

/**
 * Deploys `SignatureTransfer` (our Permit2-compatible signature transfer, `test/evm/SignatureTransfer.sol`)
 * and a `SwapEscrow` that pulls through it, with refunds open `refundDelaySecs` after the intent deadline.
 *
 * @example
 * const { permit2, escrow } = await deploySwapContracts(node.rpcUrl, node.chainId, node.accounts[0].privateKey,
 *   { refundDelaySecs: 3_600n });
 */
export async function deploySwapContracts(
  rpcUrl: string,
  chainId: bigint,
  deployerKey: `0x${string}`,
  opts: { refundDelaySecs: bigint },
): Promise<{ permit2: EvmAddress; escrow: EvmAddress }> {
  const permit2 = await deploy(
    rpcUrl,
    chainId,
    deployerKey,
    SIGNATURE_TRANSFER.abi,
    SIGNATURE_TRANSFER.bytecode,
    [],
  );
  const escrow = await deploy(rpcUrl, chainId, deployerKey, SWAP_ESCROW.abi, SWAP_ESCROW.bytecode, [
    permit2,
    opts.refundDelaySecs,
  ]);
  return { permit2, escrow };
}

/**
 * What `npm start` deploys on its EVM devnode for the swap service, in this fixed order from
 * `deployerKey`'s account: the test USDC (`Test USD`, 10^30 units to the deployer), then
 * SignatureTransfer and SwapEscrow ({@link deploySwapContracts}). CREATE addresses depend only on the
 * deployer and its nonce, so on a fresh devnode with account 0 as deployer they are always
 * account 0's contract addresses at nonces 0, 1, 2: the fallbacks `${EVM_USDC:-…}`, `${EVM_PERMIT2:-…}`,
 * `${EVM_ESCROW:-…}` (and the Tron forms of the same) of `apps/swap/config/devnet.toml`, which
 * devnet-addresses.test.ts holds to this function. Deploy nothing else before it, and change the
 * order or the number of transactions only together with that config.
 *
 * @example
 * const { usdc, permit2, escrow } = await deploySwapDevnet(node.rpcUrl, node.chainId,
 *   node.accounts[0].privateKey, { refundDelaySecs: 3_600n });
 */
export async function deploySwapDevnet(
  rpcUrl: string,
  chainId: bigint,
  deployerKey: `0x${string}`,
  opts: { refundDelaySecs: bigint },
): Promise<{ usdc: EvmAddress; permit2: EvmAddress; escrow: EvmAddress }> {
  const usdc = await deployTestToken(rpcUrl, chainId, deployerKey, {
    name: 'Test USD',
    symbol: 'USDC',
    supply: 10n ** 30n,
  });
  const { permit2, escrow } = await deploySwapContracts(rpcUrl, chainId, deployerKey, opts);
  return { usdc, permit2, escrow };
}

export type { EscrowDepositParams };

/**
 * Calls `SwapEscrow.deposit` from `callerKey`'s account (the resolver, or anyone): the escrow pulls
 * `amount` of `token` from `owner` through SignatureTransfer and locks it under
 * `lockId = keccak256(abi.encode(witness.intentId, owner))` (see {@link escrowLockId}): a lock by someone
 * else under the same intent id does not block it.
 * Returns the transaction hash once the receipt is in.
 *
 * @throws viem's ContractFunctionExecutionError when the call reverts (custom error decoded, e.g.
 *   `InvalidNonce`, `InvalidSigner`, `SignatureExpired`, `AlreadyLocked`); Error if the mined tx reverted
 * @example
 * await escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow,
 *   { token, amount, nonce, deadline, owner, witness: td.message.witness, signature });
 */
export async function escrowDeposit(
  rpcUrl: string,
  chainId: bigint,
  callerKey: `0x${string}`,
  escrow: EvmAddress,
  p: EscrowDepositParams,
): Promise<`0x${string}`> {
  const c = devnodeClients(rpcUrl, chainId, callerKey);
  const hash = await c.wallet.writeContract({
    address: escrow,
    abi: ESCROW_CALL_ABI,
    functionName: 'deposit',
    args: escrowDepositArgs(p),
  });
  return confirmed(c, hash, 'SwapEscrow.deposit');
}

/**
 * `SwapEscrow.lockIdOf(intentId, owner)` computed off chain: `keccak256(abi.encode(intentId, owner))`, the
 * key of `owner`'s lock for `intentId` in the escrow's `locks` mapping.
 *
 * @example
 * const lock = await publicClient.readContract({ address: escrow, abi: SWAP_ESCROW.abi,
 *   functionName: 'locks', args: [escrowLockId(witness.intentId, owner)] });
 */
export function escrowLockId(intentIdBytes32: `0x${string}`, owner: EvmAddress): `0x${string}` {
  return keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'address' }], [intentIdBytes32, owner]));
}

/**
 * Calls `SwapEscrow.claim(intentId, owner, preimage)`: pays `owner`'s lock for the intent to its resolver
 * if sha256(preimage) is the lock's secretHash and refundAfter has not come. Returns the transaction hash
 * once the receipt is in.
 *
 * @throws as {@link escrowDeposit} (`NotLocked`, `InvalidPreimage`, `ClaimWindowClosed`)
 * @example
 * await escrowClaim(node.rpcUrl, node.chainId, resolverKey, escrow, witness.intentId, owner, preimage);
 */
export async function escrowClaim(
  rpcUrl: string,
  chainId: bigint,
  callerKey: `0x${string}`,
  escrow: EvmAddress,
  intentIdBytes32: `0x${string}`,
  owner: EvmAddress,
  preimage: `0x${string}`,
): Promise<`0x${string}`> {
  const c = devnodeClients(rpcUrl, chainId, callerKey);
  const hash = await c.wallet.writeContract({
    address: escrow,
    abi: ESCROW_CALL_ABI,
    functionName: 'claim',
    args: [intentIdBytes32, owner, preimage],
  });
  return confirmed(c, hash, 'SwapEscrow.claim');
}

/**
 * Calls `SwapEscrow.refund(intentId, owner)`: pays `owner`'s lock for the intent back to `owner` from
 * refundAfter on. Returns the transaction hash once the receipt is in. `eth_call`/gas estimation runs at
 * the latest block's timestamp, so on an idle devnode mine a block (`evm_mine`) once refundAfter has passed.
 *
 * @throws as {@link escrowDeposit} (`NotLocked`, `RefundNotYetAvailable`)
 * @example
 * await escrowRefund(node.rpcUrl, node.chainId, anyKey, escrow, witness.intentId, owner);
 */
export async function escrowRefund(
  rpcUrl: string,
  chainId: bigint,
  callerKey: `0x${string}`,
  escrow: EvmAddress,
  intentIdBytes32: `0x${string}`,
  owner: EvmAddress,
): Promise<`0x${string}`> {
  const c = devnodeClients(rpcUrl, chainId, callerKey);
  const hash = await c.wallet.writeContract({
    address: escrow,
    abi: ESCROW_CALL_ABI,
    functionName: 'refund',
    args: [intentIdBytes32, owner],
  });
  return confirmed(c, hash, 'SwapEscrow.refund');
}
