/**
 * Solana legs, read through JSON-RPC (`getTransaction` base64 wire bytes + `getSignatureStatuses`):
 * - deposit (cosign): the executed transaction's message is byte-for-byte the one the user signed
 *   for THIS intent (it names the intent in its memo), and it succeeded;
 * - fulfil: System transfers from the resolver to the user of at least `min_dest_amount` lamports
 *   (native SOL destinations; SPL-token destinations are refused, not guessed);
 * - refund (the resolver's; a co-signed deposit pays the resolver or the escrow address directly, so
 *   returning it is a payment back): System transfers from the account that received the deposit
 *   (or the resolver's `solana_address`) to the intent's refund address, summing to exactly the
 *   deposited lamports, in a slot after the deposit's. Without a sender, any earlier transfer to the
 *   user (an airdrop, another payment) would count and the resolver would keep the user's SOL;
 * - claim: none — a co-signed deposit pays the resolver / escrow address directly.
 * Confirmations: a finalized transaction counts as 32 (Solana's maximum lockout), otherwise the
 * node's `confirmations`.
 */
import { decodeSolanaTransaction, systemTransfers } from '@rgbx/chains/sol';
import type { ChainGateway } from '../../chains/chain-gateway.ts';
import {
  type LegCheck,
  refuse,
  requireAfter,
  requireAmount,
  requireConfirmations,
  type VerifiedLeg,
} from '../../settlement/check.ts';
import type { CosignContext } from './cosign-approval.ts';

/** The wrapped-SOL mint names native SOL in the token list. */
export const NATIVE_SOL_MINT = 'So11111111111111111111111111111111111111112';
const FINALIZED_CONFIRMATIONS = 32;

export async function solanaTip(gateway: ChainGateway, check: Pick<LegCheck, 'network'>): Promise<bigint> {
  return gateway.solana(check.network).slot();
}

export async function verifySolanaLeg(gateway: ChainGateway, check: LegCheck): Promise<VerifiedLeg> {
  const { intent, network } = check;
  if (check.leg === 'claim')
    refuse(
      'no_claim_leg',
      'a Solana deposit pays the resolver or the escrow address directly: there is no claim transaction',
    );
  const t = await gateway.solana(network).transaction(check.txHash);
  if (!t) refuse('not_found', `transaction ${check.txHash} is not known to the Solana node`);
  if (t.err !== null) refuse('failed', 'the transaction failed on chain', { err: t.err });
  const conf =
    t.confirmationStatus === 'finalized' || t.confirmations === null
      ? FINALIZED_CONFIRMATIONS
      : Math.max(t.confirmations, t.confirmationStatus === 'confirmed' ? 1 : 0);
  requireConfirmations(check, conf);
  requireAfter(check, t.slot);
  const tx = decodeSolanaTransaction(t.wire);
  if (tx.signatures[0] !== check.txHash) refuse('not_found', 'the node returned another transaction');
  const at = { blockHeight: t.slot, blockHash: null, blockTime: t.blockTime, confirmations: conf };
  const transfers = systemTransfers(tx);

  if (check.leg === 'deposit') {
    if (intent.mechanism !== 'cosign')
      refuse('mechanism', `a deposit on Solana needs a cosign intent, this one is ${intent.mechanism}`);
    const cc = intent.context as CosignContext;
    const approved = decodeSolanaTransaction(Buffer.from(cc.unsignedTransaction, 'hex'));
    if (Buffer.compare(Buffer.from(approved.messageBytes), Buffer.from(tx.messageBytes)) !== 0)
      refuse(
        'not_the_approved_transaction',
        'the executed transaction is not the one the user approved for this intent',
      );
    const pay = transfers.find((x) => x.from === cc.userAddress && x.to === cc.proxyAddress);
    if (!pay || pay.lamports !== intent.sourceAmountLots)
      refuse('amount', 'the approved transaction does not move the quoted lamports to the escrow');
    return {
      ...at,
      index: pay.index,
      recipient: cc.proxyAddress,
      token: intent.sourceToken,
      amount: pay.lamports,
      sender: cc.userAddress,
    };
  }

  if (tx.usesLookupTables) refuse('lookup_tables', 'transactions loading address lookup tables are not read');

  if (check.leg === 'refund') {
    if (intent.mechanism !== 'cosign')
      refuse('mechanism', `a refund on Solana needs a cosign intent, this one is ${intent.mechanism}`);
    const cc = intent.context as CosignContext;
    const deposited = check.deposit ? BigInt(check.deposit.amount) : intent.sourceAmountLots;
    const senders = new Set([cc.proxyAddress, check.resolver.solanaAddress].filter((a) => a !== undefined));
    const toRefund = transfers.filter((x) => x.to === intent.refundAddress);
    if (toRefund.length === 0) refuse('recipient', `the transaction pays nothing to ${intent.refundAddress}`);
    const counted = toRefund.filter((x) => senders.has(x.from));
    if (counted.length === 0)
      refuse('sender', `the transfer to the refund address is not sent by ${[...senders].join(' or ')}`);
    const paid = counted.reduce((sum, x) => sum + x.lamports, 0n);
    requireAmount(paid, deposited, 'exactly', ' lamports');
    return {
      ...at,
      index: counted[0]!.index,
      recipient: intent.refundAddress,
      token: intent.sourceToken,
      amount: paid,
      sender: counted[0]!.from,
    };
  }

  // fulfil
  if (intent.destToken !== NATIVE_SOL_MINT)
    refuse('token', `only native SOL is verified on Solana, not ${intent.destToken}`);
  const sender = check.resolver.solanaAddress;
  const toUser = transfers.filter((x) => x.to === intent.userDestAddress);
  if (toUser.length === 0) refuse('recipient', `the transaction pays nothing to ${intent.userDestAddress}`);
  const counted = toUser.filter((x) => x.from === sender);
  if (counted.length === 0)
    refuse('sender', `the transfer to the user is not sent by the resolver ${sender}`);
  const paid = counted.reduce((sum, x) => sum + x.lamports, 0n);
  requireAmount(paid, intent.minDestAmountLots, 'at_least', ' lamports');
  return {
    ...at,
    index: counted[0]!.index,
    recipient: intent.userDestAddress,
    token: intent.destToken,
    amount: paid,
    sender: counted[0]!.from,
  };
}
