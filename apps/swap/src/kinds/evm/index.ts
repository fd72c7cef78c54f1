/**
 * EVM chains: sources approve with a Permit2 `PermitWitnessTransferFrom` signature that the escrow
 * pulls (`permit2-approval.ts`); legs are the escrow's events and ERC-20 transfers (`settlement.ts`),
 * read over JSON-RPC. `permit2Kind` is shared with Tron, which speaks the same contracts through its
 * Ethereum-compatible JSON-RPC with its own addresses and TIP-712 domain.
 */

import type { NetworkType } from '../../config.ts';
import { E } from '../../errors.ts';
import { refuse } from '../../settlement/check.ts';
import type { ConfigIssue, NetworkKind } from '../kind.ts';
import {
  buildPermit2Context,
  newPermit2Nonce,
  type Permit2Context,
  type Permit2Params,
  permit2Params,
  verifyPermit2Approval,
} from './permit2-approval.ts';
import { type EvmAddressing, verifyEvmLeg } from './settlement.ts';

const EVM_TX = /^0x[0-9a-f]{64}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export function isEvmAddress(s: string): boolean {
  return EVM_ADDRESS.test(s);
}

export interface Permit2KindSpec extends EvmAddressing {
  type: Extract<NetworkType, 'EVM' | 'TRON'>;
  permit2: Permit2Context['kind'];
  identityKey: 'evm_address' | 'tron_address';
  isAddress(address: string): boolean;
  tokenKey(address: string): string;
}

/** A network kind whose sources sign Permit2 and whose legs are read from an EVM JSON-RPC. */
export function permit2Kind(spec: Permit2KindSpec): NetworkKind {
  const addressing: EvmAddressing = { toRpc: spec.toRpc, resolver: spec.resolver };
  return {
    type: spec.type,
    mechanism: 'permit2',
    submission: 'permit2',
    identityKey: spec.identityKey,
    identity: spec.resolver,
    fulfilBySender: true,

    checkConfig(n, at) {
      const issues: ConfigIssue[] = [];
      for (const key of ['chain_id', 'permit2_address', 'escrow_address', 'rpc_url'] as const)
        if (n[key] === undefined)
          issues.push({
            path: `${at}.${key}`,
            message:
              key === 'rpc_url'
                ? `"${at}.rpc_url" is required: network ${n.id} (${n.type}) settles only on transactions read from its node`
                : `"${at}.${key}" is required for ${n.type}`,
          });
      return issues;
    },
    defaultConfirmations: () => 1,
    // EVM: 12 blocks (Ethereum's customary depth; its finality is ~64); Tron: 19, a solidified block
    // (confirmed by 19 of its 27 block producers).
    fulfilFinality: spec.type === 'TRON' ? 19 : 12,

    isAddress: (address) => spec.isAddress(address),
    tokenKey: spec.tokenKey,
    normalizeTxHash(txHash) {
      const h = (txHash.startsWith('0x') ? txHash : `0x${txHash}`).toLowerCase();
      if (!EVM_TX.test(h)) refuse('malformed_tx_hash', 'a transaction hash is 32 bytes of 0x-hex');
      return h;
    },

    tip: (gateway, network) => gateway.evm(network).blockNumber(),

    async buildApproval(a) {
      if (a.token.wrapped_token_address) {
        throw E.NO_ROUTE.createWith({
          details: {
            reason: 'native coins cannot be moved by Permit2: wrap first',
            wrapped_token_address: a.token.wrapped_token_address,
          },
        });
      }
      const nonce = newPermit2Nonce();
      const context = buildPermit2Context({
        kind: spec.permit2,
        network: a.network,
        intentId: a.intentId,
        owner: a.sourceAddress,
        token: a.sourceToken,
        amount: a.amount,
        resolverAddress: a.resolverAddress,
        secretHash: a.secretHash,
        destChainId: a.destChain,
        destToken: a.destToken,
        destAddress: a.destAddress,
        minDestAmount: a.minDestAmount,
        maxDestAmount: a.maxDestAmount,
        deadline: a.deadline,
        nonce,
      });
      return {
        params: permit2Params(context, a.resolverAddress),
        context,
        nonce: { owner: spec.toRpc(a.sourceAddress), nonce: String(nonce) },
        outpoints: [],
      };
    },

    async verifyApproval({ gateway, verifier, network, intent, submission, checkAllowance }) {
      if (submission.type !== 'permit2') throw new Error('unreachable: the submission type is checked first');
      const pc = intent.context as Permit2Context;
      const { canonical } = await verifyPermit2Approval(
        pc,
        submission.signature,
        network,
        gateway,
        checkAllowance,
        verifier,
        spec.toRpc,
      );
      // The typed data handed out at creation, built from this same stored context (the signature was
      // checked against it), is what the resolver submits: not rebuilt and hashed again here.
      const typedData =
        (intent.paramsToSign as Partial<Permit2Params> | null)?.typedData ??
        permit2Params(pc, pc.witness.resolver).typedData;
      return {
        canonical,
        approval: { type: 'permit2', signature: canonical },
        execution: { signature: canonical, owner: pc.owner, nonce: pc.nonce, typedData },
      };
    },

    executionView: (_intent, ex) => ({
      permit2_signature: ex.signature,
      owner: ex.owner,
      nonce: ex.nonce,
      typed_data: ex.typedData,
    }),

    depositIsOwnTransaction: false,
    refundSpendsDeposit: true,
    verifyLeg: (gateway, check) => verifyEvmLeg(gateway, check, addressing),
    fulfilCommitment: () => null,
  };
}

export const evm: NetworkKind = permit2Kind({
  type: 'EVM',
  permit2: 'evm',
  identityKey: 'evm_address',
  resolver: (r) => r.evmAddress,
  isAddress: isEvmAddress,
  tokenKey: (address) => address.toLowerCase(),
  toRpc: (address) => address.toLowerCase() as `0x${string}`,
});
