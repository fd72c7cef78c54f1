/**
 * Watch-only BTC sends: `sendbtcbegin` builds an unsigned PSBT from the wallet's vanilla UTXOs (never a
 * colored one) and reserves its inputs; the client signs it; `sendbtcend` broadcasts it through the
 * Electrum indexer, but only if it is the transaction a live reservation of this wallet describes.
 * Both run on the wallet's rgb-lib queue, so they are serialized with every other call of the wallet.
 */
import { ElectrumConnection, ElectrumServerError, electrumRequest, parseTx } from '@rgbx/chains/btc';
import * as C from '@rgbx/contracts/wallet-node';
import type { RgbWallet } from '@rgbx/rgb';
import type { FastifyRequest, ServiceApp } from '@rgbx/service-kit';
import { Type } from '@rgbx/service-kit';
import { listPendingVanillaTxs } from '../begins.ts';
import {
  buildPsbt,
  type DerivedKey,
  dustThreshold,
  finalizeSigned,
  InsufficientFundsError,
  MAX_DERIVATION_INDEX,
  MAX_MONEY,
  MAX_STANDARD_VSIZE,
  type PsbtInput,
  readReservations,
  recipientScript,
  reservedOutpoints,
  type Selection,
  selectCoins,
  spendableVanilla,
  type VanillaKeys,
  vanillaKeysFor,
  writeReservations,
} from '../btc-send.ts';
import { E } from '../errors.ts';
import { requestU64 } from '../json.ts';
import { jsonString, type RouteDeps, routeKit } from './kit.ts';

/**
 * The lookback rgb-lib requires with the vanilla keychain. The sync after a broadcast is a FullSync (every
 * revealed vanilla address), so the spent inputs are seen even when the transaction has no change output
 * and its inputs' addresses are older than a FastSync window.
 */
const SYNC_LOOKBACK = 20;

export function registerBtcRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { cfg, registry } = deps;
  const { walletRoute } = routeKit(app, deps);
  const network = cfg.wallet.network;
  const indexer = cfg.wallet.indexer_address;
  // Held as long as rgb-lib's begins are (wallet.begin_ttl_secs); 0 = until released by abortbegin (100 years).
  const reservationTtlMs =
    cfg.wallet.begin_ttl_secs > 0 ? cfg.wallet.begin_ttl_secs * 1000 : 100 * 365 * 86_400_000;

  /**
   * The raw previous transactions of the selected inputs, from the indexer (one connection of the node's own, counted
   * in `indexer_max_connections`).
   */
  function previousTxs(txids: string[]): Promise<Map<string, Buffer>> {
    return registry.health.withConnection(async () => {
      const c = await ElectrumConnection.connect(indexer);
      try {
        const raws = await Promise.all(
          txids.map((t) => c.request<string>('blockchain.transaction.get', [t])),
        );
        return new Map(txids.map((t, i) => [t, Buffer.from(String(raws[i]), 'hex')]));
      } finally {
        c.close();
      }
    });
  }

  /** Inputs of the selection with their previous outputs and vanilla keys, each checked against rgb-lib. */
  async function resolveInputs(sel: Selection, keys: VanillaKeys): Promise<PsbtInput[]> {
    const txs = await previousTxs([...new Set(sel.inputs.map((i) => i.txid))]);
    const out: PsbtInput[] = [];
    for (const i of sel.inputs) {
      const raw = txs.get(i.txid) as Buffer;
      const tx = parseTx(raw);
      if (tx.txid !== i.txid)
        throw new Error(`indexer answered transaction ${tx.txid} when asked for ${i.txid}`);
      const prevout = tx.outputs[i.vout];
      if (!prevout || prevout.value !== i.amount)
        throw new Error(
          `UTXO ${i.txid}:${i.vout}: rgb-lib says ${i.amount} sats, the indexer's transaction ${prevout ? `${prevout.value} sats` : 'has no such output'}`,
        );
      const index = await keys.indexOf(prevout.script, i.derivationIndex);
      if (index === undefined)
        throw new Error(
          `UTXO ${i.txid}:${i.vout} is not on the wallet's vanilla keychain within its first ${MAX_DERIVATION_INDEX} addresses`,
        );
      out.push({
        txid: i.txid,
        vout: i.vout,
        amount: i.amount,
        script: prevout.script,
        prevTx: raw,
        key: keys.derive(index),
      });
    }
    return out;
  }

  /** A new vanilla address from rgb-lib (so its syncs watch it) and its key. */
  async function changeKey(w: RgbWallet, keys: VanillaKeys): Promise<DerivedKey> {
    const address = await w.getAddress();
    const script = recipientScript(address, network);
    const index = await keys.indexOf(script);
    if (index === undefined)
      throw new Error(
        `rgb-lib's new vanilla address ${address} is not within the first ${MAX_DERIVATION_INDEX} of the vanilla keychain`,
      );
    return keys.derive(index);
  }

  walletRoute<C.Static<typeof C.SendBtcBeginRequest>>(
    '/wallet/sendbtcbegin',
    {
      summary: 'Unsigned PSBT sending BTC from the vanilla UTXOs (inputs reserved for an hour)',
      description:
        'Only vanilla UTXOs without RGB allocations are spent, never one another pending sendbtcbegin holds. ' +
        'Largest-first selection; fee = fee_rate × the signed size; change to a new vanilla address unless ' +
        'below dust (546 sats P2WPKH, 330 P2TR), which then goes to the fee. Sign every input with the ' +
        "wallet's mnemonic and pass the PSBT to /wallet/sendbtcend within the hour.",
      body: C.SendBtcBeginRequest,
      response: Type.String({ description: 'base64 PSBT' }),
      online: true,
    },
    async (ctx, w, b) => {
      const feeRate = BigInt(b.fee_rate);
      const skipSync = b.skip_sync ?? false;
      const amount = requestU64(b.amount, 'amount');
      const script = recipientScript(b.address, network);
      const dust = dustThreshold(script);
      if (amount < dust)
        throw E.INVALID_REQUEST.createWith(
          { details: { amount: Number(amount), dust_limit: Number(dust) } },
          `amount ${amount} sats is below the dust limit of ${dust} sats for ${b.address}`,
        );
      if (amount > MAX_MONEY)
        throw E.INVALID_REQUEST.createWith(
          { details: { amount: amount.toString() } },
          `amount ${amount} sats is more than 21 million BTC`,
        );
      const dir = registry.walletDir(ctx);
      const now = Date.now();
      const reservations = readReservations(dir, now);
      // Ours, and what rgb-lib holds for its own pending begins (a createutxosbegin not ended yet).
      const reserved = reservedOutpoints(reservations);
      for (const p of listPendingVanillaTxs(dir)) for (const o of p.outpoints) reserved.add(o);
      const candidates = spendableVanilla(await w.listUnspents(false, skipSync), reserved);
      let sel: Selection;
      try {
        sel = selectCoins(candidates, amount, feeRate, ctx.witnessVersion, script.length);
      } catch (err) {
        if (!(err instanceof InsufficientFundsError)) throw err;
        throw E.INSUFFICIENT_BITCOINS.createWith(
          {
            details: {
              available: Number(err.available),
              needed: Number(err.needed),
              reserved_utxos: reserved.size,
            },
          },
          `${err.message}${reserved.size > 0 ? `; ${reserved.size} UTXOs are held by pending begins (sendbtcbegin, createutxosbegin)` : ''}`,
        );
      }
      if (sel.vsize > MAX_STANDARD_VSIZE)
        throw E.INVALID_REQUEST.createWith(
          { details: { inputs: sel.inputs.length, vsize: sel.vsize } },
          `the transaction would need ${sel.inputs.length} inputs (${sel.vsize} vB), above the standard size limit: send less or consolidate first`,
        );
      const keys = vanillaKeysFor(ctx.id.xpubVanilla, ctx.witnessVersion, network);
      const inputs = await resolveInputs(sel, keys);
      const change = sel.change > 0n ? { key: await changeKey(w, keys), amount: sel.change } : undefined;
      const built = buildPsbt({
        kind: ctx.witnessVersion,
        fingerprint: ctx.id.fingerprint,
        keys,
        inputs,
        recipient: { script, amount },
        ...(change ? { change } : {}),
      });
      reservations[built.txid] = {
        outpoints: inputs.map((i) => `${i.txid}:${i.vout}`),
        created_at: now,
        expires_at: now + reservationTtlMs,
        address: b.address,
        amount: amount.toString(),
        fee: sel.fee.toString(),
      };
      writeReservations(dir, reservations, now);
      return built.psbt;
    },
    jsonString,
  );

  walletRoute<C.Static<typeof C.SendBtcEndRequest>>(
    '/wallet/sendbtcend',
    {
      summary: 'Broadcast a signed sendbtcbegin PSBT through the indexer',
      description:
        'Finalizes the inputs not finalized yet and broadcasts, only if the transaction is one a live ' +
        'sendbtcbegin of this wallet built (400 code 1007 otherwise, nothing broadcast). A rejection by the ' +
        "node is a 400 code 1007 with the indexer's message in details.indexer_error. Calling it again " +
        'with the same PSBT within the hour re-broadcasts and answers the same txid.',
      body: C.SendBtcEndRequest,
      response: Type.Ref('SendBtcEndResponse'),
      online: true,
    },
    async (ctx, w, b, req: FastifyRequest) => {
      const signed = b.signed_psbt;
      const skipSync = b.skip_sync ?? false;
      const { txid, hex } = finalizeSigned(signed);
      const dir = registry.walletDir(ctx);
      const reservations = readReservations(dir);
      const r = reservations[txid];
      if (!r)
        throw E.INVALID_PSBT.createWith(
          {
            details: {
              expected:
                'the transaction of a pending sendbtcbegin of this wallet (reservations last one hour)',
              pending: Object.keys(reservations),
              received: txid,
            },
          },
          `transaction ${txid} is not one a pending sendbtcbegin of this wallet built (expected one of: ${Object.keys(reservations).join(', ') || 'none pending'})`,
        );
      try {
        await registry.health.withConnection(() =>
          electrumRequest<string>(indexer, 'blockchain.transaction.broadcast', [hex]),
        );
      } catch (err) {
        if (!(err instanceof ElectrumServerError)) throw err; // unreachable indexer: 503 indexer_unavailable
        // Bitcoin Core's answers for a transaction it already has (a retried sendbtcend).
        const known =
          err.code === -27 || /already (in utxo set|known|in (the )?mempool)/i.test(err.serverMessage);
        if (!known)
          throw E.INVALID_PSBT.createWith(
            { details: { txid, indexer_error: err.serverMessage, indexer_code: err.code ?? null } },
            `the node refused the transaction: ${err.serverMessage}`,
          );
      }
      // Kept (marked) until it expires: its inputs stay out of later begins even before rgb-lib sees them spent.
      r.broadcast_at ??= Date.now();
      writeReservations(dir, reservations);
      if (!skipSync) {
        try {
          await w.sync({ keychain: { Vanilla: { lookback: SYNC_LOOKBACK } }, strategy: 'FullSync' });
        } catch (err) {
          // Broadcast already happened: report the txid; the next syncing call catches up.
          req.log.warn({ txid, err: (err as Error).message }, 'sync after sendbtcend failed');
        }
      }
      return { txid };
    },
  );
}
