/**
 * `cosign` approvals (Solana): a v0 transaction built by the chains module with the resolver at
 * signer position 0 (fee payer), the user at 1, and an optional backend at 2; it transfers the
 * source lamports from the user to the escrow (or the resolver) with an SPL memo naming the intent.
 * Verification: the message is byte-for-byte ours, position 1 carries a valid ed25519 signature by
 * `userAddress` (which must be the intent's source address), positions 0 and 2 are untouched.
 *
 * The recent blockhash comes from the network's node (`networks.rpc_url`, required).
 */
import { buildCosignTransaction, VerificationError, verifyCosignTransaction } from '@rgbx/chains/sol';
import type { ChainGateway } from './chain-gateway.ts';
import type { NetworkConfig } from './config.ts';
import { E } from './errors.ts';

export interface CosignContext {
  unsignedTransaction: string;
  userAddress: string;
  proxyAddress: string;
}

export interface CosignParams {
  transaction: string;
}

export async function buildCosignApproval(args: {
  gateway: ChainGateway;
  network: NetworkConfig;
  intentId: string;
  resolverAddress: string;
  userAddress: string;
  lamports: bigint;
}): Promise<{ context: CosignContext; params: CosignParams }> {
  const { blockhash, lastValidBlockHeight } = await args.gateway.solana(args.network).latestBlockhash();
  const destination = args.network.solana_escrow_address ?? args.resolverAddress;
  const built = buildCosignTransaction({
    resolver: args.resolverAddress,
    user: args.userAddress,
    recentBlockhash: blockhash,
    lastValidBlockHeight,
    lamports: args.lamports,
    destination,
    memo: `rgbx:intent:${args.intentId}`,
  });
  return {
    context: {
      unsignedTransaction: built.transactionHex,
      userAddress: args.userAddress,
      proxyAddress: destination,
    },
    params: { transaction: built.transactionHex },
  };
}

/** Verifies the co-signed transaction; returns the user's signature (the idempotency key). */
export async function verifyCosignApproval(
  ctx: CosignContext,
  signed: { transaction: string; userAddress: string },
): Promise<{ canonical: string; signedTransaction: string }> {
  if (signed.userAddress !== ctx.userAddress) {
    throw E.INVALID_COSIGN.createWith(
      { details: { reason: 'user_address', expected: ctx.userAddress, received: signed.userAddress } },
      'userAddress is not the intent source address',
    );
  }
  const txHex = signed.transaction.replace(/^0x/, '');
  if (!/^([0-9a-fA-F]{2})+$/.test(txHex)) {
    throw E.INVALID_COSIGN.createWith(
      { details: { reason: 'malformed_transaction', expected: 'hex' } },
      'not hex',
    );
  }
  try {
    const r = await verifyCosignTransaction({
      unsignedTransactionHex: ctx.unsignedTransaction,
      signedTransactionHex: txHex,
      userAddress: signed.userAddress,
    });
    return { canonical: r.userSignature, signedTransaction: txHex.toLowerCase() };
  } catch (err) {
    if (err instanceof VerificationError) {
      throw E.INVALID_COSIGN.createWith(
        {
          details: {
            reason: err.code,
            ...(err.expected === undefined ? {} : { expected: err.expected }),
            ...(err.received === undefined ? {} : { received: err.received }),
          },
        },
        err.message,
      );
    }
    throw err;
  }
}
