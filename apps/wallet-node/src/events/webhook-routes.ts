/**
 * The wallet webhook routes (webhooks.ts does the delivering): `POST /wallet/webhook {url}` sets the calling
 * wallet's webhook, `GET /wallet/webhook` says how delivery goes, `POST /wallet/webhook/redeliver
 * {from_event_id}` sends events again, `DELETE /wallet/webhook` removes it, and `GET /wallet/webhook/public-key`
 * gives the key that verifies the signatures (no identity needed: it is public).
 */
import { WalletWebhookStatus } from '@rgbx/contracts/wallet-node';
import { type FastifyReply, type FastifyRequest, type ServiceApp, Type } from '@rgbx/service-kit';
import { WEBHOOK_SIGNATURE_SCHEME } from '@rgbx/service-kit/webhooks';
import { E } from '../errors.ts';
import type { IdentityCache } from '../identity.ts';
import { errorResponses, missingHeaders, WalletHeaders } from '../routes/kit.ts';
import type { WalletRegistry } from '../wallets.ts';
import type { WalletWebhooks } from './webhooks.ts';

export interface WebhookRouteDeps {
  registry: WalletRegistry;
  webhooks: WalletWebhooks;
  identities: IdentityCache;
}

const SetWebhookBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'https URL (http only to wallet.webhook_allow_cidrs with wallet.webhook_allow_http); no credentials; must resolve to public addresses only',
    }),
  },
  { additionalProperties: false },
);

const RedeliverBody = Type.Object(
  {
    from_event_id: Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'the first event to send again (`id` of the event, as on GET /wallet/events)',
    }),
  },
  { additionalProperties: false },
);

const PublicKey = Type.Object({
  data: Type.String({ description: 'PEM (SPKI) public key' }),
  keyId: Type.String(),
  algorithm: Type.Literal(WEBHOOK_SIGNATURE_SCHEME.algorithm),
  padding: Type.Literal(WEBHOOK_SIGNATURE_SCHEME.padding),
  signatureHeader: Type.Literal(WEBHOOK_SIGNATURE_SCHEME.signatureHeader),
  signatureEncoding: Type.Literal(WEBHOOK_SIGNATURE_SCHEME.signatureEncoding),
});

const DESCRIPTION = [
  "The calling wallet's events (as `GET /wallet/events` streams them) are POSTed to this URL, one event per request",
  'in id order, signed RSA-SHA256 like the cloud webhooks (`X-Service-Signature`, `-Key-Id`, `-Event-Id`,',
  '`-Event-Type`, `-Timestamp`, `-Attempt`, `-Sequence` = the event id); at least once (deduplicate by',
  '`X-Service-Event-Id`), the next event only after a 2xx for the previous one, retried without giving up.',
  'Delivery starts with the next event. Setting another URL replaces it.',
].join(' ');

export function registerWebhookRoutes(app: ServiceApp, deps: WebhookRouteDeps): void {
  const { registry, webhooks } = deps;
  app.addSchema(WalletWebhookStatus);
  const ref = Type.Ref('WalletWebhook');

  /** The calling wallet (headers; 401 without them, 404/409 as every wallet route). */
  function walletOf(req: FastifyRequest, reply: FastifyReply) {
    const id = req.walletIdentity ?? deps.identities.read(req.headers);
    if (!id) {
      missingHeaders(reply);
      return undefined;
    }
    const ctx = registry.resolve(id);
    return { wallet: id.fingerprint, dir: registry.walletDir(ctx) };
  }

  app.post(
    '/wallet/webhook',
    {
      schema: {
        summary: "Set the wallet's webhook",
        description: DESCRIPTION,
        tags: ['wallet'],
        headers: WalletHeaders,
        body: SetWebhookBody,
        response: {
          200: ref,
          400: Type.Ref('WalletErrorEnvelope', {
            description: 'the URL is refused (code 1021: scheme, credentials, a non-public address)',
          }),
          401: errorResponses[401],
          404: errorResponses[404],
          409: errorResponses[409],
        },
      },
    },
    async (req, reply) => {
      const w = walletOf(req, reply);
      if (!w) return reply;
      const why = await webhooks.set(w.wallet, w.dir, (req.body as { url: string }).url);
      if (why) throw E.WEBHOOK_URL_REFUSED.create(why);
      return webhooks.status(w.wallet, w.dir);
    },
  );

  app.get(
    '/wallet/webhook',
    {
      schema: {
        summary: "The wallet's webhook and how its delivery goes",
        tags: ['wallet'],
        headers: WalletHeaders,
        response: { 200: ref, 401: errorResponses[401], 404: errorResponses[404], 409: errorResponses[409] },
      },
    },
    async (req, reply) => {
      const w = walletOf(req, reply);
      if (!w) return reply;
      return webhooks.status(w.wallet, w.dir);
    },
  );

  app.post(
    '/wallet/webhook/redeliver',
    {
      schema: {
        summary: "Send the wallet's events again from an event id",
        description: [
          'For a receiver that lost what it had stored: the events from `from_event_id` on are POSTed again, in',
          'order, starting now (a retry wait is cut short), with their own event ids (deduplicate by',
          '`X-Service-Event-Id` as for any retry). Any event the log still holds (at most',
          '`wallet.webhook_max_pending_events` back) can be asked for, up to the next',
          'one not yet delivered (that one: nothing is sent twice, delivery is only started now). Answers the',
          'status, `delivered_through` = `from_event_id` − 1.',
        ].join(' '),
        tags: ['wallet'],
        headers: WalletHeaders,
        body: RedeliverBody,
        response: {
          200: ref,
          400: errorResponses[400],
          401: errorResponses[401],
          404: errorResponses[404],
          409: Type.Ref('WalletErrorEnvelope', {
            description:
              'the wallet has no webhook, or the id is outside what can be sent again (code 1022; the message gives the range)',
          }),
        },
      },
    },
    async (req, reply) => {
      const w = walletOf(req, reply);
      if (!w) return reply;
      const why = webhooks.redeliver(w.wallet, w.dir, (req.body as { from_event_id: number }).from_event_id);
      if (why) throw E.WEBHOOK_REDELIVER_REFUSED.create(why);
      return webhooks.status(w.wallet, w.dir);
    },
  );

  app.delete(
    '/wallet/webhook',
    {
      schema: {
        summary: "Remove the wallet's webhook (events stay in the log and on GET /wallet/events)",
        tags: ['wallet'],
        headers: WalletHeaders,
        response: {
          200: Type.Object({ removed: Type.Boolean({ description: 'false: there was none' }) }),
          401: errorResponses[401],
          404: errorResponses[404],
          409: errorResponses[409],
        },
      },
    },
    async (req, reply) => {
      const w = walletOf(req, reply);
      if (!w) return reply;
      return { removed: webhooks.remove(w.wallet, w.dir) };
    },
  );

  app.get(
    '/wallet/webhook/public-key',
    {
      schema: {
        summary: 'The public key that verifies wallet webhook signatures',
        tags: ['wallet'],
        response: { 200: PublicKey },
      },
    },
    async () => {
      const k = webhooks.publicKey;
      return { data: k.pem, keyId: k.keyId, ...WEBHOOK_SIGNATURE_SCHEME };
    },
  );
}
