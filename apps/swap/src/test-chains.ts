/**
 * Real chains for settlement tests (imported by `*.test.ts` only): the EVM devnode (EthereumJS) with a
 * USDC-like ERC-20, a second ERC-20 (the "wrong token"), our Permit2-compatible SignatureTransfer and
 * the SwapEscrow deployed; the Solana devnode (litesvm). The test resolvers' EVM/Tron/Solana
 * identities are funded there. The Tron network of the tests is read through this same EVM node's
 * JSON-RPC (how a Tron full node's Ethereum-compatible endpoint is read), with the contracts'
 * addresses in Tron base58 form.
 */
import { createHash } from 'node:crypto';
import { tronAddressFromHex, tronAddressToEvm } from '@rgbx/chains/tron';
import {
  deploySwapContracts,
  deployTestToken,
  type EvmDevnode,
  escrowDeposit,
  startEvmDevnode,
  TEST_TOKEN,
} from '@rgbx/devnet/evm-devnode';
import { type SolanaDevnode, startSolanaDevnode } from '@rgbx/devnet/sol-devnode';
import { base58 } from '@scure/base';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstruction,
  type Blockhash,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { TestConfigOptions } from './test-support.ts';
import { RESOLVER_EVM_KEY, RESOLVER_SOL_SIGNER, RESOLVER_TRON } from './test-support.ts';

type Hex = `0x${string}`;

export interface TestChains {
  evm: EvmDevnode;
  sol: SolanaDevnode;
  usdc: Hex;
  /** Another ERC-20: a payment in it is "the wrong token". */
  otherToken: Hex;
  permit2: Hex;
  escrow: Hex;
  /** Config options for startTestService: EVM (network 2), Tron (3) on the EVM devnode, Solana (4). */
  config: Omit<TestConfigOptions, 'databaseUrl'>;
  /** ERC-20 `transfer` signed by `fromKey`; resolves with the tx hash once mined. */
  erc20Transfer(fromKey: Hex, token: Hex, to: string, amount: bigint): Promise<Hex>;
  /** ERC-20 `approve` (owner → spender). */
  erc20Approve(ownerKey: Hex, token: Hex, spender: Hex, amount: bigint): Promise<Hex>;
  /** Native value transfer. */
  ethTransfer(fromKey: Hex, to: Hex, value: bigint): Promise<Hex>;
  /** The resolver pulls the user's tokens into the escrow with the Permit2 signature from the intent's execution data. */
  escrowDepositFromExecution(execution: Record<string, unknown>): Promise<Hex>;
  /** System transfer on the Solana devnode signed by `from`; returns the signature (tx id). */
  solTransfer(from: KeyPairSigner, to: string, lamports: bigint): Promise<string>;
  /** Sends a wire transaction (hex) to the Solana devnode; returns signature 0. */
  solSend(txHex: string): Promise<string>;
  stop(): Promise<void>;
}

async function solRpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export const TEST_REFUND_DELAY_SECS = 3600n;

export async function startTestChains(): Promise<TestChains> {
  const evm = await startEvmDevnode();
  const sol = await startSolanaDevnode();
  const deployer = evm.accounts[0]!.privateKey;
  const chain = defineChain({
    id: Number(evm.chainId),
    name: 'devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [evm.rpcUrl] } },
  });
  const pub = createPublicClient({ chain, transport: http(evm.rpcUrl) });
  const wallet = (key: Hex) =>
    createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(evm.rpcUrl) });
  const mined = async (hash: Hex) => {
    const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (r.status !== 'success') throw new Error(`${hash} reverted`);
    return hash;
  };
  const erc20Transfer = async (fromKey: Hex, token: Hex, to: string, amount: bigint) =>
    mined(
      await wallet(fromKey).writeContract({
        address: token,
        abi: TEST_TOKEN.abi,
        functionName: 'transfer',
        args: [to as Hex, amount],
      }),
    );
  const erc20Approve = async (ownerKey: Hex, token: Hex, spender: Hex, amount: bigint) =>
    mined(
      await wallet(ownerKey).writeContract({
        address: token,
        abi: TEST_TOKEN.abi,
        functionName: 'approve',
        args: [spender, amount],
      }),
    );
  const ethTransfer = async (fromKey: Hex, to: Hex, value: bigint) =>
    mined(await wallet(fromKey).sendTransaction({ to, value }));

  const usdc = (await deployTestToken(evm.rpcUrl, evm.chainId, deployer, {
    symbol: 'USDC',
    supply: 10n ** 30n,
  })) as Hex;
  const otherToken = (await deployTestToken(evm.rpcUrl, evm.chainId, deployer, {
    symbol: 'OTHER',
    supply: 10n ** 30n,
  })) as Hex;
  const { permit2, escrow } = await deploySwapContracts(evm.rpcUrl, evm.chainId, deployer, {
    refundDelaySecs: TEST_REFUND_DELAY_SECS,
  });
  // The resolvers' identities pay destinations: gas and tokens on the devnode (EVM and "Tron").
  const resolverEvm = privateKeyToAccount(RESOLVER_EVM_KEY).address;
  const resolverTron = tronAddressToEvm(RESOLVER_TRON.address);
  for (const a of [resolverEvm, resolverTron]) {
    await ethTransfer(deployer, a, 10n ** 20n);
    await erc20Transfer(deployer, usdc, a, 10n ** 27n);
    await erc20Transfer(deployer, otherToken, a, 10n ** 27n);
  }
  await sol.airdrop(RESOLVER_SOL_SIGNER.address, 100n * 10n ** 9n);

  const solSend = async (txHex: string) =>
    solRpc<string>(sol.rpcUrl, 'sendTransaction', [
      Buffer.from(txHex, 'hex').toString('base64'),
      { encoding: 'base64' },
    ]);

  return {
    evm,
    sol,
    usdc,
    otherToken,
    permit2: permit2 as Hex,
    escrow: escrow as Hex,
    config: {
      evmRpcUrl: evm.rpcUrl,
      usdc,
      permit2,
      escrow,
      evmChainId: Number(evm.chainId),
      tronRpcUrl: evm.rpcUrl,
      tronChainId: Number(evm.chainId),
      tronPermit2: tronAddressFromHex(permit2),
      tronEscrow: tronAddressFromHex(escrow),
      tronUsdt: tronAddressFromHex(usdc),
      solRpcUrl: sol.rpcUrl,
      refundSafetyMarginSecs: Number(TEST_REFUND_DELAY_SECS),
    },
    erc20Transfer,
    erc20Approve,
    ethTransfer,
    async escrowDepositFromExecution(execution) {
      const td = execution.typed_data as {
        message: {
          permitted: { token: Hex; amount: string };
          nonce: string;
          deadline: string;
          witness: Record<string, string>;
        };
        domain: { verifyingContract: Hex };
      };
      const m = td.message;
      const w = m.witness;
      return escrowDeposit(evm.rpcUrl, evm.chainId, deployer, escrow, {
        token: m.permitted.token,
        amount: BigInt(m.permitted.amount),
        nonce: BigInt(m.nonce),
        deadline: BigInt(m.deadline),
        owner: (String(execution.owner).startsWith('0x')
          ? execution.owner
          : tronAddressToEvm(String(execution.owner))) as Hex,
        witness: {
          intentId: w.intentId as Hex,
          resolver: w.resolver as Hex,
          secretHash: w.secretHash as Hex,
          destChainId: BigInt(w.destChainId!),
          destToken: w.destToken as Hex,
          destAddress: w.destAddress as Hex,
          minAmountOut: BigInt(w.minAmountOut!),
          maxAmountOut: BigInt(w.maxAmountOut!),
          deadline: BigInt(w.deadline!),
        },
        signature: execution.permit2_signature as Hex,
      });
    },
    async solTransfer(from, to, lamports) {
      const { value } = await solRpc<{ value: { blockhash: string; lastValidBlockHeight: number } }>(
        sol.rpcUrl,
        'getLatestBlockhash',
        [{ commitment: 'finalized' }],
      );
      const data = new Uint8Array(12);
      const view = new DataView(data.buffer);
      view.setUint32(0, 2, true);
      view.setBigUint64(4, lamports, true);
      const message = pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(from, m),
        (m) =>
          setTransactionMessageLifetimeUsingBlockhash(
            {
              blockhash: value.blockhash as Blockhash,
              lastValidBlockHeight: BigInt(value.lastValidBlockHeight),
            },
            m,
          ),
        (m) =>
          appendTransactionMessageInstruction(
            {
              programAddress: '11111111111111111111111111111111' as Address,
              accounts: [
                { address: from.address, role: AccountRole.WRITABLE_SIGNER, signer: from },
                { address: to as Address, role: AccountRole.WRITABLE },
              ],
              data,
            } as never,
            m,
          ),
      );
      const signed = await signTransactionMessageWithSigners(message);
      return solRpc<string>(sol.rpcUrl, 'sendTransaction', [
        getBase64EncodedWireTransaction(signed),
        { encoding: 'base64' },
      ]);
    },
    solSend,
    async stop() {
      await sol.stop();
      await evm.stop();
    },
  };
}

/** An id of the network's shape that no chain has: the "fake hash" negatives. */
export function fakeTxHash(kind: 'btc' | 'evm' | 'sol', seed: string): string {
  const h = createHash('sha256').update(`rgbx-fake-${seed}`).digest();
  if (kind === 'btc') return h.toString('hex');
  if (kind === 'evm') return `0x${h.toString('hex')}`;
  return base58.encode(Buffer.concat([h, createHash('sha256').update(h).digest()]));
}
