/**
 * Intent creation: from the caller's own unexpired, unused quote and the user's addresses, build
 * the approval data for the source network's mechanism, generate and seal the preimage, and store
 * everything in one transaction (intent, first event, Permit2 nonce, reserved UTXOs).
 */
import { randomUUID } from 'node:crypto';
import { isUniqueViolation } from '@rgbx/store';
import type { Insertable } from 'kysely';
import { rpcAddress } from '../chains/chain-gateway.ts';
import { buildCosignApproval } from '../chains/cosign-approval.ts';
import { buildHtlcApproval, outpointsOf } from '../chains/htlc-approval.ts';
import { buildPermit2Context, newPermit2Nonce, permit2Params } from '../chains/permit2-approval.ts';
import { resolverById, type SwapContext } from '../context.ts';
import { E } from '../errors.ts';
import { type IntentTable, pairColumns, type SwapDatabase, type SwapDb } from '../store/database.ts';
import { type Intent, isPostgres, toIntent } from '../store/intent-store.ts';
import { stringifyJson } from '../store/json.ts';
import { bitcoinSource, btcNetworkOf, checkAddress, solanaKeyMatches } from './addresses.ts';
import { transition } from './lifecycle.ts';
import { PreimageVault } from './preimage-vault.ts';
import { loadQuote, type Quote } from './quotes.ts';
import { identityFor } from './resolvers.ts';

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

interface Built {
  params: unknown;
  context: { proxyAddress: string } & Record<string, unknown>;
  nonce?: { owner: string; nonce: string };
  outpoints: string[];
}

async function buildApproval(
  ctx: SwapContext,
  quote: Quote,
  input: IntentInput,
  intentId: string,
  secretHash: string,
  deadline: number,
): Promise<Built> {
  const network = ctx.catalog.network(quote.sourceChain);
  const resolver = resolverById(ctx, quote.resolverId);
  const resolverAddress = resolver?.enabled ? identityFor(resolver.identity, network.type) : undefined;
  if (!resolverAddress)
    throw E.NO_ROUTE.createWith({ details: { reason: 'the quoting resolver is no longer available' } });

  switch (quote.approvalMechanism) {
    case 'permit2': {
      const token = ctx.catalog.token(network.id, quote.sourceToken);
      if (token.wrapped_token_address) {
        throw E.NO_ROUTE.createWith({
          details: {
            reason: 'native coins cannot be moved by Permit2: wrap first',
            wrapped_token_address: token.wrapped_token_address,
          },
        });
      }
      const nonce = newPermit2Nonce();
      const context = buildPermit2Context({
        network,
        intentId,
        owner: input.sourceAddress,
        token: quote.sourceToken,
        amount: quote.sourceAmountLots,
        resolverAddress,
        secretHash,
        destChainId: quote.destChain,
        destToken: quote.destToken,
        destAddress: input.destinationAddress,
        minDestAmount: quote.minDestAmountLots,
        maxDestAmount: quote.maxDestAmountLots,
        deadline,
        nonce,
      });
      return {
        params: permit2Params(context, resolverAddress),
        context: context as unknown as Built['context'],
        nonce: { owner: rpcAddress(network, input.sourceAddress), nonce: String(nonce) },
        outpoints: [],
      };
    }
    case 'htlc': {
      if (!input.sourcePublicKey) throw E.PUBLIC_KEY_REQUIRED.create();
      const btcNet = btcNetworkOf(network);
      const source = bitcoinSource(input.sourceAddress, input.sourcePublicKey, btcNet);
      const { context, params } = await buildHtlcApproval({
        gateway: ctx.gateway.bitcoin(),
        network: btcNet,
        source,
        sourceAddress: input.sourceAddress,
        secretHash,
        resolverPubkey: resolverAddress,
        amount: quote.sourceAmountLots,
        // Fulfilments are accepted until the deadline; the user's refund opens only after the safety
        // margin, so a resolver that fulfils at the last moment still has time to claim.
        locktime: deadline + ctx.config.swap.refund_safety_margin_secs,
        feeRate: ctx.config.bitcoin.fee_rate_sat_vb,
        minConfirmations: ctx.config.bitcoin.min_confirmations,
        reserved: await reservedOutpoints(ctx),
      });
      return { params, context: context as unknown as Built['context'], outpoints: outpointsOf(context) };
    }
    case 'cosign': {
      if (!input.sourcePublicKey) throw E.PUBLIC_KEY_REQUIRED.create();
      if (!solanaKeyMatches(input.sourcePublicKey, input.sourceAddress)) {
        throw E.INVALID_ADDRESS.create(
          'sourcePublicKey',
          'is not the public key of the Solana source address',
        );
      }
      const token = ctx.catalog.token(network.id, quote.sourceToken);
      if (token.wrapped_token_address) {
        throw E.NO_ROUTE.createWith({
          details: { reason: 'only native SOL sources are co-signed', token: token.address },
        });
      }
      const { context, params } = await buildCosignApproval({
        gateway: ctx.gateway,
        network,
        intentId,
        resolverAddress,
        userAddress: input.sourceAddress,
        lamports: quote.sourceAmountLots,
      });
      return { params, context: context as unknown as Built['context'], outpoints: [] };
    }
    case 'rgblock':
      throw E.NO_ROUTE.createWith({ details: { reason: 'RGB asset sources are not supported yet' } });
  }
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
