/**
 * eth_estimateGas on the devnode starts every call cold (EIP-2929): no address or storage slot warmed
 * by an earlier eth_call/eth_estimateGas or transaction makes a later estimate cheaper. Two identical
 * estimates are equal, and each one, sent back as the transaction's gas limit, is enough.
 */
import { createHash } from 'node:crypto';
import { buildPermit2TypedData, buildSwapIntentWitness, type EvmAddress } from '@rgbx/chains/evm';
import { type Abi, createPublicClient, encodeFunctionData, type Hex, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approveErc20,
  deploySwapContracts,
  deployTestToken,
  type EvmDevnode,
  SIGNATURE_TRANSFER,
  SWAP_ESCROW,
  startEvmDevnode,
  TEST_TOKEN,
} from './index.ts';
import { devnodeClients } from './token.ts';

const ESCROW_CALL_ABI = [...SWAP_ESCROW.abi, ...SIGNATURE_TRANSFER.abi] as const;

let node: EvmDevnode;
let pub: ReturnType<typeof createPublicClient>;
let token: EvmAddress;
let permit2: EvmAddress;
let escrow: EvmAddress;
let deployerKey: Hex;
let ownerKey: Hex;
let owner: EvmAddress;
let resolverKey: Hex;
let resolver: EvmAddress;

beforeAll(async () => {
  node = await startEvmDevnode({ accountCount: 3 });
  [deployerKey, ownerKey, resolverKey] = node.accounts.map((a) => a.privateKey) as [Hex, Hex, Hex];
  [, owner, resolver] = node.accounts.map((a) => a.address) as [EvmAddress, EvmAddress, EvmAddress];
  pub = createPublicClient({ transport: http(node.rpcUrl) });
  token = await deployTestToken(node.rpcUrl, node.chainId, deployerKey, {
    symbol: 'USDC',
    supply: 10n ** 30n,
  });
  ({ permit2, escrow } = await deploySwapContracts(node.rpcUrl, node.chainId, deployerKey, {
    refundDelaySecs: 3_600n,
  }));
  // both the owner and the resolver hold tokens already: later transfers change no zero balance to
  // non-zero, so the same call costs the same before and after a transaction
  await sendWithGas(deployerKey, token, TEST_TOKEN.abi, 'transfer', [owner, 10n ** 24n]);
  await sendWithGas(deployerKey, token, TEST_TOKEN.abi, 'transfer', [resolver, 10n ** 24n]);
  await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, permit2, 2n ** 256n - 1n);
});

afterAll(async () => {
  await node?.stop();
});

/** The node's own eth_estimateGas answer, with nothing in between (no client-side padding). */
async function estimate(from: EvmAddress, to: EvmAddress, data: Hex): Promise<bigint> {
  return BigInt(await pub.request({ method: 'eth_estimateGas', params: [{ from, to, data }] }));
}

/** Sends the call with `gas` as its gas limit (no estimate by the client when given); returns the receipt. */
async function sendWithGas(
  key: Hex,
  to: EvmAddress,
  abi: Abi,
  functionName: string,
  args: unknown[],
  gas?: bigint,
) {
  const c = devnodeClients(node.rpcUrl, node.chainId, key);
  const hash = await c.wallet.writeContract({
    address: to,
    abi,
    functionName,
    args,
    ...(gas ? { gas } : {}),
  });
  return c.public.waitForTransactionReceipt({ hash, pollingInterval: 20 });
}

/**
 * Estimates `functionName(args)` from `key`'s account twice (and an eth_call between), expects the same
 * answer, sends it with that gas limit and expects success. Returns the estimate.
 */
async function estimateTwiceAndSend(
  key: Hex,
  to: EvmAddress,
  abi: Abi,
  functionName: string,
  args: unknown[],
): Promise<bigint> {
  const from = privateKeyToAccount(key).address;
  const data = encodeFunctionData({ abi, functionName, args });
  const first = await estimate(from, to, data);
  await pub.request({ method: 'eth_call', params: [{ from, to, data }, 'latest'] });
  const second = await estimate(from, to, data);
  expect(second, `${functionName}: second estimate`).toBe(first);
  const receipt = await sendWithGas(key, to, abi, functionName, args, second);
  expect(receipt.status, `${functionName} sent with gas ${second}`).toBe('success');
  expect(receipt.gasUsed).toBeLessThanOrEqual(second);
  return second;
}

describe('eth_estimateGas starts every call cold', () => {
  it('ERC-20 transfer: identical estimates, before and after the transaction, each enough as the gas limit', async () => {
    const args = [resolver, 1_000n];
    const before = await estimateTwiceAndSend(ownerKey, token, TEST_TOKEN.abi, 'transfer', args);
    // the mined transfer leaves nothing warm for the next estimate of the same transfer
    const after = await estimateTwiceAndSend(ownerKey, token, TEST_TOKEN.abi, 'transfer', args);
    expect(after).toBe(before);
  });

  it('SwapEscrow deposit then claim: identical estimates, each enough as the gas limit', async () => {
    const preimage = `0x${createHash('sha256').update('gas-test-preimage').digest('hex')}` as Hex;
    const secretHash = `0x${createHash('sha256')
      .update(Buffer.from(preimage.slice(2), 'hex'))
      .digest('hex')}` as Hex;
    const td = buildPermit2TypedData({
      chainId: node.chainId,
      permit2Address: permit2,
      token,
      amount: 1_000_000n,
      spender: escrow,
      nonce: 7n,
      deadline: 4_000_000_000n,
      witness: buildSwapIntentWitness({
        intentId: '00000000-0000-4000-8000-000000000a57',
        resolver,
        destChainId: 1n,
        destToken: 'btc',
        destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
        minAmountOut: 99_000n,
        maxAmountOut: 100_000n,
        secretHash,
        deadline: 4_000_000_000n,
      }),
    });
    const signature = await privateKeyToAccount(ownerKey).signTypedData({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    await estimateTwiceAndSend(resolverKey, escrow, ESCROW_CALL_ABI as unknown as Abi, 'deposit', [
      { permitted: td.message.permitted, nonce: td.message.nonce, deadline: td.message.deadline },
      owner,
      { ...td.message.witness },
      signature,
    ]);
    await estimateTwiceAndSend(resolverKey, escrow, ESCROW_CALL_ABI as unknown as Abi, 'claim', [
      td.message.witness.intentId,
      owner,
      preimage,
    ]);
  });
});
