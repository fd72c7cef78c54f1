/**
 * Begins that are never ended, on the devnet (real bitcoind, our Electrum server and proxy, the built wallet
 * node). rgb-lib reserves the vanilla TXOs a `createutxosbegin`/`sendbegin` spends until its end broadcasts
 * them, and an RGB send's batch transfer stays Initiated: an abandoned begin locked the whole vanilla balance
 * for good. Proves: the lock survives refresh, failtransfers, drop, a block and a restart (so the release is
 * ours, not incidental); `/wallet/abortbegin` releases it (balance spendable again, an RGB send's transfer
 * Failed and its asset spendable), refuses an unknown or already released begin (409 1009); the node releases
 * a begin by itself `begin_ttl_secs` after it was served.
 *
 * Needs the build output (`npx tsc -b`).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt, type WalletNodeClient, WalletNodeError } from '@rgbx/sdk';
import { Transaction } from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mineAndSync } from './helpers/rgb.ts';
import {
  type NodeProcess,
  startNode,
  stopWalletNodeSuite,
  walletClient,
  writeNodeConfig,
} from './helpers/wallet-node.ts';

const T = 300_000;
let devnet: Devnet;
let root: string;
let node: NodeProcess;
let cfgFile: string;
let A: Keys;
let B: Keys;
let WA: WalletNodeClient;
let WB: WalletNodeClient;

const client = (k: Keys) => walletClient(node.url, k);
const txidOf = (psbt: string) =>
  Transaction.fromPSBT(Buffer.from(psbt, 'base64'), { allowUnknownOutputs: true }).id;
const inputsOf = (psbt: string) => {
  const tx = Transaction.fromPSBT(Buffer.from(psbt, 'base64'), { allowUnknownOutputs: true });
  return Array.from({ length: tx.inputsLength }, (_, i) => {
    const inp = tx.getInput(i);
    return `${Buffer.from(inp.txid as Uint8Array).toString('hex')}:${inp.index}`;
  }).sort();
};

async function restart(extra: Record<string, number> = {}): Promise<void> {
  await node.stop();
  cfgFile = writeNodeConfig(join(root, 'node'), devnet.info, { workers: 1, begin_ttl_secs: 0, ...extra });
  node = await startNode(cfgFile);
  WA = client(A);
  WB = client(B);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-node-begins-'));
  devnet = await startDevnet({ dir: join(root, 'devnet') });
  mkdirSync(join(root, 'node'));
  // Automatic release off for the explicit part; turned on (2 s) for the last test.
  cfgFile = writeNodeConfig(join(root, 'node'), devnet.info, { workers: 1, begin_ttl_secs: 0 });
  node = await startNode(cfgFile);
  A = await generateKeys('Regtest', 'Taproot');
  B = await generateKeys('Regtest', 'Taproot');
  WA = client(A);
  WB = client(B);
}, T);

afterAll(() => stopWalletNodeSuite({ nodes: [node], devnet, root }));

describe('abandoned begins', () => {
  let funded = 0n;

  it(
    'an abandoned createutxosbegin holds the vanilla balance through refresh, failtransfers, drop, a block and a restart',
    async () => {
      await WA.register();
      await WB.register();
      await devnet.fund(await WA.address(), '0.01', { confirm: true });
      funded = (await WA.btcBalance()).vanilla.spendable;
      expect(funded).toBe(1_000_000n);

      const psbt = await WA.createUtxosBegin({ num: 2, size: 1000, fee_rate: 2 });
      const held = (await WA.btcBalance()).vanilla.spendable;
      expect(held).toBe(0n); // its one input was the whole balance
      const pending = await WA.listPendingBegins();
      expect(pending).toEqual([
        {
          txid: txidOf(psbt),
          kind: 'CreateUtxos',
          outpoints: inputsOf(psbt),
          since: expect.any(Number),
          expires_at: null,
          batch_transfer_idx: null,
        },
      ]);

      await WA.refresh();
      await WA.failTransfers({});
      await WA.drop();
      await mineAndSync(devnet);
      await restart();
      expect((await WA.btcBalance()).vanilla.spendable).toBe(0n);
      expect((await WA.listPendingBegins()).map((p) => p.txid)).toEqual([txidOf(psbt)]);

      // Released by an explicit call, named by the PSBT.
      const r = await WA.abortBegin({ psbt });
      expect(r).toEqual({ txid: txidOf(psbt), released: inputsOf(psbt), failed_batch_transfer_idx: null });
      expect((await WA.btcBalance()).vanilla.spendable).toBe(funded);
      expect(await WA.listPendingBegins()).toEqual([]);
      // A second release, or one of a txid never made here: 409 conflict, nothing changes.
      for (const begin of [{ psbt }, { txid: '00'.repeat(32) }]) {
        const err = await WA.abortBegin(begin).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(WalletNodeError);
        expect(err).toMatchObject({
          httpStatus: 409,
          code: 1009,
          details: { kind: 'CannotAbortPendingVanillaTx' },
        });
      }
      expect((await WA.btcBalance()).vanilla.spendable).toBe(funded);
      // Releasing frees the inputs for other begins; it does not revoke the signed transaction: an end that
      // still comes (its inputs unspent) broadcasts it. (Had another transaction spent them, the broadcast fails.)
      expect(await WA.createUtxosEnd(signPsbt(psbt, A.mnemonic))).toBe(2);
      await mineAndSync(devnet);
      // The funds are usable: a new begin → signature → end creates the UTXOs.
      const again = await WA.createUtxosBegin({ num: 3, size: 1000, fee_rate: 2 });
      expect(await WA.createUtxosEnd(signPsbt(again, A.mnemonic))).toBe(3);
      expect(await WA.listPendingBegins()).toEqual([]);
      await mineAndSync(devnet);
    },
    T,
  );

  it(
    'an abandoned RGB sendbegin: abortbegin fails its batch transfer and frees the asset and the TXOs',
    async () => {
      const asset = await WA.issueAssetNia({
        ticker: 'ABND',
        name: 'abandoned',
        precision: 0,
        amounts: [500],
      });
      const inv = await WB.witnessReceive({ amount: 100 }); // B does not know the asset yet
      /** A's sendbegin of 100 to B's invoice through `endpoint` (optionally expiring at `expiry`, unix s). */
      const sendTo = (endpoint: string, expiry?: number) =>
        WA.sendBegin({
          recipient_map: {
            [asset.asset_id]: [
              {
                recipient_id: inv.recipient_id,
                witness_data: { amount_sat: 1000 },
                amount: 100,
                transport_endpoints: [endpoint],
              },
            ],
          },
          fee_rate: 2,
          ...(expiry === undefined ? {} : { expiration_timestamp: expiry }),
        });
      // Transport endpoints into the node's own network (a cloud metadata address; a loopback listener that
      // is not the node's proxy): refused before rgb-lib connects anywhere, nothing begun.
      let connections = 0;
      const listener = createServer((sock) => {
        connections++;
        sock.destroy();
      });
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      const inside = `rpc://127.0.0.1:${(listener.address() as AddressInfo).port}/json-rpc`;
      try {
        for (const endpoint of ['rpc://169.254.169.254/json-rpc', inside]) {
          const err = await sendTo(endpoint).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(WalletNodeError);
          expect(err).toMatchObject({
            httpStatus: 400,
            code: 1008,
            details: { transport_endpoint: endpoint },
          });
        }
        expect(connections).toBe(0);
        expect(await WA.listPendingBegins()).toEqual([]);
      } finally {
        listener.close();
      }
      const psbt = await sendTo(devnet.info.proxy);
      const txid = txidOf(psbt);
      // This rgb-lib reserves no vanilla TXO for an RGB send: its Initiated batch transfer holds the asset.
      const pending = await WA.listPendingBegins();
      expect(pending).toEqual([
        {
          txid,
          kind: 'Send',
          outpoints: [],
          since: expect.any(Number),
          expires_at: null,
          batch_transfer_idx: expect.any(Number),
        },
      ]);
      expect((await WA.assetBalance(asset.asset_id)).spendable).toBe(0n);
      const idx = pending[0]!.batch_transfer_idx;
      const signed = signPsbt(psbt, A.mnemonic);
      const inMempool = (t: string) =>
        devnet.rpc('getmempoolentry', [t]).then(
          () => true,
          () => false,
        );
      // The signed send posted to createutxosend (rgb-lib's would broadcast it: the transfer on chain with no
      // consignment sent), and to the other wallet's: refused, nothing broadcast, the send still Initiated.
      for (const wrongEnd of [WA.createUtxosEnd(signed), WB.createUtxosEnd(signed)]) {
        const err = await wrongEnd.catch((e: unknown) => e);
        expect(err).toBeInstanceOf(WalletNodeError);
        expect(err).toMatchObject({ httpStatus: 400, code: 1007 });
        expect((err as Error).message).toMatch(/nothing was broadcast/);
      }
      expect(await inMempool(txid)).toBe(false);
      expect((await WA.listTransfers(asset.asset_id)).find((t) => t.batch_transfer_idx === idx)?.status).toBe(
        'Initiated',
      );
      expect(await WA.abortBegin({ txid })).toEqual({ txid, released: [], failed_batch_transfer_idx: idx });
      const transfers = await WA.listTransfers(asset.asset_id);
      expect(transfers.map((t) => [t.batch_transfer_idx, t.kind, t.status])).toEqual([
        [1, 'Issuance', 'Settled'],
        [idx, 'Send', 'Failed'],
      ]);
      expect(await WA.assetBalance(asset.asset_id)).toEqual({ settled: 500n, future: 500n, spendable: 500n });
      expect(await WA.listPendingBegins()).toEqual([]);
      // A late sendend of the released begin (rgb-lib's would revive the failed transfer and post the
      // consignment): 409, the transfer stays Failed, the assets spendable, nothing broadcast.
      const late = await WA.sendEnd(signed).catch((e: unknown) => e);
      expect(late).toBeInstanceOf(WalletNodeError);
      expect(late).toMatchObject({ httpStatus: 409, code: 1009, details: { txid, status: 'Failed' } });
      expect((await WA.listTransfers(asset.asset_id)).find((t) => t.batch_transfer_idx === idx)?.status).toBe(
        'Failed',
      );
      expect((await WA.assetBalance(asset.asset_id)).spendable).toBe(500n);
      expect(await inMempool(txid)).toBe(false);

      // A send begun in time but ended after its expiry (its recipient may fail it by then): 409, nothing sent.
      const soon = await sendTo(devnet.info.proxy, Math.floor(Date.now() / 1000) + 2);
      await new Promise((r) => setTimeout(r, 3100));
      const expired = await WA.sendEnd(signPsbt(soon, A.mnemonic)).catch((e: unknown) => e);
      expect(expired).toBeInstanceOf(WalletNodeError);
      expect(expired).toMatchObject({ httpStatus: 409, code: 1009, details: { status: 'Initiated' } });
      expect((expired as Error).message).toMatch(/expired at .* before it was ended/);
      expect(await inMempool(txidOf(soon))).toBe(false);
      await WA.abortBegin({ psbt: soon });
      expect(await WA.listPendingBegins()).toEqual([]);
    },
    T,
  );

  it(
    'releases a begin by itself begin_ttl_secs after it was served',
    async () => {
      await restart({ begin_ttl_secs: 2 });
      const before = (await WA.btcBalance()).vanilla.spendable;
      const psbt = await WA.createUtxosBegin({ num: 1, size: 1000, fee_rate: 2 });
      const [p] = await WA.listPendingBegins();
      expect(p?.txid).toBe(txidOf(psbt));
      expect(p!.expires_at! - p!.since).toBe(2);
      expect((await WA.btcBalance()).vanilla.spendable).toBeLessThan(before);
      const deadline = Date.now() + 20_000;
      while ((await WA.listPendingBegins()).length > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 500));
      expect(await WA.listPendingBegins()).toEqual([]);
      expect((await WA.btcBalance()).vanilla.spendable).toBe(before);
      expect(node.stderr()).toContain('released a begin never ended');
    },
    T,
  );
});
