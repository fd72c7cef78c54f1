import { cpus } from 'node:os';
import { type Static, Type } from '@rgbx/service-kit';

/** Networks the service accepts in `wallet.network`, mapped to rgb-lib's names. */
export const NETWORKS = {
  mainnet: 'Mainnet',
  testnet: 'Testnet',
  testnet4: 'Testnet4',
  signet: 'Signet',
  regtest: 'Regtest',
} as const;
export type NetworkName = keyof typeof NETWORKS;

const HostPort = Type.String({ pattern: '^[^\\s:/]+:\\d{1,5}$', description: '`host:port`' });
const IndexerUrl = Type.String({
  pattern: '^tcp://[^\\s:/]+:\\d{1,5}$',
  description: 'Electrum indexer, `tcp://host:port`',
});
const ProxyUrl = Type.String({
  pattern: '^rpcs?://[^\\s/]+(:\\d{1,5})?/\\S*$',
  description: 'RGB transport proxy, `rpc://host:port/json-rpc`',
});

/**
 * The wallet node's TOML configuration: `[api]` and `[wallet]` exactly as the spec (wallet-node-service.md),
 * plus optional keys of ours (documented in the README). Unknown or mistyped keys stop the start.
 */
export const WalletNodeConfig = Type.Object(
  {
    api: Type.Object(
      {
        listen_address: Type.String({ default: '127.0.0.1', minLength: 1 }),
        port: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
        /** Largest accepted request body (bytes). */
        body_limit_bytes: Type.Integer({ default: 5 * 1024 * 1024, minimum: 1024 }),
        /** A request (headers and body) not received within this is answered 408 and its connection closed. Kit default 30. */
        request_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
        /** Request headers not received within this: 408 likewise (at most request_timeout_secs). Kit default 10, or less with a shorter request timeout. */
        headers_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
        /** A connection silent this long is closed unless a request on it is being handled. Kit default 60. */
        connection_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
        /** An idle keep-alive connection is closed this long after its last response. Kit default 5. */
        keep_alive_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
      },
      { default: {}, additionalProperties: false },
    ),
    wallet: Type.Object(
      {
        data_dir: Type.String({ minLength: 1 }),
        network: Type.Union(
          Object.keys(NETWORKS).map((n) => Type.Literal(n)),
          { description: 'mainnet, testnet, testnet4, signet or regtest' },
        ),
        btc_rpc_address: HostPort,
        btc_rpc_user: Type.String(),
        btc_rpc_password: Type.String(),
        indexer_address: IndexerUrl,
        proxy_address: Type.Array(ProxyUrl, { minItems: 1, maxItems: 3 }),
        // --- optional keys of ours ---
        /** Witness version for wallets created by this service (an existing wallet keeps its own). */
        witness_version: Type.Union([Type.Literal('Taproot'), Type.Literal('SegWitV0')], {
          default: 'Taproot',
        }),
        /** rgb-lib child processes; each wallet is owned by one. Default: number of CPU cores. */
        workers: Type.Integer({ default: Math.max(1, cpus().length), minimum: 1, maximum: 64 }),
        /** Wallets unused this long are closed (dropped) in their child; 0 = never. */
        idle_timeout_secs: Type.Integer({ default: 900, minimum: 0 }),
        /** Background `refresh` of every online wallet at this interval; 0 = off. */
        refresh_interval_secs: Type.Integer({ default: 0, minimum: 0 }),
        /** A call running longer than this kills its child (its wallets reopen on next use). */
        call_timeout_secs: Type.Integer({ default: 300, minimum: 5 }),
        /** Check at start that the indexer answers (Electrum `server.version`). */
        check_indexer_at_start: Type.Boolean({ default: true }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type WalletNodeConfig = Static<typeof WalletNodeConfig>;
