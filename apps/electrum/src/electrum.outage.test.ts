/**
 * bitcoind stopped under a running Electrum server: index-dependent requests answer error 2 (never a
 * stale answer), requests that need nothing from bitcoind still work, and once bitcoind is back the
 * server follows it again and notifies the tip it missed. Checked for the devnet's server (strict
 * freshness) and for a second server process with a freshness window (answers may be up to
 * `freshness_ms` old, but not once a sync has failed).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Devnet, type ServiceProcess, spawnService, startDevnet } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElectrumClient, ElectrumReplyError } from './client.ts';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

let devnet: Devnet;
let dir: string;
let windowed: ServiceProcess<string>;
const clients: ElectrumClient[] = [];

async function connect(url: string): Promise<ElectrumClient> {
  const c = await ElectrumClient.connect(url);
  clients.push(c);
  await c.request('server.version', ['outage', ['1.4', '1.6']]);
  return c;
}

async function errorOf(p: Promise<unknown>): Promise<ElectrumReplyError> {
  const e = await p.then(
    (v) => new Error(`expected an error, got ${JSON.stringify(v)}`),
    (x: unknown) => x,
  );
  if (!(e instanceof ElectrumReplyError)) throw e;
  return e;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'electrum-outage-'));
  devnet = await startDevnet({ dir });
  const b = devnet.info.bitcoind;
  const conf = join(dir, 'electrum-windowed.toml');
  writeFileSync(
    conf,
    [
      '[server]',
      'port = 0',
      '[bitcoind]',
      `rpc_url = "${b.rpc_url}"`,
      `rpc_user = "${b.rpc_user}"`,
      `rpc_password = "${b.rpc_password}"`,
      'timeout_ms = 2000',
      '[index]',
      'freshness_ms = 60000',
      'poll_interval_ms = 50',
      '[log]',
      'level = "fatal"',
      '[metrics]',
      'port = 0',
    ].join('\n'),
    { mode: 0o600 },
  );
  windowed = await spawnService('electrum (freshness window)', [MAIN, '-c', conf]);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await windowed?.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('bitcoind stopped', () => {
  it('answers error 2 for index-dependent requests, recovers and notifies the missed tip when bitcoind is back', async () => {
    const strict = await connect(devnet.info.electrum);
    const win = await connect(windowed.value);
    const addr = await devnet.wallet.call<string>('getnewaddress');
    const info = await devnet.wallet.call<{ scriptPubKey: string }>('getaddressinfo', [addr]);
    const sh = Buffer.from(createHash('sha256').update(Buffer.from(info.scriptPubKey, 'hex')).digest())
      .reverse()
      .toString('hex');
    const txid = await devnet.fund(addr, '0.0025', { confirm: true });
    const height = await devnet.rpc<number>('getblockcount');
    const tipBlock = await devnet.rpc<string>('getblockhash', [height]);
    for (const c of [strict, win]) {
      // Both serve the funded state and are subscribed to the tip.
      let bal = await c.request<{ confirmed: number }>('blockchain.scripthash.get_balance', [sh]);
      for (let i = 0; bal.confirmed !== 250_000 && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 50));
        bal = await c.request('blockchain.scripthash.get_balance', [sh]);
      }
      expect(bal).toEqual({ confirmed: 250_000, unconfirmed: 0 });
      expect((await c.request<{ height: number }>('blockchain.headers.subscribe')).height).toBe(height);
    }

    await devnet.rpc('stop');
    // Until bitcoind's RPC is gone for good (it answers "shutting down" for a moment first).
    for (let i = 0; i < 200; i++) {
      const down = await devnet.rpc('getblockcount').then(
        () => false,
        () => true,
      );
      if (down) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 300)); // the windowed server's poll has failed by now

    const indexCalls: Array<[string, unknown[]]> = [
      ['blockchain.scripthash.get_balance', [sh]],
      ['blockchain.scripthash.get_history', [sh]],
      ['blockchain.scripthash.listunspent', [sh]],
      ['blockchain.scripthash.get_mempool', [sh]],
      ['blockchain.scripthash.subscribe', [sh]],
      ['blockchain.headers.subscribe', []],
      ['blockchain.block.header', [height]],
      ['blockchain.block.headers', [height - 1, 2]],
      ['blockchain.transaction.get', [txid]],
      ['blockchain.transaction.get_merkle', [txid, height]],
      ['blockchain.transaction.id_from_pos', [height, 0]],
      ['mempool.get_fee_histogram', []],
      ['blockchain.estimatefee', [2]],
      ['blockchain.relayfee', []],
    ];
    for (const c of [strict, win]) {
      for (const [method, params] of indexCalls) {
        const e = await errorOf(c.request(method, params));
        expect({ method, code: e.code }).toEqual({ method, code: 2 });
        expect(e.message).toMatch(/bitcoind/);
      }
      // Requests that need nothing from bitcoind still work; the connection stays open.
      expect(await c.request('server.ping')).toBeNull();
      expect(typeof (await c.request('server.banner'))).toBe('string');
      expect(c.closed).toBe(false);
    }

    // bitcoind back (same datadir and port), and a block it had not served yet.
    await startDevnet({ dir });
    const [newTip] = await devnet.mine(1);
    for (const c of [strict, win]) {
      const n = await c.nextNotification(
        (x) =>
          x.method === 'blockchain.headers.subscribe' &&
          (x.params[0] as { height: number }).height === height + 1,
        15_000,
      );
      expect((n.params[0] as { hex: string }).hex).toBe(await devnet.rpc('getblockheader', [newTip, false]));
      expect(await c.request('blockchain.scripthash.get_balance', [sh])).toEqual({
        confirmed: 250_000,
        unconfirmed: 0,
      });
      expect(await c.request('blockchain.block.header', [height])).toBe(
        await devnet.rpc('getblockheader', [tipBlock, false]),
      );
    }
  }, 180_000);
});
