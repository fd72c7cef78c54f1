import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from 'typebox';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, formatConfigError, loadTomlConfig, readToml, writeToml } from './config.ts';

const Schema = Type.Object({
  api: Type.Object({
    host: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 3000 }),
  }),
  wallet: Type.Object({
    network: Type.Union([Type.Literal('regtest'), Type.Literal('testnet'), Type.Literal('mainnet')]),
    data_dir: Type.String({ minLength: 1 }),
    proxies: Type.Array(Type.String(), { default: [] }),
    limits: Type.Optional(Type.Object({ max_wallets: Type.Integer({ minimum: 1 }) })),
  }),
  log_level: Type.Optional(Type.String()),
  debug: Type.Boolean({ default: false }),
});

const VALID = `
[wallet]
network = "regtest"
data_dir = "/var/lib/x"
`;

function fail(text: string, env?: Record<string, string>): ConfigError {
  try {
    loadTomlConfig(Schema, { text }, env ? { env } : {});
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const dir = mkdtempSync(join(tmpdir(), 'kit-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadTomlConfig', () => {
  it('applies defaults, including a whole missing section', () => {
    const cfg = loadTomlConfig(Schema, { text: VALID });
    expect(cfg).toEqual({
      api: { host: '127.0.0.1', port: 3000 },
      wallet: { network: 'regtest', data_dir: '/var/lib/x', proxies: [] },
      debug: false,
    });
  });

  it('keeps given values and reads files', () => {
    const file = join(dir, 'ok.toml');
    writeFileSync(
      file,
      `${VALID}proxies = ["rpc://a/json-rpc"]\n[api]\nport = 8080\n[wallet.limits]\nmax_wallets = 5\n`,
    );
    const cfg = loadTomlConfig(Schema, { file });
    expect(cfg.api).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(cfg.wallet.proxies).toEqual(['rpc://a/json-rpc']);
    expect(cfg.wallet.limits).toEqual({ max_wallets: 5 });
  });

  it('rejects an unknown top-level key', () => {
    const err = fail(`verbose = true\n${VALID}`);
    expect(err.message).toBe('config: unknown key "verbose" (allowed: api, wallet, log_level, debug)');
  });

  it('rejects an unknown nested key with its full dotted path', () => {
    const err = fail(`${VALID}\n[api]\nprot = 8080\n`);
    expect(err.message).toBe('config: unknown key "api.prot" (allowed: host, port)');
    expect(err.issues).toEqual([
      { path: 'api.prot', message: 'unknown key "api.prot" (allowed: host, port)' },
    ]);
  });

  it('rejects an unknown key two levels down', () => {
    const err = fail(`${VALID}\n[wallet.limits]\nmax_wallets = 2\nmax_walets = 3\n`);
    expect(err.message).toBe('config: unknown key "wallet.limits.max_walets" (allowed: max_wallets)');
  });

  it('rejects a mistyped value naming key, expectation and received value', () => {
    const err = fail(`${VALID}\n[api]\nport = "x"\n`);
    expect(err.message).toBe('config: "api.port" must be integer in 1..65535, got string "x"');
  });

  it('rejects out-of-range, float, literal and table/array mix-ups', () => {
    expect(fail(`${VALID}\n[api]\nport = 70000\n`).message).toBe(
      'config: "api.port" must be integer in 1..65535, got integer 70000',
    );
    expect(fail(`${VALID}\n[api]\nport = 80.5\n`).message).toBe(
      'config: "api.port" must be integer in 1..65535, got float 80.5',
    );
    expect(fail(VALID.replace('"regtest"', '"signet"')).message).toBe(
      'config: "wallet.network" must be one of "regtest", "testnet", "mainnet", got string "signet"',
    );
    expect(fail(`api = 5\n${VALID}`).message).toBe('config: "api" must be table, got integer 5');
    expect(fail(VALID.replace('data_dir = "/var/lib/x"', 'data_dir = ""')).message).toBe(
      'config: "wallet.data_dir" must be non-empty string, got string ""',
    );
    expect(fail(`${VALID}proxies = ["a", 1]\n`).message).toBe(
      'config: "wallet.proxies[1]" must be string, got integer 1',
    );
  });

  it('coerces nothing that was not a whole env reference, and never rounds a large integer', () => {
    expect(fail(`${VALID}\n[api]\nport = "8080"\n`).message).toBe(
      'config: "api.port" must be integer in 1..65535, got string "8080"',
    );
    expect(fail(`debug = "true"\n${VALID}`).message).toBe(
      'config: "debug" must be boolean, got string "true"',
    );
    expect(fail(`${VALID}\n[wallet.limits]\nmax_wallets = 9007199254740993\n`).message).toBe(
      'config: "wallet.limits.max_wallets" must be integer in 1..9007199254740991, got integer 9007199254740993',
    );
  });

  it('reports missing required keys, all of them', () => {
    const err = fail('[wallet]\nnetwork = "regtest"\n');
    expect(err.message).toBe('config: missing required key "wallet.data_dir" (expected non-empty string)');
    const none = fail('');
    expect(none.issues.map((i) => i.path)).toEqual(['wallet.network', 'wallet.data_dir']);
  });

  it('reports several problems at once', () => {
    const err = fail(`${VALID}\n[api]\nport = "x"\nhots = "a"\n`);
    expect(err.issues.map((i) => i.path).sort()).toEqual(['api.hots', 'api.port']);
  });

  it('gives line and column for TOML syntax errors', () => {
    const err = fail('[wallet]\nnetwork = "regtest"\ndata_dir = = "x"\n');
    expect(err.line).toBe(3);
    expect(err.column).toBeGreaterThan(1);
    expect(err.message).toMatch(/^config: TOML syntax error at line 3, column \d+: /);
    expect(formatConfigError(err)).toContain('data_dir = = "x"');
  });

  it('names the file in formatConfigError and reports unreadable files', () => {
    const file = join(dir, 'bad.toml');
    writeFileSync(file, `${VALID}\n[api]\nprot = 1\n`);
    let caught: unknown;
    try {
      loadTomlConfig(Schema, { file });
    } catch (err) {
      caught = err;
    }
    expect(formatConfigError(caught)).toBe(
      `invalid configuration in ${file}:\n  - unknown key "api.prot" (allowed: host, port)`,
    );
    expect(() => loadTomlConfig(Schema, { file: join(dir, 'missing.toml') })).toThrow(/cannot read .*ENOENT/);
  });

  it('rejects prototype keys', () => {
    expect(fail(`${VALID}\n__proto__ = 1\n`).message).toMatch(/TOML syntax error.*unsafe/);
  });

  it('interpolates environment variables, with fallback and number coercion', () => {
    const text = `[api]\nport = "\${PORT}"\nhost = "\${HOST:-0.0.0.0}"\n[wallet]\nnetwork = "regtest"\ndata_dir = "\${HOME_DIR}/w"\nproxies = ["$\${LITERAL}"]\n`;
    const cfg = loadTomlConfig(Schema, { text }, { env: { PORT: '4000', HOME_DIR: '/h' } });
    expect(cfg.api).toEqual({ host: '0.0.0.0', port: 4000 });
    expect(cfg.wallet.data_dir).toBe('/h/w');
    expect(cfg.wallet.proxies).toEqual(['$' + '{LITERAL}']);
    const err = fail(text, { PORT: '4000' });
    expect(err.message).toBe(
      'config: "wallet.data_dir" references environment variable HOME_DIR, which is not set',
    );
  });
});

describe('writeToml / readToml', () => {
  it('round-trips strings that need escaping, arrays, numbers and booleans, after comment lines', () => {
    const doc = {
      api: { listen_address: '127.0.0.1', port: 3001 },
      wallet: {
        data_dir: '/tmp/a "quoted" dir\\with\\backslashes\nand a newline',
        proxy_address: ['rpc://127.0.0.1:3000/json-rpc', 'x"y'],
        stop: true,
      },
    };
    const text = writeToml(doc, ['written by a test']);
    expect(text.startsWith('# written by a test\n')).toBe(true);
    expect(readToml(text)).toEqual(doc);
  });

  it('readToml refuses a syntax error instead of guessing', () => {
    expect(() => readToml('port = = 1')).toThrow(/Invalid TOML/);
  });
});
