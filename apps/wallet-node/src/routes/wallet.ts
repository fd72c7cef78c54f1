import * as C from '@rgbx/contracts/wallet-node';
import type { AssignmentInput, RgbWallet } from '@rgbx/rgb';
import type { ServiceApp } from '@rgbx/service-kit';
import { Type } from '@rgbx/service-kit';
import { systemResolver } from '@rgbx/service-kit/webhooks';
import {
  abortPendingVanillaTx,
  createUtxosEndRefusal,
  forgetSignedBegin,
  psbtInputs,
  psbtTxid,
  recordBegin,
  recordServedCreateUtxos,
} from '../begins.ts';
import { readReservations, reservedOutpoints } from '../btc-send.ts';
import { walletBudgetOf } from '../config.ts';
import { E } from '../errors.ts';
import { suggestedFeeRate } from '../fees.ts';
import { requestU64 } from '../json.ts';
import {
  fieldInvoiceData,
  fieldTransaction,
  fieldTransfer,
  fieldUnspent,
  recordReply,
  rgbLibTransfer,
} from '../records.ts';
import { decodeInvoice, invoiceForm, recipientMapForm } from '../send-forms.ts';
import { listAllTransfers } from '../transfers.ts';
import { TransportPolicy } from '../transport-policy.ts';
import type { WalletContext } from '../wallets.ts';
import {
  errorResponses,
  jsonString,
  missingHeaders,
  psbtTxidOf,
  type RouteDeps,
  routeKit,
  send,
  WalletHeaders,
} from './kit.ts';

/** The spec's routes and the reference's core wallet routes. */
export function registerWalletRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { registry, cfg } = deps;
  const { walletRoute } = routeKit(app, deps);
  // All configured proxies, sorted and de-duplicated, as the reference passes them to blind_receive.
  const endpoints = [...new Set(cfg.wallet.proxy_address)].sort();
  const transport = new TransportPolicy({
    proxies: cfg.wallet.proxy_address,
    allowCidrs: cfg.wallet.transport_allow_cidrs ?? [],
    resolver: systemResolver,
  });

  walletRoute(
    '/wallet/register',
    {
      summary: 'Create or load a watch-only wallet context',
      response: Type.Ref('RegisterResponse'),
      online: true,
      createsWallet: true,
    },
    async (_ctx, w) => ({ address: await w.getAddress(), btcBalance: await w.getBtcBalance(false) }),
  );
  walletRoute(
    '/wallet/address',
    {
      summary: 'A new receive (vanilla) address; reveals a new index on every call',
      response: Type.String(),
      online: false,
    },
    (_ctx, w) => w.getAddress(),
    jsonString,
  );
  walletRoute(
    '/wallet/btcbalance',
    {
      summary: 'Vanilla and colored BTC balances (syncs with the indexer)',
      response: Type.Ref('BtcBalance'),
      online: true,
      idempotent: true,
    },
    (_ctx, w) => w.getBtcBalance(false),
  );
  walletRoute(
    '/wallet/listassets',
    { summary: 'RGB assets held', response: Type.Ref('Assets'), online: false },
    (_ctx, w) => w.listAssets([]),
  );
  walletRoute<C.Static<typeof C.AssetBalanceRequest>>(
    '/wallet/assetbalance',
    {
      summary: 'Balance of one RGB asset',
      body: C.AssetBalanceRequest,
      response: Type.Ref('Balance'),
      online: false,
    },
    (_ctx, w, b) => w.getAssetBalance(b.asset_id),
  );
  const formatQuery = Type.Ref('RecordFormatQuery');
  const eitherFormat = (field: string, rgbLib: string) =>
    Type.Union([Type.Array(Type.Ref(field)), Type.Array(Type.Ref(rgbLib))], {
      description: `${field}[] (default) or, with ?format=rgb-lib, ${rgbLib}[]`,
    });
  walletRoute(
    '/wallet/listunspents',
    {
      summary: 'UTXOs with their RGB allocations (syncs)',
      querystring: formatQuery,
      response: eitherFormat('Unspent', 'RgbLibUnspent'),
      online: true,
      idempotent: true,
    },
    (_ctx, w) => w.listUnspents(false, false),
    recordReply(fieldUnspent),
  );
  walletRoute(
    '/wallet/listtransactions',
    {
      summary: 'Bitcoin transactions (syncs)',
      querystring: formatQuery,
      response: eitherFormat('Transaction', 'RgbLibTransaction'),
      online: true,
      idempotent: true,
    },
    (_ctx, w) => w.listTransactions(false),
    recordReply(fieldTransaction),
  );
  walletRoute<C.Static<typeof C.AssetIdRequest>>(
    '/wallet/listtransfers',
    {
      summary: 'Transfers of one RGB asset, or of all assets when asset_id is absent (no body)',
      body: C.AssetIdRequest,
      querystring: formatQuery,
      response: eitherFormat('Transfer', 'RgbLibTransfer'),
      online: false,
    },
    async (_ctx, w, b) => {
      if (b.asset_id !== undefined) return w.listTransfers(b.asset_id);
      return listAllTransfers(w);
    },
    recordReply(fieldTransfer, rgbLibTransfer),
  );
  walletRoute<C.Static<typeof C.FailTransfersRequest>>(
    '/wallet/failtransfers',
    {
      summary: 'Mark eligible (expired) transfers as failed; true if any changed',
      body: C.FailTransfersRequest,
      response: Type.Boolean(),
      online: true,
      transport: true,
      movesTransfers: true,
    },
    (_ctx, w, b) =>
      w.failTransfers(b.batch_transfer_idx ?? null, b.no_asset_only ?? false, b.skip_sync ?? false),
    jsonString,
  );
  walletRoute<C.Static<typeof C.CreateUtxosBeginRequest>>(
    '/wallet/createutxosbegin',
    {
      summary: 'Unsigned PSBT that creates colored UTXOs',
      body: C.CreateUtxosBeginRequest,
      response: Type.String({ description: 'base64 PSBT' }),
      online: true,
    },
    async (ctx, w, b) => {
      const psbt = await w.createUtxosBegin(
        b.up_to ?? false,
        b.num ?? 5,
        b.size ?? 1000,
        b.fee_rate ?? 1,
        b.skip_sync ?? false,
      );
      const dir = registry.walletDir(ctx);
      const txid = psbtTxid(psbt);
      // rgb-lib spends every vanilla UTXO it does not hold itself: also those a pending sendbtcbegin (ours, not
      // in its database) holds. Two signed transactions on one input: whichever is broadcast last replaces or
      // fails the other (a BTC payment already answered with its txid). Released at once, refused.
      const held = reservedOutpoints(readReservations(dir));
      const shared = psbtInputs(psbt).filter((o) => held.has(o));
      if (shared.length > 0) {
        abortPendingVanillaTx(dir, txid);
        throw E.CONFLICT.createWith(
          { details: { held_by: 'sendbtcbegin', outpoints: shared } },
          `the UTXO creation would spend ${shared.length} UTXO(s) a pending sendbtcbegin holds (${shared.join(', ')}): end it (sendbtcend) or release it (abortbegin) first; nothing is reserved`,
        );
      }
      recordBegin(dir, txid);
      recordServedCreateUtxos(dir, txid);
      return psbt;
    },
    jsonString,
  );
  walletRoute<C.Static<typeof C.SignedPsbtRequest>>(
    '/wallet/createutxosend',
    {
      summary: 'Finalize and broadcast the UTXO creation; returns the number created',
      body: C.SignedPsbtRequest,
      response: Type.Integer(),
      online: true,
    },
    async (ctx, w, b) => {
      const signed = b.signed_psbt;
      const dir = registry.walletDir(ctx);
      const txid = psbtTxidOf(signed);
      const why = createUtxosEndRefusal(dir, txid);
      if (why)
        throw E.INVALID_PSBT.createWith(
          { details: { expected: 'the transaction of a createutxosbegin of this wallet', received: txid } },
          `transaction ${txid} is not this wallet's UTXO creation: ${why}; nothing was broadcast`,
        );
      const n = await w.createUtxosEnd(signed);
      forgetSignedBegin(dir, signed);
      return n;
    },
    jsonString,
  );
  walletRoute<C.Static<typeof C.IssueAssetNiaRequest>>(
    '/wallet/issueassetnia',
    {
      summary: 'Issue a non-inflatable asset',
      body: C.IssueAssetNiaRequest,
      response: Type.Ref('AssetNia'),
      online: false,
    },
    (_ctx, w, b) =>
      w.issueAssetNia(
        b.ticker,
        b.name,
        b.precision ?? 0,
        b.amounts.map((a, i) => requestU64(a, `amounts[${i}]`)),
      ),
  );

  const receive =
    (kind: 'blind' | 'witness') =>
    async (_ctx: WalletContext, w: RgbWallet, b: C.Static<typeof C.BlindReceiveRequest>) => {
      const amount = b.amount === undefined || b.amount === null ? 0n : requestU64(b.amount, 'amount');
      // amount 0 or absent means "any amount", as in the reference.
      const assignment: AssignmentInput = amount === 0n ? 'Any' : { Fungible: amount };
      const duration = b.duration_seconds ?? 3600;
      // rgb-lib wants an absolute timestamp; the BTCPay plugin sends one, the spec a duration.
      const expiry = b.expiration_timestamp ?? Math.floor(Date.now() / 1000) + duration;
      return (kind === 'witness' ? w.witnessReceive : w.blindReceive).call(
        w,
        b.asset_id ?? null,
        assignment,
        expiry,
        endpoints,
        b.min_confirmations ?? 1,
      );
    };
  walletRoute(
    '/wallet/blindreceive',
    {
      summary: 'Blinded RGB receive invoice',
      body: C.BlindReceiveRequest,
      response: Type.Ref('ReceiveData'),
      online: false,
      movesTransfers: true,
    },
    receive('blind'),
  );
  walletRoute(
    '/wallet/witnessreceive',
    {
      summary: 'Witness RGB receive invoice (the sender pays sats to a script of this wallet)',
      body: C.BlindReceiveRequest,
      response: Type.Ref('ReceiveData'),
      online: false,
      movesTransfers: true,
    },
    receive('witness'),
  );
  walletRoute(
    '/blindreceive',
    {
      summary: 'Deprecated alias of /wallet/blindreceive (answers a Deprecation header)',
      body: C.BlindReceiveRequest,
      response: Type.Ref('ReceiveData'),
      online: false,
      movesTransfers: true,
      deprecated: true,
    },
    receive('blind'),
    (reply, value) => {
      reply.header('deprecation', 'true').header('link', '</wallet/blindreceive>; rel="successor-version"');
      return send(reply, value);
    },
  );

  walletRoute<C.SendBeginRequestT>(
    '/wallet/sendbegin',
    {
      summary: 'Unsigned PSBT of an RGB send (recipient_map form or invoice form)',
      body: C.SendBeginRequest,
      response: Type.String({ description: 'base64 PSBT' }),
      online: true,
      transport: true,
      movesTransfers: true,
    },
    async (ctx, w, b) => {
      const form =
        'invoice' in b
          ? await invoiceForm(ctx, b, endpoints, cfg.wallet.network)
          : recipientMapForm(b, endpoints);
      // rgb-lib connects to every transport endpoint named: none may point into the node's own network.
      const refused = await transport.firstRefused(
        Object.values(form.recipients).flatMap((list) => list.flatMap((r) => r.transportEndpoints)),
      );
      if (refused)
        throw E.INVALID_RECIPIENT.createWith(
          { details: { transport_endpoint: refused.endpoint } },
          `transport endpoint ${refused.endpoint} refused: ${refused.why} (wallet.transport_allow_cidrs allows non-public ranges)`,
        );
      const r = await w.sendBegin(
        form.recipients,
        b.donation ?? false,
        b.fee_rate ?? 1,
        b.min_confirmations ?? 1,
        form.expiry,
        false,
      );
      recordBegin(registry.walletDir(ctx), psbtTxid(r.psbt), r.batchTransferIdx);
      return r.psbt;
    },
    jsonString,
  );
  walletRoute<C.Static<typeof C.SignedPsbtRequest>>(
    '/wallet/sendend',
    {
      summary: 'Finalize an RGB send: post the consignment and wait for the ACK',
      body: C.SignedPsbtRequest,
      response: Type.Ref('SendResult'),
      online: true,
      transport: true,
      movesTransfers: true,
    },
    async (ctx, w, b) => {
      const signed = b.signed_psbt;
      // rgb-lib's send_end checks only that the transfer's files exist and sets it WaitingCounterparty whatever
      // its status: a late end of a released begin (failed: its assets spendable again, maybe re-sent since)
      // would revive it and post the consignment; a replayed end of a finished one would move it backwards.
      const txid = psbtTxidOf(signed);
      const t = (await listAllTransfers(w)).find((x) => x.kind === 'Send' && x.txid === txid);
      if (t?.status === 'Failed')
        throw E.CONFLICT.createWith(
          { details: { txid, status: t.status, batch_transfer_idx: t.batchTransferIdx } },
          `the send ${txid} was released (abortbegin or wallet.begin_ttl_secs) and its transfer failed; its assets are spendable again: make a new sendbegin. Nothing was sent`,
        );
      if (t?.status === 'WaitingConfirmations' || t?.status === 'Settled')
        return { txid, batchTransferIdx: t.batchTransferIdx }; // ended before: the same answer, nothing redone
      // Not yet sent and past its expiry: the recipient may fail it now (rgb-lib lets it), the assets lost.
      const expiry = t?.status === 'Initiated' ? t.expirationTimestamp : null;
      if (expiry != null && Number(expiry) * 1000 <= Date.now())
        throw E.CONFLICT.createWith(
          { details: { txid, status: t!.status, expiration_timestamp: Number(expiry) } },
          `the send ${txid} expired at ${new Date(Number(expiry) * 1000).toISOString()} before it was ended: release it (abortbegin) and make a new sendbegin (a fresh invoice). Nothing was sent`,
        );
      const r = await w.sendEnd(signed);
      forgetSignedBegin(registry.walletDir(ctx), signed);
      return { txid: r.txid, batchTransferIdx: r.batchTransferIdx };
    },
  );
  app.post(
    '/wallet/decodergbinvoice',
    {
      schema: {
        summary:
          'Decode an RGB invoice (rgb-lib invoice_data); reads no wallet, so the identity headers are optional',
        tags: ['wallet'],
        body: Type.Ref('InvoiceRequest'),
        querystring: Type.Ref('RecordFormatQuery'),
        response: {
          200: Type.Union([Type.Ref('InvoiceData'), Type.Ref('RgbLibInvoiceData')], {
            description: 'InvoiceData (default) or, with ?format=rgb-lib, RgbLibInvoiceData',
          }),
          400: errorResponses[400],
          422: errorResponses[422],
          500: errorResponses[500],
        },
      },
    },
    async (req, reply) => {
      const b = req.body as C.Static<typeof C.InvoiceRequest>;
      return recordReply(fieldInvoiceData)(reply, await decodeInvoice(b.invoice, registry.statelessHost()));
    },
  );
  walletRoute(
    '/wallet/sync',
    {
      summary: 'Synchronize the wallet with the indexer (both keychains); answers null',
      response: Type.Null(),
      online: true,
      idempotent: true,
    },
    async (_ctx, w) => {
      await w.sync({ keychain: 'Colored', strategy: 'FastSync' });
      await w.sync({ keychain: { Vanilla: { lookback: 20 } }, strategy: 'FastSync' });
      return null;
    },
  );
  walletRoute<C.Static<typeof C.FeeEstimationRequest>>(
    '/wallet/get_fee_estimation',
    {
      summary:
        'Fee rate (sat/vB) for confirmation within `blocks`, from the indexer, as a fee_rate to send back',
      body: C.FeeEstimationRequest,
      response: Type.Integer({
        minimum: 1,
        description:
          "sat/vB: rgb-lib's estimate rounded up to an integer (after dropping float noise below 0.001)",
      }),
      online: true,
      idempotent: true,
    },
    async (_ctx, w, b) => suggestedFeeRate(await w.getFeeEstimation(b.blocks)),
    jsonString,
  );
  walletRoute(
    '/wallet/refresh',
    {
      summary: 'Synchronize transfers (consignments, ACKs, confirmations)',
      response: Type.Null(),
      online: true,
      transport: true,
      movesTransfers: true,
    },
    async (_ctx, w) => {
      await w.refresh(null, [], false);
      return null;
    },
  );
  app.post(
    '/wallet/drop',
    {
      config: { bodyless: true },
      schema: {
        summary: 'Remove the wallet context from memory (data on disk stays)',
        tags: ['wallet'],
        headers: WalletHeaders,
        response: { 200: Type.Null(), ...errorResponses },
      },
    },
    async (req, reply) => {
      if (!req.walletIdentity) return missingHeaders(reply);
      // Dropping a wallet that is not open (or not registered) is a no-op, as in the reference.
      const ctx = registry.find(req.walletIdentity);
      if (ctx) await registry.drop(ctx);
      return reply.type('application/json; charset=utf-8').send('null');
    },
  );

  app.get(
    '/healthcheck',
    { schema: { summary: 'Liveness: 200 with an empty body', tags: ['system'] } },
    async (_req, reply) => reply.code(200).send(),
  );
  const Readiness = Type.Object(
    {
      status: Type.Union([Type.Literal('ready'), Type.Literal('indexer_unavailable')]),
      indexer: Type.Object({
        address: Type.String(),
        state: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
        since: Type.Optional(Type.String({ description: 'ISO time it became unavailable' })),
        last_error: Type.Optional(
          Type.Object({
            kind: Type.Union([
              Type.Literal('refused'),
              Type.Literal('dropped'),
              Type.Literal('timeout'),
              Type.Literal('error'),
            ]),
            message: Type.String(),
            at: Type.String(),
          }),
        ),
        consecutive_failures: Type.Integer(),
        retry_after_secs: Type.Optional(Type.Integer()),
        last_probe: Type.Optional(
          Type.Object({ at: Type.String(), ok: Type.Boolean(), detail: Type.String() }),
        ),
      }),
      wallets: Type.Object({
        known: Type.Integer({ description: 'wallet contexts in memory' }),
        open: Type.Integer({ description: 'wallets open in the rgb-lib children' }),
        online: Type.Integer({ description: 'wallets online (each holds its indexer connections)' }),
        max_open: Type.Integer({ description: 'wallet.max_open_wallets' }),
        max_online: Type.Integer({ description: 'wallet.max_online_wallets' }),
        seats_open: Type.Integer({ description: 'open seats in use, with closes in progress' }),
        seats_online: Type.Integer({ description: 'online seats in use, with closes in progress' }),
        closing: Type.Integer({ description: 'wallets being closed to make room now' }),
        waiting: Type.Integer({ description: 'client calls waiting for a seat' }),
        waiting_background: Type.Integer({ description: 'background refreshes waiting for a seat' }),
        closed_for_room: Type.Integer({ description: 'wallets closed to make room since start' }),
        indexer_max_connections: Type.Integer({ description: 'wallet.indexer_max_connections' }),
      }),
    },
    { $id: 'Readiness' },
  );
  app.addSchema(Readiness);
  app.get(
    '/readiness',
    {
      schema: {
        summary:
          'Readiness: 200 when the indexer answers, 503 (with Retry-After) when it does not; wallet counts',
        description:
          'The indexer state comes from the calls that used it and, when none did recently, from a probe of the ' +
          "node's own (server.version). `wallets` counts the open and online wallets against their budget " +
          '(wallet.max_open_wallets, wallet.max_online_wallets). Liveness stays GET /healthcheck.',
        tags: ['system'],
        response: { 200: Type.Ref('Readiness'), 503: Type.Ref('Readiness') },
      },
    },
    async (_req, reply) => {
      const health = registry.health;
      await health.refreshByProbe();
      const indexer = health.state();
      const st = registry.stats();
      const body = {
        status: indexer.state === 'ok' ? 'ready' : 'indexer_unavailable',
        indexer,
        wallets: {
          known: st.known,
          open: st.open,
          online: st.online,
          max_open: st.budget.max_open,
          max_online: st.budget.max_online,
          seats_open: st.budget.open,
          seats_online: st.budget.online,
          closing: st.budget.closing,
          waiting: st.budget.waiting,
          waiting_background: st.budget.waiting_background,
          closed_for_room: st.budget.closed_for_room,
          indexer_max_connections: walletBudgetOf(cfg.wallet).indexerMaxConnections,
        },
      };
      if (indexer.state !== 'ok')
        reply.code(503).header('retry-after', String(indexer.retry_after_secs ?? 1));
      return body;
    },
  );
  app.get(
    '/version',
    {
      schema: {
        summary: 'Application version',
        tags: ['system'],
        response: { 200: Type.Ref('VersionInfo') },
      },
    },
    async () => deps.version,
  );
}
