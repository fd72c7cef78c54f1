/**
 * The `rgbx-resolver` command line, run as a process from the build output (`npx tsc -b` first, as
 * `npm test` does): help, key and secret generation, usage and configuration errors, and `identities`
 * on the devnet resolver's public seeds with networks that are not reachable.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DEVNET_RESOLVER, devnetResolverBtcAddress, writeResolverDevnetFiles } from '@rgbx/devnet';
import { describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const run = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [MAIN, ...args], { timeout: 30_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Nothing listens there: `identities` must not need the networks. */
const UNREACHABLE = 'http://127.0.0.1:9';

describe('rgbx-resolver command line', () => {
  it('--help prints the usage and exits 0', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage:/);
    expect(r.stdout).toContain('rgbx-resolver identities -c FILE');
    expect(r.stdout).toContain('rgbx-resolver rfq-secret');
  });

  it('key prints a new 32-byte private key as hex', async () => {
    const a = await cli(['key']);
    const b = await cli(['key']);
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(b.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(a.stdout).not.toBe(b.stdout);
  });

  it('rfq-secret prints a secret of at least 43 characters', async () => {
    const r = await cli(['rfq-secret']);
    expect(r.code).toBe(0);
    const secret = r.stdout.trim();
    expect(secret.length).toBeGreaterThanOrEqual(43);
    expect(secret).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(r.stdout).toBe(`${secret}\n`);
  });

  it('an unknown command exits 2 with the usage', async () => {
    const r = await cli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    expect(r.stderr).toContain('usage:');
    expect(r.stdout).toBe('');
    const noConfig = await cli(['identities']);
    expect(noConfig.code).toBe(2);
    expect(noConfig.stderr).toContain('-c FILE is required');
  });

  it('a configuration error exits 2 naming the key, without the key material', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'resolver-cli-'));
    const badKey = 'ab'.repeat(31);
    writeFileSync(join(dir, 'evm.key'), badKey, { mode: 0o600 });
    const file = join(dir, 'resolver.toml');
    writeFileSync(
      file,
      `[swap]
url = "https://swap.example"
resolver_id = "ref"
api_key = "k"
[rfq]
secret = "${'s'.repeat(32)}"
[[networks]]
id = 2
type = "EVM"
rpc_url = "${UNREACHABLE}"
chain_id = 31337
escrow_address = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
key_file = "evm.key"
`,
    );
    const r = await cli(['identities', '-c', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain('networks[0].key_file');
    expect(r.stderr).not.toContain(badKey);
    expect(r.stdout).toBe('');

    writeFileSync(file, readFileSync(file, 'utf8').replace('chain_id = 31337\n', ''));
    writeFileSync(join(dir, 'evm.key'), 'cd'.repeat(32), { mode: 0o600 });
    const missing = await cli(['identities', '-c', file]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('networks[0].chain_id');
  });

  it('identities prints the devnet resolver identities without reaching its networks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'resolver-cli-'));
    const file = writeResolverDevnetFiles(dir, {
      swapUrl: UNREACHABLE,
      rfqPort: 0,
      bitcoin: { electrumUrl: 'tcp://127.0.0.1:9' },
      evm: {
        rpcUrl: UNREACHABLE,
        chainId: 31337,
        escrow: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
        usdc: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      },
      tron: {
        rpcUrl: UNREACHABLE,
        chainId: 31337,
        escrow: DEVNET_RESOLVER.tronAddress,
        usdt: DEVNET_RESOLVER.tronAddress,
      },
      solana: { rpcUrl: UNREACHABLE },
    });
    const r = await cli(['identities', '-c', file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toEqual({
      resolver_id: DEVNET_RESOLVER.id,
      bitcoin_claim_pubkey: DEVNET_RESOLVER.bitcoinClaimPubkey,
      evm_address: DEVNET_RESOLVER.evmAddress,
      tron_address: DEVNET_RESOLVER.tronAddress,
      solana_address: DEVNET_RESOLVER.solanaAddress,
      funding: {
        '1': devnetResolverBtcAddress(),
        '2': DEVNET_RESOLVER.evmAddress,
        '3': DEVNET_RESOLVER.tronAddress,
        '4': DEVNET_RESOLVER.solanaAddress,
      },
    });
    // the key files are not printed
    for (const chain of ['btc', 'evm', 'tron', 'sol'])
      expect(r.stdout).not.toContain(readFileSync(join(dir, 'keys', `${chain}.key`), 'utf8').trim());
  });
});
