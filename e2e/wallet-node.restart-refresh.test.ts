/**
 * Transfers keep moving after a restart, with no client call (issue 24 §3), on the devnet (real bitcoind, our
 * Electrum server and proxy, the built node). Wallet A sends an NIA asset to wallet B's witness invoice; the node
 * is stopped right after `sendend` answered (SIGTERM; then, for a second transfer, kill -9), blocks are mined,
 * the node starts again on the same data dir and NO call is made for A or B: the node's own background refresh
 * must find both wallets (their transfers are in flight on disk), let B take the consignment and ACK it, let A
 * broadcast, and see the confirmations. Only once the test has waited (mining a block every ~2 s, reading the
 * node's log) does it read the transfers, with `listtransfers` (offline: it moves nothing itself).
 *
 * Wallet B is set up the BTCPay plugin's way: its keys come from the node's `generate_keys` (the plugin's recorded
 * request, replayed), and it signs its own UTXO creation with the mnemonic it got. Each payment is then read as the
 * plugin's invoice listener reads it (its recorded `listtransfers`, `Status == 2 && Kind is 1 or 2`, the invoice's
 * recipient_id, `Amount`): the plugin would record it.
 *
 * Needs the build output (`npx tsc -b`).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixture, replay } from './helpers/client-requests.ts';
import { eventually, mineAndSync } from './helpers/rgb.ts';
import {
  type NodeProcess,
  startNode,
  stopWalletNodeSuite,
  walletClient,
  writeNodeConfig,
} from './helpers/wallet-node.ts';

const T = 400_000;
/** How long the node alone gets to settle a transfer after its restart. */
const SETTLE_BUDGET_MS = 120_000;
let devnet: Devnet;
let root: string;
let cfgFile: string;
let node: NodeProcess;
/** The whole stderr of the current node process (the helper keeps only its tail). */
let log = '';
let A: Keys;
let B: Keys;
let assetId: string;

const client = (k: Keys) => walletClient(node.url, k);
const pluginHeaders = (k: Keys) => ({
  'xpub-van': k.accountXpubVanilla,
  'xpub-col': k.accountXpubColored,
  'master-fingerprint': k.masterFingerprint,
});

async function start(): Promise<void> {
  node = await startNode(cfgFile);
  log = node.stderr();
  node.proc.stderr!.on('data', (d: Buffer) => {
    log += d.toString('utf8');
  });
}

/** Log lines of the current node, parsed. */
function lines(): Array<Record<string, unknown>> {
  return log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Requests the current node has answered (its access log): the test asserts none was for A or B. */
const requestsSeen = () => lines().filter((l) => l.msg === 'request completed');

const isSettled = (s: unknown) => s === 'Settled' || s === 2;
const isFailed = (s: unknown) => s === 'Failed' || s === 3;

interface Sent {
  txid: string;
  recipientId: string;
}

/**
 * A's send and B's receive of this transfer, as rgb-lib has them (listtransfers reads, it never refreshes). B's
 * is looked for among all its transfers: before its consignment arrives, B does not know the asset.
 */
async function states(t: Sent): Promise<{ send: unknown; receive: unknown }> {
  const sent = (await client(A).listTransfers(assetId)).filter(
    (tr) => tr.txid === t.txid && !isFailed(tr.status),
  );
  const got = (await client(B).listTransfers()).filter((tr) => tr.recipient_id === t.recipientId);
  return { send: sent[0]?.status, receive: got[0]?.status };
}

/**
 * Starts a transfer A → B (B's witness invoice) and stops the node right after `sendend` answered, the way
 * `how` says; returns the transfer's txid.
 */
async function sendThenStop(amount: number, how: 'SIGTERM' | 'SIGKILL'): Promise<Sent> {
  const inv = await client(B).witnessReceive({ amount });
  const psbt = await client(A).sendBegin({
    recipient_map: {
      [assetId]: [
        {
          recipient_id: inv.recipient_id,
          witness_data: { amount_sat: 1000 },
          amount,
          transport_endpoints: [devnet.info.proxy],
        },
      ],
    },
    fee_rate: 2,
  });
  const { txid } = await client(A).sendEnd(signPsbt(psbt, A.mnemonic));
  if (how === 'SIGTERM') expect(await node.stop('SIGTERM')).toBe(0);
  else {
    node.proc.kill('SIGKILL');
    await new Promise((r) => node.proc.once('exit', r));
  }
  return { txid, recipientId: inv.recipient_id };
}

/**
 * After a restart: mines a block every ~2 s while the node works alone, until its log says both wallets have
 * nothing in flight any more (or the budget is spent); returns the seconds from the restart to that line.
 */
async function waitForBackgroundSettlement(restartedAt: number): Promise<number | null> {
  const done = (fp: string) =>
    lines().find((l) => l.msg === 'background refresh: no transfer in flight' && l.wallet === fp);
  const deadline = Date.now() + SETTLE_BUDGET_MS;
  while (Date.now() < deadline) {
    const a = done(A.masterFingerprint);
    const b = done(B.masterFingerprint);
    if (a && b) return (Math.max(Number(a.time), Number(b.time)) - restartedAt) / 1000;
    await mineAndSync(devnet);
    await new Promise((r) => setTimeout(r, 2000));
  }
  return null;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-node-restart-'));
  devnet = await startDevnet({ dir: join(root, 'devnet') });
  // The default refresh interval (10 s) is kept short so the test is quick; everything else is the default.
  cfgFile = writeNodeConfig(root, devnet.info, {
    workers: 2,
    refresh_interval_secs: 2,
    allow_generate_keys: true,
  });
  await start();
  A = await generateKeys('Regtest', 'Taproot');
  // B: the BTCPay plugin's setup, its recorded request (no headers, no body) replayed.
  const gk = await replay(node.url, fixture('btcpay', 'generate_keys'), null);
  expect(gk.status).toBe(200);
  const k = gk.json as Record<string, string>;
  B = {
    mnemonic: k.mnemonic!,
    xpub: k.xpub!,
    accountXpubVanilla: k.account_xpub_vanilla!,
    accountXpubColored: k.account_xpub_colored!,
    masterFingerprint: k.master_fingerprint!,
    witnessVersion: 'Taproot',
  };
}, T);

afterAll(() => stopWalletNodeSuite({ nodes: [node], devnet, root }));

it(
  'a node restarted right after sendend (SIGTERM, then kill -9) settles both sides with no client call',
  async () => {
    const a = client(A);
    const b = client(B);
    await a.register();
    await b.register();
    await devnet.fund(await a.address(), '0.01');
    await devnet.fund(await b.address(), '0.01', { confirm: true });
    expect(
      await a.createUtxosEnd(signPsbt(await a.createUtxosBegin({ num: 5, fee_rate: 2 }), A.mnemonic)),
    ).toBe(5);
    // B signs with the mnemonic the node generated for it: those keys are the wallet's.
    expect(
      await b.createUtxosEnd(signPsbt(await b.createUtxosBegin({ num: 1, fee_rate: 2 }), B.mnemonic)),
    ).toBe(1);
    await mineAndSync(devnet);
    assetId = (await a.issueAssetNia({ ticker: 'RST', name: 'restart', precision: 0, amounts: [1000] }))
      .asset_id;

    const measured: Record<string, number | null> = {};
    for (const [how, amount] of [
      ['SIGTERM', 300],
      ['SIGKILL', 200],
    ] as const) {
      const sent = await sendThenStop(amount, how);
      await mineAndSync(devnet, 2);
      const restartedAt = Date.now();
      await start();
      measured[how] = await waitForBackgroundSettlement(restartedAt);
      console.info(`after ${how}: ${measured[how]} s`);
      // Nothing was asked of the node for A or B since it started (the access log lists every request).
      expect(requestsSeen()).toEqual([]);
      // Now read (offline: listtransfers never refreshes) what the node did by itself.
      const s = await states(sent);
      expect(
        { send: isSettled(s.send), receive: isSettled(s.receive) },
        `after ${how}: ${JSON.stringify(s)}\n${log.slice(-3000)}`,
      ).toEqual({ send: true, receive: true });
      // The plugin's invoice listener (RGBInvoiceListener.cs) polls its recorded listtransfers and records the
      // payment of an invoice from `Status == 2 && Kind is 1 or 2` with a matching recipient_id, for `Amount`.
      const listed = await replay(node.url, fixture('btcpay', 'listtransfers'), pluginHeaders(B), {
        ASSET_ID: assetId,
      });
      expect(listed.status).toBe(200);
      const paid = (listed.json as Array<Record<string, unknown>>).filter(
        (t) => t.status === 2 && (t.kind === 1 || t.kind === 2) && t.recipient_id === sent.recipientId,
      );
      expect(paid.map((t) => t.amount)).toEqual([amount]);
      expect(measured[how], `after ${how}`).not.toBeNull();
    }
    expect((await client(A).assetBalance(assetId)).settled).toBe(500n);
    expect((await client(B).assetBalance(assetId)).settled).toBe(500n);
    console.info(`restart → both sides Settled, no client call: ${JSON.stringify(measured)} s`);
  },
  T,
);

it(
  'a restart on a data dir from before the index looks at every wallet once, at most one per child at a time, and unmarks the idle ones',
  async () => {
    // Six more wallets, nothing in flight in any of the eight.
    const more = await Promise.all(Array.from({ length: 6 }, () => generateKeys('Regtest', 'Taproot')));
    for (const k of more) await client(k).register();
    expect(await node.stop('SIGTERM')).toBe(0);
    // The data dir as a node from before the index left it.
    rmSync(join(root, 'data', '.in-flight'), { recursive: true, force: true });
    const t0 = Date.now();
    await start();
    const all = [A, B, ...more].map((k) => k.masterFingerprint).sort();
    expect(
      lines().find((l) => l.msg === 'background refresh: wallets marked with transfers in flight'),
    ).toMatchObject({ wallets: 8, indexed_now: 8 });
    const unmarked = () =>
      lines()
        .filter((l) => l.msg === 'background refresh: no transfer in flight')
        .map((l) => String(l.wallet));
    await eventually('every wallet looked at and unmarked', async () => unmarked().length >= 8, 60_000);
    console.info(`8 wallets looked at and unmarked ${(Date.now() - t0) / 1000} s after the restart`);
    expect(unmarked().sort()).toEqual(all);
    const resumed = lines().filter(
      (l) => l.msg === 'background refresh: resuming a wallet with transfers in flight',
    );
    expect(resumed.map((l) => String(l.wallet)).sort()).toEqual(all);
    // workers = 2: never more than two opened by the background at once.
    expect(Math.max(...resumed.map((l) => Number(l.opened_by_background)))).toBeLessThanOrEqual(2);
    expect(readdirSync(join(root, 'data', '.in-flight'))).toEqual([]);
    expect(requestsSeen()).toEqual([]);
  },
  T,
);
