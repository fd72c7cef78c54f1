import { ConfigError } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './cli.ts';
import { loadConfig, requireEncryptionKey, WALLET_NODE_MAIN } from './config.ts';

describe('configuration', () => {
  it('runs with an empty file: devnet backend, SQLite in the data dir, documented defaults', () => {
    const c = loadConfig({ text: '' });
    expect(c.databaseUrl).toMatch(/^sqlite:\/.*\/\.cloud\/cloud\.db$/);
    expect(c.walletNodeMain).toBe(WALLET_NODE_MAIN);
    expect(c.api).toEqual({ listen_address: '127.0.0.1', port: 3200, body_limit_bytes: 65536 });
    expect(c.webhooks.retry_schedule_ms).toEqual([
      5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000,
    ]);
    expect(c.webhooks.give_up_after_ms).toBe(72 * 3600_000);
    expect(c.webhooks.allow_cidrs).toEqual([]);
    expect(c.nodes).toMatchObject({
      max_restarts: 3,
      restart_backoff_ms: [1000, 5000, 30000],
      restart_window_ms: 600_000,
    });
  });

  it('refuses unknown keys and wrong types by name, and reads environment references', () => {
    expect(() => loadConfig({ text: '[webhooks]\nretry_schedule = [1]' })).toThrow(
      /unknown key "webhooks.retry_schedule"/,
    );
    expect(() => loadConfig({ text: '[api]\nport = "x"' })).toThrow(ConfigError);
    expect(() => loadConfig({ text: '[backend]\nindexer_address = "http://x"' })).toThrow(/indexer_address/);
    const ref = ['$', '{DB_URL}'].join('');
    const c = loadConfig({ text: `[database]\nurl = "${ref}"` }, { DB_URL: 'postgres://u@h/db' });
    expect(c.databaseUrl).toBe('postgres://u@h/db');
  });
});

describe("the signing keys' encryption key", () => {
  const KEY = 'ab'.repeat(32);
  it('comes from encryption_key (also through an env reference), or the environment variable', () => {
    expect(
      requireEncryptionKey(loadConfig({ text: `[signing_keys]\nencryption_key = "${KEY}"` }, {})),
    ).toEqual(Buffer.from(KEY, 'hex'));
    const ref = ['$', '{MY_KEY}'].join('');
    expect(
      requireEncryptionKey(
        loadConfig({ text: `[signing_keys]\nencryption_key = "${ref}"` }, { MY_KEY: KEY }),
      ),
    ).toEqual(Buffer.from(KEY, 'hex'));
    expect(requireEncryptionKey(loadConfig({ text: '' }, { RGBX_CLOUD_ENCRYPTION_KEY: KEY }))).toEqual(
      Buffer.from(KEY, 'hex'),
    );
  });

  it('is refused by name when malformed or given twice, and its absence names the config key', () => {
    // Malformed: named, and the (almost) secret is not echoed.
    const nearly = 'ab'.repeat(31);
    let malformed: unknown;
    try {
      loadConfig({ text: `[signing_keys]\nencryption_key = "${nearly}"` }, {});
    } catch (e) {
      malformed = e;
    }
    expect((malformed as Error).message).toBe(
      'config: "signing_keys.encryption_key" must be 64 hex characters (got 62 characters)',
    );
    expect(() =>
      loadConfig({ text: `[signing_keys]\nencryption_key = "${KEY}"\nencryption_key_file = "/k"` }, {}),
    ).toThrow('config: set only one of "signing_keys.encryption_key" and "signing_keys.encryption_key_file"');
    expect(() =>
      loadConfig({ text: '[signing_keys]\nencryption_key_file = "/nonexistent/cloud.key"' }, {}),
    ).toThrow('config: "signing_keys.encryption_key_file" /nonexistent/cloud.key: ENOENT');
    const cfg = loadConfig({ text: '' }, {});
    let err: unknown;
    try {
      requireEncryptionKey(cfg);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => i.path)).toEqual(['signing_keys.encryption_key']);
    expect((err as ConfigError).message).toMatch(
      /^config: no encryption key for the webhook signing keys: set "signing_keys\.encryption_key"/,
    );
  });
});

describe('command line', () => {
  it('parses the service and admin commands', () => {
    expect(parseCli(['-c', 'f.toml'])).toEqual({ config: 'f.toml', command: { kind: 'serve' } });
    expect(parseCli(['tokens', 'create', '--account', 'a'])).toEqual({
      command: { kind: 'tokens-create', account: 'a', name: 'api' },
    });
    expect(parseCli(['tokens', 'list', '--json']).command).toEqual({ kind: 'tokens-list', json: true });
    expect(parseCli(['tokens', 'revoke', 'abc']).command).toEqual({ kind: 'tokens-revoke', id: 'abc' });
    expect(parseCli(['keys', 'activate', 'k']).command).toEqual({ kind: 'keys-activate', kid: 'k' });
    expect(parseCli(['encryption-key']).command).toEqual({ kind: 'encryption-key' });
    for (const bad of [
      ['tokens', 'create'],
      ['tokens', 'revoke'],
      ['keys', 'spin'],
      ['nope'],
      ['--frob'],
      ['tokens', 'list', 'x', 'y'],
      ['encryption-key', 'x'],
    ]) {
      expect(() => parseCli(bad), bad.join(' ')).toThrow(UsageError);
    }
  });
});
