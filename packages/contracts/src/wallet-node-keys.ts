/** Wallet node schema of `POST /wallet/generate_keys` (re-exported by `wallet-node.ts`). */
import { type Static, Type } from 'typebox';

/**
 * rgb-lib's `generate_keys` for the node's network and witness version, snake_case: what the BTCPay plugin's
 * `CreateWalletAsync` reads (`mnemonic`, `xpub`, `account_xpub_vanilla`, `account_xpub_colored`,
 * `master_fingerprint`), plus rgb-lib's `witness_version`.
 */
export const GenerateKeysResponse = Type.Object(
  {
    mnemonic: Type.String({
      description:
        'BIP39 English mnemonic (12 words, no passphrase); generated for this reply only, never stored',
    }),
    xpub: Type.String({ description: 'the master extended public key (`tpub…` on test networks)' }),
    account_xpub_vanilla: Type.String({ description: 'vanilla (BTC) account xpub: the `xpub-van` header' }),
    account_xpub_colored: Type.String({ description: 'colored (RGB) account xpub: the `xpub-col` header' }),
    master_fingerprint: Type.String({
      pattern: '^[0-9a-f]{8}$',
      description: 'BIP-32 master fingerprint: the `master-fingerprint` header',
    }),
    witness_version: Type.String({
      description:
        "`Taproot` or `SegWitV0`: the node's `wallet.witness_version`, as `register` creates wallets",
    }),
  },
  { $id: 'GenerateKeysResponse' },
);

export const KEY_SCHEMAS = [GenerateKeysResponse] as const;

export type GenerateKeysResponseT = Static<typeof GenerateKeysResponse>;
