/**
 * `permit2` approvals (EVM and Tron): the EIP-712 / TIP-712 `PermitWitnessTransferFrom` the user
 * signs, built by the chains module (spender = escrow, a `SwapIntent` witness binding the intent id,
 * resolver, secret hash, destination, minimum and maximum amount (`minAmountOut`, `maxAmountOut`: the
 * names Hotpot clients read) and deadline), and its verification:
 * recovered signer == source address (Tron: the address derived from the recovered key), then the
 * owner's ERC-20 allowance to Permit2 ≥ the source amount (else error code 25).
 *
 * The typed data is rebuilt from what the service stored; nothing of it is taken from the client.
 */
import { randomInt } from 'node:crypto';
import {
  buildPermit2Message,
  buildPermit2TypedData,
  buildSwapIntentWitness,
  type Permit2Signable,
  type Permit2TypedData,
  permit2TypedDataToJson,
} from '@rgbx/chains/evm';
import { buildTronPermit2Message, buildTronPermit2TypedData } from '@rgbx/chains/tron';
import type { ChainGateway } from '../../chains/chain-gateway.ts';
import { inlineVerifier, type SignatureVerifier } from '../../chains/verify-pool.ts';
import type { NetworkConfig } from '../../config.ts';
import { E, verificationFailure } from '../../errors.ts';

/** What is stored to rebuild the typed data at verification (bigints as decimal strings). */
export interface Permit2Context {
  kind: 'evm' | 'tron';
  chainId: string;
  permit2Address: string;
  token: string;
  amount: string;
  spender: string;
  nonce: string;
  deadline: string;
  owner: string;
  witness: {
    intentId: string;
    resolver: string;
    secretHash: string;
    destChainId: string;
    destToken: string;
    destAddress: string;
    /** The quote's `min_dest_amount_lots`. */
    minAmountOut: string;
    /** The quote's `max_dest_amount_lots`. */
    maxAmountOut: string;
    deadline: string;
  };
  proxyAddress: string;
}

export interface Permit2Params {
  escrowContractAddress: string;
  permit2ContractAddress: string;
  resolverDepositAddress: string;
  nonce: number;
  additionalData: {
    domain: Record<string, unknown>;
    types: Record<string, unknown>;
    witness: Record<string, unknown>;
    witnessTypeString: string;
    witnessHash: string;
    secretHash: string;
  };
  /** The complete typed data (domain, types, primaryType, message), ready for `signTypedData`. */
  typedData: {
    domain: Record<string, unknown>;
    types: Record<string, unknown>;
    primaryType: string;
    message: Record<string, unknown>;
  };
}

/** Permit2 nonces are an unordered bitmap per owner: a random 52-bit value, unique per owner in our store. */
export function newPermit2Nonce(): number {
  return randomInt(1, 2 ** 48) * 16 + randomInt(0, 16);
}

export function buildPermit2Context(args: {
  /** EIP-712 (EVM) or TIP-712 (Tron). */
  kind: Permit2Context['kind'];
  network: NetworkConfig;
  intentId: string;
  owner: string;
  token: string;
  amount: bigint;
  resolverAddress: string;
  secretHash: string;
  destChainId: number;
  destToken: string;
  destAddress: string;
  minDestAmount: bigint;
  maxDestAmount: bigint;
  deadline: number;
  nonce: number;
}): Permit2Context {
  const n = args.network;
  return {
    kind: args.kind,
    chainId: String(n.chain_id),
    permit2Address: n.permit2_address!,
    token: args.token,
    amount: args.amount.toString(),
    spender: n.escrow_address!,
    nonce: String(args.nonce),
    deadline: String(args.deadline),
    owner: args.owner,
    witness: {
      intentId: args.intentId,
      resolver: args.resolverAddress,
      secretHash: args.secretHash,
      destChainId: String(args.destChainId),
      destToken: args.destToken,
      destAddress: args.destAddress,
      minAmountOut: args.minDestAmount.toString(),
      maxAmountOut: args.maxDestAmount.toString(),
      deadline: String(args.deadline),
    },
    proxyAddress: n.escrow_address!,
  };
}

/** False for a context stored before the witness gained `maxAmountOut` (its witness has `minDestAmount`). */
function hasCurrentWitness(ctx: Permit2Context): boolean {
  const w = ctx.witness as Partial<Permit2Context['witness']> | undefined;
  return typeof w?.minAmountOut === 'string' && typeof w.maxAmountOut === 'string';
}

/**
 * The typed data of a stored context. A context stored before the witness gained `maxAmountOut`
 * (it has `minDestAmount` instead) is not rebuilt in the old format: it is rejected as invalid.
 *
 * @throws Error when the stored witness lacks `minAmountOut` / `maxAmountOut`
 */
export function typedDataOf(ctx: Permit2Context): Permit2TypedData {
  requireCurrentWitness(ctx);
  return built(ctx, buildTronPermit2TypedData, buildPermit2TypedData);
}

/**
 * The domain and message of {@link typedDataOf}, without its hashes: what the signature check needs
 * (it computes the digest itself, on its thread).
 */
export function signableOf(ctx: Permit2Context): Permit2Signable {
  requireCurrentWitness(ctx);
  return built(ctx, buildTronPermit2Message, buildPermit2Message);
}

function requireCurrentWitness(ctx: Permit2Context): void {
  if (!hasCurrentWitness(ctx))
    throw new Error(
      'permit2 context: the stored witness has no minAmountOut/maxAmountOut (stored before the SwapIntent witness v3)',
    );
}

/** The stored context (its witness checked current by the caller) through the Tron or the EVM builder. */
function built<T>(
  ctx: Permit2Context,
  tron: (p: Parameters<typeof buildTronPermit2TypedData>[0]) => T,
  evm: (p: Parameters<typeof buildPermit2TypedData>[0]) => T,
): T {
  const witnessInput = {
    intentId: ctx.witness.intentId,
    secretHash: ctx.witness.secretHash,
    destChainId: BigInt(ctx.witness.destChainId),
    destToken: ctx.witness.destToken,
    destAddress: ctx.witness.destAddress,
    minAmountOut: BigInt(ctx.witness.minAmountOut),
    maxAmountOut: BigInt(ctx.witness.maxAmountOut),
    deadline: BigInt(ctx.witness.deadline),
  };
  const common = {
    chainId: BigInt(ctx.chainId),
    amount: BigInt(ctx.amount),
    nonce: BigInt(ctx.nonce),
    deadline: BigInt(ctx.deadline),
  };
  if (ctx.kind === 'tron') {
    return tron({
      ...common,
      token: ctx.token,
      spender: ctx.spender,
      permit2Address: ctx.permit2Address,
      witness: { ...witnessInput, resolver: ctx.witness.resolver },
    });
  }
  return evm({
    ...common,
    token: ctx.token as `0x${string}`,
    spender: ctx.spender as `0x${string}`,
    permit2Address: ctx.permit2Address as `0x${string}`,
    witness: buildSwapIntentWitness({ ...witnessInput, resolver: ctx.witness.resolver as `0x${string}` }),
  });
}

/** The approval data handed to the user (Surface A `permit2`, Surface B `params_to_sign`). */
export function permit2Params(ctx: Permit2Context, resolverDepositAddress: string): Permit2Params {
  const json = permit2TypedDataToJson(typedDataOf(ctx)) as unknown as {
    domain: Record<string, unknown>;
    types: Record<string, unknown>;
    primaryType: string;
    message: Record<string, unknown> & { witness: Record<string, unknown> };
    witnessTypeString: string;
    witnessHash: string;
  };
  // Chain ids fit a JSON number; wallets (viem, ethers, TronLink) expect a number there.
  const domain = { ...json.domain, chainId: Number(json.domain.chainId) };
  return {
    escrowContractAddress: ctx.spender,
    permit2ContractAddress: ctx.permit2Address,
    resolverDepositAddress,
    nonce: Number(ctx.nonce),
    additionalData: {
      domain,
      types: json.types,
      witness: json.message.witness,
      witnessTypeString: json.witnessTypeString,
      witnessHash: json.witnessHash,
      secretHash: ctx.witness.secretHash,
    },
    typedData: { domain, types: json.types, primaryType: json.primaryType, message: json.message },
  };
}

function signatureError(err: unknown): never {
  verificationFailure(err, E.INVALID_SIGNATURE);
}

/**
 * Verifies a Permit2 signature for the stored context; returns the canonical signature (65 bytes,
 * low-s, v 27/28), which is what idempotent re-posts are compared by. The event loop builds only the
 * domain and message; the digest and the key recovery run on the verifier's thread.
 */
export async function verifyPermit2Approval(
  ctx: Permit2Context,
  signature: string,
  network: NetworkConfig,
  gateway: ChainGateway,
  checkAllowance: boolean,
  verifier: SignatureVerifier = inlineVerifier,
  /** The 20-byte 0x form of an address of this network (Tron base58 → hex). */
  toRpc: (address: string) => `0x${string}` = (a) => a.toLowerCase() as `0x${string}`,
): Promise<{ canonical: string }> {
  if (typeof signature !== 'string' || !/^(0x)?[0-9a-fA-F]{128,130}$/.test(signature)) {
    throw E.INVALID_SIGNATURE.createWith(
      { details: { reason: 'malformed_signature', expected: '0x-prefixed 64- or 65-byte hex signature' } },
      'malformed signature',
    );
  }
  if (!hasCurrentWitness(ctx)) {
    // Stored before the SwapIntent witness gained maxAmountOut: the typed data handed out then is
    // no longer one we verify, so no signature over it is accepted.
    throw E.INVALID_SIGNATURE.createWith(
      {
        details: {
          reason: 'outdated_witness',
          expected: 'an intent whose SwapIntent witness has minAmountOut and maxAmountOut',
        },
      },
      'the intent was created with an outdated Permit2 witness; create a new intent',
    );
  }
  let canonical: string;
  try {
    // The witness was checked above: built once, not checked again.
    canonical = await verifier.permit2(
      ctx.kind,
      built(ctx, buildTronPermit2Message, buildPermit2Message),
      signature,
      ctx.owner,
    );
  } catch (err) {
    signatureError(err);
  }
  if (checkAllowance && network.verify_allowance) {
    const allowance = await gateway.allowance(
      network,
      toRpc(ctx.token),
      toRpc(ctx.owner),
      toRpc(ctx.permit2Address),
    );
    if (allowance < BigInt(ctx.amount)) {
      throw E.PERMIT2_ALLOWANCE_INSUFFICIENT.createWith({
        details: {
          token: ctx.token,
          owner: ctx.owner,
          spender: ctx.permit2Address,
          allowance: allowance.toString(),
          required: ctx.amount,
        },
      });
    }
  }
  return { canonical: canonical.toLowerCase() };
}
