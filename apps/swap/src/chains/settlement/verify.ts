/**
 * The one entry point every settlement report goes through (deposit, fulfil, claim, refund; from
 * the resolver API or the user): normalize the transaction id, refuse one that already settles a
 * leg, then the network type's verifier (bitcoin.ts, evm.ts, solana.ts). Nothing is ever "recorded
 * as reported": a leg is either proven on chain or refused.
 */
import { type NetworkConfig, settlementConfirmations } from '../../config.ts';
import { resolverById, type SwapContext } from '../../context.ts';
import { E } from '../../errors.ts';
import type { Intent } from '../../store/intent-store.ts';
import { bitcoinTip, verifyBitcoinLeg } from './bitcoin.ts';
import { type After, type LegCheck, refuse, type VerifiedLeg } from './check.ts';
import { evmTip, verifyEvmLeg } from './evm.ts';
import { assertTxUnused, type Leg, type LegProof, type LegRecord } from './legs.ts';
import { solanaTip, verifySolanaLeg } from './solana.ts';

const TXID = /^[0-9a-f]{64}$/;
const EVM_TX = /^0x[0-9a-f]{64}$/;
const BASE58_SIG = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;

/** The canonical text of a transaction id on `network` (lower-case hex, 0x for EVM/Tron, base58 for Solana). */
export function normalizeTxHash(network: NetworkConfig, txHash: string): string {
  if (network.type === 'BITCOIN') {
    const h = txHash.toLowerCase();
    if (!TXID.test(h)) refuse('malformed_tx_hash', 'a Bitcoin txid is 64 hex characters');
    return h;
  }
  if (network.type === 'EVM' || network.type === 'TRON') {
    const h = (txHash.startsWith('0x') ? txHash : `0x${txHash}`).toLowerCase();
    if (!EVM_TX.test(h)) refuse('malformed_tx_hash', 'a transaction hash is 32 bytes of 0x-hex');
    return h;
  }
  if (!BASE58_SIG.test(txHash)) refuse('malformed_tx_hash', 'a Solana transaction id is a base58 signature');
  return txHash;
}

/** The tip (height, block number, slot) of `network` now. */
export function networkTip(ctx: SwapContext, network: NetworkConfig): Promise<bigint> {
  switch (network.type) {
    case 'BITCOIN':
      return bitcoinTip(ctx.gateway);
    case 'EVM':
    case 'TRON':
      return evmTip(ctx.gateway, { network });
    case 'SOLANA':
      return solanaTip(ctx.gateway, { network });
  }
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
 *   is a free transfer from the resolver, so it must be in a later slot than the deposit.
 */
export function mustFollow(
  intent: Intent,
  leg: Leg,
  network: NetworkConfig,
  deposit: LegRecord | null,
): After | null {
  const acceptance = (): After => {
    const tips = intent.row.accepted_tips
      ? (JSON.parse(intent.row.accepted_tips) as Record<string, string>)
      : {};
    const tip = tips[String(network.id)];
    return { event: 'acceptance', height: tip === undefined ? null : BigInt(tip), sameBlock: false };
  };
  if (leg === 'fulfil') return acceptance();
  if (leg === 'deposit') return intent.mechanism === 'htlc' ? null : acceptance();
  if (!deposit) return acceptance();
  return {
    event: 'deposit',
    height: deposit.blockHeight === null ? null : BigInt(deposit.blockHeight),
    sameBlock: !(leg === 'refund' && intent.mechanism === 'cosign'),
  };
}

/** Proves `leg` of `intent` with the reported transaction, or throws (TX_NOT_VERIFIED, TX_ALREADY_USED, 503). */
export async function verifyLeg(
  ctx: SwapContext,
  intent: Intent,
  leg: Leg,
  txHash: string,
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
    minConfirmations: settlementConfirmations(ctx.config, network),
    after: mustFollow(intent, leg, network, deposit),
    deposit,
    resolver: resolver.identity,
    refundSafetyMarginSecs: ctx.config.swap.refund_safety_margin_secs,
  };
  let verified: VerifiedLeg;
  switch (network.type) {
    case 'BITCOIN':
      verified = await verifyBitcoinLeg(ctx.gateway, check);
      break;
    case 'EVM':
    case 'TRON':
      verified = await verifyEvmLeg(ctx.gateway, check);
      break;
    case 'SOLANA':
      verified = await verifySolanaLeg(ctx.gateway, check);
      break;
  }
  return { ...verified, leg, networkId: network.id, txHash: tx, verifiedAt: ctx.now() };
}
