/**
 * The on-disk index of wallets with transfers in flight (`<data_dir>/.in-flight/`): what a restarted node reads
 * to resume refreshing them. Real files in a temp dir; the end-to-end behaviour (a restart settles transfers with
 * no client call) is `e2e/wallet-node.restart-refresh.test.ts`.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InFlightIndex } from './in-flight.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dataDir(wallets: string[]): string {
  const d = mkdtempSync(join(tmpdir(), 'wn-in-flight-'));
  dirs.push(d);
  for (const fp of wallets) {
    mkdirSync(join(d, fp));
    writeFileSync(join(d, fp, 'wallet_manifest.json'), '{}');
  }
  return d;
}

describe('InFlightIndex', () => {
  it('marks every wallet once when the data dir has no index yet, then only what it is told', () => {
    const d = dataDir(['0a0b0c0d', '11223344']);
    mkdirSync(join(d, 'not-a-wallet'));
    const first = InFlightIndex.open(d);
    expect(first.migrated).toBe(2);
    expect(first.list().sort()).toEqual(['0a0b0c0d', '11223344']);
    expect(existsSync(join(d, '.in-flight.new'))).toBe(false);

    first.clear('0a0b0c0d');
    first.clear('11223344');
    // A restart reads the index as left: nothing marked, nothing migrated again.
    const second = InFlightIndex.open(d);
    expect(second.migrated).toBe(0);
    expect(second.list()).toEqual([]);
  });

  it('keeps marks across a restart, writes one file per wallet, and drops marks of wallets that are gone', () => {
    const d = dataDir(['aabbccdd', 'deadbeef']);
    const idx = InFlightIndex.open(d);
    idx.clear('aabbccdd');
    idx.clear('deadbeef');
    idx.mark('aabbccdd');
    idx.mark('aabbccdd'); // idempotent
    idx.mark('deadbeef');
    expect(readdirSync(join(d, '.in-flight')).sort()).toEqual(['aabbccdd', 'deadbeef']);
    expect(idx.clear('aabbccdd')).toBe(true);
    expect(idx.clear('aabbccdd')).toBe(false);

    rmSync(join(d, 'deadbeef'), { recursive: true }); // the wallet deleted by hand
    writeFileSync(join(d, '.in-flight', 'not-a-fingerprint'), '');
    const again = InFlightIndex.open(d);
    expect(again.list()).toEqual([]);
    expect(readdirSync(join(d, '.in-flight'))).toEqual(['not-a-fingerprint']);
  });

  it('finishes a migration that a crash interrupted (a leftover .in-flight.new is rebuilt)', () => {
    const d = dataDir(['01020304']);
    mkdirSync(join(d, '.in-flight.new'));
    writeFileSync(join(d, '.in-flight.new', 'ffffffff'), '');
    const idx = InFlightIndex.open(d);
    expect(idx.list()).toEqual(['01020304']);
  });
});
