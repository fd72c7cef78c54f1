/**
 * Solana: native SOL sources approve by signing a v0 transaction the resolver co-signs and sends
 * (`cosign-approval.ts`: it pays the resolver or `solana_escrow_address` directly, so there is no
 * claim leg and a refund is the resolver paying back); legs read over JSON-RPC (`settlement.ts`).
 */
import { E } from '../../errors.ts';
import { refuse } from '../../settlement/check.ts';
import { exactTokenKey, type NetworkKind } from '../kind.ts';
import { isSolanaAddress, solanaKeyMatches } from './addresses.ts';
import { buildCosignApproval, type CosignContext, verifyCosignApproval } from './cosign-approval.ts';
import { verifySolanaLeg } from './settlement.ts';

const BASE58_SIG = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;

export const solana: NetworkKind = {
  type: 'SOLANA',
  mechanism: 'cosign',
  submission: 'cosign',
  identityKey: 'solana_address',
  identity: (r) => r.solanaAddress,
  fulfilBySender: true,

  checkConfig(n, at) {
    return n.rpc_url === undefined
      ? [
          {
            path: `${at}.rpc_url`,
            message: `"${at}.rpc_url" is required: network ${n.id} (SOLANA) settles only on transactions read from its node`,
          },
        ]
      : [];
  },
  defaultConfirmations: () => 1,
  // Finalized (counted as 32): an optimistically confirmed transaction is not rolled back in practice,
  // a finalized one cannot be.
  fulfilFinality: 32,

  isAddress: (address) => isSolanaAddress(address),
  tokenKey: exactTokenKey,
  normalizeTxHash(txHash) {
    if (!BASE58_SIG.test(txHash))
      refuse('malformed_tx_hash', 'a Solana transaction id is a base58 signature');
    return txHash;
  },

  tip: (gateway, network) => gateway.solana(network).slot(),

  async buildApproval(a) {
    if (!a.sourcePublicKey) throw E.PUBLIC_KEY_REQUIRED.create();
    if (!solanaKeyMatches(a.sourcePublicKey, a.sourceAddress))
      throw E.INVALID_ADDRESS.create('sourcePublicKey', 'is not the public key of the Solana source address');
    if (a.token.wrapped_token_address)
      throw E.NO_ROUTE.createWith({
        details: { reason: 'only native SOL sources are co-signed', token: a.token.address },
      });
    const { context, params } = await buildCosignApproval({
      gateway: a.gateway,
      network: a.network,
      intentId: a.intentId,
      resolverAddress: a.resolverAddress,
      userAddress: a.sourceAddress,
      lamports: a.amount,
    });
    return { params, context, outpoints: [] };
  },

  async verifyApproval({ intent, submission }) {
    if (submission.type !== 'cosign') throw new Error('unreachable: the submission type is checked first');
    const { canonical, signedTransaction } = await verifyCosignApproval(
      intent.context as CosignContext,
      submission,
    );
    return {
      canonical,
      approval: { type: 'cosign', transaction: signedTransaction, userAddress: submission.userAddress },
      execution: { signedTransaction },
    };
  },

  executionView: (_intent, ex) => ({ signed_transaction: ex.signedTransaction }),

  depositIsOwnTransaction: false,
  // A refund is the resolver's own transfer back, not a spend of the deposit: a later slot.
  refundSpendsDeposit: false,
  verifyLeg: verifySolanaLeg,
  fulfilCommitment: () => null,
};
