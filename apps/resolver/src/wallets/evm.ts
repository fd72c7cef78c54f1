/**
 * The resolver's hot wallet on an EVM network: ERC-20 payments, `SwapEscrow.deposit` of the users'
 * Permit2-signed tokens and `SwapEscrow.claim` with the preimage. Every transaction is signed locally
 * (the key never leaves the process) with an explicit nonce, gas limit, fees and chain id, and returned
 * unsent; `broadcast` sends exactly those bytes and is idempotent (see {@link ChainWallet}).
 *
 * Nonces: signing is serialized inside the wallet and each transaction takes the lowest nonce from
 * `eth_getTransactionCount(address, 'pending')` up that this process has not reserved (signed, or
 * tracked after a start), so two transactions signed back to back never share a nonce even before the
 * first is broadcast. A signed transaction that is never broadcast leaves a gap that blocks the later
 * ones: the engine stores every signed transaction and broadcasts it (or finds it `dead`) before anything
 * else depends on it, and `release`s one it drops unsent, whose nonce the next transaction then takes
 * (filling the gap).
 */
import {
  ESCROW_CALL_ABI,
  type EscrowDepositParams,
  escrowClaimCalldata,
  escrowDepositArgs,
  escrowDepositCalldata,
  permit2TypedDataFromJson,
  uuidToBytes32,
} from '@rgbx/chains/evm';
import {
  type Abi,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  http,
  isAddress,
  keccak256,
  type PublicClient,
  sha256,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import type { ChainWallet, IntentView, PaymentRequest, SignedTx, TxState } from './wallet.ts';

type Hex = `0x${string}`;

export interface EvmWalletOptions {
  /** The network's JSON-RPC endpoint. */
  rpcUrl: string;
  /** The chain id signed into every transaction (EIP-155); checked against the node's `eth_chainId`. */
  chainId: number | bigint;
  /** The hot wallet's secp256k1 key (0x + 64 hex). */
  privateKey: Hex;
  /** The `SwapEscrow` contract of this network. */
  escrow: Hex;
  /**
   * Gas price (wei) for a legacy transaction when the node has no EIP-1559 base fee and `eth_gasPrice`
   * fails. Without it such a failure is an error.
   */
  gasPriceFallback?: bigint;
  /**
   * How this network spells the addresses of payment requests and of intents (token, recipient, owner)
   * as 0x EVM addresses. Default: 0x addresses only. TronWallet passes its base58 conversion.
   */
  toEvmAddress?: (address: string, field: string) => Hex;
}

/** Gas limit = estimate × (100 + GAS_MARGIN_PERCENT) / 100. */
const GAS_MARGIN_PERCENT = 20n;
/** Fixed identifiers of the native coin in token lists (`0x0…0`, `0xEeee…EEeE`). */
const NATIVE_PLACEHOLDERS = new Set([`0x${'0'.repeat(40)}`, `0x${'e'.repeat(40)}`]);
const HEX32 = /^0x[0-9a-fA-F]{64}$/;

/** The default address rule: a 20-byte 0x address (any case). */
function requireHexAddress(address: string, field: string): Hex {
  if (typeof address !== 'string' || !isAddress(address, { strict: false }))
    throw new Error(
      `EVM wallet: ${field} must be a 0x-prefixed 20-byte address, received ${String(address)}`,
    );
  return getAddress(address);
}

/** The decoded revert reason of a failed call/estimate, or viem's short message. */
function revertReason(e: unknown): string {
  if (e instanceof BaseError) {
    const reverted = e.walk((x) => x instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError) {
      const name = reverted.data?.errorName;
      if (name && name !== 'Error') return `${name}(${(reverted.data?.args ?? []).map(String).join(', ')})`;
      if (reverted.reason) return reverted.reason;
    }
    return e.shortMessage;
  }
  return e instanceof Error ? e.message : String(e);
}

/**
 * The intent's UUID (`intent.intent_id` of the resolver API's record; read untyped because the
 * contracts' SwapRecordB type does not currently carry the renamed Surface A fields).
 */
function intentIdOf(intent: IntentView): string {
  const id = (intent.intent as { intent_id?: unknown } | undefined)?.intent_id;
  if (typeof id !== 'string') throw new Error('EVM wallet: the intent record has no intent_id');
  return id;
}

/** Where a stored transaction's `meta.nonce` must be, as a bigint. */
function metaNonce(tx: SignedTx): bigint {
  const n = tx.meta.nonce;
  if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) return BigInt(n);
  if (typeof n === 'string' && /^(0|[1-9]\d*)$/.test(n)) return BigInt(n);
  throw new Error(`EVM wallet: transaction ${tx.txid} has no meta.nonce`);
}

interface RpcReceipt {
  status: Hex | null;
  blockNumber: Hex | null;
}

interface RpcTx {
  blockNumber: Hex | null;
}

type Fees =
  | { type: 'eip1559'; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }
  | { type: 'legacy'; gasPrice: bigint };

export class EvmWallet implements ChainWallet {
  readonly type = 'EVM' as const;
  /** The hot wallet's checksummed address. */
  readonly identity: string;
  /** The hot wallet's checksummed address (also for a Tron wallet, whose identity is base58). */
  readonly address: Hex;
  /** The escrow contract (checksummed). */
  readonly escrow: Hex;
  readonly chainId: bigint;
  /** The read client (exposed for callers that need more reads on the same node). */
  readonly client: PublicClient;
  readonly #account: PrivateKeyAccount;
  readonly #gasPriceFallback: bigint | undefined;
  readonly #toEvm: (address: string, field: string) => Hex;
  /** Tail of the signing queue: one signature at a time. */
  #signing: Promise<unknown> = Promise.resolve();
  /** Nonces of transactions this process signed or tracked and did not release (pruned below the pending count). */
  readonly #reservedNonces = new Set<bigint>();
  #chainChecked = false;

  constructor(opts: EvmWalletOptions) {
    if (typeof opts.privateKey !== 'string' || !HEX32.test(opts.privateKey))
      throw new Error('EVM wallet: privateKey must be 0x + 64 hex digits');
    const chainId = BigInt(opts.chainId);
    if (chainId <= 0n || chainId > BigInt(Number.MAX_SAFE_INTEGER))
      throw new Error(`EVM wallet: chainId ${chainId} out of range`);
    this.chainId = chainId;
    this.#account = privateKeyToAccount(opts.privateKey);
    this.address = this.#account.address;
    this.identity = this.address;
    this.escrow = requireHexAddress(opts.escrow, 'escrow');
    this.#gasPriceFallback = opts.gasPriceFallback;
    this.#toEvm = opts.toEvmAddress ?? requireHexAddress;
    this.client = createPublicClient({ transport: http(opts.rpcUrl) });
  }

  async balance(token: string): Promise<bigint> {
    const address = this.#token(token);
    return this.client.readContract({
      address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [this.address],
    });
  }

  async signPayment(p: PaymentRequest): Promise<SignedTx> {
    const token = this.#token(p.token);
    const to = getAddress(this.#toEvm(p.to, 'payment recipient'));
    if (typeof p.amount !== 'bigint' || p.amount <= 0n)
      throw new Error(`EVM wallet: payment amount must be a positive bigint, received ${String(p.amount)}`);
    return this.#sign(
      token,
      erc20Abi,
      'transfer',
      [to, p.amount],
      `ERC-20 transfer of ${p.amount} ${token} to ${to} (intent ${p.intentId})`,
    );
  }

  async signDeposit(intent: IntentView): Promise<SignedTx | null> {
    const p = this.depositParams(intent);
    return this.#sign(
      this.escrow,
      ESCROW_CALL_ABI,
      'deposit',
      escrowDepositArgs(p),
      `SwapEscrow.deposit of intent ${intentIdOf(intent)}`,
      escrowDepositCalldata(p),
    );
  }

  async signClaim(intent: IntentView, preimage: string): Promise<SignedTx | null> {
    const id = intentIdOf(intent);
    if (typeof preimage !== 'string' || !HEX32.test(preimage))
      throw new Error(`EVM wallet: the preimage of intent ${id} must be 0x + 64 hex digits`);
    const p = this.depositParams(intent);
    if (sha256(preimage as Hex).toLowerCase() !== p.witness.secretHash.toLowerCase())
      throw new Error(`EVM wallet: sha256(preimage) is not the secret hash of intent ${id}`);
    const intentId = uuidToBytes32(id);
    const data = escrowClaimCalldata(intentId, p.owner, preimage as Hex);
    return this.#sign(
      this.escrow,
      ESCROW_CALL_ABI,
      'claim',
      [intentId, p.owner, preimage as Hex],
      `SwapEscrow.claim of intent ${id}`,
      data,
    );
  }

  /**
   * The `SwapEscrow.deposit` inputs of a permit2 intent, from its execution data
   * (`{ permit2_signature, owner, nonce, typed_data }`), checked against this wallet: the permit's
   * spender is our escrow, the witness names us as resolver and carries the intent's id.
   *
   * @throws Error when the intent is not an approved permit2 intent of this wallet
   */
  depositParams(intent: IntentView): EscrowDepositParams {
    const id = intentIdOf(intent);
    if (intent.approval_mechanism !== 'permit2')
      throw new Error(
        `EVM wallet: intent ${id} uses approval mechanism ${intent.approval_mechanism}; only permit2 is supported`,
      );
    const ex = intent.execution;
    if (!ex) throw new Error(`EVM wallet: intent ${id} has no execution data (not approved yet)`);
    let td: ReturnType<typeof permit2TypedDataFromJson>;
    try {
      td = permit2TypedDataFromJson(ex.typed_data);
    } catch (e) {
      throw new Error(`EVM wallet: intent ${id}: malformed execution.typed_data: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const signature = ex.permit2_signature;
    if (typeof signature !== 'string' || !/^0x([0-9a-fA-F]{128}|[0-9a-fA-F]{130})$/.test(signature))
      throw new Error(
        `EVM wallet: intent ${id}: execution.permit2_signature must be 64 or 65 bytes of 0x hex`,
      );
    const owner = getAddress(this.#toEvm(String(ex.owner), 'execution.owner'));
    const m = td.message;
    if (ex.nonce !== undefined && ex.nonce !== null && String(ex.nonce) !== m.nonce.toString())
      throw new Error(
        `EVM wallet: intent ${id}: execution.nonce ${String(ex.nonce)} is not the permit's ${m.nonce}`,
      );
    if (getAddress(m.spender) !== this.escrow)
      throw new Error(
        `EVM wallet: intent ${id}: the permit's spender ${m.spender} is not our escrow ${this.escrow}`,
      );
    if (getAddress(m.witness.resolver) !== this.address)
      throw new Error(
        `EVM wallet: intent ${id}: the witness names resolver ${m.witness.resolver}, not this wallet ${this.address}`,
      );
    if (m.witness.intentId.toLowerCase() !== uuidToBytes32(id))
      throw new Error(`EVM wallet: intent ${id}: the witness is for intent ${m.witness.intentId}`);
    return {
      token: getAddress(m.permitted.token),
      amount: m.permitted.amount,
      nonce: m.nonce,
      deadline: m.deadline,
      owner,
      witness: m.witness,
      signature: signature as Hex,
    };
  }

  async broadcast(tx: SignedTx): Promise<void> {
    let sent: Hex;
    try {
      sent = await this.client.sendRawTransaction({ serializedTransaction: tx.raw as Hex });
    } catch (e) {
      // "already known", "nonce too low", a timeout after the node took it…: success if the node
      // has THIS transaction (pending or mined), the error otherwise.
      if (await this.#known(tx.txid)) return;
      throw e;
    }
    if (sent.toLowerCase() !== tx.txid.toLowerCase())
      throw new Error(`EVM wallet: the node answered hash ${sent} for transaction ${tx.txid}`);
  }

  async status(tx: SignedTx): Promise<TxState> {
    const nonce = metaNonce(tx);
    // The account's nonce is read first: if it has moved past ours, whichever transaction used it is
    // mined by then, so a missing receipt below means another transaction took the nonce.
    const used = await this.client.getTransactionCount({ address: this.address, blockTag: 'latest' });
    const receipt = await this.client.request({
      method: 'eth_getTransactionReceipt',
      params: [tx.txid as Hex],
    });
    if (receipt) {
      const r = receipt as unknown as RpcReceipt;
      if (r.status === '0x0') return { state: 'failed' };
      if (r.blockNumber) {
        const tip = await this.client.getBlockNumber({ cacheTime: 0 });
        return { state: 'confirmed', confirmations: Math.max(1, Number(tip - BigInt(r.blockNumber) + 1n)) };
      }
    }
    if (await this.#known(tx.txid)) return { state: 'pending' };
    if (BigInt(used) > nonce) return { state: 'dead' };
    return { state: 'unknown' };
  }

  /**
   * After a start: a stored transaction not yet known confirmed keeps its nonce reserved, so nothing
   * signed later reuses it (which would kill one of the two).
   */
  track(tx: SignedTx): void {
    this.#reservedNonces.add(metaNonce(tx));
  }

  /** A stored transaction dropped unsent (the network never saw it): its nonce is free for the next one. */
  release(tx: SignedTx): void {
    this.#reservedNonces.delete(metaNonce(tx));
  }

  async close(): Promise<void> {}

  /** Whether the node has the transaction (in its pool or in a block). */
  async #known(txid: string): Promise<boolean> {
    const t = await this.client.request({ method: 'eth_getTransactionByHash', params: [txid as Hex] });
    return (t as unknown as RpcTx | null) !== null;
  }

  /** An ERC-20 contract address; native coins are not supported. */
  #token(token: string): Hex {
    if (typeof token === 'string' && NATIVE_PLACEHOLDERS.has(token.toLowerCase()))
      throw new Error(`EVM wallet: native-coin token ${token} is not supported (ERC-20 tokens only)`);
    let address: Hex;
    try {
      address = this.#toEvm(token, 'token');
    } catch (e) {
      throw new Error(
        `EVM wallet: token ${token} is not a contract address (native-coin payments are not supported, ERC-20 tokens only)`,
        { cause: e },
      );
    }
    return getAddress(address);
  }

  /**
   * Estimates, then signs a call of `functionName` on `to` under the signing lock. The estimate runs
   * first: a call that would revert throws (with the decoded reason) before any nonce is taken.
   */
  async #sign(
    to: Hex,
    abi: Abi,
    functionName: string,
    args: readonly unknown[],
    what: string,
    data?: Hex,
  ): Promise<SignedTx> {
    const run = this.#signing.then(async () => {
      await this.#checkChain();
      const callData = data ?? encodeFunctionData({ abi, functionName, args });
      let estimate: bigint;
      try {
        estimate = await this.client.estimateContractGas({
          address: to,
          abi,
          functionName,
          args,
          account: this.address,
        });
      } catch (e) {
        throw new Error(`EVM wallet: ${what} would fail, not signed: ${revertReason(e)}`, { cause: e });
      }
      const gas = (estimate * (100n + GAS_MARGIN_PERCENT)) / 100n;
      const fees = await this.#fees();
      const pending = BigInt(
        await this.client.getTransactionCount({ address: this.address, blockTag: 'pending' }),
      );
      // Below the pending count a nonce is used (mined or in the pool): no longer ours to keep.
      for (const n of this.#reservedNonces) if (n < pending) this.#reservedNonces.delete(n);
      let nonce = pending;
      while (this.#reservedNonces.has(nonce)) nonce++;
      const common = {
        chainId: Number(this.chainId),
        nonce: Number(nonce),
        gas,
        to,
        data: callData,
        value: 0n,
      };
      const raw =
        fees.type === 'eip1559'
          ? await this.#account.signTransaction({
              ...common,
              type: 'eip1559',
              maxFeePerGas: fees.maxFeePerGas,
              maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
            })
          : await this.#account.signTransaction({ ...common, type: 'legacy', gasPrice: fees.gasPrice });
      this.#reservedNonces.add(nonce);
      return { txid: keccak256(raw), raw, meta: { nonce: Number(nonce) } } satisfies SignedTx;
    });
    this.#signing = run.catch(() => undefined);
    return run;
  }

  /** EIP-1559 fees when the latest block has a base fee, else a legacy gas price. */
  async #fees(): Promise<Fees> {
    const block = await this.client.getBlock({ blockTag: 'latest' });
    if (block.baseFeePerGas !== null && block.baseFeePerGas !== undefined) {
      let tip: bigint;
      try {
        tip = await this.client.estimateMaxPriorityFeePerGas();
      } catch {
        tip = 1_000_000_000n;
      }
      return { type: 'eip1559', maxFeePerGas: block.baseFeePerGas * 2n + tip, maxPriorityFeePerGas: tip };
    }
    try {
      return { type: 'legacy', gasPrice: await this.client.getGasPrice() };
    } catch (e) {
      if (this.#gasPriceFallback !== undefined) return { type: 'legacy', gasPrice: this.#gasPriceFallback };
      throw new Error(
        `EVM wallet: eth_gasPrice failed and no gasPriceFallback is configured: ${revertReason(e)}`,
        {
          cause: e,
        },
      );
    }
  }

  /** Once: the node serves the chain this wallet signs for. */
  async #checkChain(): Promise<void> {
    if (this.#chainChecked) return;
    const id = BigInt(await this.client.getChainId());
    if (id !== this.chainId)
      throw new Error(`EVM wallet: the node at the RPC URL serves chain ${id}, configured ${this.chainId}`);
    this.#chainChecked = true;
  }
}
