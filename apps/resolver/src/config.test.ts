/**
 * The resolver's configuration: a valid file loads with its keys as bytes; every error names its key
 * (in the message, which is what `rgbx-resolver` prints) and never shows key material.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

const BTC_KEY = '11'.repeat(32);
const EVM_KEY = `${'ab'.repeat(31)}cd`;
const SOL_KEY = '5e'.repeat(32);
const SECRET = 'rfq-secret-of-at-least-thirty-two-characters';
const API_KEY = 'rgbx_resolver_test_api_key_value';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'resolver-cfg-'));
}

function keyFile(dir: string, name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

const HEAD = `[swap]\nurl = "https://swap.example"\nresolver_id = "ref"\napi_key = "${API_KEY}"\n[rfq]\nsecret = "${SECRET}"\n`;

function btcNet(id: number, key: string, extra = ''): string {
  return `[[networks]]\nid = ${id}\ntype = "BITCOIN"\nelectrum_url = "tcp://127.0.0.1:50001"\nbtc_network = "regtest"\nkey_file = "${key}"\n${extra}`;
}

/** The ConfigError's messages (what the CLI prints) for `text`; [] when it loads. */
function errors(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    loadConfig({ text, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.message);
    throw err;
  }
  return [];
}

/** Loads `text` expecting a ConfigError; returns it. */
function configError(text: string, env: NodeJS.ProcessEnv = {}): ConfigError {
  try {
    loadConfig({ text, env });
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('the configuration loaded');
}

describe('resolver configuration', () => {
  it('loads a full configuration from a file, keys as bytes, paths relative to the file', () => {
    const dir = tempDir();
    keyFile(dir, 'btc.key', `${BTC_KEY}\n`);
    keyFile(dir, 'evm.key', `0x${EVM_KEY}\n`);
    keyFile(dir, 'api.key', `${API_KEY}\n`);
    keyFile(dir, 'rfq.secret', `${SECRET}\n`);
    const file = join(dir, 'resolver.toml');
    writeFileSync(
      file,
      `data_dir = "state"
[swap]
url = "https://swap.example"
resolver_id = "ref"
api_key_file = "api.key"
[rfq]
secret_file = "rfq.secret"
port = 0
[[networks]]
id = 1
type = "BITCOIN"
electrum_url = "tcp://127.0.0.1:50001"
btc_network = "regtest"
key_file = "btc.key"
[[networks]]
id = 2
type = "EVM"
rpc_url = "http://127.0.0.1:8545"
chain_id = 31337
escrow_address = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
key_file = "evm.key"
[[networks]]
id = 4
type = "SOLANA"
rpc_url = "http://127.0.0.1:8899"
key_env = "SOL_KEY"
[[pairs]]
source_network = 1
source_token = "BTC"
dest_network = 2
dest_token = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
rate = "60000"
min_source_lots = "10000"
max_source_lots = "100000000"
`,
    );
    const c = loadConfig({ file, env: { SOL_KEY: SOL_KEY } });
    expect(c.data_dir).toBe(join(dir, 'state'));
    expect(c.databaseUrl).toBe(`sqlite:${join(dir, 'state', 'resolver.db')}`);
    expect(c.apiKey).toBe(API_KEY);
    expect(c.rfqSecret).toBe(SECRET);
    expect(c.keys.get(1)).toEqual(Uint8Array.from(Buffer.from(BTC_KEY, 'hex')));
    expect(c.keys.get(2)).toEqual(Uint8Array.from(Buffer.from(EVM_KEY, 'hex')));
    expect(c.keys.get(4)).toEqual(Uint8Array.from(Buffer.from(SOL_KEY, 'hex')));
    expect(c.keys.get(2)).toBeInstanceOf(Uint8Array);
    expect(c.keys.get(2)!.length).toBe(32);
    expect([...c.keys.keys()].sort()).toEqual([1, 2, 4]);
    // defaults
    expect(c.devnet).toBe(false);
    expect(c.rfq.tolerance_secs).toBe(30);
    expect(c.fill.safety_secs).toBe(300);
    expect(c.pairs[0]!.spread_bps).toBe(30);
    expect(c.networks[0]!.fee_rate_sat_vb).toBe(2);
  });

  it('needs exactly one of swap.api_key and swap.api_key_file', () => {
    const noKey = `[swap]\nurl = "https://swap.example"\nresolver_id = "ref"\n[rfq]\nsecret = "${SECRET}"\n`;
    expect(errors(noKey)).toEqual([expect.stringContaining('swap.api_key')]);
    const dir = tempDir();
    const f = keyFile(dir, 'api.key', API_KEY);
    const both = HEAD.replace('[rfq]', `api_key_file = "${f}"\n[rfq]`);
    expect(errors(both)).toEqual([expect.stringContaining('swap.api_key')]);
    expect(errors(both)[0]).not.toContain(API_KEY);
    expect(errors(HEAD)).toEqual([]);
  });

  it('needs an RFQ secret of at least 32 characters and never shows it', () => {
    const short = 'short-rfq-secret-31-characters!';
    expect(short).toHaveLength(31);
    const inline = HEAD.replace(SECRET, short);
    const e = configError(inline);
    expect(e.issues.map((i) => i.message)).toEqual([expect.stringContaining('rfq.secret')]);
    expect(e.message).not.toContain(short);

    const dir = tempDir();
    const f = keyFile(dir, 'rfq.secret', `${short}\n`);
    const fromFile = HEAD.replace(`secret = "${SECRET}"`, `secret_file = "${f}"`);
    const e2 = configError(fromFile);
    expect(e2.issues.map((i) => i.message)).toEqual([expect.stringContaining('rfq.secret_file')]);
    expect(e2.message).not.toContain(short);

    const none = HEAD.replace(`secret = "${SECRET}"\n`, '');
    expect(errors(none)).toEqual([expect.stringContaining('rfq.secret')]);
    expect(errors(HEAD.replace(SECRET, `${short}x`))).toEqual([]);
  });

  it('refuses http:// to a non-loopback swap service unless devnet = true', () => {
    const at = (url: string, devnet = false) =>
      errors(`${devnet ? 'devnet = true\n' : ''}${HEAD.replace('https://swap.example', url)}`);
    expect(at('http://swap.example')).toEqual([expect.stringContaining('swap.url')]);
    expect(at('http://10.0.0.5:3100')).toEqual([expect.stringContaining('swap.url')]);
    // loopback named in the user part, the host elsewhere
    expect(at('http://127.0.0.1:80@swap.example/')).toEqual([expect.stringContaining('swap.url')]);
    expect(at('http://127.0.0.1.swap.example/')).toEqual([expect.stringContaining('swap.url')]);
    expect(at('ftp://swap.example')).toEqual([expect.stringContaining('swap.url')]);
    expect(at('http://swap.example', true)).toEqual([]);
    expect(at('http://127.0.0.1:3100')).toEqual([]);
    expect(at('http://localhost:3100/')).toEqual([]);
    expect(at('http://[::1]:3100')).toEqual([]);
    expect(at('https://swap.example')).toEqual([]);
  });

  it('needs electrum_url (and btc_network) for a BITCOIN network', () => {
    const dir = tempDir();
    const f = keyFile(dir, 'btc.key', BTC_KEY);
    const net = btcNet(1, f).replace('electrum_url = "tcp://127.0.0.1:50001"\n', '');
    expect(errors(HEAD + net)).toEqual([expect.stringContaining('networks[0].electrum_url')]);
    const net2 = btcNet(1, f).replace('btc_network = "regtest"\n', '');
    expect(errors(HEAD + net2)).toEqual([expect.stringContaining('networks[0].btc_network')]);
    const evm = `[[networks]]\nid = 2\ntype = "EVM"\nrpc_url = "http://127.0.0.1:8545"\nkey_file = "${f}"\n`;
    expect(errors(HEAD + evm)).toEqual([
      expect.stringContaining('networks[0].chain_id'),
      expect.stringContaining('networks[0].escrow_address'),
    ]);
  });

  it('refuses duplicate network ids', () => {
    const dir = tempDir();
    const f = keyFile(dir, 'btc.key', BTC_KEY);
    expect(errors(HEAD + btcNet(1, f) + btcNet(1, f))).toEqual([expect.stringContaining('networks[1].id')]);
  });

  it('refuses a key file without a 32-byte hex key, and never shows its content', () => {
    const dir = tempDir();
    const bad = [
      'zz'.repeat(32), // not hex
      '11'.repeat(31), // 31 bytes
      '11'.repeat(33), // 33 bytes
      `${BTC_KEY.slice(0, 63)}g`,
    ];
    bad.forEach((text, i) => {
      const f = keyFile(dir, `bad${i}.key`, text);
      const e = configError(HEAD + btcNet(1, f));
      expect(e.issues.map((x) => x.message)).toEqual([expect.stringContaining('networks[0].key_file')]);
      expect(e.message).not.toContain(text);
      expect(e.message).not.toContain(text.slice(0, 16));
    });
    const missing = configError(HEAD + btcNet(1, join(dir, 'nope.key')));
    expect(missing.issues.map((x) => x.message)).toEqual([expect.stringContaining('networks[0].key_file')]);
  });

  it('names key_env when its variable is unset or not a key, and never shows the value', () => {
    const net = `[[networks]]\nid = 4\ntype = "SOLANA"\nrpc_url = "http://127.0.0.1:8899"\nkey_env = "RESOLVER_SOL_KEY"\n`;
    expect(errors(HEAD + net, {})).toEqual([expect.stringContaining('networks[0].key_env')]);
    const wrong = '5e'.repeat(20);
    const e = configError(HEAD + net, { RESOLVER_SOL_KEY: wrong });
    expect(e.issues.map((x) => x.message)).toEqual([expect.stringContaining('networks[0].key_env')]);
    expect(e.message).not.toContain(wrong);
    expect(errors(HEAD + net, { RESOLVER_SOL_KEY: SOL_KEY })).toEqual([]);
    // both, or neither, of key_file and key_env
    const both = net.replace('key_env', 'key_file = "x"\nkey_env');
    expect(errors(HEAD + both, { RESOLVER_SOL_KEY: SOL_KEY })).toEqual([
      expect.stringContaining('networks[0].key_file'),
    ]);
    expect(errors(HEAD + net.replace('key_env = "RESOLVER_SOL_KEY"\n', ''))).toEqual([
      expect.stringContaining('networks[0].key_file'),
    ]);
  });

  it('refuses a pair naming an unknown network, and min above max', () => {
    const dir = tempDir();
    const f = keyFile(dir, 'btc.key', BTC_KEY);
    const pair = (src: number, dst: number, min: string, max: string) =>
      `[[pairs]]\nsource_network = ${src}\nsource_token = "BTC"\ndest_network = ${dst}\ndest_token = "BTC"\nrate = "1"\nmin_source_lots = "${min}"\nmax_source_lots = "${max}"\n`;
    expect(errors(HEAD + btcNet(1, f) + pair(1, 7, '1', '2'))).toEqual([
      expect.stringContaining('pairs[0].dest_network'),
    ]);
    expect(errors(HEAD + btcNet(1, f) + pair(1, 1, '1', '2') + pair(9, 1, '1', '2'))).toEqual([
      expect.stringContaining('pairs[1].source_network'),
    ]);
    expect(errors(HEAD + btcNet(1, f) + pair(1, 1, '3', '2'))).toEqual([
      expect.stringContaining('pairs[0].min_source_lots'),
    ]);
    expect(errors(HEAD + btcNet(1, f) + pair(1, 1, '2', '2'))).toEqual([]);
  });

  it('refuses unknown keys and mistyped values through the kit loader', () => {
    expect(errors(`${HEAD}bogus = 1\n`)).toEqual([expect.stringMatching(/unknown key "rfq.bogus"/)]);
    expect(errors(`colour = "blue"\n${HEAD}`)).toEqual([expect.stringMatching(/unknown key "colour"/)]);
    const dir = tempDir();
    const f = keyFile(dir, 'btc.key', BTC_KEY);
    expect(errors(HEAD + btcNet(1, f, 'private_key = "00"\n'))).toEqual([
      expect.stringMatching(/unknown key "networks\[0\]\.private_key"/),
    ]);
    expect(errors(`${HEAD}port = "x"\n`)).toEqual([expect.stringContaining('rfq.port')]);
  });

  it('lists every problem at once, each naming its key', () => {
    const dir = tempDir();
    const f = keyFile(dir, 'bad.key', 'not a key');
    const text = `[swap]\nurl = "http://swap.example"\nresolver_id = "ref"\n[rfq]\nsecret = "${SECRET}"\n${btcNet(1, f)}`;
    const e = configError(text);
    const messages = e.issues.map((i) => i.message);
    expect(messages).toHaveLength(3);
    for (const [i, issue] of e.issues.entries()) expect(messages[i]).toContain(issue.path);
    expect(e.message).not.toContain('not a key');
  });
});
