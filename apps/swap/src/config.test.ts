import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { swapDevnetToml } from '@rgbx/devnet';
import { ConfigError } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { fulfilConfirmations, loadConfig, settlementConfirmations } from './config.ts';
import { testConfigToml } from './test-support.ts';

const KEY = 'ab'.repeat(32);

function issues(text: string): string[] {
  try {
    loadConfig({ text }, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.message);
    throw err;
  }
  return [];
}

describe('configuration', () => {
  it('defaults the database to SQLite in the data dir and reads the preimage key from a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'swap-cfg-'));
    writeFileSync(join(dir, 'key'), `${KEY}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'swap.toml'), 'data_dir = "state"\npreimage_key_file = "key"\n');
    const c = loadConfig({ file: join(dir, 'swap.toml') }, {});
    expect(c.dataDir).toBe(join(dir, 'state'));
    expect(c.databaseUrl).toBe(`sqlite:${join(dir, 'state', 'swap.db')}`);
    expect(c.preimageKey.toString('hex')).toBe(KEY);
    expect(c.port).toBe(3100);
    expect(c.swap.intent_ttl_secs).toBe(3600);
  });

  it('takes environment variable references', () => {
    const c = loadConfig(
      { text: `preimage_key = "\${SWAP_KEY}"\ndatabase_url = "\${DB:-sqlite::memory:}"` },
      { SWAP_KEY: KEY },
    );
    expect(c.databaseUrl).toBe('sqlite::memory:');
  });

  it('rejects unknown keys, mistyped values and inconsistent references, naming the key', () => {
    expect(issues(`preimage_key = "${KEY}"\nportt = 1`)).toEqual([
      expect.stringMatching(/unknown key "portt"/),
    ]);
    expect(issues(`preimage_key = "${KEY}"\n[swap]\nquote_ttl_secs = "x"`)).toEqual([
      expect.stringMatching(/swap.quote_ttl_secs/),
    ]);
    expect(issues('')).toEqual([
      expect.stringMatching(/exactly one of "preimage_key" and "preimage_key_file"/),
    ]);
    expect(issues(`preimage_key = "${KEY}"\n[[networks]]\nid = 5\nname = "e"\ntype = "EVM"`)).toEqual([
      expect.stringMatching(/networks\[0\].chain_id/),
      expect.stringMatching(/networks\[0\].permit2_address/),
      expect.stringMatching(/networks\[0\].escrow_address/),
      expect.stringMatching(/networks\[0\].rpc_url/),
    ]);
    expect(
      issues(
        `preimage_key = "${KEY}"\n[[tokens]]\nnetwork_id = 9\nsymbol = "X"\nname = "X"\naddress = "X"\ndecimals = 1`,
      ),
    ).toEqual([expect.stringMatching(/unknown network 9/)]);
  });

  it('fails closed: a network whose chain cannot be read, 0 confirmations or a short refund margin outside a devnet, a destination without the resolver identity', () => {
    const base = `preimage_key = "${KEY}"\n`;
    expect(
      issues(`${base}[[networks]]\nid = 1\nname = "b"\ntype = "BITCOIN"\nbitcoin_network = "regtest"`),
    ).toEqual([expect.stringMatching(/"bitcoin.electrum_url" is required: network 1 \(BITCOIN\)/)]);
    expect(issues(`${base}[[networks]]\nid = 4\nname = "s"\ntype = "SOLANA"`)).toEqual([
      expect.stringMatching(/"networks\[0\].rpc_url" is required: network 4 \(SOLANA\)/),
    ]);
    expect(
      issues(
        `${base}[[networks]]\nid = 3\nname = "t"\ntype = "TRON"\nchain_id = 1\npermit2_address = "T"\nescrow_address = "T"`,
      ),
    ).toEqual([expect.stringMatching(/"networks\[0\].rpc_url" is required: network 3 \(TRON\)/)]);
    expect(
      issues(
        `${base}[[networks]]\nid = 4\nname = "s"\ntype = "SOLANA"\nrpc_url = "http://x"\nmin_confirmations = 0`,
      ),
    ).toEqual([
      expect.stringMatching(/"networks\[0\].min_confirmations" = 0 is allowed only with devnet = true/),
    ]);
    expect(issues(`${base}[bitcoin]\nmin_confirmations = 0`)).toEqual([
      expect.stringMatching(/"bitcoin.min_confirmations" = 0 is allowed only with devnet = true/),
    ]);
    expect(issues(`${base}[swap]\nrefund_safety_margin_secs = 60`)).toEqual([
      expect.stringMatching(/"swap.refund_safety_margin_secs" must be at least 600/),
    ]);
    expect(
      issues(
        `devnet = true\n${base}[swap]\nrefund_safety_margin_secs = 60\n[bitcoin]\nmin_confirmations = 0`,
      ),
    ).toEqual([]);
    const noIdentity = testConfigToml({ databaseUrl: 'sqlite::memory:' }).replace(/^evm_address = .*$/m, '');
    expect(issues(noIdentity)).toContainEqual(
      expect.stringMatching(
        /"resolvers\[0\].evm_address" is required: resolvers\[0\].rates\[0\] fulfils on network 2 \(EVM\)/,
      ),
    );
  });

  it("a fulfilment needs the network's finality outside a devnet (the preimage is released on it); its own setting wins", () => {
    const nets = (extra: Record<string, string> = {}) =>
      [
        `[bitcoin]\nelectrum_url = "tcp://127.0.0.1:1"\nmin_confirmations = ${extra.bitcoin ?? 1}`,
        '[[networks]]\nid = 1\nname = "b"\ntype = "BITCOIN"\nbitcoin_network = "regtest"',
        `[[networks]]\nid = 2\nname = "e"\ntype = "EVM"\nchain_id = 1\npermit2_address = "0x${'11'.repeat(20)}"\nescrow_address = "0x${'22'.repeat(20)}"\nrpc_url = "http://x"${extra.evm ?? ''}`,
        `[[networks]]\nid = 3\nname = "t"\ntype = "TRON"\nchain_id = 2\npermit2_address = "T"\nescrow_address = "T"\nrpc_url = "http://x"`,
        `[[networks]]\nid = 4\nname = "s"\ntype = "SOLANA"\nrpc_url = "http://x"${extra.sol ?? ''}`,
      ].join('\n');
    const both = (text: string) => {
      const c = loadConfig({ text: `preimage_key = "${KEY}"\n${text}` }, {});
      return c.networks.map((n) => [settlementConfirmations(c, n), fulfilConfirmations(c, n)]);
    };
    // Bitcoin 3, EVM 12, Tron 19 (solidified), Solana 32 (finalized); other legs keep min_confirmations.
    expect(both(nets())).toEqual([
      [1, 3],
      [1, 12],
      [1, 19],
      [1, 32],
    ]);
    // A deeper min_confirmations applies to fulfilments too; fulfil_min_confirmations is the operator's word.
    expect(
      both(
        nets({ bitcoin: '6', evm: '\nfulfil_min_confirmations = 64', sol: '\nfulfil_min_confirmations = 1' }),
      ),
    ).toEqual([
      [6, 6],
      [1, 64],
      [1, 19],
      [1, 1],
    ]);
    // On a devnet, min_confirmations (blocks come when a test mines them).
    expect(both(`devnet = true\n${nets()}`)).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    expect(issues(`preimage_key = "${KEY}"\n${nets({ sol: '\nfulfil_min_confirmations = 0' })}`)).toEqual([
      expect.stringMatching(
        /"networks\[3\].fulfil_min_confirmations" = 0 is allowed only with devnet = true/,
      ),
    ]);
  });

  it('the service refuses to start on an unverifiable network, naming the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'swap-cfg-'));
    const file = join(dir, 'swap.toml');
    writeFileSync(
      file,
      `preimage_key = "${KEY}"\ndata_dir = "d"\n[[networks]]\nid = 4\nname = "s"\ntype = "SOLANA"\n`,
    );
    const { spawnSync } = await import('node:child_process');
    const main = new URL('../dist/main.js', import.meta.url).pathname;
    const r = spawnSync(process.execPath, [main, '-c', file], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/networks\[0\]\.rpc_url/);
  });

  it('accepts the test configuration with its four network types and a reference resolver', () => {
    const c = loadConfig({ text: testConfigToml({ databaseUrl: 'sqlite::memory:' }) }, {});
    expect(c.networks.map((n) => n.type)).toEqual(['BITCOIN', 'EVM', 'TRON', 'SOLANA']);
    // defaultSwapRates (BTC ⇄ USDC, USDT → USDC, SOL ⇄ USDC) and the tests' RGB rate.
    expect(c.resolvers[0]!.rates).toHaveLength(6);
  });

  it('the devnet generator emits remote resolvers (quote_url, rfq_secret / rfq_secret_file) and extra resolvers', () => {
    const dir = mkdtempSync(join(tmpdir(), 'swap-cfg-'));
    writeFileSync(join(dir, 'rfq.secret'), 'f'.repeat(32));
    const text = swapDevnetToml({
      service: { preimage_key: KEY, database_url: 'sqlite::memory:' },
      bitcoin: { electrumUrl: 'tcp://127.0.0.1:9' },
      resolver: { quoteUrl: 'http://127.0.0.1:9/rfq', rfqSecretFile: join(dir, 'rfq.secret') },
      extraResolvers: [
        {
          id: 'second',
          apiKeySha256: '11'.repeat(32),
          quoteUrl: 'http://127.0.0.1:9/second',
          rfqSecret: 's'.repeat(32),
        },
      ],
    });
    const c = loadConfig({ text }, {});
    expect(
      c.resolvers.map((r) => ({ id: r.id, url: r.quote_url, secret: r.rfq_secret, rates: r.rates.length })),
    ).toEqual([
      { id: 'reference', url: 'http://127.0.0.1:9/rfq', secret: 'f'.repeat(32), rates: 0 },
      { id: 'second', url: 'http://127.0.0.1:9/second', secret: 's'.repeat(32), rates: 0 },
    ]);
  });

  it('accepts the shipped devnet configuration', () => {
    const c = loadConfig(
      { file: new URL('../config/devnet.toml', import.meta.url).pathname },
      { SWAP_PREIMAGE_KEY: KEY, ELECTRUM_URL: 'tcp://127.0.0.1:50001', EVM_RPC_URL: 'http://127.0.0.1:8545' },
    );
    expect(c.networks.map((n) => n.type)).toEqual(['BITCOIN', 'EVM', 'TRON', 'SOLANA']);
  });
});
