/**
 * Configuration: one TOML file checked by the kit's strict loader (unknown keys and mistyped values
 * stop the start, naming the key). `${ENV}` references are allowed in strings.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { NETWORK_TYPES, type NetworkTypeName, NetworkType as NetworkTypeSchema } from '@rgbx/contracts/swap';
import { ConfigError, loadTomlConfig, MetricsConfigSchema, type Static, Type } from '@rgbx/service-kit';
import { AmountError, parseDecimal, parseLots } from './domain/amounts.ts';
import { kindOf } from './kinds/registry.ts';

const LogLevel = Type.Union(
  ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
  { default: 'info' },
);

const Hex64 = Type.String({ pattern: '^[0-9a-fA-F]{64}$' });

export { NETWORK_TYPES };
export type NetworkType = NetworkTypeName;

const NetworkSchema = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
  name: Type.String({ minLength: 1 }),
  type: NetworkTypeSchema,
  icon_url: Type.String({ default: '' }),
  supports_custom_tokens: Type.Boolean({ default: false }),
  supports_optimized_swap: Type.Boolean({ default: false }),
  /** EVM: the chain id of the EIP-712 domain; Tron: the full chain id (masked to 32 bits when signing). */
  chain_id: Type.Optional(Type.Integer({ minimum: 1 })),
  /** EVM/Tron JSON-RPC (allowance `eth_call`, receipts). Tron: its EVM-compatible `/jsonrpc` endpoint. */
  rpc_url: Type.Optional(Type.String({ minLength: 1 })),
  permit2_address: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * EVM/Tron: read the owner's allowance to Permit2 before accepting an approval (needs `rpc_url`).
   * `false` is for a devnet without a node for that chain; approvals are then not checked on chain.
   */
  verify_allowance: Type.Boolean({ default: true }),
  escrow_address: Type.Optional(Type.String({ minLength: 1 })),
  /** Bitcoin: `mainnet`, `testnet`, `signet` or `regtest` (address prefixes). */
  bitcoin_network: Type.Optional(
    Type.Union([
      Type.Literal('mainnet'),
      Type.Literal('testnet'),
      Type.Literal('signet'),
      Type.Literal('regtest'),
    ]),
  ),
  /** Solana: the escrow/program address the co-signed transaction pays into (see the chains module). */
  solana_escrow_address: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Confirmations a reported settlement transaction needs on this network (Bitcoin default:
   * `bitcoin.min_confirmations`; others 1). 0 (mempool / processed) only in a `devnet = true` config.
   */
  min_confirmations: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  /**
   * Confirmations a fulfilment (the resolver's payment to the user) needs on this network: the preimage is
   * released on it, so it must not be undone. Default outside a devnet: the larger of `min_confirmations`
   * and the network's finality (Bitcoin 3, EVM 12, Tron 19, Solana finalized = 32); on a devnet,
   * `min_confirmations`. 0 only with `devnet = true`.
   */
  fulfil_min_confirmations: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
});

const TokenSchema = Type.Object({
  network_id: Type.Integer({ minimum: 1 }),
  symbol: Type.String({ minLength: 1, maxLength: 32 }),
  name: Type.String({ minLength: 1 }),
  /** Contract address, mint, or a fixed identifier for a native coin (e.g. `BTC`). */
  address: Type.String({ minLength: 1, maxLength: 128 }),
  decimals: Type.Integer({ minimum: 0, maximum: 36 }),
  icon_url: Type.String({ default: '' }),
  wrapped_token_address: Type.Optional(Type.String({ minLength: 1 })),
  /** An RGB asset on Bitcoin (approval `rgblock`): listed, never quoted yet. */
  rgb: Type.Boolean({ default: false }),
});

const RateSchema = Type.Object({
  source_network: Type.Integer({ minimum: 1 }),
  source_token: Type.String({ minLength: 1 }),
  dest_network: Type.Integer({ minimum: 1 }),
  dest_token: Type.String({ minLength: 1 }),
  /** Destination units per source unit (human units), a decimal string such as "25000.5". */
  rate: Type.String({ pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$' }),
  /** The resolver's own fee, taken from the destination amount. */
  fee_bps: Type.Integer({ minimum: 0, maximum: 5000, default: 0 }),
  min_source_lots: Type.String({ pattern: '^(0|[1-9][0-9]*)$', default: '1' }),
  max_source_lots: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]*)$' })),
});

const ResolverSchema = Type.Object({
  id: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' }),
  name: Type.String({ minLength: 1 }),
  enabled: Type.Boolean({ default: true }),
  /** SHA-256 (hex) of the resolver's API key for the resolver API; the key itself is never stored. */
  api_key_sha256: Hex64,
  /** Bitcoin: x-only (32-byte hex) key of the HTLC claim leaf. */
  bitcoin_claim_pubkey: Type.Optional(Hex64),
  /** EVM: `resolver_deposit_address` in the Permit2 witness. */
  evm_address: Type.Optional(Type.String({ minLength: 1 })),
  /** Tron: base58 resolver address. */
  tron_address: Type.Optional(Type.String({ minLength: 1 })),
  /** Solana: base58 address, fee payer and signer position 0 of co-signed transactions. */
  solana_address: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * A remote resolver: the URL the signed request for quote is POSTed to (README "Remote resolvers
   * (RFQ)"). `https://`; `http://` only with `devnet = true`. Without it the resolver quotes from
   * `rates`; with it, it has no `rates`.
   */
  quote_url: Type.Optional(Type.String({ minLength: 1 })),
  /** The secret shared with a remote resolver (at least 32 bytes). Exactly one of this and `rfq_secret_file`. */
  rfq_secret: Type.Optional(Type.String({ minLength: 1 })),
  /** A file holding that secret (read at start, trimmed; mode 0600 recommended). */
  rfq_secret_file: Type.Optional(Type.String({ minLength: 1 })),
  rates: Type.Array(RateSchema, { default: [] }),
});

export const ConfigSchema = Type.Object({
  /**
   * A development configuration: allows 0-confirmation settlement and a refund safety margin under
   * 600 s. Never set it where value moves.
   */
  devnet: Type.Boolean({ default: false }),
  host: Type.String({ minLength: 1, default: '127.0.0.1' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 3100 }),
  /** Default `~/.rgbx-swap`; relative paths are relative to the config file. */
  data_dir: Type.Optional(Type.String({ minLength: 1 })),
  /** `sqlite:<path>` or `postgres://…`; default `sqlite:<data_dir>/swap.db`. */
  database_url: Type.Optional(Type.String({ minLength: 1 })),
  log_level: LogLevel,
  body_limit_bytes: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 256 * 1024 }),
  shutdown_timeout_ms: Type.Integer({ minimum: 0, default: 10_000 }),
  /** `GET /metrics` (Prometheus) on a listen address of its own (default 127.0.0.1:9402). */
  metrics: MetricsConfigSchema(9402),
  /** AES-256-GCM key for preimages at rest: 64 hex chars. Exactly one of this and `preimage_key_file`. */
  preimage_key: Type.Optional(Hex64),
  /** File holding the 64-hex-char key (mode 0600 recommended). */
  preimage_key_file: Type.Optional(Type.String({ minLength: 1 })),
  swap: Type.Object(
    {
      quote_ttl_secs: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
      intent_ttl_secs: Type.Integer({ minimum: 60, maximum: 7 * 86_400, default: 3600 }),
      default_slippage_bps: Type.Integer({ minimum: 0, maximum: 5000, default: 50 }),
      max_slippage_bps: Type.Integer({ minimum: 0, maximum: 5000, default: 1000 }),
      max_affiliate_fee_bps: Type.Integer({ minimum: 0, maximum: 5000, default: 300 }),
      resolver_timeout_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 2000 }),
      scheduler_interval_ms: Type.Integer({ minimum: 50, maximum: 3_600_000, default: 5000 }),
      /** Event feeds: how often each instance reads new `intent_events` rows (ms). */
      event_poll_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 500 }),
      /** Event feeds: seconds between heartbeat comments on an idle stream. */
      event_heartbeat_secs: Type.Integer({ minimum: 1, maximum: 3600, default: 15 }),
      /**
       * Event feeds: how far back a `Last-Event-ID` may resume (older: `event: reset`). The events
       * themselves are the audit trail and are never deleted.
       */
      event_retention_secs: Type.Integer({ minimum: 60, maximum: 10 * 365 * 86_400, default: 7 * 86_400 }),
      /** Event feeds: streams open at once per API key or resolver key. */
      event_max_streams_per_key: Type.Integer({ minimum: 1, maximum: 1000, default: 4 }),
      /** Worker threads for Permit2 signature checks (secp256k1 recovery off the event loop); 0 = inline. */
      verify_threads: Type.Integer({ minimum: 0, maximum: 16, default: 1 }),
      /**
       * Seconds between the last moment a fulfilment is accepted (the intent deadline) and the moment
       * the user can refund the source (HTLC CLTV, EVM escrow `refundAfter`): the resolver's window to
       * claim after it fulfilled late. Default 3600 (six 10-minute blocks); under 600 only on a devnet.
       */
      refund_safety_margin_secs: Type.Integer({ minimum: 0, maximum: 7 * 86_400, default: 3600 }),
    },
    { default: {} },
  ),
  bitcoin: Type.Object(
    {
      /** `tcp://host:port` of the Electrum indexer (UTXOs, broadcasts, on-chain checks). */
      electrum_url: Type.Optional(Type.String({ pattern: '^tcp://' })),
      fee_rate_sat_vb: Type.Integer({ minimum: 1, maximum: 10_000, default: 2 }),
      min_confirmations: Type.Integer({ minimum: 0, maximum: 100, default: 1 }),
      electrum_timeout_ms: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    },
    { default: {} },
  ),
  networks: Type.Array(NetworkSchema, { default: [] }),
  tokens: Type.Array(TokenSchema, { default: [] }),
  resolvers: Type.Array(ResolverSchema, { default: [] }),
});

export type FileConfig = Static<typeof ConfigSchema>;
export type NetworkConfig = Static<typeof NetworkSchema>;
export type TokenConfig = Static<typeof TokenSchema>;
export type ResolverConfig = Static<typeof ResolverSchema>;
export type RateConfig = Static<typeof RateSchema>;

/** Confirmations a settlement transaction on `network` needs. */
export function settlementConfirmations(config: Pick<FileConfig, 'bitcoin'>, network: NetworkConfig): number {
  return network.min_confirmations ?? kindOf(network).defaultConfirmations(config);
}

/** Confirmations a fulfilment on `network` needs (see `fulfil_min_confirmations`). */
export function fulfilConfirmations(
  config: Pick<FileConfig, 'bitcoin' | 'devnet'>,
  network: NetworkConfig,
): number {
  if (network.fulfil_min_confirmations !== undefined) return network.fulfil_min_confirmations;
  const settlement = settlementConfirmations(config, network);
  return config.devnet ? settlement : Math.max(settlement, kindOf(network).fulfilFinality);
}

/** The checked configuration the service runs with. */
export interface SwapConfig extends Omit<FileConfig, 'preimage_key' | 'preimage_key_file' | 'data_dir'> {
  dataDir: string;
  databaseUrl: string;
  /** 32 bytes. */
  preimageKey: Buffer;
}

export function loadConfig(
  source: { file?: string; text?: string },
  env: Record<string, string | undefined> = process.env,
): SwapConfig {
  const file = loadTomlConfig(ConfigSchema, source, { env });
  const base = source.file ? dirname(resolve(source.file)) : process.cwd();
  const at = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const dataDir = file.data_dir ? at(file.data_dir) : join(homedir(), '.rgbx-swap');
  const issues = checkConsistency(file);
  let preimageKey: Buffer | undefined;
  if ((file.preimage_key === undefined) === (file.preimage_key_file === undefined)) {
    issues.push({
      path: 'preimage_key',
      message: 'set exactly one of "preimage_key" and "preimage_key_file"',
    });
  } else if (file.preimage_key !== undefined) {
    preimageKey = Buffer.from(file.preimage_key, 'hex');
  } else {
    const keyFile = at(file.preimage_key_file!);
    try {
      const text = readFileSync(keyFile, 'utf8').trim();
      if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new Error('expected 64 hex characters');
      preimageKey = Buffer.from(text, 'hex');
    } catch (err) {
      issues.push({
        path: 'preimage_key_file',
        message: `"preimage_key_file" ${keyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      });
    }
  }
  const resolvers = file.resolvers.map((r, i) => {
    const secret = rfqSecret(r, `resolvers[${i}]`, at, issues);
    return secret === undefined ? r : { ...r, rfq_secret: secret };
  });
  if (issues.length > 0) throw new ConfigError(issues, source.file ? { file: source.file } : {});
  const { preimage_key: _k, preimage_key_file: _f, data_dir: _d, ...rest } = file;
  return {
    ...rest,
    resolvers,
    dataDir,
    databaseUrl: file.database_url ?? `sqlite:${join(dataDir, 'swap.db')}`,
    preimageKey: preimageKey!,
  };
}

/** The shortest RFQ secret accepted, in bytes (UTF-8, after trimming). */
export const RFQ_MIN_SECRET_BYTES = 32;

/**
 * A remote resolver's secret (inline or read from its file, trimmed), or undefined for a resolver
 * without `quote_url` or with a problem (then pushed to `issues`).
 */
function rfqSecret(
  r: ResolverConfig,
  where: string,
  at: (p: string) => string,
  issues: { path: string; message: string }[],
): string | undefined {
  if (r.quote_url === undefined) {
    for (const key of ['rfq_secret', 'rfq_secret_file'] as const)
      if (r[key] !== undefined)
        issues.push({
          path: `${where}.${key}`,
          message: `"${where}.${key}" is only for a resolver with quote_url`,
        });
    return undefined;
  }
  if ((r.rfq_secret === undefined) === (r.rfq_secret_file === undefined)) {
    issues.push({
      path: `${where}.rfq_secret`,
      message: `"${where}.quote_url" needs exactly one of "${where}.rfq_secret" and "${where}.rfq_secret_file"`,
    });
    return undefined;
  }
  let secret: string;
  let key = 'rfq_secret';
  if (r.rfq_secret !== undefined) {
    secret = r.rfq_secret.trim();
  } else {
    key = 'rfq_secret_file';
    const file = at(r.rfq_secret_file!);
    try {
      secret = readFileSync(file, 'utf8').trim();
    } catch (err) {
      issues.push({
        path: `${where}.rfq_secret_file`,
        message: `"${where}.rfq_secret_file" ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      });
      return undefined;
    }
  }
  // The secret itself never goes into a message.
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < RFQ_MIN_SECRET_BYTES) {
    issues.push({
      path: `${where}.${key}`,
      message: `"${where}.${key}": the RFQ secret must be at least ${RFQ_MIN_SECRET_BYTES} bytes after trimming; received ${bytes}`,
    });
    return undefined;
  }
  return secret;
}

/** Cross-key checks the schema cannot express (ids that must exist, fields a network type needs). */
function checkConsistency(c: FileConfig): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  const nets = new Map<number, NetworkConfig>();
  c.networks.forEach((n, i) => {
    if (nets.has(n.id)) issues.push({ path: `networks[${i}].id`, message: `duplicate network id ${n.id}` });
    nets.set(n.id, n);
    // Keys a network of this kind needs, and fail closed: every leg on every network is verified on
    // chain before a status moves, so a network whose chain cannot be read cannot be configured.
    issues.push(...kindOf(n).checkConfig(n, `networks[${i}]`, c));
    for (const key of ['min_confirmations', 'fulfil_min_confirmations'] as const)
      if (n[key] === 0 && !c.devnet)
        issues.push({
          path: `networks[${i}].${key}`,
          message: `"networks[${i}].${key}" = 0 is allowed only with devnet = true`,
        });
  });
  if (c.bitcoin.min_confirmations === 0 && !c.devnet) {
    issues.push({
      path: 'bitcoin.min_confirmations',
      message: '"bitcoin.min_confirmations" = 0 is allowed only with devnet = true',
    });
  }
  if (c.swap.refund_safety_margin_secs < 600 && !c.devnet) {
    issues.push({
      path: 'swap.refund_safety_margin_secs',
      message: `"swap.refund_safety_margin_secs" must be at least 600 (one block) outside a devnet; received ${c.swap.refund_safety_margin_secs}`,
    });
  }
  const tokens = new Set<string>();
  c.tokens.forEach((t, i) => {
    if (!nets.has(t.network_id))
      issues.push({
        path: `tokens[${i}].network_id`,
        message: `tokens[${i}]: unknown network ${t.network_id}`,
      });
    const key = `${t.network_id}/${t.address.toLowerCase()}`;
    if (tokens.has(key)) issues.push({ path: `tokens[${i}]`, message: `duplicate token ${t.address}` });
    tokens.add(key);
  });
  const ids = new Set<string>();
  c.resolvers.forEach((r, i) => {
    if (ids.has(r.id)) issues.push({ path: `resolvers[${i}].id`, message: `duplicate resolver id ${r.id}` });
    ids.add(r.id);
    if (r.quote_url !== undefined) {
      const key = `resolvers[${i}].quote_url`;
      let url: URL | undefined;
      try {
        url = new URL(r.quote_url);
      } catch {
        issues.push({ path: key, message: `"${key}" is not a URL: ${r.quote_url}` });
      }
      if (url && url.protocol !== 'https:' && !(url.protocol === 'http:' && c.devnet))
        issues.push({
          path: key,
          message: `"${key}" must be an https:// URL (http:// only with devnet = true); received ${url.protocol}//${url.host}`,
        });
      else if (url && (url.username !== '' || url.password !== ''))
        issues.push({
          path: key,
          message: `"${key}" must not carry credentials (the RFQ is signed with rfq_secret)`,
        });
      if (r.rates.length > 0)
        issues.push({
          path: `resolvers[${i}].rates`,
          message: `"resolvers[${i}].rates": a remote resolver (quote_url) quotes over RFQ; remove its rates`,
        });
    }
    r.rates.forEach((rate, j) => {
      const where = `resolvers[${i}].rates[${j}]`;
      // A fulfilment is checked as sent by the resolver where the chain shows a sender: it needs its
      // identity on the destination network.
      const dest = nets.get(rate.dest_network);
      const destKind = dest ? kindOf(dest) : undefined;
      if (destKind?.fulfilBySender && r[destKind.identityKey] === undefined)
        issues.push({
          path: `resolvers[${i}].${destKind.identityKey}`,
          message: `"resolvers[${i}].${destKind.identityKey}" is required: ${where} fulfils on network ${rate.dest_network} (${destKind.type})`,
        });
      for (const [net, tok] of [
        [rate.source_network, rate.source_token],
        [rate.dest_network, rate.dest_token],
      ] as const) {
        if (!tokens.has(`${net}/${tok.toLowerCase()}`))
          issues.push({ path: where, message: `${where}: token ${tok} on network ${net} is not configured` });
      }
      try {
        if (parseDecimal(rate.rate).num === 0n)
          issues.push({ path: `${where}.rate`, message: `${where}.rate is 0` });
        const min = parseLots(rate.min_source_lots);
        if (rate.max_source_lots !== undefined && parseLots(rate.max_source_lots) < min)
          issues.push({ path: where, message: `${where}: max_source_lots < min_source_lots` });
      } catch (err) {
        if (err instanceof AmountError) issues.push({ path: where, message: `${where}: ${err.message}` });
        else throw err;
      }
    });
  });
  if (c.swap.default_slippage_bps > c.swap.max_slippage_bps)
    issues.push({
      path: 'swap.default_slippage_bps',
      message: 'swap.default_slippage_bps > swap.max_slippage_bps',
    });
  return issues;
}
