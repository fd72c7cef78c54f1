/**
 * The one entry point every settlement report goes through (deposit, fulfil, claim, refund; from
 * the resolver API or the user): normalize the transaction id, refuse one that already settles a
 * leg, then the network kind's verifier (`kinds/<kind>/settlement.ts`). Nothing is ever "recorded
 * as reported": a leg is either proven on chain or refused.
 */
import { fulfilConfirmations, type NetworkConfig, settlementConfirmations } from '../config.ts';
import { resolverById, type SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { kindOf } from '../kinds/registry.ts';
import type { Intent } from '../store/intent-store.ts';
import { assertTxUnused, type Leg, type LegProof, type LegRecord } from '../store/legs.ts';
import type { After, LegCheck } from './check.ts';

/** The canonical text of a transaction id on `network` (refused as `malformed_tx_hash` when it is none). */
export function normalizeTxHash(network: NetworkConfig, txHash: string): string {
  return kindOf(network).normalizeTxHash(txHash);
}

/** The tip (height, block number, slot) of `network` now. */
export function networkTip(ctx: SwapContext, network: NetworkConfig): Promise<bigint> {
  return kindOf(network).tip(ctx.gateway, network);
}

/** Tips of the intent's source and destination networks, recorded when the resolver accepts. */
export async function readAcceptanceTips(ctx: SwapContext, intent: Intent): Promise<Record<string, string>> {
  const ids = [...new Set([intent.sourceChain, intent.destChain])];
  const tips = await Promise.all(ids.map((id) => networkTip(ctx, ctx.catalog.network(id))));
  return Object.fromEntries(ids.map((id, i) => [String(id), tips[i]!.toString()]));
}

/**
 * What `leg`'s transaction must be mined after, on its own network:
 * - a fulfilment, an escrow deposit or a co-signed deposit: the resolver's acceptance (the tip then).
 *   The HTLC funding transaction is exempt: it is this intent's own (exact txid), whenever it lands;
 * - a claim or refund: the verified deposit. A spend of the deposit's own output (HTLC leaves) or an
 *   escrow event for this intent cannot precede it on chain and may share its block; a Solana refund
 *   is a free transfer from the resolver, so it must be in a later slot than the deposit;
 * - a deposit recorded after the intent ended (`late`: record_deposit): none. Its content binds it to
 *   this intent (the approved funding txid, the escrow's Deposited event for this intent, the approved
 *   co-signed message); it is recorded only to open the refund path, never to move towards a fulfilment;
 * - a refund with no recorded deposit (the resolver moved the user's funds and never reported it, or
 *   before accepting): one that spends this intent's own HTLC output or is the escrow's Refunded event
 *   for this intent is bound to it whenever it happened (null); a free transfer needs the acceptance.
 */
export function mustFollow(
  intent: Intent,
  leg: Leg,
  network: NetworkConfig,
  deposit: LegRecord | null,
  late = false,
): After | null {
  const acceptance = (): After => {
    const tips = intent.row.accepted_tips
      ? (JSON.parse(intent.row.accepted_tips) as Record<string, string>)
      : {};
    const tip = tips[String(network.id)];
    return { event: 'acceptance', height: tip === undefined ? null : BigInt(tip), sameBlock: false };
  };
  const source = kindOf(network);
  if (leg === 'fulfil') return acceptance();
  if (leg === 'deposit') return source.depositIsOwnTransaction || late ? null : acceptance();
  if (!deposit) return leg === 'refund' && source.refundSpendsDeposit ? null : acceptance();
  return {
    event: 'deposit',
    height: deposit.blockHeight === null ? null : BigInt(deposit.blockHeight),
    sameBlock: leg === 'claim' || source.refundSpendsDeposit,
  };
}

/**
 * Proves `leg` of `intent` with the reported transaction, or throws (TX_NOT_VERIFIED, TX_ALREADY_USED, 503).
 * `late`: a deposit recorded after the intent ended (see {@link mustFollow}).
 */
export async function verifyLeg(
  ctx: SwapContext,
  intent: Intent,
  leg: Leg,
  txHash: string,
  late = false,
): Promise<LegProof> {
  const network = ctx.catalog.network(leg === 'fulfil' ? intent.destChain : intent.sourceChain);
  const tx = normalizeTxHash(network, txHash);
  await assertTxUnused(ctx.db, network.id, tx);
  const resolver = resolverById(ctx, intent.resolverId);
  if (!resolver) throw E.RESOLVER_NOT_ASSIGNED.create(intent.id);
  const deposit = intent.settlement.find((l) => l.leg === 'deposit') ?? null;
  const check: LegCheck = {
    intent,
    leg,
    network,
    txHash: tx,
    // A fulfilment releases the preimage: it needs the network's finality (fulfil_min_confirmations).
    minConfirmations:
      leg === 'fulfil'
        ? fulfilConfirmations(ctx.config, network)
        : settlementConfirmations(ctx.config, network),
    after: mustFollow(intent, leg, network, deposit, late),
    deposit,
    resolver: resolver.identity,
    refundSafetyMarginSecs: ctx.config.swap.refund_safety_margin_secs,
  };
  const verified = await kindOf(network).verifyLeg(ctx.gateway, check);
  return { ...verified, leg, networkId: network.id, txHash: tx, verifiedAt: ctx.now() };
}
