import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './cli.ts';
import { loadConfig, requireEncryptionKey } from './config.ts';
import { backendResolver } from './nodes/backend.ts';

describe('configuration', () => {
  it('runs with an empty file: SQLite in the data dir, the installed wallet node, documented defaults', () => {
    const c = loadConfig({ text: '' });
    expect(c.databaseUrl).toMatch(/^sqlite:\/.*\/\.cloud\/cloud\.db$/);
    // The @rgbx/wallet-node package's bin, as installed (in this workspace: apps/wallet-node).
    const walletNode = fileURLToPath(new URL('../../wallet-node/', import.meta.url));
    const { bin } = JSON.parse(readFileSync(join(walletNode, 'package.json'), 'utf8'));
    expect(bin['rgbx-wallet-node']).toBe('./dist/main.js');
    expect(c.walletNodeMain).toBe(join(realpathSync(walletNode), 'dist/main.js'));
    expect(loadConfig({ text: '[nodes]\nwallet_node_main = "x/main.js"' }).walletNodeMain).toBe(
      join(process.cwd(), 'x/main.js'),
    );
    expect(c.backend).toEqual({ driver: 'local' });
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

describe('[backend]: fixed addresses or a plug-in, loaded only when configured', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'cloud-backend-'));
  const backend = (text: string) => backendResolver(loadConfig({ text: `[backend]\n${text}` }));
  const refusal = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  };

  it('fixed: the addresses as configured, never the RPC password', async () => {
    const b = await backend(
      'btc_rpc_address = "10.0.0.1:8332"\nbtc_rpc_user = "u"\nbtc_rpc_password = "p"\nindexer_address = "tcp://10.0.0.2:50001"\nproxy_address = ["rpc://10.0.0.3/json-rpc"]',
    );
    expect(b()).toEqual({
      btcRpcAddress: '10.0.0.1:8332',
      btcRpcUser: 'u',
      indexerAddress: 'tcp://10.0.0.2:50001',
      proxyAddress: ['rpc://10.0.0.3/json-rpc'],
    });
  });

  it('none: the service runs, each node start fails naming the settings', async () => {
    const b = await backend('');
    expect(() => b()).toThrow(/no \[backend\] configured: set btc_rpc_address/);
  });

  it('a plug-in module (a path) gets plugin_options and is asked at every node start', async () => {
    const file = join(tmp, 'plugin.mjs');
    writeFileSync(
      file,
      `let n = 0;
export function createBackendResolver(options) {
  return () => ({ btcRpcAddress: options.rpc, btcRpcUser: '', indexerAddress: 'tcp://i:1', proxyAddress: [String(++n)] });
}
`,
    );
    const b = await backend(`plugin = ${JSON.stringify(file)}\nplugin_options = { rpc = "127.0.0.1:1" }`);
    expect(b()).toMatchObject({ btcRpcAddress: '127.0.0.1:1', proxyAddress: ['1'] });
    expect(b().proxyAddress).toEqual(['2']);
  });

  it('the devnet follow-mode plug-in: a devnet that is not running fails the node start by its directory', async () => {
    const dir = join(tmp, 'no-devnet');
    mkdirSync(dir);
    const b = await backend(
      `plugin = "@rgbx/devnet/cloud-backend"\nplugin_options = { dir = ${JSON.stringify(dir)} }`,
    );
    expect(() => b()).toThrow(`the devnet in ${dir} is not running`);
    expect(
      (await refusal(backend('plugin = "@rgbx/devnet/cloud-backend"\nplugin_options = { port = 1 }')))
        .message,
    ).toMatch(
      /"backend\.plugin" "@rgbx\/devnet\/cloud-backend": refused its options: unknown option\(s\) port/,
    );
  });

  it('a plug-in that is not installed, exports nothing usable, or comes with fixed addresses is refused by name', async () => {
    const missing = await refusal(backend('plugin = "@rgbx/no-such-plugin"'));
    expect(missing.issues.map((i) => i.path)).toEqual(['backend.plugin']);
    expect(missing.message).toMatch(/is not installed \(a development plug-in/);
    const empty = join(tmp, 'empty.mjs');
    writeFileSync(empty, 'export const x = 1;\n');
    expect((await refusal(backend(`plugin = ${JSON.stringify(empty)}`))).message).toMatch(
      /exports no createBackendResolver/,
    );
    expect(
      (await refusal(backend(`btc_rpc_address = "h:1"\nplugin = ${JSON.stringify(empty)}`))).message,
    ).toMatch(/not both/);
    expect(() => loadConfig({ text: '[backend]\ndevnet_dir = ".devnet"' })).toThrow(
      /unknown key "backend.devnet_dir"/,
    );
    rmSync(tmp, { recursive: true, force: true });
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
