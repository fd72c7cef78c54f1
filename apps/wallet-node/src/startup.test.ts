/** Start-up errors of the real process: each names the config key, exits 1, never falls back silently. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const MAIN = resolve(import.meta.dirname, '../dist/main.js');
const dir = mkdtempSync(join(tmpdir(), 'wn-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function toml(over: Record<string, string> = {}, drop: string[] = []): string {
  const wallet: Record<string, string> = {
    data_dir: `"${join(dir, 'data')}"`,
    network: '"regtest"',
    btc_rpc_address: '"127.0.0.1:18443"',
    btc_rpc_user: '"u"',
    btc_rpc_password: '"p"',
    indexer_address: '"tcp://127.0.0.1:9"',
    proxy_address: '["rpc://127.0.0.1:3000/json-rpc"]',
    ...over,
  };
  for (const k of drop) delete wallet[k];
  return `[api]\nport = 0\n\n[metrics]\nport = 0\n\n[wallet]\n${Object.entries(wallet)
    .map(([k, v]) => `${k} = ${v}`)
    .join('\n')}\n`;
}

function run(text: string): { code: number | null; stderr: string } {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(file, text);
  const r = spawnSync(process.execPath, [MAIN, '-c', file], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stderr: r.stderr };
}

describe('wallet node start-up', () => {
  it.each([
    [{ network: '"bitcoin"' }, [], /wallet\.network/],
    [{ indexer_address: '"http://127.0.0.1:50001"' }, [], /wallet\.indexer_address/],
    [{ proxy_address: '["127.0.0.1:3000"]' }, [], /wallet\.proxy_address/],
    [{ btc_rpc_address: '"not an address"' }, [], /wallet\.btc_rpc_address/],
    [{ workers: '"two"' }, [], /wallet\.workers/],
    [{ colour: '"red"' }, [], /unknown key "wallet\.colour"/],
    [{}, ['data_dir'], /wallet\.data_dir/],
    [{}, ['indexer_address'], /wallet\.indexer_address/],
    // The wallet budget: more online wallets than the indexer connections allow (2 each + the node's 2).
    [
      { indexer_max_connections: '12', max_online_wallets: '6' },
      [],
      /wallet\.max_online_wallets = 6 needs up to 14 indexer connections .*wallet\.indexer_max_connections = 12/,
    ],
    [{ max_online_wallets: '10', max_open_wallets: '5' }, [], /wallet\.max_open_wallets = 5 is below/],
  ])('refuses %j (without %j) naming the key', (over, drop, pattern) => {
    const r = run(toml(over, drop));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(pattern);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses an unreachable indexer, naming the key, after creating data_dir', () => {
    const dataDir = join(dir, 'created', 'deep');
    const r = run(toml({ data_dir: `"${dataDir}"` }));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/wallet\.indexer_address: cannot use tcp:\/\/127\.0\.0\.1:9: ECONNREFUSED/);
    expect(existsSync(dataDir)).toBe(true);
  });

  it('lets only one instance use a data_dir', async () => {
    const file = join(dir, 'lock.toml');
    writeFileSync(file, toml({ data_dir: `"${join(dir, 'locked')}"`, check_indexer_at_start: 'false' }));
    const first = spawn(process.execPath, [MAIN, '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((res, rej) => {
        first.stdout.on('data', (d) => String(d).includes('listening') && res());
        first.once('exit', (c) => rej(new Error(`first instance exited ${c}`)));
      });
      const second = spawnSync(process.execPath, [MAIN, '-c', file], { encoding: 'utf8', timeout: 30_000 });
      expect(second.status).toBe(1);
      expect(second.stderr).toMatch(/wallet\.data_dir .* is in use by another wallet node \(pid \d+\)/);
    } finally {
      first.kill('SIGTERM');
      await new Promise((r) => first.once('exit', r));
    }
    // After a clean stop the lock is released: a new instance starts.
    const again = spawn(process.execPath, [MAIN, '-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    const ok = await new Promise<boolean>((res) => {
      again.stdout.on('data', (d) => String(d).includes('listening') && res(true));
      again.once('exit', () => res(false));
    });
    again.kill('SIGTERM');
    await new Promise((r) => again.once('exit', r));
    expect(ok).toBe(true);
  });
});
