/**
 * Wallet events in a real browser (issue 27 §2): a wallet application on another origin reads the wallet node's
 * `GET /wallet/events` with `new EventSource(url)` in headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core), the identity in the query (`xpub_van`, `xpub_col`, `master_fingerprint`: EventSource cannot
 * send headers). The node is the built one, as a process, on the devnet (real bitcoind, our Electrum server and
 * proxy), with CORS allowing one origin (`api.enable_cors`, `api.cors_domain`). Two tiny static servers on
 * 127.0.0.1 serve the same page: one on the allowed origin, one on an origin that is not allowed.
 *
 * The wallet then does real things that produce events: a `createutxosbegin` it aborts (`begin_released`), then
 * UTXOs made and confirmed and an NIA asset issued (`transfer` Issuance Settled, `balance`). The allowed page
 * gets exactly those three events, ids 1, 2, 3, with the wallet's values; the other page's EventSource fails on
 * CORS (Chromium says so) and gets nothing. Then the browser's connection is cut (a TCP relay between the browser
 * and the node, the only way the browser reaches it) and a second asset is issued while it cannot reconnect; once
 * it can, its EventSource reconnects by itself with `Last-Event-ID: 3` (Chromium sends that header cross-origin
 * without a preflight) and gets exactly events 4 and 5, nothing twice.
 *
 * Chromium comes from `scripts/install-test-tools.sh` (run by CI before the tests). When it is missing the file is
 * skipped locally with a warning, but FAILS when `CI` is set (as apps/cloud/src/console.test.ts).
 *
 * Needs the build output (`npx tsc -b`).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, createConnection, createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { closeDefaultHost, generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt, type WalletNodeClient } from '@rgbx/sdk';
import { WalletNodeConfig } from '@rgbx/wallet-node';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mineAndSync } from './helpers/rgb.ts';
import { type NodeProcess, startNode, walletClient, writeNodeConfig } from './helpers/wallet-node.ts';

const CHROMIUM = process.env.RGBX_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
/** CI systems set `CI` (to `true` or `1`); there a missing browser is a failure, not a skip. */
const IN_CI = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI.toLowerCase());
const MISSING = `${CHROMIUM} is missing. Install it with \`bash scripts/install-test-tools.sh\` (apt-get install chromium)`;
if (!HAVE_CHROMIUM && !IN_CI) {
  console.warn(
    `\n!!! wallet-node.events.browser.test.ts SKIPPED (CI is not set): ${MISSING} to run the browser test.\n`,
  );
}
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];
const T = 300_000;

/**
 * The wallet application's page: opens the EventSource named by `?src=` and keeps what it sees on `window.seen`
 * (every event of each type the node sends, with the SSE `lastEventId`; open and error callbacks).
 */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>wallet app</title></head><body>
<script>
  const seen = { opened: 0, errors: [], events: [] };
  window.seen = seen;
  const es = new EventSource(new URLSearchParams(location.search).get('src'));
  es.onopen = () => { seen.opened++; };
  es.onerror = () => { seen.errors.push(es.readyState); };
  es.onmessage = (e) => { seen.events.push({ event: 'message', lastEventId: e.lastEventId, data: e.data }); };
  for (const type of ['transfer', 'balance', 'begin_released', 'reset'])
    es.addEventListener(type, (e) => seen.events.push({ event: type, lastEventId: e.lastEventId, data: JSON.parse(e.data) }));
</script>
</body></html>
`;

interface Seen {
  opened: number;
  errors: number[];
  events: Array<{ event: string; lastEventId: string; data: Record<string, unknown> }>;
}

/** A static server on 127.0.0.1 (its own port, so its own origin) serving {@link PAGE} at `/`. */
async function pageServer(): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/?') || req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(PAGE);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const closeServer = (s: Server | undefined) =>
  new Promise<void>((resolve) => {
    if (!s) return resolve();
    s.closeAllConnections();
    s.close(() => resolve());
  });

/**
 * A TCP relay to `target` on 127.0.0.1 (the browser's way to the node): `cut()` drops every connection and refuses
 * new ones (closed at once) until `restore()`.
 */
async function tcpRelay(target: URL) {
  let open = true;
  const sockets = new Set<Socket>();
  const server = createTcpServer((c) => {
    if (!open) return void c.destroy();
    const up = createConnection(Number(target.port), target.hostname);
    for (const s of [c, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        c.destroy();
        up.destroy();
      });
    }
    c.pipe(up).pipe(c);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      open = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const seenOn = (page: Page) => page.evaluate(() => (globalThis as unknown as { seen: Seen }).seen);

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)(
  'wallet events in a browser on another origin (headless Chromium)',
  () => {
    let devnet: Devnet;
    let root: string;
    let node: NodeProcess;
    let browser: Browser;
    let allowed: { origin: string; server: Server };
    let other: { origin: string; server: Server };
    let relay: Awaited<ReturnType<typeof tcpRelay>>;
    let A: Keys;
    let W: WalletNodeClient;

    beforeAll(async () => {
      if (!HAVE_CHROMIUM) throw new Error(`browser events test cannot run in CI: ${MISSING}`);
      root = mkdtempSync(join(tmpdir(), 'wallet-node-events-browser-'));
      allowed = await pageServer();
      other = await pageServer();
      devnet = await startDevnet({ dir: join(root, 'devnet') });
      // No background refresh: every event comes from the calls below (source `call` / `abortbegin`).
      const cfg = writeNodeConfig(root, devnet.info, {
        workers: 1,
        refresh_interval_secs: 0,
        'api.enable_cors': true,
        'api.cors_domain': allowed.origin,
      });
      // Metrics on a port of their own would collide between parallel tests: any free port, once the node has them
      // (unless the helper already wrote the table).
      if ('metrics' in WalletNodeConfig.properties && !/^\[metrics\]/m.test(readFileSync(cfg, 'utf8')))
        writeFileSync(cfg, `${readFileSync(cfg, 'utf8')}\n[metrics]\nport = 0\n`);
      node = await startNode(cfg);
      relay = await tcpRelay(new URL(node.url));
      A = await generateKeys('Regtest', 'Taproot');
      W = walletClient(node.url, A);
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    }, T);

    afterAll(async () => {
      try {
        await browser?.close();
        await relay?.close();
        await node?.stop();
      } finally {
        await closeDefaultHost();
        await devnet?.stop();
        await closeServer(allowed?.server);
        await closeServer(other?.server);
        if (root) rmSync(root, { recursive: true, force: true });
      }
    });

    it(
      'the allowed origin receives begin_released, transfer and balance with the wallet values and resumes after a cut by Last-Event-ID; another origin is refused by CORS and receives nothing',
      async () => {
        await W.register();
        // The pages reach the node through the relay (another port of 127.0.0.1: still another origin).
        const src = `${relay.url}/wallet/events?${new URLSearchParams({
          xpub_van: A.accountXpubVanilla,
          xpub_col: A.accountXpubColored,
          master_fingerprint: A.masterFingerprint,
        })}`;
        const open = async (origin: string) => {
          const page = await browser.newPage();
          const consoleLines: string[] = [];
          page.on('console', (m) => consoleLines.push(m.text()));
          const streamHeaders: Array<Record<string, string>> = [];
          page.on('response', (r) => {
            if (r.url().startsWith(`${relay.url}/wallet/events`)) streamHeaders.push(r.headers());
          });
          const lastEventIds: Array<string | undefined> = [];
          page.on('request', (r) => {
            if (r.url().startsWith(`${relay.url}/wallet/events`) && r.method() === 'GET')
              void r.allHeaders().then((h) => lastEventIds.push(h['last-event-id']));
          });
          const res = await page.goto(`${origin}/?${new URLSearchParams({ src })}`);
          expect(res?.status()).toBe(200);
          return { page, consoleLines, streamHeaders, lastEventIds };
        };
        const good = await open(allowed.origin);
        const bad = await open(other.origin);
        await good.page.waitForFunction(() => (globalThis as unknown as { seen: Seen }).seen.opened === 1);
        // The refused EventSource is failed for good (readyState CLOSED = 2), not retried.
        await bad.page.waitForFunction(() =>
          (globalThis as unknown as { seen: Seen }).seen.errors.includes(2),
        );
        expect(good.streamHeaders[0]).toMatchObject({
          'access-control-allow-origin': allowed.origin,
          'access-control-allow-credentials': 'true',
          'content-type': 'text/event-stream; charset=utf-8',
        });

        // 1. A begin, aborted: its TXOs released.
        await devnet.fund(await W.address(), '0.01', { confirm: true });
        const aborted = await W.abortBegin({ psbt: await W.createUtxosBegin({ num: 2, fee_rate: 2 }) });
        expect(aborted.released.length).toBeGreaterThan(0);
        // 2. UTXOs made and confirmed, an asset issued: its issuance transfer and its balance.
        await W.createUtxosEnd(signPsbt(await W.createUtxosBegin({ num: 2, fee_rate: 2 }), A.mnemonic));
        await mineAndSync(devnet);
        const asset = await W.issueAssetNia({
          ticker: 'WEB',
          name: 'browser',
          precision: 0,
          amounts: [1000],
        });
        const issuances = await W.listTransfers(asset.asset_id);
        expect(issuances.map((t) => [t.kind, t.status])).toEqual([['Issuance', 'Settled']]);
        const issuance = issuances[0]!;

        await good.page.waitForFunction(
          () => (globalThis as unknown as { seen: Seen }).seen.events.length >= 3,
          null,
          { timeout: 30_000 },
        );
        await new Promise((r) => setTimeout(r, 1000)); // anything more (or anything on the refused page) shows now
        const got = await seenOn(good.page);
        console.info(
          'the allowed page received:',
          got.events.map((e) => `${e.lastEventId} ${e.event} ${JSON.stringify(e.data)}`).join('\n'),
        );
        const common = { wallet: A.masterFingerprint };
        expect(got.events).toEqual([
          {
            event: 'begin_released',
            lastEventId: '1',
            data: {
              ...common,
              id: 1,
              at: expect.any(String),
              source: 'abortbegin',
              type: 'begin_released',
              reason: 'aborted',
              txid: aborted.txid,
              released: aborted.released,
              failed_batch_transfer_idx: null,
            },
          },
          {
            event: 'transfer',
            lastEventId: '2',
            data: {
              ...common,
              id: 2,
              at: expect.any(String),
              source: 'call',
              type: 'transfer',
              idx: issuance.idx,
              batch_transfer_idx: issuance.batch_transfer_idx,
              asset_id: asset.asset_id,
              kind: 'Issuance',
              old_status: null,
              new_status: 'Settled',
              txid: null,
              recipient_id: null,
              requested_amount: null,
              amount: '1000',
            },
          },
          {
            event: 'balance',
            lastEventId: '3',
            data: {
              ...common,
              id: 3,
              at: expect.any(String),
              source: 'call',
              type: 'balance',
              asset_id: asset.asset_id,
              old: null,
              new: { settled: '1000', future: '1000', spendable: '1000' },
            },
          },
        ]);
        // Ids increase by one, and the times do not go back.
        const ats = got.events.map((e) => Date.parse(e.data.at as string));
        for (let i = 1; i < ats.length; i++) expect(ats[i]).toBeGreaterThanOrEqual(ats[i - 1]!);
        expect(got.opened).toBe(1);
        expect(got.errors).toEqual([]);

        // The other origin: refused by CORS (not a network failure), never opened, no event.
        const refused = await seenOn(bad.page);
        expect(refused).toEqual({ opened: 0, errors: [2], events: [] });
        expect(bad.consoleLines).toContain(
          `Access to resource at '${src}' from origin '${other.origin}' has been blocked by CORS policy: ` +
            `The 'Access-Control-Allow-Origin' header has a value '${allowed.origin}' that is not equal to the supplied origin.`,
        );

        // The browser's connection is cut; a second asset is issued while it cannot reconnect (events 4 and 5:
        // the node has them before the relay lets the browser through again).
        relay.cut();
        await good.page.waitForFunction(
          () => (globalThis as unknown as { seen: Seen }).seen.errors.length > 0,
        );
        const second = await W.issueAssetNia({ ticker: 'TWO', name: 'second', precision: 0, amounts: [7] });
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), 30_000);
        const logged: string[] = [];
        for await (const ev of W.events({ lastEventId: '3', signal: ac.signal })) {
          logged.push(`${ev.id} ${ev.type}`);
          if (logged.length === 2) break;
        }
        clearTimeout(timer);
        ac.abort();
        expect(logged).toEqual(['4 transfer', '5 balance']);
        const [secondIssuance] = await W.listTransfers(second.asset_id);
        relay.restore();
        await good.page.waitForFunction(
          () => (globalThis as unknown as { seen: Seen }).seen.events.length >= 5,
          null,
          { timeout: 30_000 },
        );
        await new Promise((r) => setTimeout(r, 1000)); // a duplicate or anything more would show now
        const resumed = await seenOn(good.page);
        console.info(
          'after the cut, the allowed page received:',
          resumed.events
            .slice(3)
            .map((e) => `${e.lastEventId} ${e.event} ${JSON.stringify(e.data)}`)
            .join('\n'),
        );
        expect(resumed.events.map((e) => e.lastEventId)).toEqual(['1', '2', '3', '4', '5']);
        expect(resumed.events.slice(3)).toEqual([
          {
            event: 'transfer',
            lastEventId: '4',
            data: {
              ...common,
              id: 4,
              at: expect.any(String),
              source: 'call',
              type: 'transfer',
              idx: secondIssuance!.idx,
              batch_transfer_idx: secondIssuance!.batch_transfer_idx,
              asset_id: second.asset_id,
              kind: 'Issuance',
              old_status: null,
              new_status: 'Settled',
              txid: null,
              recipient_id: null,
              requested_amount: null,
              amount: '7',
            },
          },
          {
            event: 'balance',
            lastEventId: '5',
            data: {
              ...common,
              id: 5,
              at: expect.any(String),
              source: 'call',
              type: 'balance',
              asset_id: second.asset_id,
              old: null,
              new: { settled: '7', future: '7', spendable: '7' },
            },
          },
        ]);
        // It reconnected by itself (open twice), and the stream that delivered 4 and 5 was asked from after 3.
        expect(resumed.opened).toBe(2);
        expect(good.lastEventIds[0]).toBeUndefined();
        expect(good.lastEventIds.at(-1)).toBe('3');
        expect(good.streamHeaders.at(-1)).toMatchObject({ 'access-control-allow-origin': allowed.origin });
        // The refused page stayed refused: nothing later either.
        expect(await seenOn(bad.page)).toEqual({ opened: 0, errors: [2], events: [] });
      },
      T,
    );
  },
);
