/**
 * The decisive devnet test: two WATCH-ONLY rgb-lib wallets (xpubs + fingerprint only, run in the
 * @rgbx/rgb child process) against the devnet's bitcoind + Electrum server + RGB proxy. Every PSBT
 * is signed outside rgb-lib with @rgbx/sdk's signer; the mnemonics exist only in this test.
 *
 * Flow, for SegWitV0 and Taproot: fund A → create colored UTXOs on A and B → A issues 1000 TST →
 * B blind-receives 100 → A sends → refresh/mine until both sides are Settled → exact balances.
 *
 * Needs the build output of the devnet services: run `npx tsc -b` first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import {
  type BtcBalance,
  generateKeys,
  type Keys,
  openWallet,
  RgbHost,
  RgbLibError,
  type RgbWallet,
  type Transaction,
  type WatchOnlyKeys,
  type WitnessVersion,
} from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mineAndSync, waitForIndexer } from './helpers/rgb.ts';

const TIMEOUT = 300_000;
const FUND_SATS = 1_000_000n; // 0.01 BTC
const UTXO_NUM = 5;
const UTXO_SIZE = 1_000;
const FEE_RATE = 2;

let devnet: Devnet;
let host: RgbHost;
const tempDirs: string[] = [];

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

const total = (b: BtcBalance, k: 'settled' | 'future' | 'spendable' = 'settled') =>
  b.vanilla[k] + b.colored[k];

/** Fee of a confirmed tx as computed by bitcoind (txindex), in sats. */
async function bitcoindFee(txid: string): Promise<bigint> {
  const tx = await devnet.rpc<{ fee: number }>('getrawtransaction', [txid, 2]);
  return BigInt(Math.round(tx.fee * 1e8));
}

beforeAll(async () => {
  devnet = await startDevnet({ dir: tempDir('rgbx-e2e-devnet-') });
  host = new RgbHost();
  await host.start();
  await waitForIndexer(devnet);
}, TIMEOUT);

afterAll(async () => {
  await host?.close();
  await devnet?.stop();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
}, TIMEOUT);

describe.each(['SegWitV0', 'Taproot'] as const)(
  'watch-only RGB transfer on the devnet (%s)',
  (wv: WitnessVersion) => {
    let keysA: Keys;
    let keysB: Keys;
    let A: RgbWallet;
    let B: RgbWallet;
    let assetId: string;
    let balanceA0: BtcBalance;
    let balanceB0: BtcBalance;

    /** Only the public part of the keys reaches rgb-lib; the mnemonic stays in this test. */
    const watchOnly = (keys: Keys): WatchOnlyKeys => ({
      accountXpubVanilla: keys.accountXpubVanilla,
      accountXpubColored: keys.accountXpubColored,
      masterFingerprint: keys.masterFingerprint,
      witnessVersion: wv,
    });

    async function open(keys: Keys): Promise<RgbWallet> {
      const w = await openWallet({
        host,
        dataDir: tempDir(`rgbx-e2e-${wv}-`),
        network: 'Regtest',
        keys: watchOnly(keys),
      });
      await w.goOnline({ indexerUrl: devnet.info.electrum, skipConsistencyCheck: false });
      return w;
    }

    /** Fund a wallet, then create colored UTXOs through an externally signed PSBT. */
    async function fundAndCreateUtxos(w: RgbWallet, keys: Keys): Promise<Transaction> {
      const address = await w.getAddress();
      expect(address.startsWith(wv === 'SegWitV0' ? 'bcrt1q' : 'bcrt1p')).toBe(true);
      await devnet.fund(address, '0.01');
      await mineAndSync(devnet, 1);
      expect((await w.getBtcBalance()).vanilla.settled).toBe(FUND_SATS);

      const unsigned = await w.createUtxosBegin(false, UTXO_NUM, UTXO_SIZE, FEE_RATE);
      const signed = signPsbt(unsigned, keys.mnemonic);
      expect(await w.createUtxosEnd(signed)).toBe(UTXO_NUM);
      await mineAndSync(devnet, 1);

      const txs = await w.listTransactions();
      const create = txs.filter((t) => t.transactionType === 'CreateUtxos');
      expect(create).toHaveLength(1);
      const tx = create[0]!;
      expect(tx.confirmationTime).not.toBeNull();
      expect(tx.fee).toBe(await bitcoindFee(tx.txid));
      expect(tx.sent - tx.received).toBe(tx.fee); // all outputs are the wallet's own

      const bal = await w.getBtcBalance();
      expect(bal.colored.settled).toBe(BigInt(UTXO_NUM * UTXO_SIZE));
      expect(bal.vanilla.settled).toBe(FUND_SATS - BigInt(UTXO_NUM * UTXO_SIZE) - tx.fee);
      expect(total(bal)).toBe(FUND_SATS - tx.fee);
      expect(total(bal, 'future')).toBe(total(bal));
      const unspents = await w.listUnspents();
      expect(unspents.filter((u) => u.utxo.colorable)).toHaveLength(UTXO_NUM);
      return tx;
    }

    it(
      'opens two watch-only wallets from xpubs and goes online with the consistency check',
      async () => {
        keysA = await generateKeys('Regtest', wv, host);
        keysB = await generateKeys('Regtest', wv, host);
        A = await open(keysA);
        B = await open(keysB);
        expect(A.online?.id).toBeTypeOf('bigint');
        expect(await A.listAssets()).toEqual({ nia: [], uda: [], cfa: [], ifa: [] });
      },
      TIMEOUT,
    );

    it(
      'funds A and B and creates colored UTXOs with externally signed PSBTs',
      async () => {
        await fundAndCreateUtxos(A, keysA);
        await fundAndCreateUtxos(B, keysB);
        balanceA0 = await A.getBtcBalance();
        balanceB0 = await B.getBtcBalance();
      },
      TIMEOUT,
    );

    it(
      'A issues 1000 TST',
      async () => {
        const asset = await A.issueAssetNia('TST', 'Test asset', 0, [1000n]);
        assetId = asset.assetId;
        expect(asset.ticker).toBe('TST');
        expect(asset.issuedSupply).toBe(1000n);
        expect(await A.getAssetBalance(assetId)).toEqual({ settled: 1000n, future: 1000n, spendable: 1000n });
        const assets = await A.listAssets(['Nia']);
        expect(assets.nia?.map((a) => a.assetId)).toEqual([assetId]);
      },
      TIMEOUT,
    );

    it(
      'B blind-receives 100, A sends with an externally signed PSBT, both sides settle',
      async () => {
        const expiry = Math.floor(Date.now() / 1000) + 3600;
        // B does not know the asset yet: an open (asset-less) invoice for 100 units
        const receive = await B.blindReceive(null, { Fungible: 100n }, expiry, [devnet.info.proxy], 1);
        expect(receive.invoice).toMatch(/^rgb:/);

        const begin = await A.sendBegin(
          {
            [assetId]: [
              {
                recipientId: receive.recipientId,
                witnessData: null,
                assignment: { Fungible: 100n },
                transportEndpoints: [devnet.info.proxy],
              },
            ],
          },
          false,
          FEE_RATE,
          1,
          receive.expirationTimestamp ?? expiry,
        );
        expect(begin.details.entropy).toBeTypeOf('bigint');
        const sent = await A.sendEnd(signPsbt(begin.psbt, keysA.mnemonic));
        expect(sent.txid).toMatch(/^[0-9a-f]{64}$/);
        expect(sent.entropy).toBe(begin.details.entropy);

        const statuses = async () => {
          const a = (await A.listTransfers(assetId)).find((t) => t.kind === 'Send');
          // until B has validated the consignment it does not know the asset: its transfer is asset-less
          const bTransfers = await B.listTransfers(assetId).catch((e: unknown) => {
            if (e instanceof RgbLibError && e.variant === 'AssetNotFound') return B.listTransfers(null);
            throw e;
          });
          const b = bTransfers.find((t) => t.recipientId === receive.recipientId);
          return { sender: a?.status, receiver: b?.status };
        };
        let last = await statuses();
        for (
          let round = 0;
          round < 15 && !(last.sender === 'Settled' && last.receiver === 'Settled');
          round++
        ) {
          await B.refresh(null);
          await A.refresh(null);
          last = await statuses();
          if (last.sender === 'Settled' && last.receiver === 'Settled') break;
          await mineAndSync(devnet, 1);
        }
        expect(last, `transfer did not settle; last statuses ${JSON.stringify(last)}`).toEqual({
          sender: 'Settled',
          receiver: 'Settled',
        });

        expect(await A.getAssetBalance(assetId)).toEqual({ settled: 900n, future: 900n, spendable: 900n });
        expect(await B.getAssetBalance(assetId)).toEqual({ settled: 100n, future: 100n, spendable: 100n });

        // BTC: the transfer tx spends only A's coins and pays only A (blinded receive → no output for B),
        // so A's total drops by exactly its fee and B's is unchanged.
        const txA = (await A.listTransactions()).find((t) => t.txid === sent.txid);
        expect(txA?.transactionType).toBe('RgbSend');
        expect(txA?.confirmationTime).not.toBeNull();
        const fee = await bitcoindFee(sent.txid);
        expect(txA?.fee).toBe(fee);
        const balanceA1 = await A.getBtcBalance();
        const balanceB1 = await B.getBtcBalance();
        expect(total(balanceA1)).toBe(total(balanceA0) - fee);
        expect(total(balanceA1, 'future')).toBe(total(balanceA1));
        expect(balanceB1).toEqual(balanceB0);
        // B's 100 TST sits on one of its own colored UTXOs
        const allocB = (await B.listUnspents())
          .flatMap((u) => u.rgbAllocations)
          .filter((a) => a.assetId === assetId);
        expect(allocB).toMatchObject([{ assetId, assignment: { Fungible: 100n }, settled: true }]);
      },
      TIMEOUT,
    );

    it(
      'a fresh watch-only copy of A (new data dir) recovers its BTC balance with sync(FullScan)',
      async () => {
        const copy = await openWallet({
          host,
          dataDir: tempDir(`rgbx-e2e-${wv}-copy-`),
          network: 'Regtest',
          keys: watchOnly(keysA),
        });
        try {
          await copy.goOnline({ indexerUrl: devnet.info.electrum, skipConsistencyCheck: true });
          await copy.sync({ keychain: { Vanilla: { lookback: 20 } }, strategy: 'FullScan' });
          await copy.sync({ keychain: 'Colored', strategy: 'FullScan' });
          expect(await copy.getBtcBalance(true)).toEqual(await A.getBtcBalance());
        } finally {
          await copy.drop();
        }
      },
      TIMEOUT,
    );

    it(
      'drops both wallets',
      async () => {
        await A.drop();
        await B.drop();
        expect(A.isOpen || B.isOpen).toBe(false);
      },
      TIMEOUT,
    );
  },
);
