/**
 * The cloud service's TOML configuration (`-c FILE`), checked strictly by the kit's loader.
 * Every key but the encryption key has a default; where hosted nodes point (`[backend]`) must be
 * configured for them to start.
 */
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import {
  ConfigError,
  type ConfigIssue,
  loadTomlConfig,
  MetricsConfigSchema,
  type Static,
  Type,
} from '@rgbx/service-kit';

/** The hosted nodes' package (a dependency of the cloud) and the bin the local driver runs. */
const WALLET_NODE_PACKAGE = '@rgbx/wallet-node';
const WALLET_NODE_BIN = 'rgbx-wallet-node';

/**
 * The entry point of the installed `@rgbx/wallet-node` package (its `rgbx-wallet-node` bin), found
 * as Node finds the package (the node_modules folders from here up; its exports map does not export
 * package.json, so the folder is looked up, not resolved). What `[nodes] wallet_node_main` defaults to.
 */
export function installedWalletNodeMain(): string {
  const paths = createRequire(import.meta.url).resolve.paths(WALLET_NODE_PACKAGE) ?? [];
  const dir = paths.map((p) => join(p, WALLET_NODE_PACKAGE)).find((d) => existsSync(join(d, 'package.json')));
  if (!dir)
    throw new ConfigError([
      {
        path: 'nodes.wallet_node_main',
        message: `${WALLET_NODE_PACKAGE} is not installed: set "nodes.wallet_node_main" to the wallet node's entry point`,
      },
    ]);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.[WALLET_NODE_BIN];
  if (!bin)
    throw new ConfigError([
      {
        path: 'nodes.wallet_node_main',
        message: `${WALLET_NODE_PACKAGE} (${dir}) has no "${WALLET_NODE_BIN}" bin: set "nodes.wallet_node_main"`,
      },
    ]);
  return resolve(realpathSync(dir), bin);
}

const Ms = (def: number, min = 0) => Type.Integer({ minimum: min, default: def });

export const ConfigSchema = Type.Object({
  api: Type.Object(
    {
      listen_address: Type.String({ minLength: 1, default: '127.0.0.1' }),
      /** 3200: the swap's default is 3100, so both run side by side with their defaults. */
      port: Type.Integer({ minimum: 0, maximum: 65535, default: 3200 }),
      body_limit_bytes: Type.Integer({ minimum: 1024, maximum: 1024 * 1024, default: 64 * 1024 }),
      /** A request (headers and body) not received within this gets 408 and its connection is closed (kit default 30 000). */
      request_timeout_ms: Type.Optional(Type.Integer({ minimum: 100 })),
      /** The same for the headers alone, at most `request_timeout_ms` (kit default: the smaller of 10 000 and that). */
      headers_timeout_ms: Type.Optional(Type.Integer({ minimum: 100 })),
      /** A connection silent this long is closed unless a request on it is being handled (kit default 60 000). */
      connection_timeout_ms: Type.Optional(Type.Integer({ minimum: 100 })),
      /** An idle keep-alive connection is closed this long after its last response (kit default 5 000). */
      keep_alive_timeout_ms: Type.Optional(Type.Integer({ minimum: 100 })),
    },
    { default: {} },
  ),
  database: Type.Object(
    {
      /** `sqlite:<path>` or `postgres://…`; default `sqlite:<data_dir>/cloud.db`. */
      url: Type.Optional(Type.String({ minLength: 1 })),
    },
    { default: {} },
  ),
  cloud: Type.Object(
    {
      data_dir: Type.String({ minLength: 1, default: '.cloud' }),
      log_level: Type.Union(
        ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
        { default: 'info' },
      ),
    },
    { default: {} },
  ),
  /**
   * The 32-byte AES-256-GCM key that encrypts the webhook signing keys' private parts at rest:
   * `encryption_key` (64 hex chars, e.g. `"${RGBX_CLOUD_ENCRYPTION_KEY}"`) or `encryption_key_file`
   * (a file holding them, not readable by group or others). With neither, the environment variable
   * `RGBX_CLOUD_ENCRYPTION_KEY` is used. The service and the `keys` commands refuse to start without one.
   */
  signing_keys: Type.Object(
    {
      /** Checked by `loadConfig` (64 hex chars) with a message that never echoes the value. */
      encryption_key: Type.Optional(Type.String()),
      encryption_key_file: Type.Optional(Type.String({ minLength: 1 })),
    },
    { default: {} },
  ),
  /**
   * Where hosted nodes point: fixed addresses (`btc_rpc_address`, `indexer_address`, `proxy_address`),
   * or, in development, a `plugin` module that finds them at every node start (the devnet kit's
   * follow-mode: `plugin = "@rgbx/devnet/cloud-backend"`, `plugin_options = { dir = ".devnet" }`).
   */
  backend: Type.Object(
    {
      /** How nodes run: `local` (a process each, on this machine) or `kubernetes` (a StatefulSet each, `[kubernetes]`). */
      driver: Type.Union([Type.Literal('local'), Type.Literal('kubernetes')], { default: 'local' }),
      /** A module (package name, or a path relative to the working directory) exporting `createBackendResolver`. */
      plugin: Type.Optional(Type.String({ minLength: 1 })),
      /** Handed to the plug-in as is. */
      plugin_options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      btc_rpc_address: Type.Optional(Type.String({ minLength: 1 })),
      btc_rpc_user: Type.Optional(Type.String()),
      /** Accepted for older configs and ignored: hosted nodes never get the bitcoind RPC password. */
      btc_rpc_password: Type.Optional(Type.String()),
      indexer_address: Type.Optional(Type.String({ pattern: '^tcp://' })),
      proxy_address: Type.Optional(Type.Array(Type.String({ pattern: '^rpc://' }))),
    },
    { default: {} },
  ),
  nodes: Type.Object(
    {
      /** The wallet node's entry point (default: the installed @rgbx/wallet-node package's bin). */
      wallet_node_main: Type.Optional(Type.String({ minLength: 1 })),
      networks: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, default: ['regtest'] }),
      max_per_account: Type.Integer({ minimum: 1, default: 20 }),
      start_timeout_ms: Ms(120_000, 1000),
      health_interval_ms: Ms(2_000, 100),
      health_timeout_ms: Ms(2_000, 100),
      /** Consecutive failed health checks of a running node before it is FAILED. */
      unhealthy_threshold: Type.Integer({ minimum: 1, default: 3 }),
      stop_grace_ms: Ms(15_000, 100),
      /** Waits before automatic restarts 1, 2, 3… of a FAILED node. */
      restart_backoff_ms: Type.Array(Type.Integer({ minimum: 0 }), { default: [1_000, 5_000, 30_000] }),
      /** At most this many automatic restarts within `restart_window_ms`; then the node stays FAILED. */
      max_restarts: Type.Integer({ minimum: 0, default: 3 }),
      restart_window_ms: Ms(600_000, 1000),
      /** Stop the hosted nodes when the cloud service stops (default: they keep running and are re-adopted). */
      stop_on_shutdown: Type.Boolean({ default: false }),
    },
    { default: {} },
  ),
  /** The Kubernetes driver (`[backend] driver = "kubernetes"`, docs/kubernetes-driver.md). */
  kubernetes: Type.Object(
    {
      /** A kubeconfig file; default: in-cluster credentials (the pod's ServiceAccount), else $KUBECONFIG or ~/.kube/config. */
      kubeconfig: Type.Optional(Type.String({ minLength: 1 })),
      /** The kubeconfig context (default: its current context). */
      context: Type.Optional(Type.String({ minLength: 1 })),
      image: Type.String({ minLength: 1, default: 'rgbx/wallet-node:0.1.0' }),
      image_pull_policy: Type.Union(
        [Type.Literal('Always'), Type.Literal('IfNotPresent'), Type.Literal('Never')],
        { default: 'IfNotPresent' },
      ),
      /** Each account's nodes run in the namespace `<prefix><account>`. */
      namespace_prefix: Type.String({
        pattern: '^[a-z0-9]([-a-z0-9]*)?$',
        maxLength: 30,
        default: 'rgbx-acc-',
      }),
      /** Where the cloud's pods run; the accounts' NetworkPolicy admits only them. */
      cloud_namespace: Type.String({ minLength: 1, default: 'rgbx-cloud' }),
      cloud_pod_labels: Type.Record(Type.String(), Type.String(), {
        default: { 'app.kubernetes.io/name': 'rgbx-cloud' },
      }),
      /** The wallet node's API port (container and Service). */
      port: Type.Integer({ minimum: 1, maximum: 65535, default: 3001 }),
      /**
       * The hosted nodes' Prometheus metrics (`GET /metrics`): 0 = off (the default); else served on this container
       * port (named `metrics`, pod annotations `prometheus.io/scrape|port|path`), and the accounts' NetworkPolicy
       * admits it from `metrics_scrape_namespace` (pods with `metrics_scrape_pod_labels`) only.
       */
      metrics_port: Type.Integer({ minimum: 0, maximum: 65535, default: 0 }),
      metrics_scrape_namespace: Type.String({ minLength: 1, default: 'monitoring' }),
      metrics_scrape_pod_labels: Type.Record(Type.String(), Type.String(), {
        default: { 'app.kubernetes.io/name': 'prometheus' },
      }),
      storage_size: Type.String({ minLength: 1, default: '1Gi' }),
      storage_class: Type.Optional(Type.String({ minLength: 1 })),
      cpu_request: Type.String({ minLength: 1, default: '100m' }),
      memory_request: Type.String({ minLength: 1, default: '256Mi' }),
      cpu_limit: Type.String({ minLength: 1, default: '1' }),
      memory_limit: Type.String({ minLength: 1, default: '1Gi' }),
    },
    { default: {} },
  ),
  /**
   * Several cloud instances on one PostgreSQL database: each renews a lease; the nodes of an
   * instance that has not renewed it for `lease_ms` are taken over by the live ones.
   */
  cluster: Type.Object(
    {
      lease_ms: Ms(15_000, 300),
    },
    { default: {} },
  ),
  /** `GET /metrics` (Prometheus) on a listen address of its own (default 127.0.0.1:9403), never the API's. */
  metrics: MetricsConfigSchema(9403),
  webhooks: Type.Object(
    {
      /** Delay before attempt 2, 3, … (the last value repeats until the give-up window ends). */
      retry_schedule_ms: Type.Array(Type.Integer({ minimum: 0 }), {
        minItems: 1,
        default: [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000],
      }),
      /** ± fraction of random jitter added to every retry delay. */
      jitter: Type.Number({ minimum: 0, maximum: 0.5, default: 0.1 }),
      /** An event undelivered this long after its first attempt is abandoned and the endpoint marked failing. */
      give_up_after_ms: Ms(259_200_000, 1000),
      connect_timeout_ms: Ms(5_000, 100),
      request_timeout_ms: Ms(10_000, 100),
      max_payload_bytes: Type.Integer({ minimum: 256, default: 16 * 1024 }),
      /** Response bytes kept in the delivery log. */
      response_snippet_bytes: Type.Integer({ minimum: 0, maximum: 65536, default: 1024 }),
      /** Deliveries in flight at once (never two for one node). */
      concurrency: Type.Integer({ minimum: 1, maximum: 256, default: 32 }),
      /** How often the dispatcher looks for due retries (new events wake it at once). */
      poll_interval_ms: Ms(1_000, 10),
      /** Worker threads that compute the RSA signatures (0: on the event loop). */
      sign_threads: Type.Integer({ minimum: 0, maximum: 64, default: 1 }),
      /** Delivered events (and their attempt logs) older than this are deleted; abandoned ones are kept. */
      retention_days: Type.Integer({ minimum: 1, default: 30 }),
      /** Dev allowlist: destinations (CIDRs) allowed although private/loopback/link-local. */
      allow_cidrs: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      /** Dev only: allow `http://` URLs whose host resolves inside `allow_cidrs`. */
      allow_http: Type.Boolean({ default: false }),
      /** Extra trusted CA certificates (PEM file), for dev receivers with self-signed certificates. */
      extra_ca_file: Type.Optional(Type.String({ minLength: 1 })),
    },
    { default: {} },
  ),
});

export type FileConfig = Static<typeof ConfigSchema>;

/** The environment variable read when the file names no encryption key. */
export const ENCRYPTION_KEY_ENV = 'RGBX_CLOUD_ENCRYPTION_KEY';

export interface CloudConfig extends Omit<FileConfig, 'signing_keys'> {
  /** Absolute data directory. */
  dataDir: string;
  databaseUrl: string;
  walletNodeMain: string;
  /**
   * The signing keys' encryption key (32 bytes), or why there is none: the service and the `keys`
   * commands call `requireEncryptionKey`, which throws a ConfigError naming the config key.
   */
  encryptionKey: { key: Buffer } | { missing: ConfigIssue };
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

function readEncryptionKey(
  file: FileConfig,
  env: Record<string, string | undefined>,
): { key: Buffer } | { missing: ConfigIssue } | { invalid: ConfigIssue } {
  const sk = file.signing_keys;
  if (sk.encryption_key !== undefined && sk.encryption_key_file !== undefined) {
    return {
      invalid: {
        path: 'signing_keys.encryption_key',
        message: 'set only one of "signing_keys.encryption_key" and "signing_keys.encryption_key_file"',
      },
    };
  }
  if (sk.encryption_key !== undefined) {
    if (!HEX64.test(sk.encryption_key))
      return {
        invalid: {
          path: 'signing_keys.encryption_key',
          message: `"signing_keys.encryption_key" must be 64 hex characters (got ${sk.encryption_key.length} characters)`,
        },
      };
    return { key: Buffer.from(sk.encryption_key, 'hex') };
  }
  if (sk.encryption_key_file !== undefined) {
    const path = resolve(sk.encryption_key_file);
    const bad = (why: string) => ({
      invalid: {
        path: 'signing_keys.encryption_key_file',
        message: `"signing_keys.encryption_key_file" ${path}: ${why}`,
      },
    });
    try {
      if ((statSync(path).mode & 0o077) !== 0) return bad('readable by group or others (chmod 600 it)');
      const text = readFileSync(path, 'utf8').trim();
      if (!HEX64.test(text)) return bad('expected 64 hex characters');
      return { key: Buffer.from(text, 'hex') };
    } catch (err) {
      return bad((err as NodeJS.ErrnoException).code ?? (err as Error).message);
    }
  }
  const fromEnv = env[ENCRYPTION_KEY_ENV];
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!HEX64.test(fromEnv.trim()))
      return {
        invalid: {
          path: 'signing_keys.encryption_key',
          message: `environment variable ${ENCRYPTION_KEY_ENV} must be 64 hex characters`,
        },
      };
    return { key: Buffer.from(fromEnv.trim(), 'hex') };
  }
  return {
    missing: {
      path: 'signing_keys.encryption_key',
      message:
        'no encryption key for the webhook signing keys: set "signing_keys.encryption_key" (64 hex chars, ' +
        `e.g. "\${${ENCRYPTION_KEY_ENV}}") or "signing_keys.encryption_key_file", or the environment variable ` +
        `${ENCRYPTION_KEY_ENV} (make one with \`rgbx-cloud encryption-key\`)`,
    },
  };
}

/** Loads and resolves a configuration (paths relative to the working directory). */
export function loadConfig(source: { file?: string; text?: string }, env = process.env): CloudConfig {
  const file = loadTomlConfig(
    ConfigSchema,
    source.file === undefined && source.text === undefined ? { text: '' } : source,
    { env },
  );
  const dataDir = resolve(file.cloud.data_dir);
  const key = readEncryptionKey(file, env);
  if ('invalid' in key) throw new ConfigError([key.invalid], source.file ? { file: source.file } : {});
  const { signing_keys: _sk, ...rest } = file;
  return {
    ...rest,
    dataDir,
    databaseUrl: file.database.url ?? `sqlite:${resolve(dataDir, 'cloud.db')}`,
    walletNodeMain: file.nodes.wallet_node_main
      ? resolve(file.nodes.wallet_node_main)
      : installedWalletNodeMain(),
    encryptionKey: key,
  };
}

/** The signing keys' encryption key; a ConfigError naming `signing_keys.encryption_key` when none is configured. */
export function requireEncryptionKey(cfg: Pick<CloudConfig, 'encryptionKey'>): Buffer {
  if ('missing' in cfg.encryptionKey) throw new ConfigError([cfg.encryptionKey.missing]);
  return cfg.encryptionKey.key;
}
