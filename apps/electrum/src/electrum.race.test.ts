/**
 * Snapshot consistency under races: blocks are mined while clients hammer the server. Every answer must
 * be a state bitcoind actually had: a payment is either in the mempool or in a block, never in neither
 * (the old sync read the tip, then the mempool, and a block connected in between made the payment vanish)
 * nor in both.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElectrumClient } from './client.ts';

let devnet: Devnet;
let dir: string;
const clients: ElectrumClient[] = [];

const ITERATIONS = Number(process.env.ELECTRUM_RACE_ITERATIONS ?? 300);
const CONNECTIONS = 2;
const SATS = 100_000;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'electrum-race-'));
  devnet = await startDevnet({ dir });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest();
const statusOf = (entries: Array<[string, number]>) =>
  sha256(entries.map(([txid, h]) => `${txid}:${h}:`).join('')).toString('hex');

describe('mining while requests are served', () => {
  it(`get_balance, get_history and subscribe never answer a state bitcoind did not have (${ITERATIONS} blocks)`, async () => {
    for (let i = 0; i < CONNECTIONS; i++) {
      const c = await ElectrumClient.connect(devnet.info.electrum);
      clients.push(c);
      await c.request('server.version', ['race', ['1.4', '1.6']]);
    }
    // Fresh addresses, one per iteration, with their scripthashes (one batch each).
    const addrs = (await devnet.wallet.batch(
      Array.from({ length: ITERATIONS }, () => ({ method: 'getnewaddress', params: [] })),
    )) as string[];
    const infos = (await devnet.wallet.batch(
      addrs.map((a) => ({ method: 'getaddressinfo', params: [a] })),
    )) as Array<{ scriptPubKey: string }>;
    const shs = infos.map((x) =>
      Buffer.from(sha256(Buffer.from(x.scriptPubKey, 'hex')))
        .reverse()
        .toString('hex'),
    );

    let answers = 0;
    let notifications = 0;
    const impossible: string[] = [];
    for (let it = 0; it < ITERATIONS; it++) {
      const sh = shs[it]!;
      const txid = await devnet.fund(addrs[it]!, '0.001');
      const height = (await devnet.rpc<number>('getblockcount')) + 1;
      const inMempool = statusOf([[txid, 0]]);
      const inBlock = statusOf([[txid, height]]);
      // Subscribed before the block: the subscription itself already must see the mempool payment.
      const sub = clients[0]!;
      const first = await sub.request<string | null>('blockchain.scripthash.subscribe', [sh]);
      if (first !== inMempool) impossible.push(`iteration ${it}: subscribe before mining answered ${first}`);

      let mined = false;
      const mining = devnet.mine(1).then((hashes) => {
        mined = true;
        return hashes;
      });
      const check = (what: string, v: unknown, ok: boolean) => {
        answers++;
        if (!ok) impossible.push(`iteration ${it}: ${what} answered ${JSON.stringify(v)}`);
      };
      // One request at a time: each one starts its own sync (nothing to coalesce with), so a block
      // connected between that sync's reads shows in the very answer.
      const hammer = async (c: ElectrumClient) => {
        let after = 0;
        for (let n = 0; !mined || after++ < 3; n++) {
          if (n % 3 === 0) {
            const bal = await c.request<{ confirmed: number; unconfirmed: number }>(
              'blockchain.scripthash.get_balance',
              [sh],
            );
            check(
              'get_balance',
              bal,
              (bal.confirmed === 0 && bal.unconfirmed === SATS) ||
                (bal.confirmed === SATS && bal.unconfirmed === 0),
            );
          } else if (n % 3 === 1) {
            const status = await c.request<string | null>('blockchain.scripthash.subscribe', [sh]);
            check('subscribe', status, status === inMempool || status === inBlock);
          } else {
            const hist = await c.request<Array<{ tx_hash: string; height: number }>>(
              'blockchain.scripthash.get_history',
              [sh],
            );
            check(
              'get_history',
              hist,
              hist.length === 1 &&
                hist[0]!.tx_hash === txid &&
                (hist[0]!.height === 0 || hist[0]!.height === height),
            );
          }
        }
      };
      await Promise.all([mining, hammer(clients[1]!)]);
      // The block is in: every connection now answers the confirmed state.
      const final = await clients[1]!.request('blockchain.scripthash.get_balance', [sh]);
      check(
        'get_balance after the block',
        final,
        JSON.stringify(final) === JSON.stringify({ confirmed: SATS, unconfirmed: 0 }),
      );
      // Notifications the subscriber received for this scripthash: only real states, ending confirmed.
      const seen: unknown[] = [];
      for (;;) {
        const i = sub.notifications.findIndex(
          (n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === sh,
        );
        if (i < 0) break;
        seen.push(sub.notifications.splice(i, 1)[0]!.params[1]);
      }
      if (seen.at(-1) !== inBlock) {
        seen.push((await sub.nextNotification((n) => n.params[0] === sh, 5_000)).params[1]);
      }
      for (const s of seen) {
        notifications++;
        if (s !== inMempool && s !== inBlock) impossible.push(`iteration ${it}: notification status ${s}`);
      }
      await sub.request('blockchain.scripthash.unsubscribe', [sh]);
      for (const c of clients.slice(1)) await c.request('blockchain.scripthash.unsubscribe', [sh]);
      for (const c of clients) c.notifications.length = 0;
    }
    const hit = new Set(impossible.map((x) => x.split(':')[0]));
    console.info(
      `electrum race: ${ITERATIONS} blocks, ${answers} answers, ${notifications} notifications, ${impossible.length} impossible (in ${hit.size} iterations)`,
    );
    expect(impossible.slice(0, 10)).toEqual([]);
    expect(answers).toBeGreaterThan(ITERATIONS * 4);
  }, 600_000);
});
