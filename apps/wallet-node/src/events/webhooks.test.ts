/**
 * Wallet webhooks over real HTTP on loopback (no rgb-lib: events are appended to a real log as the node's hub
 * does): signed deliveries that the SDK verifies, order, at least once with the same event id on every attempt,
 * a receiver that is down gets everything later in order, a restart resumes after the last accepted event, the
 * URL checks, and the retention holding undelivered events.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWalletWebhook } from '@rgbx/sdk';
import { createLogger, freePort } from '@rgbx/service-kit';
import { AddressPolicy, type Resolver, systemResolver } from '@rgbx/service-kit/webhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WalletContext } from '../wallets.ts';
import { WalletEvents } from './hub.ts';
import { EVENTS_FILE } from './log.ts';
import { WalletWebhooks, WEBHOOK_FILE } from './webhooks.ts';

const WALLET = 'a1b2c3d4';
const log = createLogger({ name: 'test', level: 'silent' });
const fastRetry = { scheduleMs: [50, 100, 200], jitter: 0, giveUpAfterMs: Number.POSITIVE_INFINITY };

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on `port` answering `status(n)` for its n-th request (0-based). */
function receiver(port: number, status: (n: number) => number = () => 200) {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = got.length;
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(status(n)).end();
    });
  });
  return new Promise<{ got: Received[]; close(): Promise<void> }>((ok) =>
    server.listen(port, '127.0.0.1', () =>
      ok({
        got,
        close: () =>
          new Promise<void>((r) => {
            server.close(() => r());
            server.closeAllConnections();
          }),
      }),
    ),
  );
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let root: string;
let dir: string;
let events: WalletEvents;
let hooks: WalletWebhooks[];
/** Outcomes reported to `onAttempt` (what the metrics count). */
let attempts: boolean[];

function open(
  opts: { allowCidrs?: string[]; resolver?: Resolver; maxPending?: number; defaultUrl?: string } = {},
) {
  const h = new WalletWebhooks({
    dataDir: root,
    ...(opts.defaultUrl === undefined ? {} : { defaultUrl: opts.defaultUrl }),
    keyFile: join(root, '.webhook-key.pem'),
    policy: new AddressPolicy({ allowCidrs: opts.allowCidrs ?? ['127.0.0.0/8'], allowHttp: true }),
    resolver: opts.resolver ?? systemResolver,
    timeoutMs: 2_000,
    maxPendingEvents: opts.maxPending ?? 10_000,
    events,
    log,
    retry: fastRetry,
    onAttempt: (ok) => attempts.push(ok),
  });
  hooks.push(h);
  return h;
}

/** One `begin_released` event per txid, appended and published as the hub does for an abortbegin. */
function emit(...txids: string[]): void {
  emitFor(WALLET, dir, ...txids);
}
function emitFor(wallet: string, walletDir: string, ...txids: string[]): void {
  const ctx = { id: { fingerprint: wallet } } as unknown as WalletContext;
  for (const txid of txids)
    events.released(ctx, walletDir, {
      reason: 'aborted',
      txid,
      released: [`${txid}:0`],
      failed_batch_transfer_idx: 3,
    });
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'wallet-webhooks-'));
  dir = join(root, WALLET);
  mkdirSync(dir);
  events = new WalletEvents({ retentionMs: 3_600_000, log });
  events.logOf(WALLET, dir).baseline();
  hooks = [];
  attempts = [];
});
afterEach(async () => {
  for (const h of hooks) await h.close();
  rmSync(root, { recursive: true, force: true });
});

describe('wallet webhooks', () => {
  it('delivers each event once, in order, signed: the SDK verifies it with the public key; same headers as the cloud', async () => {
    const port = await freePort();
    const r = await receiver(port);
    const h = open();
    await h.start();
    emit('aa'); // before the webhook: not delivered
    expect(await h.set(WALLET, dir, `http://127.0.0.1:${port}/hook`)).toBeUndefined();
    emit('bb', 'cc', 'dd');
    await until('three deliveries', () => r.got.length === 3);
    await until('recorded', () => h.status(WALLET, dir).pending === 0);
    const { pem, keyId } = h.publicKey;
    const ids = r.got.map((g) => {
      const v = verifyWalletWebhook(g.body, g.headers['x-service-signature'], pem, WALLET);
      if (!v.ok) throw new Error(v.message);
      expect(v.eventKey).toBe(`${WALLET}-${v.event.id}`);
      expect(g.headers).toMatchObject({
        'x-service-signature-key-id': keyId,
        'x-service-event-id': v.eventKey,
        'x-service-event-type': 'begin_released',
        'x-service-attempt': '1',
        'x-service-sequence': String(v.event.id),
        'content-type': 'application/json; charset=utf-8',
      });
      return v.event.type === 'begin_released' ? `${v.event.id}:${v.event.txid}` : '';
    });
    expect(ids).toEqual(['2:bb', '3:cc', '4:dd']);
    expect(h.status(WALLET, dir)).toMatchObject({
      delivered_through: 4,
      last_event_id: 4,
      pending: 0,
      failures: 0,
    });
    // A forged body (one byte changed) or another wallet does not verify.
    const g = r.got[0]!;
    const sig = g.headers['x-service-signature'];
    expect(verifyWalletWebhook(g.body.replace('bb', 'bc'), sig, pem, WALLET)).toMatchObject({
      ok: false,
      reason: 'invalid_signature',
    });
    expect(verifyWalletWebhook(g.body, sig, pem, 'ffffffff')).toMatchObject({
      ok: false,
      reason: 'unexpected_wallet',
    });
    // A captured delivery replayed with a new (unsigned) event id header: still the same event to the receiver.
    expect(verifyWalletWebhook(g.body, sig, pem, WALLET)).toMatchObject({
      ok: true,
      eventKey: `${WALLET}-2`,
    });
    await r.close();
  });

  it('a receiver that is down gets every event later, in order; retries repeat the event id with a higher attempt', async () => {
    const port = await freePort();
    const h = open();
    await h.start();
    expect(await h.set(WALLET, dir, `http://127.0.0.1:${port}/hook`)).toBeUndefined();
    emit('e1', 'e2', 'e3');
    await until('a failed attempt', () => h.status(WALLET, dir).failures >= 2);
    expect(h.status(WALLET, dir)).toMatchObject({
      pending: 3,
      last_error: expect.stringMatching(/ECONNREFUSED/),
      next_attempt_at: expect.any(String),
    });
    emit('e4'); // while down
    // Up again, but failing the first request with a 503.
    const r = await receiver(port, (n) => (n === 0 ? 503 : 200));
    await until('all delivered', () => h.status(WALLET, dir).pending === 0);
    const seen = r.got.map((g) => [g.headers['x-service-event-id'], JSON.parse(g.body).txid]);
    expect(seen).toEqual([
      [`${WALLET}-1`, 'e1'],
      [`${WALLET}-1`, 'e1'],
      [`${WALLET}-2`, 'e2'],
      [`${WALLET}-3`, 'e3'],
      [`${WALLET}-4`, 'e4'],
    ]);
    expect(Number(r.got[1]!.headers['x-service-attempt'])).toBe(
      Number(r.got[0]!.headers['x-service-attempt']) + 1,
    );
    expect(r.got[2]!.headers['x-service-attempt']).toBe('1');
    // Every attempt reported once: the refused connections and the 503 failed, four delivered.
    expect(attempts.filter((ok) => ok)).toHaveLength(4);
    expect(attempts.filter((ok) => !ok)).toHaveLength(Number(r.got[1]!.headers['x-service-attempt']) - 1);
    expect(h.retrying).toBe(0);
    await r.close();
  });

  it('a restart resumes after the last accepted event; removing the webhook stops delivery', async () => {
    const port = await freePort();
    const r = await receiver(port);
    const h1 = open();
    await h1.start();
    await h1.set(WALLET, dir, `http://127.0.0.1:${port}/hook`);
    emit('r1', 'r2');
    await until('two', () => h1.status(WALLET, dir).pending === 0);
    await h1.close();
    emit('r3', 'r4'); // while no dispatcher runs (the node is down)
    const stored = JSON.parse(readFileSync(join(dir, WEBHOOK_FILE), 'utf8'));
    expect(stored).toMatchObject({ wallet: WALLET, delivered_through: 2 });
    const h2 = open();
    await h2.start(); // finds the webhook file and resumes
    await until('four', () => r.got.length === 4);
    expect(r.got.map((g) => JSON.parse(g.body).txid)).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(h2.publicKey.keyId).toBe(h1.publicKey.keyId); // the same key file
    expect(h2.remove(WALLET, dir)).toBe(true);
    expect(h2.remove(WALLET, dir)).toBe(false);
    emit('r5');
    await new Promise((res) => setTimeout(res, 300));
    expect(r.got).toHaveLength(4);
    expect(h2.status(WALLET, dir)).toMatchObject({ url: null, pending: 0 });
    await r.close();
  });

  it('refuses URLs as the cloud does: non-public addresses, plain http outside the allowlist, credentials', async () => {
    const h = open({ allowCidrs: [] });
    await h.start();
    expect(await h.set(WALLET, dir, 'https://127.0.0.1/x')).toMatch(/non-public address/);
    expect(await h.set(WALLET, dir, 'https://10.1.2.3/x')).toMatch(/non-public address/);
    expect(await h.set(WALLET, dir, 'http://93.184.216.34/x')).toMatch(/plain http is only allowed/);
    expect(await h.set(WALLET, dir, 'https://u:p@93.184.216.34/x')).toMatch(/credentials/);
    expect(await h.set(WALLET, dir, 'ftp://93.184.216.34/x')).toMatch(/scheme/);
    // A name that resolves to a private address (DNS answers injected) is refused when set.
    const h2 = open({ allowCidrs: [], resolver: async () => [{ address: '192.168.1.7', family: 4 }] });
    await h2.start();
    expect(await h2.set(WALLET, dir, 'https://hooks.example/x')).toMatch(/resolves to a refused address/);
    expect(h.status(WALLET, dir).url).toBeNull();
  });

  it('redelivers from an event id: again, in order, with the same event ids; refused without a webhook and outside what the log holds up to the next undelivered event', async () => {
    const port = await freePort();
    const r = await receiver(port);
    const h = open();
    await h.start();
    expect(h.redeliver(WALLET, dir, 1)).toMatch(/no webhook/);
    await h.set(WALLET, dir, `http://127.0.0.1:${port}/hook`);
    emit('x1', 'x2', 'x3');
    await until('three', () => h.status(WALLET, dir).pending === 0 && r.got.length === 3);
    expect(h.redeliver(WALLET, dir, 2)).toBeUndefined();
    await until('again', () => r.got.length === 5 && h.status(WALLET, dir).pending === 0);
    expect(r.got.map((g) => [g.headers['x-service-event-id'], JSON.parse(g.body).txid])).toEqual([
      [`${WALLET}-1`, 'x1'],
      [`${WALLET}-2`, 'x2'],
      [`${WALLET}-3`, 'x3'],
      [`${WALLET}-2`, 'x2'],
      [`${WALLET}-3`, 'x3'],
    ]);
    expect(h.status(WALLET, dir)).toMatchObject({ delivered_through: 3, pending: 0 });
    // The range: from the oldest event held to the next one not yet delivered (4: starts delivery, sends nothing).
    expect(h.redeliver(WALLET, dir, 0)).toMatch(/between 1 .* and 4 .*got 0/);
    expect(h.redeliver(WALLET, dir, 5)).toMatch(/between 1 .* and 4 .*got 5/);
    expect(h.redeliver(WALLET, dir, 4)).toBeUndefined();
    await new Promise((res) => setTimeout(res, 200));
    expect(r.got).toHaveLength(5);
    // Events the retention dropped cannot be asked for.
    expect(events.logOf(WALLET, dir).prune(Date.now() + 86_400_000)).toBe(2);
    expect(h.redeliver(WALLET, dir, 2)).toMatch(/between 3 .*got 2/);
    expect(h.redeliver(WALLET, dir, 3)).toBeUndefined();
    await until('event 3 a third time', () => r.got.length === 6);
    expect(r.got[5]!.headers['x-service-event-id']).toBe(`${WALLET}-3`);
    await r.close();
    // No further back than the retention holds undelivered events (max pending), or the log could drop them.
    const h2 = open({ maxPending: 2 });
    await h2.start();
    emit('x4', 'x5', 'x6');
    // Delivered through 3 (the receiver is gone), 4-6 pending, 2 at most held back: nothing delivered is held.
    expect(h2.redeliver(WALLET, dir, 3)).toMatch(/can only be 4 .*got 3/);
    expect(h2.status(WALLET, dir).delivered_through).toBe(3);
    const r2 = await receiver(port);
    expect(h2.redeliver(WALLET, dir, 4)).toBeUndefined(); // starts delivery now
    await until('4-6 delivered', () => h2.status(WALLET, dir).pending === 0);
    expect(r2.got.map((g) => g.headers['x-service-event-id'])).toEqual(
      [4, 5, 6].map((i) => `${WALLET}-${i}`),
    );
    expect(h2.redeliver(WALLET, dir, 4)).toMatch(/between 5 .* and 7 .*got 4/);
    await r2.close();
  });

  it('a redelivery asked for while an attempt is in flight: the late 2xx does not skip the events asked for', async () => {
    const port = await freePort();
    const got: string[] = [];
    let hold: (() => void) | undefined;
    const held = new Promise<void>((ok) => {
      hold = ok;
    });
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['x-service-event-id']);
        got.push(id);
        // The first delivery of event 3 is answered only once the test says so.
        if (id === `${WALLET}-3` && got.filter((g) => g === id).length === 1)
          void held.then(() => res.writeHead(200).end());
        else res.writeHead(200).end();
      });
    });
    await new Promise<void>((ok) => server.listen(port, '127.0.0.1', () => ok()));
    const h = open();
    await h.start();
    await h.set(WALLET, dir, `http://127.0.0.1:${port}/hook`);
    emit('y1', 'y2', 'y3');
    await until('event 3 in flight', () => got.length === 3);
    expect(h.redeliver(WALLET, dir, 1)).toBeUndefined();
    hold!();
    await until('everything again', () => got.length === 6 && h.status(WALLET, dir).pending === 0);
    const ids = got.map((g) => Number(g.split('-')[1]));
    expect(ids).toEqual([1, 2, 3, 1, 2, 3]);
    await new Promise<void>((ok) => {
      server.close(() => ok());
      server.closeAllConnections();
    });
  });

  it('the retention keeps undelivered events (up to max pending) and drops them once delivered', async () => {
    const port = await freePort();
    const h = open({ maxPending: 100 });
    await h.start();
    await h.set(WALLET, dir, `http://127.0.0.1:${port}/hook`);
    emit('p1', 'p2', 'p3');
    const lines = () => readFileSync(join(dir, EVENTS_FILE), 'utf8').split('\n').filter(Boolean).length;
    const logOf = events.logOf(WALLET, dir);
    // Everything is past the retention a day later, but nothing was delivered: nothing is dropped.
    expect(logOf.prune(Date.now() + 86_400_000)).toBe(0);
    expect(lines()).toBe(3);
    const r = await receiver(port);
    await until('delivered', () => h.status(WALLET, dir).pending === 0);
    expect(logOf.prune(Date.now() + 86_400_000)).toBe(2); // the newest line always stays
    await r.close();
  });
});

describe("the node's webhook (wallet.webhook_url)", () => {
  /** `wallet:txid` of each delivery, in arrival order. */
  const seen = (r: { got: Received[] }) =>
    r.got.map((g) => {
      const e = JSON.parse(g.body) as { wallet: string; txid: string };
      return `${e.wallet}:${e.txid}`;
    });

  it("delivers for every wallet without its own: existing ones from the start, new ones from their first event; a wallet's own takes over and gives back; a changed URL gets what is pending; removed with the setting", async () => {
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    const node = await receiver(p1);
    const own = await receiver(p2);
    emit('aa'); // before the node's start: not delivered (a wallet it has at the start: from its next event)
    let h = open({ defaultUrl: `http://127.0.0.1:${p1}/all` });
    await h.start();
    expect(h.status(WALLET, dir)).toMatchObject({
      url: `http://127.0.0.1:${p1}/all`,
      origin: 'config',
      delivered_through: 1, // 'aa'
      pending: 0,
    });
    emit('bb');
    // A wallet registered after the start: every event of its log.
    const W2 = 'b2b2b2b2';
    const dir2 = join(root, W2);
    mkdirSync(dir2);
    emitFor(W2, dir2, 'x1', 'x2');
    await until('three deliveries', () => node.got.length === 3);
    expect(seen(node).filter((x) => x.startsWith(WALLET))).toEqual([`${WALLET}:bb`]);
    expect(seen(node).filter((x) => x.startsWith(W2))).toEqual([`${W2}:x1`, `${W2}:x2`]);
    await until('recorded', () => h.status(W2, dir2).pending === 0 && h.status(WALLET, dir).pending === 0);

    // The wallet's own webhook takes over ...
    expect(await h.set(WALLET, dir, `http://127.0.0.1:${p2}/mine`)).toBeUndefined();
    expect(h.status(WALLET, dir).origin).toBe('wallet');
    emit('cc');
    await until('own delivery', () => own.got.length === 1);
    expect(seen(own)).toEqual([`${WALLET}:cc`]);
    // ... and gives back: the node's applies again from the next event.
    expect(h.remove(WALLET, dir)).toBe(true);
    expect(h.status(WALLET, dir)).toMatchObject({ origin: 'config', pending: 0 });
    emit('dd');
    await until('node delivery', () => node.got.length === 4);
    expect(seen(node).at(-1)).toBe(`${WALLET}:dd`);
    expect(own.got).toHaveLength(1);
    // The node's webhook is not the wallet's to remove.
    expect(h.remove(WALLET, dir)).toBe(false);
    expect(h.status(WALLET, dir).url).toBe(`http://127.0.0.1:${p1}/all`);

    // The receiver goes away with an event pending; the node restarts with another URL: it gets the event.
    await until('recorded', () => h.status(WALLET, dir).pending === 0);
    await node.close();
    emit('ee');
    await until('a failed attempt', () => h.status(WALLET, dir).failures > 0);
    await h.close();
    const moved = await receiver(p3);
    h = open({ defaultUrl: `http://127.0.0.1:${p3}/moved` });
    await h.start();
    await until('moved delivery', () => moved.got.length === 1);
    expect(seen(moved)).toEqual([`${WALLET}:ee`]);
    await until('recorded', () => h.status(WALLET, dir).pending === 0);

    // The setting removed: the node's webhook goes with it; a wallet's own stays.
    expect(await h.set(W2, dir2, `http://127.0.0.1:${p2}/mine`)).toBeUndefined();
    await h.close();
    h = open();
    await h.start();
    expect(h.status(WALLET, dir)).toMatchObject({ url: null, origin: null });
    expect(h.status(W2, dir2)).toMatchObject({ url: `http://127.0.0.1:${p2}/mine`, origin: 'wallet' });
    await moved.close();
    await own.close();
  });

  it('a configured URL with credentials or a refused scheme stops the start, naming the setting', async () => {
    await expect(open({ defaultUrl: 'https://user:pw@hooks.example/x' }).start()).rejects.toThrow(
      /^wallet\.webhook_url: .*credentials/,
    );
    await expect(open({ defaultUrl: 'ftp://hooks.example/x' }).start()).rejects.toThrow(
      /^wallet\.webhook_url: /,
    );
  });
});
