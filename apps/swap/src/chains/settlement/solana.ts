/**
 * Solana legs, read through JSON-RPC (`getTransaction` base64 wire bytes + `getSignatureStatuses`):
 * - deposit (cosign): the executed transaction's message is byte-for-byte the one the user signed
 *   for THIS intent (it names the intent in its memo), and it succeeded;
 * - fulfil: System transfers from the resolver to the user of at least `min_dest_amount` lamports
 *   (native SOL destinations; SPL-token destinations are refused, not guessed);
 * - refund: System transfers to the user's refund (or source) address of at least the source amount;
 * - claim: none — a co-signed deposit pays the resolver / escrow address directly.
 * Confirmations: a finalized transaction counts as 32 (Solana's maximum lockout), otherwise the
 * node's `confirmations`.
 */
import { decodeSolanaTransaction, systemTransfers } from '@rgbx/chains/sol';
import type { ChainGateway } from '../chain-gateway.ts';
import type { CosignContext } from '../cosign-approval.ts';
import { type LegCheck, refuse, requireConfirmations, requireFresh, type VerifiedLeg } from './check.ts';

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
  requireFresh(check, t.slot);
  const tx = decodeSolanaTransaction(t.wire);
  if (tx.signatures[0] !== check.txHash) refuse('not_found', 'the node returned another transaction');
  const at = { blockHeight: t.slot, blockHash: null, blockTime: t.blockTime, confirmations: conf };
  const transfers = systemTransfers(tx);

  if (check.leg === 'deposit') {
    if (intent.mechanism !== 'cosign')
      refuse('mechanism', `a deposit on Solana needs a cosign intent, this one is ${intent.mechanism}`);
    const cc = JSON.parse(intent.row.verify_context) as CosignContext;
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

  const [recipients, sender, required, token] =
    check.leg === 'fulfil'
      ? [[intent.userDestAddress], check.resolver.solanaAddress, intent.minDestAmountLots, intent.destToken]
      : [
          [intent.refundAddress, intent.userSourceAddress],
          undefined,
          intent.sourceAmountLots,
          intent.sourceToken,
        ];
  if (token !== NATIVE_SOL_MINT) refuse('token', `only native SOL is verified on Solana, not ${token}`);
  if (tx.usesLookupTables) refuse('lookup_tables', 'transactions loading address lookup tables are not read');
  const toUser = transfers.filter((x) => recipients.includes(x.to));
  if (toUser.length === 0) refuse('recipient', `the transaction pays nothing to ${recipients.join(' or ')}`);
  const counted = sender === undefined ? toUser : toUser.filter((x) => x.from === sender);
  if (counted.length === 0)
    refuse('sender', `the transfer to the user is not sent by the resolver ${sender}`);
  const paid = counted.reduce((s, x) => s + x.lamports, 0n);
  if (paid < required)
    refuse('amount', `the transaction pays ${paid} lamports, at least ${required} expected`, {
      paid: paid.toString(),
      required: required.toString(),
    });
  return {
    ...at,
    index: counted[0]!.index,
    recipient: counted[0]!.to,
    token,
    amount: paid,
    sender: counted[0]!.from,
  };
}
