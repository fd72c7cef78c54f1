/**
 * The resolver's configuration: one TOML file checked by the kit's strict loader (unknown keys and
 * mistyped values stop the start, naming the key; `${ENV}` references allowed in strings). Key material
 * is never in the file itself: each network names a key file (hex, mode 0600) or an environment variable.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import {
  ConfigError,
  type ConfigIssue,
  loadTomlConfig,
  MetricsConfigSchema,
  type Static,
  Type,
} from '@rgbx/service-kit';

const LogLevel = Type.Union(
  ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
  { default: 'info' },
);
const Lots = Type.String({ pattern: '^[0-9]{1,78}$', description: 'an integer amount in base units' });
const Decimal = Type.String({ pattern: '^[0-9]{1,40}(\\.[0-9]{1,40})?$' });

const KeySource = {
  /** A file holding the private key as hex (32 bytes; Solana: the 32-byte ed25519 seed). */
  key_file: Type.Optional(Type.String({ minLength: 1 })),
  /** Or the name of an environment variable holding it. */
  key_env: Type.Optional(Type.String({ minLength: 1 })),
};

const NetworkSchema = Type.Object(
  {
    /** The swap service's network id. */
    id: Type.Integer({ minimum: 1 }),
    type: Type.Union([
      Type.Literal('BITCOIN'),
      Type.Literal('EVM'),
      Type.Literal('TRON'),
      Type.Literal('SOLANA'),
    ]),
    ...KeySource,
    /** BITCOIN: the Electrum server (`tcp://host:port` or `ssl://host:port`). */
    electrum_url: Type.Optional(Type.String({ minLength: 1 })),
    /** BITCOIN: `mainnet` | `testnet` | `signet` | `regtest`. */
    btc_network: Type.Optional(
      Type.Union([
        Type.Literal('mainnet'),
        Type.Literal('testnet'),
        Type.Literal('signet'),
        Type.Literal('regtest'),
      ]),
    ),
    /** BITCOIN: fee rate used when the server's estimate is unavailable. */
    fee_rate_sat_vb: Type.Integer({ minimum: 1, default: 2 }),
    /** EVM/TRON/SOLANA: the node's JSON-RPC. */
    rpc_url: Type.Optional(Type.String({ minLength: 1 })),
    /** EVM/TRON: chain id. */
    chain_id: Type.Optional(Type.Integer({ minimum: 1 })),
    /** EVM/TRON: the SwapEscrow contract (Tron: base58). */
    escrow_address: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * TRON: broadcast Ethereum-style signed transactions through the node's JSON-RPC. Only the devnet's
     * node accepts them; a real Tron network needs protobuf transactions (not implemented): Tron is then
     * declined.
     */
    devnet_jsonrpc_broadcast: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);

const PairSchema = Type.Object(
  {
    source_network: Type.Integer({ minimum: 1 }),
    /** Token address as the swap service names it (`BTC`; the wrapped-SOL mint for SOL). */
    source_token: Type.String({ minLength: 1 }),
    dest_network: Type.Integer({ minimum: 1 }),
    dest_token: Type.String({ minLength: 1 }),
    /** Destination units per source unit (whole tokens, decimal string). */
    rate: Decimal,
    /** Taken off the converted amount (the resolver's margin). */
    spread_bps: Type.Integer({ minimum: 0, maximum: 10_000, default: 30 }),
    min_source_lots: Lots,
    max_source_lots: Lots,
    /**
     * Optional price feed: `GET` answering `{"price": "<decimal>", "timestamp": <unix secs>}` (destination
     * units per source unit). When set it replaces `rate`; a stale or failing feed means no quote.
     */
    price_feed_url: Type.Optional(Type.String({ minLength: 1 })),
    price_feed_max_age_secs: Type.Integer({ minimum: 1, default: 60 }),
  },
  { additionalProperties: false },
);

export const ResolverConfigSchema = Type.Object(
  {
    /** Devnet mode: allows `http://` URLs to remote services that are not on loopback. */
    devnet: Type.Boolean({ default: false }),
    log_level: LogLevel,
    data_dir: Type.String({ minLength: 1, default: './resolver-data' }),
    /** `sqlite:<path>` (default: `<data_dir>/resolver.db`) or `postgres://…`. */
    database_url: Type.Optional(Type.String({ minLength: 1 })),
    /** `GET /metrics` (Prometheus) on a listen address of its own (default 127.0.0.1:9406). */
    metrics: MetricsConfigSchema(9406),
    swap: Type.Object(
      {
        /** The swap service's base URL. */
        url: Type.String({ minLength: 1 }),
        /** This resolver's id in the swap service's `[[resolvers]]`. */
        resolver_id: Type.String({ minLength: 1 }),
        /** The resolver API key (`X-API-Key` on `/resolver/v1`), or `api_key_file`. */
        api_key: Type.Optional(Type.String({ minLength: 1 })),
        api_key_file: Type.Optional(Type.String({ minLength: 1 })),
      },
      { additionalProperties: false },
    ),
    rfq: Type.Object(
      {
        listen_address: Type.String({ default: '127.0.0.1' }),
        port: Type.Integer({ minimum: 0, maximum: 65_535, default: 3300 }),
        /**
         * The shared secret the swap service signs RFQs with (`rfq_secret` there), or `secret_file`. At
         * least 32 characters: checked after loading, so that a refused secret is never in the message.
         */
        secret: Type.Optional(Type.String({ minLength: 1 })),
        secret_file: Type.Optional(Type.String({ minLength: 1 })),
        /** How old (seconds) a signed RFQ may be; replays within it are refused by request id. */
        tolerance_secs: Type.Integer({ minimum: 1, maximum: 300, default: 30 }),
        /** How long a quoted amount stays reserved from the inventory (the swap's quote TTL). */
        reserve_secs: Type.Integer({ minimum: 1, default: 180 }),
      },
      { additionalProperties: false, default: {} },
    ),
    fill: Type.Object(
      {
        /** Pay the user only while at least this many seconds remain before the intent's deadline. */
        safety_secs: Type.Integer({ minimum: 0, default: 300 }),
        /** How often intents waiting for confirmations are looked at again. */
        poll_interval_ms: Type.Integer({ minimum: 50, default: 2000 }),
        /** Intents driven at once. */
        max_concurrent: Type.Integer({ minimum: 1, maximum: 256, default: 8 }),
      },
      { additionalProperties: false, default: {} },
    ),
    networks: Type.Array(NetworkSchema, { default: [] }),
    pairs: Type.Array(PairSchema, { default: [] }),
  },
  { additionalProperties: false },
);

export type ResolverFileConfig = Static<typeof ResolverConfigSchema>;
export type NetworkConfig = Static<typeof NetworkSchema>;
export type PairConfig = Static<typeof PairSchema>;

export interface ResolverConfig extends ResolverFileConfig {
  databaseUrl: string;
  apiKey: string;
  rfqSecret: string;
  /** Per network id: the private key bytes (never logged). */
  keys: Map<number, Uint8Array>;
}

function readSecretFile(path: string, key: string, issues: ConfigIssue[]): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    issues.push({
      path: key,
      message: `"${key}": cannot read "${path}": ${(err as NodeJS.ErrnoException).code}`,
    });
    return undefined;
  }
}

function keyBytes(text: string | undefined, where: string, issues: ConfigIssue[]): Uint8Array | undefined {
  if (text === undefined) return undefined;
  const hex = text.startsWith('0x') ? text.slice(2) : text;
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    issues.push({ path: where, message: `"${where}" must hold a 32-byte private key as 64 hex characters` });
    return undefined;
  }
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

const NEEDS: Record<NetworkConfig['type'], (keyof NetworkConfig)[]> = {
  BITCOIN: ['electrum_url', 'btc_network'],
  EVM: ['rpc_url', 'chain_id', 'escrow_address'],
  TRON: ['rpc_url', 'chain_id', 'escrow_address'],
  SOLANA: ['rpc_url'],
};

/** Loads and checks the configuration; paths are relative to the file's directory. */
export function loadConfig(opts: { file?: string; text?: string; env?: NodeJS.ProcessEnv }): ResolverConfig {
  const env = opts.env ?? process.env;
  const c = loadTomlConfig(
    ResolverConfigSchema,
    { ...(opts.file ? { file: opts.file } : {}), ...(opts.text !== undefined ? { text: opts.text } : {}) },
    { env },
  );
  const base = opts.file ? dirname(resolve(opts.file)) : process.cwd();
  const abs = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const issues: ConfigIssue[] = [];
  const dataDir = abs(c.data_dir);

  let apiKey = c.swap.api_key;
  if ((c.swap.api_key === undefined) === (c.swap.api_key_file === undefined))
    issues.push({
      path: 'swap.api_key',
      message: 'exactly one of "swap.api_key" and "swap.api_key_file" is required',
    });
  else if (c.swap.api_key_file)
    apiKey = readSecretFile(abs(c.swap.api_key_file), 'swap.api_key_file', issues);

  let rfqSecret = c.rfq.secret;
  if ((c.rfq.secret === undefined) === (c.rfq.secret_file === undefined))
    issues.push({
      path: 'rfq.secret',
      message: 'exactly one of "rfq.secret" and "rfq.secret_file" is required',
    });
  else if (c.rfq.secret_file) rfqSecret = readSecretFile(abs(c.rfq.secret_file), 'rfq.secret_file', issues);
  if (rfqSecret !== undefined && rfqSecret.length < 32) {
    const key = c.rfq.secret_file ? 'rfq.secret_file' : 'rfq.secret';
    issues.push({ path: key, message: `"${key}" must hold at least 32 characters, has ${rfqSecret.length}` });
  }

  let swapUrl: URL | undefined;
  try {
    swapUrl = new URL(c.swap.url);
  } catch {}
  if (!swapUrl || !/^https?:$/.test(swapUrl.protocol))
    issues.push({ path: 'swap.url', message: `"swap.url" must be an http(s) URL, got "${c.swap.url}"` });
  else if (
    swapUrl.protocol === 'http:' &&
    !c.devnet &&
    !['127.0.0.1', 'localhost', '[::1]'].includes(swapUrl.hostname)
  )
    issues.push({
      path: 'swap.url',
      message: '"swap.url" must be https:// (http:// only on loopback or with devnet = true)',
    });

  const keys = new Map<number, Uint8Array>();
  const ids = new Set<number>();
  c.networks.forEach((n, i) => {
    const where = `networks[${i}]`;
    if (ids.has(n.id))
      issues.push({ path: `${where}.id`, message: `"${where}.id": duplicate network id ${n.id}` });
    ids.add(n.id);
    for (const k of NEEDS[n.type])
      if (n[k] === undefined)
        issues.push({
          path: `${where}.${k}`,
          message: `"${where}.${k}" is required for a ${n.type} network`,
        });
    if ((n.key_file === undefined) === (n.key_env === undefined)) {
      issues.push({
        path: `${where}.key_file`,
        message: `exactly one of "${where}.key_file" and "${where}.key_env" is required`,
      });
      return;
    }
    const text = n.key_file
      ? readSecretFile(abs(n.key_file), `${where}.key_file`, issues)
      : env[n.key_env!]?.trim();
    if (n.key_env && text === undefined)
      issues.push({
        path: `${where}.key_env`,
        message: `"${where}.key_env": environment variable ${n.key_env} is not set`,
      });
    const key = keyBytes(text, n.key_file ? `${where}.key_file` : `${where}.key_env`, issues);
    if (key) keys.set(n.id, key);
  });
  c.pairs.forEach((p, i) => {
    for (const side of ['source_network', 'dest_network'] as const)
      if (!ids.has(p[side]))
        issues.push({
          path: `pairs[${i}].${side}`,
          message: `"pairs[${i}].${side}": network ${p[side]} is not in [[networks]]`,
        });
    if (BigInt(p.min_source_lots) > BigInt(p.max_source_lots))
      issues.push({
        path: `pairs[${i}].min_source_lots`,
        message: `"pairs[${i}].min_source_lots" must not exceed "pairs[${i}].max_source_lots"`,
      });
  });
  if (issues.length) throw new ConfigError(issues, opts.file ? { file: opts.file } : {});
  return {
    ...c,
    data_dir: dataDir,
    databaseUrl: c.database_url ?? `sqlite:${join(dataDir, 'resolver.db')}`,
    apiKey: apiKey!,
    rfqSecret: rfqSecret!,
    keys,
  };
}
