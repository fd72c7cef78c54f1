/**
 * The escrow call ABI against the Solidity signatures spelled out by hand (SwapEscrow.sol,
 * SignatureTransfer.sol), and the calldata builders against a decode of their own output. The ABI is
 * checked against the compiled artifacts with a real node in apps/resolver's devnode tests.
 */
import {
  decodeFunctionData,
  encodeAbiParameters,
  getAbiItem,
  toFunctionSelector,
  toFunctionSignature,
  toHex,
} from 'viem';
import { formatAbiItem } from 'viem/utils';
import { describe, expect, it } from 'vitest';
import {
  ESCROW_CALL_ABI,
  type EscrowDepositParams,
  escrowClaimCalldata,
  escrowDepositCalldata,
  escrowRefundCalldata,
} from './escrow.ts';

const OWNER = '0x1111111111111111111111111111111111111111';
const TOKEN = '0x2222222222222222222222222222222222222222';
const RESOLVER = '0x3333333333333333333333333333333333333333';
const ID = `0x${'0'.repeat(32)}123e4567e89b12d3a456426614174000` as const;
const b32 = (n: number) => toHex(n, { size: 32 });

const params: EscrowDepositParams = {
  token: TOKEN,
  amount: 1_000_000n,
  nonce: 77n,
  deadline: 1_900_000_000n,
  owner: OWNER,
  witness: {
    intentId: ID,
    resolver: RESOLVER,
    secretHash: b32(1),
    destChainId: 5n,
    destToken: b32(2),
    destAddress: b32(3),
    minAmountOut: 99n,
    maxAmountOut: 100n,
    deadline: 1_900_000_000n,
  },
  signature: `0x${'ab'.repeat(65)}`,
};

describe('ESCROW_CALL_ABI', () => {
  it('has the Solidity signatures of deposit, claim and refund', () => {
    const sig = (name: 'deposit' | 'claim' | 'refund') =>
      toFunctionSignature(getAbiItem({ abi: ESCROW_CALL_ABI, name }));
    expect(sig('deposit')).toBe(
      'deposit(((address,uint256),uint256,uint256),address,(bytes32,address,bytes32,uint256,bytes32,bytes32,uint256,uint256,uint256),bytes)',
    );
    expect(sig('claim')).toBe('claim(bytes32,address,bytes32)');
    expect(sig('refund')).toBe('refund(bytes32,address)');
  });

  it('has every custom error of SwapEscrow and SignatureTransfer, each once', () => {
    const errors = ESCROW_CALL_ABI.filter((x) => x.type === 'error').map((x) =>
      formatAbiItem(x).replace(/^error /, ''),
    );
    expect(new Set(errors).size).toBe(errors.length);
    expect(errors.sort()).toEqual(
      [
        'AlreadyLocked(bytes32,address)',
        'NotLocked(bytes32,address)',
        'InvalidPreimage()',
        'ClaimWindowClosed(uint256)',
        'RefundNotYetAvailable(uint256)',
        'TransferFailed()',
        'SignatureExpired(uint256)',
        'InvalidAmount(uint256)',
        'InvalidNonce()',
        'InvalidSignatureLength()',
        'InvalidSignature()',
        'InvalidSigner()',
      ].sort(),
    );
  });
});

describe('calldata builders', () => {
  it('escrowDepositCalldata: the deposit selector and the params in struct order', () => {
    const data = escrowDepositCalldata(params);
    expect(data.slice(0, 10)).toBe(
      toFunctionSelector(
        'deposit(((address,uint256),uint256,uint256),address,(bytes32,address,bytes32,uint256,bytes32,bytes32,uint256,uint256,uint256),bytes)',
      ),
    );
    const { functionName, args } = decodeFunctionData({ abi: ESCROW_CALL_ABI, data });
    expect(functionName).toBe('deposit');
    expect(args).toEqual([
      { permitted: { token: TOKEN, amount: 1_000_000n }, nonce: 77n, deadline: 1_900_000_000n },
      OWNER,
      params.witness,
      params.signature,
    ]);
    // the static head: the permit tuple inline (token, amount, nonce, deadline), then the owner
    const head = `0x${data.slice(10, 10 + 5 * 64)}`;
    expect(head).toBe(
      encodeAbiParameters(
        [
          { type: 'address' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'address' },
        ],
        [TOKEN, 1_000_000n, 77n, 1_900_000_000n, OWNER],
      ),
    );
  });

  it('escrowClaimCalldata / escrowRefundCalldata: selector and the static words', () => {
    const preimage = b32(9);
    expect(escrowClaimCalldata(ID, OWNER, preimage)).toBe(
      toFunctionSelector('claim(bytes32,address,bytes32)') +
        encodeAbiParameters(
          [{ type: 'bytes32' }, { type: 'address' }, { type: 'bytes32' }],
          [ID, OWNER, preimage],
        ).slice(2),
    );
    expect(escrowRefundCalldata(ID, OWNER)).toBe(
      toFunctionSelector('refund(bytes32,address)') +
        encodeAbiParameters([{ type: 'bytes32' }, { type: 'address' }], [ID, OWNER]).slice(2),
    );
  });

  it('rejects a malformed address instead of encoding it', () => {
    expect(() => escrowRefundCalldata(ID, '0x1234')).toThrow();
  });
});
