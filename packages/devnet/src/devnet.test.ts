/** The devnet CLI as a user runs it: real processes, real ports, idempotent up, clean down. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { isListening } from '@rgbx/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BITCOIND_SHA256, bitcoindPath, verifiedBitcoind } from './bitcoind.ts';
import { openDevnet } from './devnet.ts';
import { isAlive } from './processes.ts';

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
let dir: string;

async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args, '--dir', dir], { timeout: 180_000 });
  return stdout.trim();
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'devnet-cli-'));
});

afterAll(async () => {
  await cli('down').catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

describe('bitcoind binary pinning', () => {
  it('accepts the pinned binary and refuses a mismatching digest before running anything', async () => {
    expect(await verifiedBitcoind()).toBe(bitcoindPath());
    await expect(verifiedBitcoind(bitcoindPath(), '00'.repeat(32))).rejects.toThrow(
      new RegExp(`refusing to run .*SHA-256 ${BITCOIND_SHA256} does not match`),
    );
    const fake = join(dir, 'fake-bitcoind');
    writeFileSync(fake, '#!/bin/sh\necho pwned\n', { mode: 0o755 });
    await expect(verifiedBitcoind(fake)).rejects.toThrow(/does not match the pinned/);
  });
});

describe('devnet CLI', () => {
  it('up → status → mine → fund → up again (idempotent) → down', async () => {
    const info = JSON.parse(await cli('up'));
    expect(info).toEqual({
      bitcoind: {
        rpc_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        rpc_user: expect.any(String),
        rpc_password: expect.any(String),
        network: 'regtest',
      },
      electrum: expect.stringMatching(/^tcp:\/\/127\.0\.0\.1:\d+$/),
      proxy: expect.stringMatching(/^rpc:\/\/127\.0\.0\.1:\d+\/json-rpc$/),
      metrics: {
        electrum: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/),
        proxy: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/),
      },
    });
    expect(JSON.parse(await cli('status', '--json'))).toEqual(info);
    // Both serve Prometheus metrics where the info says.
    for (const url of [info.metrics.electrum, info.metrics.proxy])
      expect(await (await fetch(url)).text()).toMatch(/^# HELP rgbx_/m);
    const state = JSON.parse(readFileSync(join(dir, 'devnet.json'), 'utf8'));
    const pids = Object.values(state.pids) as number[];
    expect(pids).toHaveLength(3);
    expect(pids.every((p) => isAlive(p))).toBe(true);

    // The miner wallet is funded and mature.
    const rpc = async (method: string, params: unknown[] = [], path = '') => {
      const res = await fetch(info.bitcoind.rpc_url + path, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${info.bitcoind.rpc_user}:${info.bitcoind.rpc_password}`).toString('base64')}`,
        },
        body: JSON.stringify({ id: 1, method, params }),
      });
      return ((await res.json()) as { result: unknown }).result;
    };
    const h0 = (await rpc('getblockcount')) as number;
    expect(h0).toBeGreaterThanOrEqual(101);
    expect((await rpc('getbalance', [], '/wallet/miner')) as number).toBeGreaterThan(0);

    expect(JSON.parse(await cli('mine', '3'))).toMatchObject({ blocks: 3, height: h0 + 3 });
    const addr = (await rpc('getnewaddress', [], '/wallet/miner')) as string;
    const funded = JSON.parse(await cli('fund', addr, '1.25'));
    expect(funded.txid).toMatch(/^[0-9a-f]{64}$/);
    const tx = (await rpc('gettransaction', [funded.txid], '/wallet/miner')) as { confirmations: number };
    expect(tx.confirmations).toBe(1);

    // bitcoind runs one scantxoutset at a time: scans at once, from one Devnet and from another attached to the
    // same node (another process's, as five test markets share one devnet), all answer.
    const d1 = openDevnet(dir)!;
    const d2 = openDevnet(dir)!;
    const scans = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 ? d1 : d2).rpc<{ success: boolean; total_amount: number }>('scantxoutset', [
          'start',
          [`addr(${addr})`],
        ]),
      ),
    );
    expect(scans.map((r) => [r.success, r.total_amount])).toEqual(Array(8).fill([true, 1.25]));

    // up again: same endpoints, same processes.
    expect(JSON.parse(await cli('up'))).toEqual(info);
    const again = JSON.parse(readFileSync(join(dir, 'devnet.json'), 'utf8'));
    expect(again.pids).toEqual(state.pids);

    // bad input is refused with a message, not a stack trace
    await expect(cli('mine', 'lots')).rejects.toMatchObject({
      stderr: expect.stringMatching(/N must be an integer/),
    });
    await expect(cli('fund', addr, '1e3')).rejects.toMatchObject({
      stderr: expect.stringMatching(/BTC decimal/),
    });

    await cli('down');
    expect(pids.some((p) => isAlive(p))).toBe(false);
    const port = Number(new URL(info.bitcoind.rpc_url).port);
    expect(await isListening(port)).toBe(false);
    await expect(cli('status', '--json')).rejects.toMatchObject({ code: 1 });

    // up after down resumes the same chain. The previous metrics ports were taken meanwhile (as a parallel
    // test's server can take a port between choosing and binding it): both services start on fresh ones.
    const squatters = await Promise.all(
      [info.metrics.electrum, info.metrics.proxy].map(
        (u: string) =>
          new Promise<Server>((ok, fail) => {
            const srv = createServer((_q, r) => r.end('squatter'));
            srv.once('error', fail).listen(Number(new URL(u).port), '127.0.0.1', () => ok(srv));
          }),
      ),
    );
    const info2 = JSON.parse(await cli('up'));
    for (const s of squatters) s.close();
    expect(info2.metrics.electrum).not.toBe(info.metrics.electrum);
    expect(info2.metrics.proxy).not.toBe(info.metrics.proxy);
    for (const url of [info2.metrics.electrum, info2.metrics.proxy])
      expect(await (await fetch(url)).text()).toMatch(/^# HELP rgbx_/m);
    const res = await fetch(info2.bitcoind.rpc_url, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${info2.bitcoind.rpc_user}:${info2.bitcoind.rpc_password}`).toString('base64')}`,
      },
      body: JSON.stringify({ id: 1, method: 'getblockcount', params: [] }),
    });
    expect(((await res.json()) as { result: number }).result).toBe(h0 + 4);
    await cli('down');
  });
});
