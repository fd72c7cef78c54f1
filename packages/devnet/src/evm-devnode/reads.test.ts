import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  buildPermit2TypedData,
  buildSwapIntentWitness,
  ChainInputError,
  type EvmAddress,
  evmBlockNumber,
  evmBlockTime,
  evmReceipt,
  evmTransaction,
  PERMIT2_ADDRESS,
  readErc20Allowance,
  verifyPermit2Signature,
} from '@rgbx/chains/evm';
import { createPublicClient, encodeFunctionData, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectReadError } from '../test-reads.ts';
import {
  approveErc20,
  deployPermit2DigestProbe,
  deployTestToken,
  type EvmDevnode,
  PERMIT2_DIGEST_PROBE,
  startEvmDevnode,
  TEST_TOKEN,
} from './index.ts';

let node: EvmDevnode;
let token: EvmAddress;
let ownerKey: `0x${string}`;
let owner: EvmAddress;
let other: EvmAddress;

beforeAll(async () => {
  node = await startEvmDevnode();
  ownerKey = node.accounts[0]!.privateKey;
  owner = node.accounts[0]!.address;
  other = node.accounts[1]!.address;
  token = await deployTestToken(node.rpcUrl, node.chainId, ownerKey, { supply: 1_000_000n * 10n ** 18n });
});

afterAll(async () => {
  await node?.stop();
});

describe('readErc20Allowance against a local EVM node with a real ERC-20', () => {
  it('is 0n before any approval', async () => {
    expect(await readErc20Allowance(node.rpcUrl, token, owner, PERMIT2_ADDRESS)).toBe(0n);
  });

  it('returns exactly the approved amount after approve(Permit2, X), per owner and spender', async () => {
    const x = 123_456_789_012_345_678_901_234_567n; // > 2^53: no float on the way
    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2_ADDRESS, x);
    expect(await readErc20Allowance(node.rpcUrl, token, owner, PERMIT2_ADDRESS)).toBe(x);
    expect(await readErc20Allowance(node.rpcUrl, token, owner, other)).toBe(0n);
    expect(await readErc20Allowance(node.rpcUrl, token, other, PERMIT2_ADDRESS)).toBe(0n);
    // max approval (what wallets send): 2^256 - 1 round-trips exactly
    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, PERMIT2_ADDRESS, 2n ** 256n - 1n);
    expect(
      await readErc20Allowance(node.rpcUrl, token, owner.toLowerCase() as EvmAddress, PERMIT2_ADDRESS),
    ).toBe(2n ** 256n - 1n);
    // viem reading the same contract agrees (an independent client over the same node)
    const client = createPublicClient({ transport: http(node.rpcUrl) });
    expect(
      await client.readContract({
        address: token,
        abi: TEST_TOKEN.abi,
        functionName: 'allowance',
        args: [owner, PERMIT2_ADDRESS],
      }),
    ).toBe(2n ** 256n - 1n);
  });

  it('the token really is an ERC-20: transferFrom by the spender consumes the allowance', async () => {
    const spenderKey = node.accounts[2]!.privateKey;
    const spender = node.accounts[2]!.address;
    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, spender, 500n);
    const client = createPublicClient({ transport: http(node.rpcUrl) });
    const account = privateKeyToAccount(spenderKey);
    const nonce = await client.getTransactionCount({ address: spender });
    const raw = await account.signTransaction({
      chainId: Number(node.chainId),
      type: 'eip1559',
      nonce,
      to: token,
      gas: 100_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 9n,
      data: encodeFunctionData({
        abi: TEST_TOKEN.abi,
        functionName: 'transferFrom',
        args: [owner, other, 200n],
      }),
    });
    const hash = await client.sendRawTransaction({ serializedTransaction: raw });
    expect((await client.getTransactionReceipt({ hash })).status).toBe('success');
    expect(await readErc20Allowance(node.rpcUrl, token, owner, spender)).toBe(300n);
    expect(
      await client.readContract({
        address: token,
        abi: TEST_TOKEN.abi,
        functionName: 'balanceOf',
        args: [other],
      }),
    ).toBe(200n);
  });

  it('typed errors: no code at the address, a reverting contract, unreachable node, timeout, bad input', async () => {
    const noCode = await expectReadError(
      readErc20Allowance(node.rpcUrl, other, owner, PERMIT2_ADDRESS),
      'bad_response',
    );
    expect(noCode.message).toMatch(/expected one 32-byte word, received "0x" \(no contract code/);
    const probe = await deployPermit2DigestProbe(node.rpcUrl, node.chainId, ownerKey); // has no allowance(): reverts
    const reverted = await expectReadError(
      readErc20Allowance(node.rpcUrl, probe, owner, PERMIT2_ADDRESS),
      'rpc',
    );
    expect(reverted.rpcCode).toBe(3);
    await expectReadError(
      readErc20Allowance('http://127.0.0.1:9', token, owner, PERMIT2_ADDRESS),
      'unreachable',
    );
    const silent: Server = createServer(() => {
      // never answers
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const t0 = Date.now();
    const e = await expectReadError(
      readErc20Allowance(url, token, owner, PERMIT2_ADDRESS, { timeoutMs: 200 }),
      'timeout',
    );
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(e.message).toMatch(/within 200 ms/);
    silent.closeAllConnections();
    silent.close();
    const http500: Server = createServer((_q, res) => {
      res.writeHead(500);
      res.end('boom');
    });
    await new Promise<void>((r) => http500.listen(0, '127.0.0.1', r));
    await expectReadError(
      readErc20Allowance(
        `http://127.0.0.1:${(http500.address() as AddressInfo).port}`,
        token,
        owner,
        PERMIT2_ADDRESS,
      ),
      'http',
    );
    http500.close();
    await expect(
      readErc20Allowance(node.rpcUrl, '0x1234' as EvmAddress, owner, PERMIT2_ADDRESS),
    ).rejects.toThrow(ChainInputError);
  });
});

describe('settlement reads through viem: receipts, transactions, blocks', () => {
  it('a mined approve(): receipt with its Approval log, the transaction, its block and time', async () => {
    const spender = node.accounts[3]!.address;
    const hash = await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, spender, 42n);
    const receipt = await evmReceipt(node.rpcUrl, hash);
    expect(receipt).toMatchObject({ status: 'success', from: owner.toLowerCase(), to: token.toLowerCase() });
    const approval = receipt!.logs.find((l) => l.address === token.toLowerCase());
    // Approval(owner, spender, value): topic 1 and 2 are the padded addresses, data the amount
    expect(approval!.topics[1]).toBe(`0x${owner.slice(2).toLowerCase().padStart(64, '0')}`);
    expect(approval!.topics[2]).toBe(`0x${spender.slice(2).toLowerCase().padStart(64, '0')}`);
    expect(BigInt(approval!.data)).toBe(42n);
    const tx = await evmTransaction(node.rpcUrl, hash);
    expect(tx).toEqual({
      from: owner.toLowerCase(),
      to: token.toLowerCase(),
      value: 0n,
      blockNumber: receipt!.blockNumber,
    });
    const tip = await evmBlockNumber(node.rpcUrl);
    expect(tip).toBeGreaterThanOrEqual(receipt!.blockNumber);
    const time = await evmBlockTime(node.rpcUrl, receipt!.blockNumber);
    expect(time).toBeGreaterThan(1_600_000_000);
    // the block number is read fresh each time (viem would otherwise cache it for seconds)
    await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, spender, 43n);
    expect(await evmBlockNumber(node.rpcUrl)).toBe(tip + 1n);
  });

  it('unknown transaction and future block are null, not errors', async () => {
    const unknown = `0x${'ab'.repeat(32)}`;
    expect(await evmReceipt(node.rpcUrl, unknown)).toBeNull();
    expect(await evmTransaction(node.rpcUrl, unknown)).toBeNull();
    expect(await evmBlockTime(node.rpcUrl, 10n ** 9n)).toBeNull();
  });

  it('a body that is not JSON-RPC is bad_response', async () => {
    const junk: Server = createServer((_q, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('<html>');
    });
    await new Promise<void>((r) => junk.listen(0, '127.0.0.1', r));
    await expectReadError(
      evmBlockNumber(`http://127.0.0.1:${(junk.address() as AddressInfo).port}`),
      'bad_response',
    );
    junk.close();
  });
});

describe('Permit2 witness digest recomputed by Solidity on the EVM', () => {
  it('the contract-side digest (stub + witnessTypeString) equals ours and ecrecover yields the owner', async () => {
    const probe = await deployPermit2DigestProbe(node.rpcUrl, node.chainId, ownerKey);
    const account = privateKeyToAccount(ownerKey);
    const td = buildPermit2TypedData({
      chainId: node.chainId,
      token,
      amount: 5n * 10n ** 18n,
      spender: node.accounts[3]!.address,
      nonce: 77n,
      deadline: 1_900_000_000n,
      witness: buildSwapIntentWitness({
        intentId: '6f1c2a9e-8d4b-4c3a-9e7f-1a2b3c4d5e6f',
        resolver: node.accounts[2]!.address,
        secretHash: `0x${'5a'.repeat(32)}`,
        destChainId: 3n,
        destToken: 'btc',
        destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
        minAmountOut: 10_000n,
        maxAmountOut: 10_200n,
        deadline: 1_900_000_000n,
      }),
    });
    const signature = await account.signTypedData({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    await verifyPermit2Signature(td, signature, owner);
    const client = createPublicClient({ transport: http(node.rpcUrl) });
    const permit = {
      token,
      amount: td.message.permitted.amount,
      spender: td.message.spender,
      nonce: td.message.nonce,
      deadline: td.message.deadline,
    };
    const onChainDigest = await client.readContract({
      address: probe,
      abi: PERMIT2_DIGEST_PROBE.abi,
      functionName: 'digest',
      args: [PERMIT2_ADDRESS, permit, td.witnessHash, td.witnessTypeString],
    });
    expect(onChainDigest).toBe(td.digest);
    const recovered = await client.readContract({
      address: probe,
      abi: PERMIT2_DIGEST_PROBE.abi,
      functionName: 'signer',
      args: [PERMIT2_ADDRESS, permit, td.witnessHash, td.witnessTypeString, signature],
    });
    expect(recovered).toBe(owner);
    // a witness type string without the TokenPermissions tail recovers someone else
    const wrong = await client.readContract({
      address: probe,
      abi: PERMIT2_DIGEST_PROBE.abi,
      functionName: 'signer',
      args: [
        PERMIT2_ADDRESS,
        permit,
        td.witnessHash,
        td.witnessTypeString.replace(/TokenPermissions\(.*\)$/, ''),
        signature,
      ],
    });
    expect(wrong).not.toBe(owner);
  });
});
