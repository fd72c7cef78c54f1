import { ConfigError } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './cli.ts';
import { loadConfig, WALLET_NODE_MAIN } from './config.ts';

describe('configuration', () => {
  it('runs with an empty file: devnet backend, SQLite in the data dir, documented defaults', () => {
    const c = loadConfig({ text: '' });
    expect(c.databaseUrl).toMatch(/^sqlite:\/.*\/\.cloud\/cloud\.db$/);
    expect(c.walletNodeMain).toBe(WALLET_NODE_MAIN);
    expect(c.api).toEqual({ listen_address: '127.0.0.1', port: 3100, body_limit_bytes: 65536 });
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

describe('command line', () => {
  it('parses the service and admin commands', () => {
    expect(parseCli(['-c', 'f.toml'])).toEqual({ config: 'f.toml', command: { kind: 'serve' } });
    expect(parseCli(['tokens', 'create', '--account', 'a'])).toEqual({
      command: { kind: 'tokens-create', account: 'a', name: 'api' },
    });
    expect(parseCli(['tokens', 'list', '--json']).command).toEqual({ kind: 'tokens-list', json: true });
    expect(parseCli(['tokens', 'revoke', 'abc']).command).toEqual({ kind: 'tokens-revoke', id: 'abc' });
    expect(parseCli(['keys', 'activate', 'k']).command).toEqual({ kind: 'keys-activate', kid: 'k' });
    for (const bad of [
      ['tokens', 'create'],
      ['tokens', 'revoke'],
      ['keys', 'spin'],
      ['nope'],
      ['--frob'],
      ['tokens', 'list', 'x', 'y'],
    ]) {
      expect(() => parseCli(bad), bad.join(' ')).toThrow(UsageError);
    }
  });
});
