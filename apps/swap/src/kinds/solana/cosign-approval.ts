/**
 * `cosign` approvals (Solana): a v0 transaction built by the chains module with the resolver at
 * signer position 0 (fee payer), the user at 1, and an optional backend at 2; it transfers the
 * source lamports from the user to the escrow (or the resolver) with an SPL memo naming the intent.
 * Verification: the message is byte-for-byte ours, position 1 carries a valid ed25519 signature by
 * `userAddress` (which must be the intent's source address), positions 0 and 2 are untouched.
 *
 * The recent blockhash comes from the network's node (`networks.rpc_url`, required).
 */
import {
  buildCosignTransaction,
  ChainInputError,
  MEMO_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS,
  verifyCosignTransaction,
} from '@rgbx/chains/sol';

/** Programs a source address can never be (they cannot sign): System, Memo, SPL Token, Token-2022, ATA, Vote, Stake, loaders, sysvars' owner. */
const SOLANA_PROGRAMS = new Set<string>([
  SYSTEM_PROGRAM_ADDRESS,
  MEMO_PROGRAM_ADDRESS,
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
  'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL',
  'Vote111111111111111111111111111111111111111',
  'Stake11111111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'ComputeBudget111111111111111111111111111111',
  'Sysvar1111111111111111111111111111111111111',
]);

import type { ChainGateway } from '../../chains/chain-gateway.ts';
import type { NetworkConfig } from '../../config.ts';
import { E, verificationFailure } from '../../errors.ts';

export interface CosignContext {
  unsignedTransaction: string;
  userAddress: string;
  proxyAddress: string;
}

export interface CosignParams {
  transaction: string;
  /**
   * The Hotpot SDK's `nonce` (an integer it decodes): the last block height at which the
   * transaction's recent blockhash is valid — after it the transaction can never land.
   */
  nonce?: number;
}

export async function buildCosignApproval(args: {
  gateway: ChainGateway;
  network: NetworkConfig;
  intentId: string;
  resolverAddress: string;
  userAddress: string;
  lamports: bigint;
}): Promise<{ context: CosignContext; params: CosignParams }> {
  const destination = args.network.solana_escrow_address ?? args.resolverAddress;
  // The user signs at position 1 and pays: it cannot be the resolver (position 0), the destination
  // or a program (a program account cannot sign a transfer).
  if (args.userAddress === args.resolverAddress || args.userAddress === destination)
    throw E.INVALID_ADDRESS.create('sourceAddress', "is the resolver's or the escrow's own address");
  if (SOLANA_PROGRAMS.has(args.userAddress))
    throw E.INVALID_ADDRESS.create('sourceAddress', 'is a program address, which cannot sign a transfer');
  const { blockhash, lastValidBlockHeight } = await args.gateway.solana(args.network).latestBlockhash();
  let built: ReturnType<typeof buildCosignTransaction>;
  try {
    built = buildCosignTransaction({
      resolver: args.resolverAddress,
      user: args.userAddress,
      recentBlockhash: blockhash,
      lastValidBlockHeight,
      lamports: args.lamports,
      destination,
      memo: `rgbx:intent:${args.intentId}`,
    });
  } catch (err) {
    if (err instanceof ChainInputError) throw E.INVALID_ADDRESS.create('sourceAddress', err.message);
    throw err;
  }
  return {
    context: {
      unsignedTransaction: built.transactionHex,
      userAddress: args.userAddress,
      proxyAddress: destination,
    },
    params: { transaction: built.transactionHex, nonce: Number(lastValidBlockHeight) },
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
    verificationFailure(err, E.INVALID_COSIGN);
  }
}
