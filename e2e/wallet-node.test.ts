/**
 * The wallet node end to end, as a user runs it: a real `wallet-node` process (rgb-lib in its child
 * processes) on the devnet, driven only through HTTP with the SDK client. Two watch-only wallets; every
 * PSBT is signed outside the service. The service is restarted between steps and must lose nothing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt, WalletNodeClient, WalletNodeError } from '@rgbx/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchReplies } from './helpers/reply-schemas.ts';
import { type NodeProcess, startNode, stopWalletNodeSuite, writeNodeConfig } from './helpers/wallet-node.ts';

const T = 300_000;
let devnet: Devnet;
let dir: string;
let cfgFile: string;
let node: NodeProcess;
let keysA: Keys;
let keysB: Keys;
let A: WalletNodeClient;
let B: WalletNodeClient;
let assetId: string;
let sendTxid: string;
// Every reply the SDK reads from the node (whatever its port after a restart) is checked against its schema.
const replies = watchReplies(
  (u) => node !== undefined && u.port === new URL(node.url).port && !u.pathname.startsWith('/_swagger'),
);

const client = (k: Keys) =>
  new WalletNodeClient(node.url, {
    xpubVanilla: k.accountXpubVanilla,
    xpubColored: k.accountXpubColored,
    fingerprint: k.masterFingerprint,
  });

async function restart(): Promise<void> {
  expect(await node.stop()).toBe(0);
  node = await startNode(cfgFile);
  A = client(keysA);
  B = client(keysB);
}

async function post(
  path: string,
  headers: Record<string, string>,
  body?: string,
  contentType = 'application/json',
) {
  const res = await fetch(node.url + path, {
    method: 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': contentType }) },
    ...(body === undefined ? {} : { body }),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    text: await res.text(),
    headers: res.headers,
  };
}

/** Changes the last base58 character (always to a different one), breaking the checksum. */
const corruptLast = (s: string) => `${s.slice(0, -1)}${s.endsWith('x') ? 'y' : 'x'}`;

const hdrs = (k: Keys) => ({
  'xpub-van': k.accountXpubVanilla,
  'xpub-col': k.accountXpubColored,
  'master-fingerprint': k.masterFingerprint,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'wallet-node-e2e-'));
  devnet = await startDevnet({ dir: join(dir, 'devnet') });
  cfgFile = writeNodeConfig(dir, devnet.info, { witness_version: 'SegWitV0', workers: 2 });
  node = await startNode(cfgFile);
  keysA = await generateKeys('Regtest', 'SegWitV0');
  keysB = await generateKeys('Regtest', 'SegWitV0');
  A = client(keysA);
  B = client(keysB);
}, T);

afterAll(async () => {
  replies.restore();
  await stopWalletNodeSuite({ nodes: [node], devnet, root: dir });
});

describe('wallet node on the devnet', () => {
  it(
    'registers two watch-only wallets and refuses a known fingerprint with other xpubs',
    async () => {
      const ra = await A.register();
      expect(ra.address).toMatch(/^bcrt1q/);
      expect(ra.btc_balance).toEqual({
        vanilla: { settled: 0n, future: 0n, spendable: 0n },
        colored: { settled: 0n, future: 0n, spendable: 0n },
      });
      await B.register();
      const impostor = new WalletNodeClient(node.url, {
        xpubVanilla: keysB.accountXpubVanilla,
        xpubColored: keysB.accountXpubColored,
        fingerprint: keysA.masterFingerprint,
      });
      const err = (await impostor.listAssets().catch((e) => e)) as WalletNodeError;
      expect(err).toBeInstanceOf(WalletNodeError);
      expect(err.httpStatus).toBe(409);
      expect(err.code).toBe(1012);
      // The uppercase spelling of the same fingerprint is the same wallet.
      const upper = new WalletNodeClient(node.url, {
        xpubVanilla: keysA.accountXpubVanilla,
        xpubColored: keysA.accountXpubColored,
        fingerprint: keysA.masterFingerprint.toUpperCase(),
      });
      expect((await upper.listAssets()).nia).toEqual([]);
    },
    T,
  );

  it(
    'funds, creates UTXOs through begin → external signature → end, and survives a restart',
    async () => {
      for (const [c, k] of [
        [A, keysA],
        [B, keysB],
      ] as const) {
        await devnet.fund(await c.address(), '0.01', { confirm: true });
        expect((await c.btcBalance()).vanilla.settled).toBe(1_000_000n);
        const psbt = await c.createUtxosBegin({ num: 5, size: 1000, fee_rate: 2 });
        expect(typeof psbt).toBe('string');
        expect(await c.createUtxosEnd(signPsbt(psbt, k.mnemonic))).toBe(5);
      }
      await devnet.mine(1);
      const before = await A.btcBalance();
      expect(before.colored.settled).toBe(5000n);
      await restart();
      expect(await A.btcBalance()).toEqual(before);
      expect((await B.btcBalance()).colored.settled).toBe(5000n);
    },
    T,
  );

  it(
    'issues an NIA asset, blind-receives on B, sends from A and settles both sides',
    async () => {
      const asset = await A.issueAssetNia({
        ticker: 'TST',
        name: 'Test asset',
        precision: 0,
        amounts: [1000],
      });
      assetId = asset.asset_id;
      expect(asset).toMatchObject({ ticker: 'TST', name: 'Test asset', precision: 0, issued_supply: 1000n });
      expect(asset.balance.settled).toBe(1000n);
      await restart();
      expect((await A.assetBalance(assetId)).settled).toBe(1000n);

      // B does not know the asset yet (rgb-lib: AssetNotFound), so the invoice names no asset.
      const unknown = (await B.blindReceive({ asset_id: assetId, amount: 100 }).catch(
        (e) => e,
      )) as WalletNodeError;
      expect(unknown.httpStatus).toBe(404);
      expect(unknown.details.kind).toBe('AssetNotFound');
      const inv = await B.blindReceive({ amount: 100, duration_seconds: 3600, min_confirmations: 1 });
      expect(inv.invoice).toMatch(/^rgb:/);
      expect(inv.expiration_timestamp).toBeGreaterThan(Date.now() / 1000 + 3500);
      const psbt = await A.sendBegin({
        recipient_map: {
          [assetId]: [
            { recipient_id: inv.recipient_id, amount: 100, transport_endpoints: [devnet.info.proxy] },
          ],
        },
        fee_rate: 2,
        min_confirmations: 1,
        expiration_timestamp: inv.expiration_timestamp ?? undefined,
      });
      const sent = await A.sendEnd(signPsbt(psbt, keysA.mnemonic));
      expect(sent.txid).toMatch(/^[0-9a-f]{64}$/);
      sendTxid = sent.txid;
      let statuses: string[] = [];
      for (let i = 0; i < 15; i++) {
        await B.refresh();
        await A.refresh();
        const a = (await A.listTransfers(assetId)).find((t) => t.kind === 'Send');
        const b = await B.listTransfers(assetId).catch(() => []);
        const recv = b.find((t) => t.kind === 'ReceiveBlind');
        statuses = [a?.status ?? '?', recv?.status ?? '?'];
        if (statuses.every((s) => s === 'Settled')) break;
        await devnet.mine(1);
      }
      expect(statuses).toEqual(['Settled', 'Settled']);
    },
    T,
  );

  it(
    'reports balances, unspents, transactions and transfers that agree with what happened',
    async () => {
      await restart();
      expect(await A.assetBalance(assetId)).toEqual({ settled: 900n, future: 900n, spendable: 900n });
      expect(await B.assetBalance(assetId)).toEqual({ settled: 100n, future: 100n, spendable: 100n });
      const txs = await A.listTransactions();
      const send = txs.find((t) => t.txid === sendTxid);
      expect(send?.transaction_type).toBe('RgbSend');
      expect(send?.confirmation_time?.height).toBeGreaterThan(0);
      const feeFromChain = await devnet.rpc<{ fee: number }>('getrawtransaction', [sendTxid, 2]);
      expect(send?.fee).toBe(BigInt(Math.round(feeFromChain.fee * 1e8)));
      const unspentsB = await B.listUnspents();
      const holding = unspentsB.filter((u) => u.rgb_allocations.some((a) => a.asset_id === assetId));
      expect(holding).toHaveLength(1);
      expect(holding[0]!.rgb_allocations[0]).toMatchObject({
        asset_id: assetId,
        assignment: { Fungible: 100n },
        settled: true,
      });
      const transfersA = await A.listTransfers(assetId);
      expect(transfersA.map((t) => t.kind).sort()).toEqual(['Issuance', 'Send']);
      const assets = await B.listAssets();
      expect(assets.nia?.map((a) => a.asset_id)).toEqual([assetId]);
      const btcA = await A.btcBalance();
      expect(btcA.vanilla.settled + btcA.colored.settled).toBeLessThan(1_000_000n);
    },
    T,
  );

  it(
    'fails an expired receive with failtransfers, and drop then continue works',
    async () => {
      const inv = await B.blindReceive({ asset_id: assetId, amount: 5, duration_seconds: 1 });
      await new Promise((r) => setTimeout(r, 2100));
      // Paying the expired invoice is refused before rgb-lib (its recipient may fail the transfer now, the
      // assets sent with it lost); nothing is begun.
      const late = (await A.sendBegin({ invoice: inv.invoice, fee_rate: 2 }).catch(
        (e) => e,
      )) as WalletNodeError;
      expect([late.httpStatus, late.code]).toEqual([400, 1008]);
      expect(late.message).toMatch(/the invoice expired at/);
      expect(await A.listPendingBegins()).toEqual([]);
      expect(await B.failTransfers({})).toBe(true);
      const t = (await B.listTransfers(assetId)).find((x) => x.batch_transfer_idx === inv.batch_transfer_idx);
      expect(t?.status).toBe('Failed');
      expect(await B.failTransfers({})).toBe(false);
      // Failing a settled transfer is a conflict the client can see.
      const settled = (await B.listTransfers(assetId)).find((x) => x.status === 'Settled')!;
      const conflict = (await B.failTransfers({ batch_transfer_idx: settled.batch_transfer_idx }).catch(
        (e) => e,
      )) as WalletNodeError;
      expect(conflict.httpStatus).toBe(409);
      expect(conflict.code).toBe(1009);

      expect(await A.drop()).toBeNull();
      expect((await A.assetBalance(assetId)).settled).toBe(900n);
    },
    T,
  );

  it(
    'kills the child owning a wallet mid-call: only that call fails, the wallet reopens afterwards',
    async () => {
      const fpA = keysA.masterFingerprint.toLowerCase();
      const children = execFileSync('pgrep', ['-P', String(node.proc.pid)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map(Number);
      expect(children.length).toBe(2);
      // The child that owns A holds files inside A's wallet directory open.
      const ownerOf = (fp: string) =>
        children.find((pid) => {
          try {
            return readdirSync(`/proc/${pid}/fd`).some((fd) => {
              try {
                return readlinkSync(`/proc/${pid}/fd/${fd}`).includes(`/${fp}/`);
              } catch {
                return false;
              }
            });
          } catch {
            return false;
          }
        });
      await A.listAssets(); // make sure A is open
      await B.listAssets();
      const ownerA = ownerOf(fpA);
      const ownerB = ownerOf(keysB.masterFingerprint.toLowerCase());
      expect(ownerA).toBeDefined();
      expect(ownerB).toBeDefined();
      expect(ownerA).not.toBe(ownerB);
      // Hang the indexer so A's syncing call is in flight inside its child, then kill that child.
      const electrumPid = Number(
        JSON.parse(execFileSync('cat', [join(dir, 'devnet', 'devnet.json')], { encoding: 'utf8' })).pids
          .electrum,
      );
      process.kill(electrumPid, 'SIGSTOP');
      try {
        const inFlight = A.btcBalance().catch((e) => e);
        await new Promise((r) => setTimeout(r, 300));
        process.kill(ownerA!, 'SIGKILL');
        const err = (await inFlight) as WalletNodeError;
        expect(err).toBeInstanceOf(WalletNodeError);
        expect(err.httpStatus).toBe(500);
        expect(err.code).toBe(500);
        // B lives in the other child: unaffected.
        expect((await B.assetBalance(assetId)).settled).toBe(100n);
        const health = await fetch(`${node.url}/healthcheck`);
        expect(health.status).toBe(200);
      } finally {
        process.kill(electrumPid, 'SIGCONT');
      }
      // A reopens in a fresh child on its next call and nothing was lost.
      expect((await A.assetBalance(assetId)).settled).toBe(900n);
      expect((await A.btcBalance()).colored.settled).toBeGreaterThan(0n);
    },
    T,
  );
});

describe('errors', () => {
  it(
    'answers the spec 401 text, 400/422 envelopes and the deprecated alias',
    async () => {
      const r401 = await post('/wallet/listassets', { 'xpub-van': keysA.accountXpubVanilla });
      expect(r401.status).toBe(401);
      expect(r401.type).toMatch(/^text\/plain/);
      expect(r401.text).toBe('Missing xpub-van/xpub-col/master-fingerprint header');
      // headers are checked before the body
      expect((await post('/wallet/assetbalance', {}, '{bad')).status).toBe(401);

      const bad = await post('/wallet/listassets', {
        ...hdrs(keysA),
        'xpub-van': corruptLast(keysA.accountXpubVanilla),
      });
      expect(bad.status).toBe(400);
      expect(JSON.parse(bad.text).error).toMatchObject({ code: 1011, status: 'invalid_header' });
      const shortFp = await post('/wallet/listassets', { ...hdrs(keysA), 'master-fingerprint': 'zz' });
      expect(shortFp.status).toBe(400);
      expect(JSON.parse(shortFp.text).error).toEqual({
        code: 1011,
        status: 'invalid_header',
        message: 'invalid master-fingerprint header: expected 8 hex characters, got "zz"',
        details: {},
      });

      for (const body of ['{bad json', '{"asset_id": 5}', '{}', '[]']) {
        const r = await post('/wallet/assetbalance', hdrs(keysA), body);
        expect(r.status).toBe(422);
        const e = JSON.parse(r.text).error;
        expect(e).toMatchObject({ code: 1001, status: 'bad_input', message: 'invalid json format' });
        expect(typeof e.details.body).toBe('string');
      }
      const nf = await post('/wallet/assetbalance', hdrs(keysA), JSON.stringify({ asset_id: 'rgb:nope' }));
      expect(nf.status).toBe(404);
      expect(JSON.parse(nf.text).error).toMatchObject({
        code: 1000,
        status: 'not_found',
        message: 'asset not found',
        details: { kind: 'AssetNotFound' },
      });

      const alias = await post(
        '/blindreceive',
        hdrs(keysB),
        JSON.stringify({ amount: 1, duration_seconds: 600 }),
      );
      expect(alias.status).toBe(200);
      expect(alias.headers.get('deprecation')).toBe('true');
      expect(JSON.parse(alias.text).invoice).toMatch(/^rgb:/);

      // B has free allocation slots on its colored UTXOs: the issuance succeeds.
      const issued = await post(
        '/wallet/issueassetnia',
        hdrs(keysB),
        JSON.stringify({ ticker: 'X', name: 'X', amounts: [1] }),
      );
      expect(issued.status).toBe(200);
      expect(JSON.parse(issued.text)).toMatchObject({
        ticker: 'X',
        name: 'X',
        precision: 0,
        issued_supply: 1,
      });
      // A wallet with no UTXOs has no slot to put the issuance on.
      const empty = hdrs(await generateKeys('Regtest', 'SegWitV0'));
      const unregistered = await post(
        '/wallet/issueassetnia',
        empty,
        JSON.stringify({ ticker: 'X', name: 'X', amounts: [1] }),
      );
      expect([unregistered.status, JSON.parse(unregistered.text).error.code]).toEqual([404, 1015]);
      expect((await post('/wallet/register', empty)).status).toBe(200);
      const noUtxos = await post(
        '/wallet/issueassetnia',
        empty,
        JSON.stringify({ ticker: 'X', name: 'X', amounts: [1] }),
      );
      expect(noUtxos.status).toBe(400);
      expect(JSON.parse(noUtxos.text).error).toMatchObject({
        code: 1004,
        status: 'not_enough_utxos',
        details: { kind: 'InsufficientAllocationSlots' },
      });
      const fee = await post('/wallet/createutxosbegin', hdrs(keysB), JSON.stringify({ fee_rate: 0 }));
      expect(fee.status).toBe(422); // schema minimum 1
      expect(JSON.parse(fee.text).error).toMatchObject({ code: 1001, status: 'bad_input' });
    },
    T,
  );

  it(
    'keeps u64 values above 2^53 exact in requests',
    async () => {
      const big = '18446744073709551615';
      const r = await post(
        '/wallet/blindreceive',
        hdrs(keysB),
        `{"amount": ${big}, "duration_seconds": 600}`,
      );
      expect(r.status).toBe(200);
      const over = await post('/wallet/blindreceive', hdrs(keysB), '{"amount": 18446744073709551616}');
      expect(over.status).toBe(422);
      expect(JSON.parse(over.text).error.details.body).toMatch(/at most 18446744073709551615/);
    },
    T,
  );

  it(
    'serves the OpenAPI document and Swagger UI',
    async () => {
      const yaml = await (await fetch(`${node.url}/_swagger/swagger.yaml`)).text();
      for (const p of [
        '/wallet/register',
        '/wallet/sendbegin',
        '/blindreceive',
        '/healthcheck',
        '/version',
        'WalletErrorEnvelope',
      ]) {
        expect(yaml).toContain(p);
      }
      expect((await fetch(`${node.url}/_swagger`)).status).toBe(200);
    },
    T,
  );

  it('answered every call with a reply its route’s response schema accepts', () => {
    expect(replies.count()).toBeGreaterThan(40);
    expect(replies.problems()).toEqual([]);
  });
});
