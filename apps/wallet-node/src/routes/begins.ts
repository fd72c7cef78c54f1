/**
 * Begins that were never ended (see `../begins.ts`): list them, and release one explicitly. The node also
 * releases them by itself `wallet.begin_ttl_secs` after the begin (background, see `WalletRegistry`).
 */
import * as C from '@rgbx/contracts/wallet-node';
import type { ServiceApp } from '@rgbx/service-kit';
import { Type } from '@rgbx/service-kit';
import { type PendingBegin, pendingBegins, releaseBegin, syncSendRecords } from '../begins.ts';
import { readReservations, writeReservations } from '../btc-send.ts';
import { E } from '../errors.ts';
import { jsonString, psbtTxidOf, type RouteDeps, routeKit, send } from './kit.ts';

export function registerBeginRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { cfg, registry } = deps;
  const { walletRoute } = routeKit(app, deps);
  const ttlMs = cfg.wallet.begin_ttl_secs * 1000;

  walletRoute(
    '/wallet/listpendingbegins',
    {
      summary: 'Begins never ended: what each holds and when the node releases it',
      description:
        'Every transaction a `createutxosbegin`, `sendbegin` or `sendbtcbegin` reserved TXOs for (and every RGB send ' +
        'begin whose batch transfer is still Initiated) that no end has broadcast. The node releases each ' +
        '`wallet.begin_ttl_secs` after it was served (`expires_at`); `/wallet/abortbegin` releases one at once.',
      response: Type.Array(Type.Ref('PendingBegin')),
      online: false,
    },
    async (ctx, w) => {
      const dir = registry.walletDir(ctx);
      await syncSendRecords(w, dir);
      // Our own sendbtcbegin reservations (not rgb-lib's), until broadcast or their own expiry.
      const btc: PendingBegin[] = Object.entries(readReservations(dir))
        .filter(([, r]) => r.broadcast_at === undefined)
        .map(([txid, r]) => ({
          txid,
          kind: 'SendBtc',
          outpoints: r.outpoints,
          since: Math.floor(r.created_at / 1000),
          expires_at: Math.floor(r.expires_at / 1000),
          batch_transfer_idx: null,
        }));
      return [...pendingBegins(dir, ttlMs), ...btc];
    },
    jsonString,
  );

  walletRoute<C.AbortBeginRequestT>(
    '/wallet/abortbegin',
    {
      summary: 'Release what an unfinished begin holds (its TXOs; an RGB send fails its batch transfer)',
      description:
        "rgb-lib's abort_pending_vanilla_tx: the begin's vanilla TXOs are spendable again and an RGB send's " +
        'Initiated batch transfer is set to Failed (its colored inputs free). Name the begin by `txid` or by the ' +
        'PSBT it answered. A begin already ended (broadcast), released or never made here is a 409 (code 1009, ' +
        'details.kind "CannotAbortPendingVanillaTx"). A release cannot revoke a signed transaction: an end that still ' +
        'comes while its inputs are unspent broadcasts it.',
      body: C.AbortBeginRequest,
      response: Type.Ref('AbortBeginResponse'),
      online: true,
      transport: true,
      movesTransfers: true,
    },
    async (ctx, w, b) => {
      if ((b.txid === undefined) === (b.psbt === undefined))
        throw E.BAD_INPUT.create('exactly one of `txid` or `psbt` is required');
      let txid = b.txid;
      if (txid === undefined) txid = psbtTxidOf(b.psbt!);
      const dir = registry.walletDir(ctx);
      await syncSendRecords(w, dir);
      let released = await releaseBegin(w, dir, txid);
      const btc = readReservations(dir);
      const mine = btc[txid];
      if (!released && mine && mine.broadcast_at === undefined) {
        released = { txid, released: mine.outpoints, failed_batch_transfer_idx: null };
        delete btc[txid];
        writeReservations(dir, btc);
      }
      if (released) registry.events?.released(ctx, dir, { reason: 'aborted', ...released });
      if (!released)
        throw E.CONFLICT.createWith(
          { details: { kind: 'CannotAbortPendingVanillaTx', txid } },
          `no pending begin ${txid} in this wallet (never made here, already ended or released)`,
        );
      return released;
    },
    send,
  );
}
