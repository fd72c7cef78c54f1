/**
 * Configuration: an optional TOML file (`-c FILE`, checked by the kit's loader) overridden by
 * command-line flags.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  loadTomlConfig,
  type MetricsConfig,
  MetricsConfigSchema,
  parseCommandLine,
  type Static,
  Type,
  UsageError,
} from '@rgbx/service-kit';
import { DEFAULT_MAX_JSON_BYTES, DEFAULT_MAX_UPLOAD_BYTES } from './app.ts';

export const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1, default: '127.0.0.1' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  data_dir: Type.Optional(Type.String({ minLength: 1 })),
  max_upload_bytes: Type.Integer({ minimum: 1, default: DEFAULT_MAX_UPLOAD_BYTES }),
  max_json_bytes: Type.Integer({ minimum: 1024, default: DEFAULT_MAX_JSON_BYTES }),
  log_level: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  shutdown_timeout_ms: Type.Integer({ minimum: 0, default: 10_000 }),
  /** `GET /metrics` (Prometheus) on a listen address of its own (default 127.0.0.1:9405). */
  metrics: MetricsConfigSchema(9405),
});

export type FileConfig = Static<typeof ConfigSchema>;

export interface ProxyConfig {
  host: string;
  port: number;
  dataDir: string;
  maxUploadBytes: number;
  maxJsonBytes: number;
  logLevel: string;
  shutdownTimeoutMs: number;
  metrics: MetricsConfig;
}

export const USAGE = `usage: rgbx-rgb-proxy [options]

RGB proxy server (JSON-RPC, protocol 0.2, compatible with rgb-proxy-server 0.3.0)

options:
  -c, --config FILE          TOML config file (keys: host, port, data_dir, max_upload_bytes,
                             max_json_bytes, log_level, shutdown_timeout_ms, [metrics])
      --host HOST            listen address (default 127.0.0.1)
      --port PORT            listen port, 0 = any free port (default 3000)
      --data-dir DIR         data directory (default $APP_DATA or ~/.rgbx-rgb-proxy)
      --max-upload-bytes N   largest accepted upload (default ${DEFAULT_MAX_UPLOAD_BYTES})
      --log-level LEVEL      fatal|error|warn|info|debug|trace|silent (default info)
      --metrics-port PORT    GET /metrics listen port, 0 = any free port (default 9405; [metrics] in the file)
  -h, --help                 show this help
  -v, --version              show the version

Once listening, one JSON line is printed to stdout:
{"event":"listening","url":"http://HOST:PORT","metrics_url":"http://HOST:PORT/metrics"}.
Logs go to stderr.`;

export { UsageError };

function intFlag(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer in ${min}..${max}, got "${raw}"`);
  }
  return Number(raw);
}

export type CliResult = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; config: ProxyConfig };

export function parseCli(argv: string[], env: Record<string, string | undefined> = process.env): CliResult {
  const parsed = parse(argv);
  const v = parsed.values;
  if (v.help) return { kind: 'help' };
  if (v.version) return { kind: 'version' };
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);

  const file: FileConfig = loadTomlConfig(ConfigSchema, v.config ? { file: v.config } : { text: '' }, {
    env,
  });
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (v['log-level'] !== undefined && !levels.includes(v['log-level'])) {
    throw new UsageError(`--log-level must be one of ${levels.join(', ')}, got "${v['log-level']}"`);
  }
  const dataDir = v['data-dir'] ?? file.data_dir ?? env.APP_DATA ?? join(homedir(), '.rgbx-rgb-proxy');
  return {
    kind: 'run',
    config: {
      host: v.host ?? file.host,
      port: intFlag('port', v.port, 0, 65535) ?? file.port,
      dataDir: resolve(dataDir),
      maxUploadBytes:
        intFlag('max-upload-bytes', v['max-upload-bytes'], 1, Number.MAX_SAFE_INTEGER) ??
        file.max_upload_bytes,
      maxJsonBytes: file.max_json_bytes,
      logLevel: v['log-level'] ?? file.log_level,
      shutdownTimeoutMs: file.shutdown_timeout_ms,
      metrics: {
        ...file.metrics,
        port: intFlag('metrics-port', v['metrics-port'], 0, 65535) ?? file.metrics.port,
      },
    },
  };
}

function parse(argv: string[]) {
  return parseCommandLine(argv, {
    config: { type: 'string', short: 'c' },
    host: { type: 'string' },
    port: { type: 'string' },
    'data-dir': { type: 'string' },
    'max-upload-bytes': { type: 'string' },
    'log-level': { type: 'string' },
    'metrics-port': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean', short: 'v' },
  });
}
