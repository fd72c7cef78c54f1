/**
 * Wallet events, pushed (issue 27 §2), on the devnet (real bitcoind, our Electrum server and proxy, the built
 * node): wallet A sends an NIA asset to wallet B's witness invoice and NO client calls `refresh` (nor
 * `listtransfers`): the node's background refresh (interval 1 s here) moves the transfer, and both wallets'
 * `GET /wallet/events` streams (the SDK's `events()`) show its every status change, chained (each event's
 * `old_status` is the previous one's `new_status`), up to `Settled`, and the balance changes. A second client of B
 * disconnects mid-transfer and resumes with `Last-Event-ID`: what it saw before and after is exactly the
 * uninterrupted stream (nothing missed, nothing twice). Both wallets also have a webhook whose receiver is down
 * for the whole transfer: once it is up, it gets every event of the streams, in order, each signed (verified with
 * the SDK and the node's public key), duplicates only as retries of the same event id.
 *
 * Needs the build output (`npx tsc -b`).
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import {
  signPsbt,
  verifyWalletWebhook,
  type WalletEvent,
  type WalletEventItem,
  WalletNodeClient,
  WalletNodeError,
  type WalletTransferEvent,
} from '@rgbx/sdk';
import { freePort } from '@rgbx/service-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mineAndSync } from './helpers/rgb.ts';
import {
  type NodeProcess,
  startNode,
  stopWalletNodeSuite,
  walletClient,
  writeNodeConfig,
} from './helpers/wallet-node.ts';

const T = 400_000;
let devnet: Devnet;
let root: string;
let node: NodeProcess;
let A: Keys;
let B: Keys;
let hookPort: number;
const aborts: AbortController[] = [];

const client = (k: Keys) => walletClient(node.url, k);

/** Collects a wallet's events into `into` until aborted. */
function collect(k: Keys, into: WalletEventItem[], lastEventId?: string): AbortController {
  const ac = new AbortController();
  aborts.push(ac);
  void (async () => {
    for await (const ev of client(k).events({ signal: ac.signal, ...(lastEventId ? { lastEventId } : {}) }))
      into.push(ev);
  })();
  return ac;
}

const transfersOf = (items: WalletEventItem[], match: (t: WalletTransferEvent) => boolean) =>
  items.flatMap((i) => (i.type === 'transfer' && match(i.data) ? [i.data] : []));

/** Each status change follows the previous one (no change missed), from a first sighting to `last`. */
function expectChain(events: WalletTransferEvent[], last: string): void {
  expect(events.length).toBeGreaterThan(0);
  expect(events[0]!.old_status).toBeNull();
  for (let i = 1; i < events.length; i++) expect(events[i]!.old_status).toBe(events[i - 1]!.new_status);
  expect(events.at(-1)!.new_status).toBe(last);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-node-events-'));
  devnet = await startDevnet({ dir: join(root, 'devnet') });
  hookPort = await freePort();
  node = await startNode(
    writeNodeConfig(root, devnet.info, {
      workers: 2,
      refresh_interval_secs: 1,
      // The webhook receiver is on loopback (a test); retries at most 2 s apart.
      webhook_allow_cidrs: ['127.0.0.0/8'],
      webhook_allow_http: true,
      webhook_max_retry_secs: 2,
      // The node's webhook: every wallet without its own (B here; A sets its own).
      webhook_url: `http://127.0.0.1:${hookPort}/hooks/all`,
    }),
  );
  A = await generateKeys('Regtest', 'Taproot');
  B = await generateKeys('Regtest', 'Taproot');
}, T);

afterAll(async () => {
  for (const ac of aborts) ac.abort();
  await stopWalletNodeSuite({ nodes: [node], devnet, root });
});

it(
  'a transfer with no client refresh: both streams show every status up to Settled; a resumed stream misses nothing and repeats nothing; webhooks down during it get every event later, in order, signed',
  async () => {
    const a = client(A);
    const b = client(B);
    await a.register();
    await b.register();
    // Webhooks to a receiver that is not listening yet (it comes up after the transfer settled): A's own, and the
    // node's (`wallet.webhook_url`) for B, which sets none.
    expect(await a.setWebhook(`http://127.0.0.1:${hookPort}/hooks/A`)).toMatchObject({
      url: `http://127.0.0.1:${hookPort}/hooks/A`,
      origin: 'wallet',
      pending: 0,
    });
    expect(await b.webhook()).toMatchObject({
      url: `http://127.0.0.1:${hookPort}/hooks/all`,
      origin: 'config',
      pending: 0,
    });
    const evA: WalletEventItem[] = [];
    const evB: WalletEventItem[] = [];
    collect(A, evA);
    collect(B, evB);
    await devnet.fund(await a.address(), '0.01');
    await devnet.fund(await b.address(), '0.01', { confirm: true });
    await a.createUtxosEnd(signPsbt(await a.createUtxosBegin({ num: 3, fee_rate: 2 }), A.mnemonic));
    await b.createUtxosEnd(signPsbt(await b.createUtxosBegin({ num: 1, fee_rate: 2 }), B.mnemonic));
    await mineAndSync(devnet);
    const assetId = (await a.issueAssetNia({ ticker: 'EVT', name: 'events', precision: 0, amounts: [1000] }))
      .asset_id;

    const inv = await b.witnessReceive({ amount: 100 });
    const isReceive = (t: WalletTransferEvent) => t.recipient_id === inv.recipient_id;
    // The second client of B: connected now, dropped after its first event of the transfer, resumed later.
    const before: WalletEventItem[] = [];
    const first = collect(B, before);
    const psbt = await a.sendBegin({
      recipient_map: {
        [assetId]: [
          {
            recipient_id: inv.recipient_id,
            witness_data: { amount_sat: 1000 },
            amount: 100,
            transport_endpoints: [devnet.info.proxy],
          },
        ],
      },
      fee_rate: 2,
    });
    const { txid } = await a.sendEnd(signPsbt(psbt, A.mnemonic));
    const isSend = (t: WalletTransferEvent) => t.txid === txid && t.kind === 'Send';

    const waitFor = async (what: string, ok: () => boolean, ms = 150_000) => {
      const deadline = Date.now() + ms;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    await waitFor('B sees its receive move', () => transfersOf(before, isReceive).some((t) => t.old_status));
    first.abort();
    const lastSeen = before.at(-1)!.id;

    // Blocks come (a block every ~2 s); nobody calls refresh.
    const settled = (items: WalletEventItem[], m: (t: WalletTransferEvent) => boolean) => () =>
      transfersOf(items, m).some((t) => t.new_status === 'Settled');
    const deadline = Date.now() + 150_000;
    while (!(settled(evA, isSend)() && settled(evB, isReceive)())) {
      if (Date.now() > deadline) throw new Error('the transfer did not settle on both sides');
      await mineAndSync(devnet);
      await new Promise((r) => setTimeout(r, 2000));
    }
    const after: WalletEventItem[] = [];
    collect(B, after, lastSeen);
    await waitFor('the resumed stream to catch up', () => settled(after, isReceive)(), 30_000);
    await new Promise((r) => setTimeout(r, 1500)); // anything more would show now

    const sendEvents = transfersOf(evA, isSend);
    const recvEvents = transfersOf(evB, isReceive);
    console.info('A:', sendEvents.map((t) => `${t.old_status}>${t.new_status}`).join(', '));
    console.info('B:', recvEvents.map((t) => `${t.old_status}>${t.new_status}`).join(', '));
    expectChain(sendEvents, 'Settled');
    expectChain(recvEvents, 'Settled');
    expect(sendEvents.every((t) => t.asset_id === assetId && t.amount === '100')).toBe(true);
    expect(recvEvents.at(-1)).toMatchObject({
      asset_id: assetId,
      amount: '100',
      kind: 'ReceiveWitness',
      txid,
    });
    // Some changes were found by the background refresh (no client refreshed anything).
    expect([...sendEvents, ...recvEvents].some((t) => t.source === 'refresh')).toBe(true);
    // Balances: A's issuance and send, B's receive.
    const balances = (items: WalletEventItem[]) =>
      items.flatMap((i) => (i.type === 'balance' && i.data.asset_id === assetId ? [i.data.new] : []));
    expect(balances(evA).at(-1)).toMatchObject({ settled: '900' });
    expect(balances(evB).at(-1)).toMatchObject({ settled: '100', spendable: '100' });
    // Ids increase by one on each stream, and the resumed client saw exactly the uninterrupted stream.
    for (const items of [evA, evB])
      for (let i = 1; i < items.length; i++) expect(Number(items[i]!.id)).toBe(Number(items[i - 1]!.id) + 1);
    const joined = [...before, ...after].map((e) => e.id);
    const fromFirst = evB.map((e) => e.id).filter((id) => Number(id) >= Number(before[0]!.id));
    expect(joined).toEqual(fromFirst);
    expect(new Set(joined).size).toBe(joined.length);

    // The webhooks: every attempt so far failed (nothing listens), the events wait in order.
    const statusA = await a.webhook();
    expect(statusA.pending).toBeGreaterThanOrEqual(sendEvents.length);
    expect(statusA.failures).toBeGreaterThan(0);
    expect(statusA.last_error).toMatch(/ECONNREFUSED/);
    const got: { path: string; id: string; sig: string; body: string }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({
          path: req.url ?? '',
          id: String(req.headers['x-service-event-id']),
          sig: String(req.headers['x-service-signature']),
          body: Buffer.concat(chunks).toString('utf8'),
        });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((ok) => server.listen(hookPort, '127.0.0.1', () => ok()));
    try {
      const deadline2 = Date.now() + 30_000;
      while ((await a.webhook()).pending > 0 || (await b.webhook()).pending > 0) {
        if (Date.now() > deadline2) throw new Error('the webhooks were not delivered within 30 s');
        await new Promise((r) => setTimeout(r, 250));
      }
      // A receiver that lost what it stored asks for A's last two events again (POST /wallet/webhook/redeliver).
      const before = (await a.webhook()).delivered_through;
      const sentBefore = got.length;
      expect(await a.redeliverWebhook(before - 1)).toMatchObject({ delivered_through: before - 2 });
      const deadline3 = Date.now() + 30_000;
      while ((await a.webhook()).delivered_through < before) {
        if (Date.now() > deadline3) throw new Error('the redelivery did not finish within 30 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(
        got
          .slice(sentBefore)
          .filter((g) => g.path === '/hooks/A')
          .map((g) => g.id),
      ).toEqual([`${A.masterFingerprint}-${before - 1}`, `${A.masterFingerprint}-${before}`]);
      // Past the next undelivered event: refused with the range, nothing sent.
      const refused = await a.redeliverWebhook(before + 2).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(WalletNodeError);
      expect(refused).toMatchObject({ httpStatus: 409, code: 1022 });
      expect((refused as Error).message).toContain(
        `and ${before + 1} (the next one not yet delivered); got ${before + 2}`,
      );
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
    const { data: pem } = await WalletNodeClient.webhookPublicKey(node.url);
    const delivered = (k: Keys, path: string): WalletEvent[] => {
      const seen = new Set<string>();
      return got.flatMap((g) => {
        if (g.path !== path) return [];
        const v = verifyWalletWebhook(g.body, g.sig, pem, k.masterFingerprint);
        if (!v.ok) throw new Error(`${path}: ${v.message}`);
        expect(g.id).toBe(`${k.masterFingerprint}-${v.event.id}`);
        if (seen.has(g.id)) return []; // a retry of the same event
        seen.add(g.id);
        return [v.event];
      });
    };
    // Exactly the streams' events, in the same order, with the same content.
    const streamed = (items: WalletEventItem[]) => items.flatMap((i) => (i.type === 'reset' ? [] : [i.data]));
    expect(delivered(A, '/hooks/A')).toEqual(streamed(evA));
    expect(delivered(B, '/hooks/all')).toEqual(streamed(evB));
    console.info(`webhooks: ${got.length} requests for ${evA.length + evB.length} events`);
  },
  T,
);
