import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Block, createBlock } from '@ethereumjs/block';
import { createCustomCommon, Hardfork, Mainnet } from '@ethereumjs/common';
import { createTxFromRLP, type TypedTransaction } from '@ethereumjs/tx';
import {
  type Address,
  bytesToHex,
  createAccount,
  createAddressFromPrivateKey,
  createAddressFromString,
  createZeroAddress,
  hexToBytes,
} from '@ethereumjs/util';
import { buildBlock, createVM, type RunTxResult, type VM } from '@ethereumjs/vm';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { getAddress } from 'viem';

/**
 * A local EVM JSON-RPC node for tests and the devnet: the @ethereumjs/vm execution engine (the EVM
 * implementation in JavaScript maintained by the Ethereum Foundation's EthereumJS team) behind a
 * small HTTP JSON-RPC front end written here. Every `eth_sendRawTransaction` is mined into its own
 * block at once (automine). State is in memory and only the latest state is kept, so state queries at
 * an older block answer an error instead of a wrong value.
 *
 * Supported methods: web3_clientVersion, net_version, eth_chainId, eth_blockNumber, eth_gasPrice,
 * eth_maxPriorityFeePerGas, eth_feeHistory (minimal), eth_getBalance, eth_getTransactionCount,
 * eth_getCode, eth_getStorageAt, eth_call, eth_estimateGas, eth_sendRawTransaction,
 * eth_getTransactionByHash, eth_getTransactionReceipt, eth_getBlockByNumber, eth_getBlockByHash,
 * eth_accounts (empty: the node holds no keys), evm_mine, evm_increaseTime.
 */
export interface EvmDevnode {
  /** `http://127.0.0.1:P` */
  readonly rpcUrl: string;
  readonly chainId: bigint;
  /** Pre-funded accounts (publicly derivable keys: never use them with value). */
  readonly accounts: readonly { address: `0x${string}`; privateKey: `0x${string}` }[];
  /** Stops the HTTP server. */
  stop(): Promise<void>;
}

export interface EvmDevnodeOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default 31337. */
  chainId?: bigint;
  /** Number of pre-funded accounts (keys = keccak256("rgbx-evm-devnode:" + i)); default 4. */
  accountCount?: number;
  /** Balance of each account in wei; default 10 000 ETH. */
  balance?: bigint;
}

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

class RpcError extends Error {
  readonly code: number;
  readonly data: string | undefined;
  constructor(code: number, message: string, data?: string) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

const q = (n: bigint | number) => `0x${n.toString(16)}`;
const BLOCK_GAS_LIMIT = 30_000_000n;
const PRIORITY_FEE = 1_000_000_000n;

interface MinedTx {
  tx: TypedTransaction;
  block: Block;
  index: number;
  result: RunTxResult;
  logIndexStart: number;
}

/** Deterministic devnode account keys. */
export function devnodePrivateKey(i: number): `0x${string}` {
  return bytesToHex(keccak_256(new TextEncoder().encode(`rgbx-evm-devnode:${i}`)));
}

/**
 * Starts an in-process EVM JSON-RPC node on 127.0.0.1.
 *
 * @example
 * const node = await startEvmDevnode();
 * const allowance = await readErc20Allowance(node.rpcUrl, token, owner, PERMIT2_ADDRESS);
 * await node.stop();
 */
export async function startEvmDevnode(opts: EvmDevnodeOptions = {}): Promise<EvmDevnode> {
  const chainId = opts.chainId ?? 31337n;
  if (chainId <= 0n || chainId > BigInt(Number.MAX_SAFE_INTEGER))
    throw new RangeError(`chainId ${chainId} out of range`);
  const common = createCustomCommon({ chainId: Number(chainId), name: 'rgbx-devnode' }, Mainnet, {
    hardfork: Hardfork.Cancun,
  });
  const vm: VM = await createVM({ common });
  const accounts = Array.from({ length: opts.accountCount ?? 4 }, (_, i) => {
    const privateKey = devnodePrivateKey(i);
    return {
      privateKey,
      address: getAddress(createAddressFromPrivateKey(hexToBytes(privateKey)).toString()),
    };
  });
  for (const a of accounts)
    await vm.stateManager.putAccount(
      createAddressFromString(a.address),
      createAccount({ balance: opts.balance ?? 10n ** 22n }),
    );

  const genesis = createBlock(
    {
      header: {
        number: 0n,
        gasLimit: BLOCK_GAS_LIMIT,
        baseFeePerGas: 1_000_000_000n,
        timestamp: BigInt(Math.floor(Date.now() / 1000)),
        stateRoot: await vm.stateManager.getStateRoot(),
      },
    },
    { common },
  );
  const blocks: Block[] = [genesis];
  const blocksByHash = new Map<string, Block>([[bytesToHex(genesis.hash()), genesis]]);
  const txs = new Map<string, MinedTx>();
  const latest = () => blocks[blocks.length - 1]!;

  /** Serializes every request: blocks are built one at a time and reads see a settled state. */
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  };

  let timeOffset = 0n;
  async function mine(tx?: TypedTransaction): Promise<Block> {
    const parent = latest();
    const now = BigInt(Math.floor(Date.now() / 1000)) + timeOffset;
    const builder = await buildBlock(vm, {
      parentBlock: parent,
      headerData: {
        number: parent.header.number + 1n,
        timestamp: now > parent.header.timestamp ? now : parent.header.timestamp + 1n,
        gasLimit: BLOCK_GAS_LIMIT,
        coinbase: createZeroAddress(),
        parentBeaconBlockRoot: new Uint8Array(32),
      },
      blockOpts: { putBlockIntoBlockchain: false, calcDifficultyFromHeader: parent.header },
    });
    let result: RunTxResult | undefined;
    if (tx) {
      try {
        result = await builder.addTransaction(tx);
      } catch (e) {
        await builder.revert();
        throw new RpcError(-32000, (e as Error).message.split('\n')[0] ?? 'transaction rejected');
      }
    }
    const { block } = await builder.build();
    blocks.push(block);
    blocksByHash.set(bytesToHex(block.hash()), block);
    if (tx && result) txs.set(bytesToHex(tx.hash()), { tx, block, index: 0, result, logIndexStart: 0 });
    return block;
  }

  function stateBlock(tag: unknown): Block {
    const b = latest();
    if (tag === undefined || tag === 'latest' || tag === 'pending' || tag === 'safe' || tag === 'finalized')
      return b;
    if (typeof tag === 'string' && /^0x[0-9a-f]+$/i.test(tag) && BigInt(tag) === b.header.number) return b;
    if (
      typeof tag === 'object' &&
      tag !== null &&
      'blockHash' in tag &&
      (tag as { blockHash: string }).blockHash === bytesToHex(b.hash())
    )
      return b;
    throw new RpcError(
      -32602,
      `only the latest state is kept; block ${JSON.stringify(tag)} is not the head (${q(b.header.number)})`,
    );
  }

  function blockByTag(tag: unknown): Block | undefined {
    if (tag === 'latest' || tag === 'pending' || tag === 'safe' || tag === 'finalized') return latest();
    if (tag === 'earliest') return blocks[0];
    if (typeof tag === 'string' && /^0x[0-9a-f]+$/i.test(tag)) return blocks[Number(BigInt(tag))];
    throw new RpcError(-32602, `invalid block tag ${JSON.stringify(tag)}`);
  }

  function addr(v: unknown, field: string): Address {
    if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(v))
      throw new RpcError(-32602, `${field}: expected a 20-byte 0x address`);
    return createAddressFromString(v);
  }

  function data(v: unknown, field: string): Uint8Array {
    if (v === undefined || v === null) return new Uint8Array(0);
    if (typeof v !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(v))
      throw new RpcError(-32602, `${field}: expected 0x hex bytes`);
    return hexToBytes(v as `0x${string}`);
  }

  function qty(v: unknown, field: string, dflt: bigint): bigint {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'string' || !/^0x[0-9a-fA-F]+$/.test(v))
      throw new RpcError(-32602, `${field}: expected a 0x quantity`);
    return BigInt(v);
  }

  async function call(
    obj: Record<string, unknown>,
    tag: unknown,
  ): Promise<{ ret: Uint8Array; gasUsed: bigint }> {
    const block = stateBlock(tag);
    const callData = data(obj.data ?? obj.input, 'data');
    const caller = obj.from ? addr(obj.from, 'from') : createZeroAddress();
    const to = obj.to ? addr(obj.to, 'to') : undefined;
    await vm.stateManager.checkpoint();
    // Every call starts cold, as a transaction does (runTx): evm.runCall commits its journal, so the
    // addresses and slots it touched (EIP-2929) would otherwise stay warm for the next call, and each
    // later estimate of the same call came out lower (by 2 000 gas per cold slot, 2 500 per address).
    coldJournal();
    // What runTx warms before execution: sender, recipient, precompiles, coinbase (EIP-3651).
    const { journal } = vm.evm;
    for (const a of vm.evm.precompiles.keys()) journal.addAlwaysWarmAddress(a);
    journal.addAlwaysWarmAddress(caller.toString());
    if (to) journal.addAlwaysWarmAddress(to.toString());
    journal.addAlwaysWarmAddress(block.header.coinbase.toString());
    try {
      const res = await vm.evm.runCall({
        caller,
        origin: caller,
        ...(to ? { to } : {}),
        data: callData,
        value: qty(obj.value, 'value', 0n),
        gasLimit: qty(obj.gas, 'gas', BLOCK_GAS_LIMIT),
        block,
        skipBalance: true,
      });
      const err = res.execResult.exceptionError;
      if (err) {
        const ret = bytesToHex(res.execResult.returnValue);
        if (err.error === 'revert') throw new RpcError(3, 'execution reverted', ret);
        throw new RpcError(-32000, `execution failed: ${err.error}`, ret);
      }
      let intrinsic = 21_000n + (obj.to ? 0n : 32_000n + 2n * BigInt(Math.ceil(callData.length / 32)));
      for (const b of callData) intrinsic += b === 0 ? 4n : 16n;
      return { ret: res.execResult.returnValue, gasUsed: intrinsic + res.execResult.executionGasUsed };
    } finally {
      await vm.stateManager.revert();
      coldJournal();
    }
  }

  /**
   * Drops the warm address/slot sets (EIP-2929) and the original-value cache of SSTORE pricing
   * (EIP-2200), as runTx does before and after each transaction.
   */
  function coldJournal(): void {
    vm.evm.journal.cleanJournal();
    vm.stateManager.originalStorageCache.clear();
  }

  function txJson(m: MinedTx): Json {
    const j = m.tx.toJSON() as Record<string, Json>;
    return {
      ...j,
      hash: bytesToHex(m.tx.hash()),
      from: m.tx.getSenderAddress().toString(),
      blockHash: bytesToHex(m.block.hash()),
      blockNumber: q(m.block.header.number),
      transactionIndex: q(m.index),
      type: q(m.tx.type),
      input: j.data ?? '0x',
      gasPrice: q(effectiveGasPrice(m)),
    };
  }

  function effectiveGasPrice(m: MinedTx): bigint {
    const base = m.block.header.baseFeePerGas ?? 0n;
    const t = m.tx as unknown as { maxFeePerGas?: bigint; maxPriorityFeePerGas?: bigint; gasPrice?: bigint };
    if (t.maxFeePerGas !== undefined) {
      const tip = t.maxPriorityFeePerGas ?? 0n;
      return base + (t.maxFeePerGas - base < tip ? t.maxFeePerGas - base : tip);
    }
    return t.gasPrice ?? base;
  }

  function blockJson(b: Block, full: boolean): Json {
    const h = b.header;
    const mined = b.transactions.map((t) => txs.get(bytesToHex(t.hash())));
    return {
      number: q(h.number),
      hash: bytesToHex(b.hash()),
      parentHash: bytesToHex(h.parentHash),
      nonce: bytesToHex(h.nonce),
      sha3Uncles: bytesToHex(h.uncleHash),
      logsBloom: bytesToHex(h.logsBloom),
      transactionsRoot: bytesToHex(h.transactionsTrie),
      stateRoot: bytesToHex(h.stateRoot),
      receiptsRoot: bytesToHex(h.receiptTrie),
      miner: h.coinbase.toString(),
      difficulty: q(h.difficulty),
      totalDifficulty: '0x0',
      extraData: bytesToHex(h.extraData),
      size: q(b.serialize().length),
      gasLimit: q(h.gasLimit),
      gasUsed: q(h.gasUsed),
      timestamp: q(h.timestamp),
      baseFeePerGas: q(h.baseFeePerGas ?? 0n),
      mixHash: bytesToHex(h.mixHash),
      transactions: full
        ? mined.filter((m) => m !== undefined).map(txJson)
        : b.transactions.map((t) => bytesToHex(t.hash())),
      uncles: [],
      withdrawals: [],
      withdrawalsRoot: h.withdrawalsRoot ? bytesToHex(h.withdrawalsRoot) : null,
      blobGasUsed: q(h.blobGasUsed ?? 0n),
      excessBlobGas: q(h.excessBlobGas ?? 0n),
      parentBeaconBlockRoot: h.parentBeaconBlockRoot ? bytesToHex(h.parentBeaconBlockRoot) : null,
    };
  }

  function receiptJson(m: MinedTx): Json {
    const r = m.result.receipt;
    const hash = bytesToHex(m.tx.hash());
    return {
      transactionHash: hash,
      transactionIndex: q(m.index),
      blockHash: bytesToHex(m.block.hash()),
      blockNumber: q(m.block.header.number),
      from: m.tx.getSenderAddress().toString(),
      to: m.tx.to ? m.tx.to.toString() : null,
      cumulativeGasUsed: q(r.cumulativeBlockGasUsed),
      gasUsed: q(m.result.totalGasSpent),
      effectiveGasPrice: q(effectiveGasPrice(m)),
      contractAddress: m.result.createdAddress ? m.result.createdAddress.toString() : null,
      logs: r.logs.map(([address, topics, logData], i) => ({
        address: bytesToHex(address),
        topics: topics.map((t) => bytesToHex(t)),
        data: bytesToHex(logData),
        blockHash: bytesToHex(m.block.hash()),
        blockNumber: q(m.block.header.number),
        transactionHash: hash,
        transactionIndex: q(m.index),
        logIndex: q(m.logIndexStart + i),
        removed: false,
      })),
      logsBloom: bytesToHex(r.bitvector),
      status: 'status' in r ? q(r.status) : '0x1',
      type: q(m.tx.type),
    };
  }

  const methods: Record<string, (p: unknown[]) => Promise<Json>> = {
    web3_clientVersion: async () => 'rgbx-evm-devnode/@ethereumjs/vm@10.1.3',
    net_version: async () => chainId.toString(),
    eth_chainId: async () => q(chainId),
    eth_accounts: async () => [],
    eth_blockNumber: async () => q(latest().header.number),
    eth_gasPrice: async () => q((latest().header.calcNextBaseFee() ?? 0n) + PRIORITY_FEE),
    eth_maxPriorityFeePerGas: async () => q(PRIORITY_FEE),
    eth_feeHistory: async (p) => {
      const n = Math.max(1, Math.min(Number(qty(p[0], 'blockCount', 1n)), blocks.length));
      const range = blocks.slice(-n);
      return {
        oldestBlock: q(range[0]!.header.number),
        baseFeePerGas: [
          ...range.map((b) => q(b.header.baseFeePerGas ?? 0n)),
          q(latest().header.calcNextBaseFee()),
        ],
        gasUsedRatio: range.map((b) => Number(b.header.gasUsed) / Number(b.header.gasLimit)),
        reward: Array.isArray(p[2]) ? range.map(() => (p[2] as unknown[]).map(() => q(PRIORITY_FEE))) : [],
      };
    },
    eth_getBalance: async (p) => {
      stateBlock(p[1]);
      return q((await vm.stateManager.getAccount(addr(p[0], 'address')))?.balance ?? 0n);
    },
    eth_getTransactionCount: async (p) => {
      stateBlock(p[1]);
      return q((await vm.stateManager.getAccount(addr(p[0], 'address')))?.nonce ?? 0n);
    },
    eth_getCode: async (p) => {
      stateBlock(p[1]);
      return bytesToHex(await vm.stateManager.getCode(addr(p[0], 'address')));
    },
    eth_getStorageAt: async (p) => {
      stateBlock(p[2]);
      const slot = hexToBytes(`0x${qty(p[1], 'slot', 0n).toString(16).padStart(64, '0')}`);
      const v = await vm.stateManager.getStorage(addr(p[0], 'address'), slot);
      return `0x${Buffer.from(v).toString('hex').padStart(64, '0')}`;
    },
    eth_call: async (p) => bytesToHex((await call((p[0] ?? {}) as Record<string, unknown>, p[1])).ret),
    eth_estimateGas: async (p) => {
      const { gasUsed } = await call((p[0] ?? {}) as Record<string, unknown>, p[1] ?? 'latest');
      // EIP-150 keeps 1/64 of the gas back at every call depth: add a margin, as nodes' binary search would find.
      const est = (gasUsed * 5n) / 4n + 5_000n;
      return q(est > BLOCK_GAS_LIMIT ? BLOCK_GAS_LIMIT : est);
    },
    eth_sendRawTransaction: async (p) => {
      let tx: TypedTransaction;
      try {
        tx = createTxFromRLP(data(p[0], 'transaction'), { common }) as TypedTransaction;
      } catch (e) {
        throw new RpcError(-32602, `invalid transaction: ${(e as Error).message.split('\n')[0]}`);
      }
      if (!tx.isSigned()) throw new RpcError(-32602, 'transaction is not signed');
      if (txs.has(bytesToHex(tx.hash()))) throw new RpcError(-32000, 'already known');
      await mine(tx);
      return bytesToHex(tx.hash());
    },
    eth_getTransactionByHash: async (p) => {
      const m = txs.get(String(p[0]).toLowerCase());
      return m ? txJson(m) : null;
    },
    eth_getTransactionReceipt: async (p) => {
      const m = txs.get(String(p[0]).toLowerCase());
      return m ? receiptJson(m) : null;
    },
    eth_getBlockByNumber: async (p) => {
      const b = blockByTag(p[0]);
      return b ? blockJson(b, p[1] === true) : null;
    },
    eth_getBlockByHash: async (p) => {
      const b = blocksByHash.get(String(p[0]).toLowerCase());
      return b ? blockJson(b, p[1] === true) : null;
    },
    evm_mine: async () => {
      await mine();
      return '0x0';
    },
    // Moves block time forward (seconds) for every later block, like Hardhat/Anvil: tests of
    // time locks (escrow refunds) without waiting. Returns the total offset.
    evm_increaseTime: async (p) => {
      const secs = Number(p[0]);
      if (!Number.isSafeInteger(secs) || secs < 0)
        throw new RpcError(-32602, 'evm_increaseTime: seconds ≥ 0 expected');
      timeOffset += BigInt(secs);
      return Number(timeOffset);
    },
  };

  async function handle(req: unknown): Promise<Json> {
    const r = req as { id?: Json; method?: unknown; params?: unknown };
    const id = r && typeof r === 'object' && 'id' in r ? (r.id ?? null) : null;
    if (!r || typeof r !== 'object' || typeof r.method !== 'string')
      return { jsonrpc: '2.0', id, error: { code: -32600, message: 'invalid request' } };
    const fn = methods[r.method];
    if (!fn)
      return {
        jsonrpc: '2.0',
        id,
        error: { code: -32601, message: `method ${r.method} is not supported by this devnode` },
      };
    try {
      const result = await serial(() => fn(Array.isArray(r.params) ? r.params : []));
      return { jsonrpc: '2.0', id, result };
    } catch (e) {
      const err = e instanceof RpcError ? e : new RpcError(-32603, (e as Error).message);
      return {
        jsonrpc: '2.0',
        id,
        error: { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) },
      };
    }
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }),
          );
          return;
        }
        const out = Array.isArray(body) ? await Promise.all(body.map(handle)) : await handle(body);
        const text = JSON.stringify(out); // first: a body it cannot write fails before the head is sent
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(text);
      })().catch((e: unknown) => {
        // A bug in a method's answer (say, a value JSON cannot hold) is that request's error, never the
        // devnode's end: every test and `npm start` share this one process.
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32603, message: (e as Error).message },
          }),
        );
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    chainId,
    accounts,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
