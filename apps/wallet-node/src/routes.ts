import * as C from '@rgbx/contracts/wallet-node';
import { type AssignmentInput, type RecipientMap, RgbLibError, type RgbWallet } from '@rgbx/rgb';
import type { FastifyReply, FastifyRequest, ServiceApp } from '@rgbx/service-kit';
import { Type } from '@rgbx/service-kit';
import type { WalletNodeConfig } from './config.ts';
import { E, RGB_VARIANTS } from './errors.ts';
import {
  HEADER_FINGERPRINT,
  HEADER_XPUB_COL,
  HEADER_XPUB_VAN,
  MISSING_HEADERS_TEXT,
  type WalletIdentity,
} from './identity.ts';
import { snakeKeys, toJson, toU64 } from './json.ts';
import type { WalletContext, WalletRegistry } from './wallets.ts';

declare module 'fastify' {
  interface FastifyRequest {
    walletIdentity?: WalletIdentity;
  }
}

const WalletHeaders = Type.Object({
  [HEADER_XPUB_VAN]: Type.String({ description: 'vanilla account xpub (BTC UTXOs)' }),
  [HEADER_XPUB_COL]: Type.String({ description: 'colored account xpub (RGB UTXOs)' }),
  [HEADER_FINGERPRINT]: Type.String({ description: 'BIP-32 master fingerprint, 8 hex characters' }),
});

const errorResponses = {
  400: Type.Ref('WalletErrorEnvelope', {
    description: 'malformed header value or a request rgb-lib refused (see code)',
  }),
  401: Type.String({ description: 'text/plain: Missing xpub-van/xpub-col/master-fingerprint header' }),
  404: Type.Ref('WalletErrorEnvelope', { description: 'asset or transfer not found (code 1000)' }),
  409: Type.Ref('WalletErrorEnvelope', {
    description: 'wallet identity mismatch (1012) or conflicting transfer state (1009)',
  }),
  422: Type.Ref('WalletErrorEnvelope', { description: 'body cannot be deserialized (code 1001)' }),
  500: Type.Ref('WalletErrorEnvelope', {
    description: 'indexer, proxy, bitcoind, storage or rgb-lib failure (code 500)',
  }),
};

/** rgb-lib errors a client can fix become their documented 4xx; anything else stays a 500. */
function mapRgbError(err: unknown): unknown {
  if (!(err instanceof RgbLibError)) return err;
  const key = RGB_VARIANTS[err.variant];
  if (!key) return err;
  const text = Object.keys(err.details ?? {}).length > 0 ? JSON.stringify(err.details) : err.variant;
  const details = { kind: err.variant, ...(err.details ?? {}) };
  switch (key) {
    case 'NOT_FOUND':
      return E.NOT_FOUND.createWith(
        { details, cause: err },
        err.variant === 'AssetNotFound' ? 'asset' : 'transfer',
      );
    case 'INSUFFICIENT_ALLOCATION_SLOTS':
      return E.INSUFFICIENT_ALLOCATION_SLOTS.createWith({ details, cause: err });
    default:
      return (E[key as keyof typeof E] as { createWith: (o: object, d: string) => Error }).createWith(
        { details, cause: err },
        text,
      );
  }
}

function send(reply: FastifyReply, value: unknown): FastifyReply {
  // Serialized here (lossless: bigint → exact integer); the route schemas document the shapes.
  return reply.type('application/json; charset=utf-8').send(toJson(snakeKeys(value)));
}

const pick = <T>(...vals: Array<T | undefined>): T | undefined => vals.find((v) => v !== undefined);

function requireField<T>(value: T | undefined | null, name: string): T {
  if (value === undefined || value === null) throw E.BAD_INPUT.create(`missing field \`${name}\``);
  return value;
}

export interface RouteDeps {
  cfg: WalletNodeConfig;
  registry: WalletRegistry;
  version: { app: string; version: string; build: string; commit: string };
}

export function registerRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { registry, cfg } = deps;
  // All configured proxies, sorted and de-duplicated, as the reference passes them to blind_receive.
  const endpoints = [...new Set(cfg.wallet.proxy_address)].sort();

  /** Declares one POST wallet route: headers checked first, then the body, then the call on the wallet's child. */
  function walletRoute<B>(
    path: string,
    o: {
      summary: string;
      body?: unknown;
      response: unknown;
      online: boolean;
      hide?: boolean;
      deprecated?: boolean;
    },
    handler: (ctx: WalletContext, w: RgbWallet, body: B, req: FastifyRequest) => Promise<unknown>,
    wrap: (reply: FastifyReply, value: unknown) => FastifyReply = send,
  ): void {
    app.post(
      path,
      {
        schema: {
          summary: o.summary,
          tags: ['wallet'],
          headers: WalletHeaders,
          ...(o.body ? { body: o.body as never } : {}),
          ...(o.deprecated ? { deprecated: true } : {}),
          response: { 200: o.response as never, ...errorResponses },
        },
      },
      async (req, reply) => {
        if (!req.walletIdentity)
          return reply.code(401).type('text/plain; charset=utf-8').send(MISSING_HEADERS_TEXT);
        const ctx = registry.resolve(req.walletIdentity);
        const body = (req.body ?? {}) as B;
        try {
          const value = await registry.use(ctx, { online: o.online }, (w) => handler(ctx, w, body, req));
          return wrap(reply, value);
        } catch (err) {
          throw mapRgbError(err);
        }
      },
    );
  }

  const jsonString = (reply: FastifyReply, v: unknown) =>
    reply.type('application/json; charset=utf-8').send(JSON.stringify(v));

  walletRoute(
    '/wallet/register',
    {
      summary: 'Create or load a watch-only wallet context',
      response: Type.Ref('RegisterResponse'),
      online: true,
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
    },
    (_ctx, w) => w.getBtcBalance(false),
  );
  walletRoute(
    '/wallet/listassets',
    { summary: 'RGB assets held', response: Type.Ref('Assets'), online: false },
    (_ctx, w) => w.listAssets([]),
  );
  walletRoute<C.Static<typeof C.AssetIdRequest>>(
    '/wallet/assetbalance',
    {
      summary: 'Balance of one RGB asset',
      body: C.AssetIdRequest,
      response: Type.Ref('Balance'),
      online: false,
    },
    (_ctx, w, b) => w.getAssetBalance(requireField(pick(b.asset_id, b.assetId), 'asset_id')),
  );
  walletRoute(
    '/wallet/listunspents',
    {
      summary: 'UTXOs with their RGB allocations (syncs)',
      response: Type.Array(Type.Ref('Unspent')),
      online: true,
    },
    (_ctx, w) => w.listUnspents(false, false),
  );
  walletRoute(
    '/wallet/listtransactions',
    { summary: 'Bitcoin transactions (syncs)', response: Type.Array(Type.Ref('Transaction')), online: true },
    (_ctx, w) => w.listTransactions(false),
  );
  walletRoute<C.Static<typeof C.AssetIdRequest>>(
    '/wallet/listtransfers',
    {
      summary: 'Transfers of one RGB asset',
      body: C.AssetIdRequest,
      response: Type.Array(Type.Ref('Transfer')),
      online: false,
    },
    (_ctx, w, b) => w.listTransfers(requireField(pick(b.asset_id, b.assetId), 'asset_id')),
  );
  walletRoute<C.Static<typeof C.FailTransfersRequest>>(
    '/wallet/failtransfers',
    {
      summary: 'Mark eligible (expired) transfers as failed; true if any changed',
      body: C.FailTransfersRequest,
      response: Type.Boolean(),
      online: true,
    },
    (_ctx, w, b) =>
      w.failTransfers(
        pick(b.batch_transfer_idx, b.batchTransferIdx) ?? null,
        pick(b.no_asset_only, b.noAssetOnly) ?? false,
        pick(b.skip_sync, b.skipSync) ?? false,
      ),
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
    (_ctx, w, b) =>
      w.createUtxosBegin(
        pick(b.up_to, b.upTo) ?? false,
        b.num ?? 5,
        b.size ?? 1000,
        pick(b.fee_rate, b.feeRate) ?? 1,
        b.skip_sync ?? false,
      ),
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
    (_ctx, w, b) => w.createUtxosEnd(requireField(pick(b.signed_psbt, b.signedPsbt), 'signed_psbt')),
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
        b.amounts.map((a, i) => toU64(a, `amounts[${i}]`)),
      ),
  );

  const blindReceive = async (
    _ctx: WalletContext,
    w: RgbWallet,
    b: C.Static<typeof C.BlindReceiveRequest>,
  ) => {
    const amount = b.amount === undefined || b.amount === null ? 0n : toU64(b.amount, 'amount');
    // amount 0 or absent means "any amount", as in the reference.
    const assignment: AssignmentInput = amount === 0n ? 'Any' : { Fungible: amount };
    const duration = pick(b.duration_seconds, b.durationSeconds) ?? 3600;
    const expiry = Math.floor(Date.now() / 1000) + duration; // rgb-lib wants an absolute timestamp
    return w.blindReceive(
      pick(b.asset_id, b.assetId) ?? null,
      assignment,
      expiry,
      endpoints,
      pick(b.min_confirmations, b.minConfirmations) ?? 1,
    );
  };
  walletRoute(
    '/wallet/blindreceive',
    {
      summary: 'Blinded RGB receive invoice',
      body: C.BlindReceiveRequest,
      response: Type.Ref('ReceiveData'),
      online: false,
    },
    blindReceive,
  );
  walletRoute(
    '/blindreceive',
    {
      summary: 'Deprecated alias of /wallet/blindreceive (answers a Deprecation header)',
      body: C.BlindReceiveRequest,
      response: Type.Ref('ReceiveData'),
      online: false,
      deprecated: true,
    },
    blindReceive,
    (reply, value) => {
      reply.header('deprecation', 'true').header('link', '</wallet/blindreceive>; rel="successor-version"');
      return send(reply, value);
    },
  );

  walletRoute<C.Static<typeof C.SendBeginRequest>>(
    '/wallet/sendbegin',
    {
      summary: 'Unsigned PSBT of an RGB send',
      body: C.SendBeginRequest,
      response: Type.String({ description: 'base64 PSBT' }),
      online: true,
    },
    async (_ctx, w, b) => {
      const map = requireField(pick(b.recipient_map, b.recipientMap), 'recipient_map');
      if (Object.keys(map).length === 0)
        throw E.BAD_INPUT.create('recipient_map must name at least one asset');
      const recipients: RecipientMap = {};
      for (const [assetId, list] of Object.entries(map)) {
        recipients[assetId] = list.map((r, i) => ({
          recipientId: requireField(
            pick(r.recipient_id, r.recipientId),
            `recipient_map.${assetId}[${i}].recipient_id`,
          ),
          assignment: { Fungible: toU64(r.amount, `recipient_map.${assetId}[${i}].amount`) },
          transportEndpoints: pick(r.transport_endpoints, r.transportEndpoints) ?? endpoints,
          witnessData: r.witness_data
            ? {
                amountSat: toU64(r.witness_data.amount_sat, 'witness_data.amount_sat'),
                blinding:
                  r.witness_data.blinding == null
                    ? null
                    : toU64(r.witness_data.blinding, 'witness_data.blinding'),
              }
            : null,
        }));
      }
      const expiry = b.expiration_timestamp ?? Math.floor(Date.now() / 1000) + 3600;
      const r = await w.sendBegin(
        recipients,
        b.donation ?? false,
        pick(b.fee_rate, b.feeRate) ?? 1,
        pick(b.min_confirmations, b.minConfirmations) ?? 1,
        expiry,
        false,
      );
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
    },
    async (_ctx, w, b) => {
      const r = await w.sendEnd(requireField(pick(b.signed_psbt, b.signedPsbt), 'signed_psbt'));
      return { txid: r.txid, batchTransferIdx: r.batchTransferIdx };
    },
  );
  walletRoute(
    '/wallet/refresh',
    {
      summary: 'Synchronize transfers (consignments, ACKs, confirmations)',
      response: Type.Null(),
      online: true,
    },
    async (_ctx, w) => {
      await w.refresh(null, [], false);
      return null;
    },
  );
  app.post(
    '/wallet/drop',
    {
      schema: {
        summary: 'Remove the wallet context from memory (data on disk stays)',
        tags: ['wallet'],
        headers: WalletHeaders,
        response: { 200: Type.Null(), ...errorResponses },
      },
    },
    async (req, reply) => {
      if (!req.walletIdentity)
        return reply.code(401).type('text/plain; charset=utf-8').send(MISSING_HEADERS_TEXT);
      const ctx = registry.resolve(req.walletIdentity);
      await registry.drop(ctx);
      return reply.type('application/json; charset=utf-8').send('null');
    },
  );

  app.get(
    '/healthcheck',
    { schema: { summary: 'Liveness: 200 with an empty body', tags: ['system'] } },
    async (_req, reply) => reply.code(200).send(),
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
