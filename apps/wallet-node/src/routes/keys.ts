/**
 * `POST /wallet/generate_keys`, the BTCPay plugin's setup call (`RgbNodeClient.GenerateKeysAsync`, called first by
 * `CreateWalletAsync`): a fresh mnemonic and its xpubs for the node's network, from rgb-lib's `generate_keys` in a
 * child process. Off unless the operator sets `wallet.allow_generate_keys = true` (403/1017 otherwise): the
 * mnemonic crosses the wire. It is generated for this reply only: never written to disk, never logged (the access
 * log carries no body; the reply is serialized straight to the socket).
 */
import { generateKeys } from '@rgbx/rgb';
import type { ServiceApp } from '@rgbx/service-kit';
import { Type } from '@rgbx/service-kit';
import { NETWORKS } from '../config.ts';
import { E } from '../errors.ts';
import { errorResponses, type RouteDeps, send } from './kit.ts';

export function registerKeyRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { cfg, registry } = deps;
  app.post(
    '/wallet/generate_keys',
    {
      // The plugin posts it with no body and no identity headers (it has no wallet yet); any body is ignored.
      config: { bodyless: true },
      schema: {
        summary:
          'A fresh mnemonic and its account xpubs for this node’s network (off unless wallet.allow_generate_keys)',
        description:
          'Generated per request by rgb-lib, returned once, never stored or logged. The mnemonic crosses the wire: ' +
          'only enable it on a node bound to loopback or behind TLS. No identity headers; the body is ignored. ' +
          '403 (code 1017) while the operator has not enabled it.',
        tags: ['wallet'],
        response: {
          200: Type.Ref('GenerateKeysResponse'),
          403: Type.Ref('WalletErrorEnvelope', {
            description: 'wallet.allow_generate_keys is not set (code 1017)',
          }),
          500: errorResponses[500],
        },
      },
    },
    async (_req, reply) => {
      if (!cfg.wallet.allow_generate_keys) throw E.GENERATE_KEYS_DISABLED.create();
      // rgb-lib runs in a child (the least loaded one), so the event loop never waits for it (~15 ms there).
      const keys = await generateKeys(
        NETWORKS[cfg.wallet.network],
        cfg.wallet.witness_version,
        registry.statelessHost(),
      );
      return send(reply, keys);
    },
  );
}
