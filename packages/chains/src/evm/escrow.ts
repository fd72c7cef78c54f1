/**
 * The call side of `SwapEscrow` (the HTLC escrow of the EVM and Tron source legs,
 * `packages/devnet/test/evm/SwapEscrow.sol`): the `deposit` / `claim` / `refund` function fragments,
 * the escrow's custom errors and those of the Permit2-compatible SignatureTransfer it calls (passed up
 * unchanged, so a decoder needs them too), and pure calldata builders. What a resolver needs to fill
 * an intent, without the devnet package or the compiled artifacts.
 */
import { encodeFunctionData } from 'viem';
import type { Hex } from '../bytes.ts';
import type { EvmAddress, SwapIntentWitness } from './permit2.ts';

const address = <const N extends string>(name: N) => ({ name, type: 'address' }) as const;
const bytes32 = <const N extends string>(name: N) => ({ name, type: 'bytes32' }) as const;
const uint256 = <const N extends string>(name: N) => ({ name, type: 'uint256' }) as const;

/**
 * `deposit`, `claim`, `refund` of SwapEscrow plus the custom errors of SwapEscrow and SignatureTransfer,
 * ABI-identical to the compiled contracts (checked against them in the devnode tests).
 */
export const ESCROW_CALL_ABI = [
  {
    type: 'function',
    name: 'deposit',
    stateMutability: 'nonpayable',
    inputs: [
      {
        name: 'permit',
        type: 'tuple',
        components: [
          {
            name: 'permitted',
            type: 'tuple',
            components: [address('token'), uint256('amount')],
          },
          uint256('nonce'),
          uint256('deadline'),
        ],
      },
      address('owner'),
      {
        name: 'intent',
        type: 'tuple',
        components: [
          bytes32('intentId'),
          address('resolver'),
          bytes32('secretHash'),
          uint256('destChainId'),
          bytes32('destToken'),
          bytes32('destAddress'),
          uint256('minAmountOut'),
          uint256('maxAmountOut'),
          uint256('deadline'),
        ],
      },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'claim',
    stateMutability: 'nonpayable',
    inputs: [bytes32('intentId'), address('owner'), bytes32('preimage')],
    outputs: [],
  },
  {
    type: 'function',
    name: 'refund',
    stateMutability: 'nonpayable',
    inputs: [bytes32('intentId'), address('owner')],
    outputs: [],
  },
  // SwapEscrow
  { type: 'error', name: 'AlreadyLocked', inputs: [bytes32('intentId'), address('owner')] },
  { type: 'error', name: 'NotLocked', inputs: [bytes32('intentId'), address('owner')] },
  { type: 'error', name: 'InvalidPreimage', inputs: [] },
  { type: 'error', name: 'ClaimWindowClosed', inputs: [uint256('refundAfter')] },
  { type: 'error', name: 'RefundNotYetAvailable', inputs: [uint256('refundAfter')] },
  // both contracts (same selector)
  { type: 'error', name: 'TransferFailed', inputs: [] },
  // SignatureTransfer
  { type: 'error', name: 'SignatureExpired', inputs: [uint256('deadline')] },
  { type: 'error', name: 'InvalidAmount', inputs: [uint256('maxAmount')] },
  { type: 'error', name: 'InvalidNonce', inputs: [] },
  { type: 'error', name: 'InvalidSignatureLength', inputs: [] },
  { type: 'error', name: 'InvalidSignature', inputs: [] },
  { type: 'error', name: 'InvalidSigner', inputs: [] },
] as const;

/** Inputs of `SwapEscrow.deposit`: the signed permit's values, its owner, the witness and the signature. */
export interface EscrowDepositParams {
  token: EvmAddress;
  amount: bigint;
  nonce: bigint;
  /** The permit's deadline (unix seconds). */
  deadline: bigint;
  owner: EvmAddress;
  witness: SwapIntentWitness;
  /** 65-byte r‖s‖v (v 27/28, low s) or 64-byte EIP-2098. */
  signature: Hex;
}

/** The `args` of `deposit` for viem's contract calls, in the ABI's order. */
export function escrowDepositArgs(p: EscrowDepositParams) {
  return [
    { permitted: { token: p.token, amount: p.amount }, nonce: p.nonce, deadline: p.deadline },
    p.owner,
    { ...p.witness },
    p.signature,
  ] as const;
}

/**
 * Calldata of `SwapEscrow.deposit(permit, owner, intent, signature)`: the escrow pulls `amount` of
 * `token` from `owner` through SignatureTransfer and locks it under `(witness.intentId, owner)`.
 *
 * @example
 * const data = escrowDepositCalldata({ token, amount, nonce, deadline, owner, witness, signature });
 */
export function escrowDepositCalldata(p: EscrowDepositParams): Hex {
  return encodeFunctionData({ abi: ESCROW_CALL_ABI, functionName: 'deposit', args: escrowDepositArgs(p) });
}

/**
 * Calldata of `SwapEscrow.claim(intentId, owner, preimage)`: pays `owner`'s lock for the intent to its
 * resolver when sha256(preimage) is the lock's secretHash, before refundAfter.
 *
 * @example
 * const data = escrowClaimCalldata(uuidToBytes32(intentId), owner, preimage);
 */
export function escrowClaimCalldata(intentIdBytes32: Hex, owner: EvmAddress, preimage: Hex): Hex {
  return encodeFunctionData({
    abi: ESCROW_CALL_ABI,
    functionName: 'claim',
    args: [intentIdBytes32, owner, preimage],
  });
}

/**
 * Calldata of `SwapEscrow.refund(intentId, owner)`: pays `owner`'s lock for the intent back to `owner`
 * from refundAfter on.
 *
 * @example
 * const data = escrowRefundCalldata(uuidToBytes32(intentId), owner);
 */
export function escrowRefundCalldata(intentIdBytes32: Hex, owner: EvmAddress): Hex {
  return encodeFunctionData({ abi: ESCROW_CALL_ABI, functionName: 'refund', args: [intentIdBytes32, owner] });
}
