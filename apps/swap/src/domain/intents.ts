/**
 * Intent creation: from the caller's own unexpired, unused quote and the user's addresses, build
 * the approval data for the source network's mechanism, generate and seal the preimage, and store
 * everything in one transaction (intent, first event, Permit2 nonce, reserved UTXOs).
 */
import { randomUUID } from 'node:crypto';
import { isUniqueViolation } from '@rgbx/store';
import type { Insertable } from 'kysely';
import { resolverById, type SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import type { BuiltApproval } from '../kinds/kind.ts';
import { kindOf } from '../kinds/registry.ts';
import { type IntentTable, pairColumns, type SwapDatabase, type SwapDb } from '../store/database.ts';
import { type Intent, isPostgres, toIntent } from '../store/intent-store.ts';
import { stringifyJson } from '../store/json.ts';
import { checkAddress } from './catalog.ts';
import { transition } from './lifecycle.ts';
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
const HOLDING_UTXOS = ['Initiated', 'ApprovalAdded', 'Accepted'];

async function reservedOutpoints(ctx: SwapContext): Promise<Set<string>> {
  const rows = await ctx.db
    .selectFrom('reserved_outpoints')
    .innerJoin('intents', 'intents.id', 'reserved_outpoints.intent_id')
    .select('reserved_outpoints.outpoint')
    .where('intents.status', 'in', HOLDING_UTXOS)
    .execute();
  return new Set(rows.map((r) => r.outpoint));
}

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
    reserved: () => reservedOutpoints(ctx),
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
  const used = await ctx.db
    .selectFrom('intents')
    .select('id')
    .where('quote_id', '=', quote.id)
    .executeTakeFirst();
  if (used) throw E.QUOTE_ALREADY_USED.create(quote.id);

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
      const row =
        isPostgres(ctx.db) && built.outpoints.length === 0
          ? await insertIntentStatement(ctx.db, intentRow, eventRow, nonceRow)
          : await ctx.db.transaction().execute(async (trx) => {
              await trx.insertInto('intents').values(intentRow).execute();
              await trx.insertInto('intent_events').values(eventRow).execute();
              if (nonceRow) await trx.insertInto('permit2_nonces').values(nonceRow).execute();
              if (built.outpoints.length > 0) {
                await trx
                  .insertInto('reserved_outpoints')
                  .values(built.outpoints.map((outpoint) => ({ outpoint, intent_id: intentId })))
                  .execute();
              }
              return trx
                .selectFrom('intents')
                .selectAll()
                .where('id', '=', intentId)
                .executeTakeFirstOrThrow();
            });
      return { intent: toIntent(row), quote };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const again = await ctx.db
        .selectFrom('intents')
        .select('id')
        .where('quote_id', '=', quote.id)
        .executeTakeFirst();
      if (again) throw E.QUOTE_ALREADY_USED.create(quote.id);
      // A Permit2 nonce collision (1 in 2^52 per pair): build again with another nonce.
      if (attempt >= 2) throw err;
    }
  }
}

/**
 * PostgreSQL: the intent, its creation event and its Permit2 nonce in one statement (data-modifying
 * CTEs): one round trip instead of six, atomic as the transaction was (a unique violation, e.g. a
 * nonce collision, writes nothing).
 */
async function insertIntentStatement(
  db: SwapDb,
  intentRow: Insertable<IntentTable>,
  eventRow: Insertable<SwapDatabase['intent_events']>,
  nonceRow: Insertable<SwapDatabase['permit2_nonces']> | null,
) {
  const writes = db
    .with('i', (q) => q.insertInto('intents').values(intentRow).returningAll())
    .with('e', (q) => q.insertInto('intent_events').values(eventRow));
  if (!nonceRow) return writes.selectFrom('i').selectAll().executeTakeFirstOrThrow();
  return writes
    .with('n', (q) => q.insertInto('permit2_nonces').values(nonceRow))
    .selectFrom('i')
    .selectAll()
    .executeTakeFirstOrThrow();
}
