/**
 * Intent creation: from the caller's own unexpired, unused quote and the user's addresses, build
 * the approval data for the source network's mechanism, generate and seal the preimage, and store
 * everything in one transaction (intent, first event, Permit2 nonce, reserved UTXOs).
 */
import { randomUUID } from 'node:crypto';
import { isUniqueViolation } from '@rgbx/store';
import { resolverById, type SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import type { BuiltApproval } from '../kinds/kind.ts';
import { kindOf } from '../kinds/registry.ts';
import { pairColumns } from '../store/database.ts';
import { type Intent, insertIntent, isQuoteUsed, reservedOutpoints } from '../store/intent-store.ts';
import { stringifyJson } from '../store/json.ts';
import { checkAddress } from './catalog.ts';
import { type IntentStatus, transition } from './lifecycle.ts';
import { PreimageVault } from './preimage-vault.ts';
import { loadQuote, type Quote } from './quotes.ts';

export interface IntentInput {
  quoteId: string;
  refundAddress: string;
  destinationAddress: string;
  sourceAddress: string;
  sourcePublicKey?: string | null;
  retailUserId?: string | null;
}

/** Statuses whose reserved UTXOs are still held (the funding transaction may still be broadcast). */
const HOLDING_UTXOS: readonly IntentStatus[] = ['Initiated', 'ApprovalAdded', 'Accepted'];

async function buildApproval(
  ctx: SwapContext,
  quote: Quote,
  input: IntentInput,
  intentId: string,
  secretHash: string,
  deadline: number,
): Promise<BuiltApproval> {
  const network = ctx.catalog.network(quote.sourceChain);
  if (quote.approvalMechanism === 'rgblock')
    throw E.NO_ROUTE.createWith({ details: { reason: 'RGB asset sources are not supported yet' } });
  const kind = kindOf(network);
  const resolver = resolverById(ctx, quote.resolverId);
  const resolverAddress = resolver?.enabled ? kind.identity(resolver.identity) : undefined;
  if (!resolverAddress)
    throw E.NO_ROUTE.createWith({ details: { reason: 'the quoting resolver is no longer available' } });
  return kind.buildApproval({
    gateway: ctx.gateway,
    config: ctx.config,
    network,
    token: ctx.catalog.token(network.id, quote.sourceToken),
    sourceToken: quote.sourceToken,
    intentId,
    resolverAddress,
    sourceAddress: input.sourceAddress,
    sourcePublicKey: input.sourcePublicKey ?? null,
    amount: quote.sourceAmountLots,
    secretHash,
    deadline,
    destChain: quote.destChain,
    destToken: quote.destToken,
    destAddress: input.destinationAddress,
    minDestAmount: quote.minDestAmountLots,
    maxDestAmount: quote.maxDestAmountLots,
    reserved: () => reservedOutpoints(ctx.db, HOLDING_UTXOS),
  });
}

export async function createIntent(
  ctx: SwapContext,
  apiKeyId: string,
  input: IntentInput,
): Promise<{ intent: Intent; quote: Quote }> {
  const quote = await loadQuote(ctx.db, apiKeyId, input.quoteId);
  const nowMs = ctx.now();
  if (quote.expiry * 1000 <= nowMs) throw E.QUOTE_EXPIRED.create(quote.id);
  if (await isQuoteUsed(ctx.db, quote.id)) throw E.QUOTE_ALREADY_USED.create(quote.id);

  const sourceNetwork = ctx.catalog.network(quote.sourceChain);
  const destNetwork = ctx.catalog.network(quote.destChain);
  checkAddress('sourceAddress', input.sourceAddress, sourceNetwork);
  checkAddress('refundAddress', input.refundAddress, sourceNetwork);
  checkAddress('destinationAddress', input.destinationAddress, destNetwork);

  const intentId = randomUUID();
  const deadline = Math.floor(nowMs / 1000) + ctx.config.swap.intent_ttl_secs;
  const secret = PreimageVault.generate();
  const sealed = ctx.vault.seal(secret.preimage, intentId);
  secret.preimage.fill(0);

  for (let attempt = 0; ; attempt++) {
    const built = await buildApproval(ctx, quote, input, intentId, secret.secretHash, deadline);
    const status = transition(null, 'create');
    try {
      const intentRow = {
        id: intentId,
        api_key_id: apiKeyId,
        quote_id: quote.id,
        resolver_id: quote.resolverId,
        status,
        mechanism: quote.approvalMechanism,
        ...pairColumns(quote),
        user_source_address: input.sourceAddress,
        user_source_public_key: input.sourcePublicKey ?? null,
        user_dest_address: input.destinationAddress,
        refund_address: input.refundAddress,
        retail_user_id: input.retailUserId ?? quote.retailUserId ?? null,
        deadline,
        secret_hash: secret.secretHash,
        secret_sealed: sealed,
        params_to_sign: stringifyJson(built.params),
        verify_context: stringifyJson(built.context),
        approval: null,
        approval_digest: null,
        execution: null,
        user_deposit_tx: null,
        fulfill_tx: null,
        swap_tx: null,
        refund_tx: null,
        decline_reason: null,
        created_at: nowMs,
        updated_at: nowMs,
        approved_at: null,
        accepted_at: null,
        declined_at: null,
        user_deposited_at: null,
        fulfilled_at: null,
        swapped_at: null,
        expired_at: null,
        refund_requested_at: null,
        refunded_at: null,
        secret_released_at: null,
      };
      const eventRow = {
        intent_id: intentId,
        from_status: null,
        to_status: status,
        trigger: 'create',
        actor: 'user',
        details: null,
        at: nowMs,
      };
      const nonceRow = built.nonce
        ? {
            network_id: sourceNetwork.id,
            owner: built.nonce.owner,
            nonce: built.nonce.nonce,
            intent_id: intentId,
          }
        : null;
      const intent = await insertIntent(ctx.db, {
        intent: intentRow,
        event: eventRow,
        nonce: nonceRow,
        outpoints: built.outpoints,
      });
      return { intent, quote };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      if (await isQuoteUsed(ctx.db, quote.id)) throw E.QUOTE_ALREADY_USED.create(quote.id);
      // A Permit2 nonce collision (1 in 2^52 per pair): build again with another nonce.
      if (attempt >= 2) throw err;
    }
  }
}
