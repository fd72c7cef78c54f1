import { cpus } from 'node:os';
import { ConfigError, type ConfigIssue, MetricsConfigSchema, type Static, Type } from '@rgbx/service-kit';

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
        /** Largest accepted request body (bytes). The reference's `max_json_size` sets it when this key is absent. */
        body_limit_bytes: Type.Integer({ default: 5 * 1024 * 1024, minimum: 1024 }),
        // --- the reference's keys (UTEXO rgb-node-api `[api]`) ---
        /** The reference's body limit; 0 = default. Used as `body_limit_bytes` when that key is absent. */
        max_json_size: Type.Optional(Type.Integer({ minimum: 0 })),
        /** Answer CORS (preflights, `access-control-*` headers) for browser clients. Default false. */
        enable_cors: Type.Boolean({ default: false }),
        /** The one allowed origin (then with credentials); "" or "*" = any origin. Only with enable_cors. */
        cors_domain: Type.String({ default: '' }),
        /** Request headers allowed besides the defaults (see README). Only with enable_cors. */
        allowed_headers: Type.Array(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }), {
          default: [],
          maxItems: 100,
        }),
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
        /** The reference's `alias`: wallets live in `<data_dir>/<alias>/` (one directory name, no path). */
        alias: Type.Optional(Type.String({ pattern: '^(?!\\.{1,2}$)[^/\\\\\\0]{1,100}$' })),
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
        /**
         * Background `refresh` of open wallets with transfers in flight, at this interval (backing off to 3× while
         * nothing changes); 0 = off. 10 as in the reference.
         */
        refresh_interval_secs: Type.Integer({ default: 10, minimum: 0, maximum: 86_400 }),
        /**
         * A `createutxosbegin`/`sendbegin` never ended holds its TXOs (and an RGB send its batch transfer) this
         * long, then the node releases them (`/wallet/abortbegin` does at once); 0 = only on request.
         */
        begin_ttl_secs: Type.Integer({ default: 3600, minimum: 0, maximum: 30 * 86_400 }),
        /**
         * Calls that talk to RGB proxies (sendbegin, sendend, refresh, failtransfers) end after this many seconds
         * (the child is killed, the call answers 504/1016): a recipient's transport endpoint may never answer.
         */
        transport_call_timeout_secs: Type.Integer({ default: 60, minimum: 1, maximum: 3600 }),
        /**
         * Isolation: a call of one wallet that talks to RGB proxies running longer than this (ms), or any other
         * call running 10× longer, no longer holds up other wallets of its child: they move to another child
         * (started on demand, up to `max_workers`).
         */
        isolation_budget_ms: Type.Integer({ default: 250, minimum: 20, maximum: 60_000 }),
        /** The most rgb-lib children while some are busy with long calls. Default: 2 × workers. */
        max_workers: Type.Optional(Type.Integer({ minimum: 1, maximum: 128 })),
        /** A call running longer than this kills its child (its wallets reopen on next use). */
        call_timeout_secs: Type.Integer({ default: 300, minimum: 5 }),
        /**
         * Asset schemas this node issues. The spec's node issues NIA only (the default); CFA, UDA and IFA issuance
         * (`/wallet/issueasset{cfa,uda,ifa}`) answer 403 unless listed here.
         */
        issue_schemas: Type.Array(
          Type.Union([Type.Literal('nia'), Type.Literal('cfa'), Type.Literal('uda'), Type.Literal('ifa')]),
          { default: ['nia'], uniqueItems: true, maxItems: 4 },
        ),
        /**
         * Connections this node may hold open to its indexer at once, all rgb-lib children and the HTTP process
         * together: what the indexer allows this node (README "Sizing"). Default 512, half of the devnet Electrum
         * server's `max_connections` (1,024).
         */
        indexer_max_connections: Type.Integer({ default: 512, minimum: 4, maximum: 1_000_000 }),
        /**
         * Wallets online at once, across all children (each holds {@link INDEXER_CONNECTIONS_PER_WALLET} indexer
         * connections while open). When one more must go online, the least recently used idle one is closed first.
         * Default: (indexer_max_connections − the HTTP process's own 2) ÷ 2.
         */
        max_online_wallets: Type.Optional(Type.Integer({ minimum: 1, maximum: 500_000 })),
        /**
         * Wallets open at once (online or not; ~3 file descriptors, 2 threads and ~0.5 MiB each in its child).
         * Default 2,000, and never below max_online_wallets.
         */
        max_open_wallets: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
        /** Check at start that the indexer answers (Electrum `server.version`). */
        check_indexer_at_start: Type.Boolean({ default: true }),
        /**
         * Serve `POST /wallet/generate_keys` (the BTCPay plugin's setup call): a fresh mnemonic and its xpubs,
         * generated per request and returned once (never stored or logged). Off by default: the mnemonic crosses
         * the wire, so bind to loopback or put the node behind TLS before enabling it.
         */
        allow_generate_keys: Type.Boolean({ default: false }),
        // --- wallet events (README "Events") ---
        /** Events older than this are dropped from each wallet's log (a resume from before them gets `reset`). */
        events_retention_secs: Type.Integer({ default: 7 * 86_400, minimum: 60, maximum: 366 * 86_400 }),
        /** A heartbeat comment on every open event stream this often (keeps proxies from closing it). */
        events_heartbeat_secs: Type.Integer({ default: 15, minimum: 1, maximum: 3600 }),
        /** Event streams open at once per wallet; one more is answered 429. */
        events_max_streams_per_wallet: Type.Integer({ default: 8, minimum: 1, maximum: 1000 }),
        // --- wallet webhooks (README "Webhooks"): POST /wallet/webhook {url}, or webhook_url for all ---
        /**
         * A webhook for every wallet that has none of its own (the node operator's: all wallets' events, each
         * naming its wallet); https (http only to `webhook_allow_cidrs` with `webhook_allow_http`).
         */
        webhook_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
        /**
         * RGB transport endpoints a send names (a recipient_map, an invoice) may be in these ranges although they
         * are not public; the node's own `proxy_address` endpoints are always allowed (README "Transport
         * endpoints").
         */
        transport_allow_cidrs: Type.Array(Type.String({ minLength: 1 }), { default: [], maxItems: 100 }),
        /** Webhooks may go to these ranges although they are not public (devnet: `["127.0.0.0/8"]`). */
        webhook_allow_cidrs: Type.Array(Type.String({ minLength: 1 }), { default: [], maxItems: 100 }),
        /** Allow `http://` webhook URLs, to allowlisted addresses only. */
        webhook_allow_http: Type.Boolean({ default: false }),
        /** PEM (PKCS#8) RSA key that signs webhooks; default `<data_dir>/.webhook-key.pem`, made at first start. */
        webhook_signing_key_file: Type.Optional(Type.String({ minLength: 1 })),
        /** One attempt's deadline (connect and answer). */
        webhook_timeout_secs: Type.Integer({ default: 10, minimum: 1, maximum: 300 }),
        /** Longest wait between two attempts (the schedule is 1 s, 5 s, 30 s, 2 min, 5 min, capped by this). */
        webhook_max_retry_secs: Type.Integer({ default: 300, minimum: 1, maximum: 3600 }),
        /**
         * Undelivered events a wallet's log keeps past `events_retention_secs` while its receiver is down; beyond
         * that the oldest are dropped as usual and delivery goes on after the gap (`X-Service-Sequence` jumps).
         */
        webhook_max_pending_events: Type.Integer({ default: 10_000, minimum: 1, maximum: 10_000_000 }),
      },
      { additionalProperties: false },
    ),
    /** `GET /metrics` (Prometheus) on a listen address of its own (default 127.0.0.1:9401), never the API's. */
    metrics: MetricsConfigSchema(9401),
  },
  { additionalProperties: false },
);
export type WalletNodeConfig = Static<typeof WalletNodeConfig>;

/**
 * Indexer connections one online rgb-lib 0.3 wallet holds while it stays open: BDK's Electrum client and the RGB
 * resolver's (measured: 10 wallets online in a child, 20 established connections to the Electrum port).
 */
export const INDEXER_CONNECTIONS_PER_WALLET = 2;
/**
 * Indexer connections the HTTP process itself may hold at once (`sendbtcbegin`'s previous transactions,
 * `sendbtcend`'s broadcast, `/readiness` probes); more wait their turn.
 */
export const INDEXER_CONNECTIONS_OF_THE_NODE = 2;
const DEFAULT_MAX_OPEN_WALLETS = 2_000;
const DEFAULT_INDEXER_MAX_CONNECTIONS = 512;

export interface WalletBudgetConfig {
  maxOnline: number;
  maxOpen: number;
  /** `wallet.indexer_max_connections` (with its default). */
  indexerMaxConnections: number;
  /** The most indexer connections the node can hold with this budget. */
  connections: number;
}

/**
 * The wallet budget of a configuration: `max_online_wallets` (default from `indexer_max_connections`) and
 * `max_open_wallets`. Throws a ConfigError naming the keys when they cannot hold together.
 */
export function walletBudgetOf(w: WalletNodeConfig['wallet']): WalletBudgetConfig {
  // A configuration built in code (not loaded: no schema defaults) gets the defaults too.
  const indexerMax = w.indexer_max_connections ?? DEFAULT_INDEXER_MAX_CONNECTIONS;
  const fromConnections = Math.floor(
    (indexerMax - INDEXER_CONNECTIONS_OF_THE_NODE) / INDEXER_CONNECTIONS_PER_WALLET,
  );
  const maxOnline = w.max_online_wallets ?? fromConnections;
  const connections = maxOnline * INDEXER_CONNECTIONS_PER_WALLET + INDEXER_CONNECTIONS_OF_THE_NODE;
  const issues: ConfigIssue[] = [];
  if (connections > indexerMax) {
    issues.push({
      path: 'wallet.max_online_wallets',
      message:
        `wallet.max_online_wallets = ${maxOnline} needs up to ${connections} indexer connections ` +
        `(${INDEXER_CONNECTIONS_PER_WALLET} per online wallet + ${INDEXER_CONNECTIONS_OF_THE_NODE} of the node's own), ` +
        `more than wallet.indexer_max_connections = ${indexerMax}: raise the latter (if the indexer allows it) ` +
        `or lower the former to at most ${fromConnections}`,
    });
  }
  const maxOpen = w.max_open_wallets ?? Math.max(DEFAULT_MAX_OPEN_WALLETS, maxOnline);
  if (maxOpen < maxOnline) {
    issues.push({
      path: 'wallet.max_open_wallets',
      message: `wallet.max_open_wallets = ${maxOpen} is below wallet.max_online_wallets = ${maxOnline} (an online wallet is open)`,
    });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return { maxOnline, maxOpen, indexerMaxConnections: indexerMax, connections };
}

/**
 * Accepts the reference's spellings before validation: `network` in any case (it lowercases it too),
 * `[api] max_json_size` as our body limit when `body_limit_bytes` is absent.
 */
export function prepareConfig(doc: unknown): void {
  if (!doc || typeof doc !== 'object') return;
  const d = doc as { api?: Record<string, unknown>; wallet?: Record<string, unknown> };
  if (d.wallet && typeof d.wallet.network === 'string') d.wallet.network = d.wallet.network.toLowerCase();
  const api = d.api;
  if (api && api.body_limit_bytes === undefined) {
    const max = api.max_json_size;
    if ((typeof max === 'number' || typeof max === 'bigint') && Number(max) > 0) api.body_limit_bytes = max;
  }
}

/** Keys that are accepted (the reference's config works unchanged) but change nothing here, for a start-up warning. */
export function ineffectiveKeys(cfg: WalletNodeConfig): string[] {
  const out: string[] = [];
  // The reference never reads them either: rgb-lib talks to the indexer only.
  out.push('wallet.btc_rpc_address', 'wallet.btc_rpc_user', 'wallet.btc_rpc_password');
  if (!cfg.api.enable_cors) {
    if (cfg.api.cors_domain !== '') out.push('api.cors_domain (enable_cors is false)');
    if (cfg.api.allowed_headers.length > 0) out.push('api.allowed_headers (enable_cors is false)');
  }
  if (cfg.api.max_json_size !== undefined && cfg.api.max_json_size !== cfg.api.body_limit_bytes) {
    out.push('api.max_json_size (api.body_limit_bytes is set and wins)');
  }
  return out;
}
