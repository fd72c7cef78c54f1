/**
 * The wallet webhook routes (webhooks.ts does the delivering): `POST /wallet/webhook {url}` sets the calling
 * wallet's webhook, `GET /wallet/webhook` says how delivery goes, `DELETE /wallet/webhook` removes it, and
 * `GET /wallet/webhook/public-key` gives the key that verifies the signatures (no identity needed: it is public).
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
