/**
 * Watch-only BTC sends through the wallet node on the devnet (real bitcoind regtest, our Electrum server,
 * the built wallet node with its rgb-lib children), for a SegWitV0 and a Taproot wallet. Every PSBT is
 * signed outside the service with the SDK signer.
 *
 * Proves: a wallet holding colored UTXOs (one with an NIA allocation) sends BTC from its vanilla UTXOs only
 * (bitcoind sees the exact payment, every colored UTXO and the asset balance survive, btcbalance drops by
 * amount + fee); two pending begins never share an input and the reservations survive a restart; sendbtcend
 * refuses (400 1007) and broadcasts nothing for a PSBT begin did not build; errors 1003, 1002 and 1010.
 *
 * Needs the build output (`npx tsc -b`): the wallet node and the devnet services run as processes.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys, type WitnessVersion } from '@rgbx/rgb';
import { signPsbt, WalletNodeClient } from '@rgbx/sdk';
import { Address, OutScript, Transaction } from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mineAndSync } from './helpers/rgb.ts';
import { type NodeProcess, startNode, stopWalletNodeSuite, writeNodeConfig } from './helpers/wallet-node.ts';

const T = 300_000;
const SEND = 120_000n;
const FEE_RATE = 3;
let devnet: Devnet;
let root: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-node-btc-send-'));
  devnet = await startDevnet({ dir: join(root, 'devnet') });
}, T);

afterAll(() => stopWalletNodeSuite({ nodes: [], devnet, root }));

const outpoint = (o: { txid: string; vout: number }) => `${o.txid}:${o.vout}`;
const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };
const sats = (btc: number) => BigInt(Math.round(btc * 1e8));

/** The unsigned transaction of a PSBT: its inputs, outputs and (unsigned) txid. */
function decode(psbt: string) {
  const tx = Transaction.fromPSBT(Buffer.from(psbt, 'base64'), { allowUnknownOutputs: true });
  const inputs = Array.from({ length: tx.inputsLength }, (_, i) => {
    const inp = tx.getInput(i);
    return {
      outpoint: `${Buffer.from(inp.txid as Uint8Array).toString('hex')}:${inp.index}`,
      amount: inp.witnessUtxo?.amount as bigint,
    };
  });
  const outputs = Array.from({ length: tx.outputsLength }, (_, i) => tx.getOutput(i));
  return { tx, inputs, outputs, txid: tx.id };
}

/** The txid a signed (finalized) PSBT would have on chain. */
function signedTxid(psbt: string): string {
  const tx = Transaction.fromPSBT(Buffer.from(psbt, 'base64'), { allowUnknownOutputs: true });
  return tx.id;
}

describe.each(['SegWitV0', 'Taproot'] as const)(
  'sendbtcbegin/sendbtcend, %s wallet',
  (kind: WitnessVersion) => {
    let dir: string;
    let cfgFile: string;
    let node: NodeProcess;
    let keys: Keys;
    let W: WalletNodeClient;
    let headers: Record<string, string>;
    let assetId: string;
    const addressType = kind === 'Taproot' ? 'bech32m' : 'bech32';

    const post = async (path: string, body: unknown) => {
      const res = await fetch(node.url + path, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, json: JSON.parse(text) as unknown, text };
    };
    const begin = (body: unknown) => post('/wallet/sendbtcbegin', body);
    const end = (body: unknown) => post('/wallet/sendbtcend', body);
    const errorOf = (r: { json: unknown }) =>
      (r.json as { error: { code: number; message: string; details: Record<string, unknown> } }).error;
    const minerAddress = () => devnet.wallet.call<string>('getnewaddress', ['', addressType]);
    const mempool = () => devnet.rpc<string[]>('getrawmempool');
    const notOnChain = async (txid: string) => {
      const e = (await devnet.rpc('getrawtransaction', [txid]).catch((x) => x)) as Error;
      expect(e).toBeInstanceOf(Error);
      expect(e.message).toMatch(/No such mempool or blockchain transaction/);
    };
    const unspents = async () => {
      const all = await W.listUnspents();
      return {
        all,
        colored: all.filter((u) => u.utxo.colorable),
        vanilla: all.filter((u) => !u.utxo.colorable),
      };
    };

    beforeAll(async () => {
      dir = join(root, kind);
      mkdirSync(dir);
      cfgFile = writeNodeConfig(dir, devnet.info, { witness_version: kind, workers: 1 });
      node = await startNode(cfgFile);
      keys = await generateKeys('Regtest', kind);
      headers = {
        'xpub-van': keys.accountXpubVanilla,
        'xpub-col': keys.accountXpubColored,
        'master-fingerprint': keys.masterFingerprint,
      };
      W = new WalletNodeClient(node.url, {
        xpubVanilla: keys.accountXpubVanilla,
        xpubColored: keys.accountXpubColored,
        fingerprint: keys.masterFingerprint,
      });
      await W.register();
    }, T);

    afterAll(async () => {
      await node?.stop();
    });

    it(
      'sets up a wallet with colored UTXOs (one holding an NIA allocation) and two vanilla UTXOs',
      async () => {
        await devnet.fund(await W.address(), '0.01', { confirm: true });
        const psbt = await W.createUtxosBegin({ num: 3, size: 1000, fee_rate: 2 });
        expect(await W.createUtxosEnd(signPsbt(psbt, keys.mnemonic))).toBe(3);
        await mineAndSync(devnet);
        assetId = (await W.issueAssetNia({ ticker: 'BTCS', name: 'btc send', precision: 0, amounts: [1000] }))
          .asset_id;
        await devnet.fund(await W.address(), '0.005', { confirm: true });
        const u = await unspents();
        // Empirical: rgb-lib lists both keychains; the createutxos outputs are colorable, the vanilla ones not.
        expect(u.colored.map((x) => x.utxo.btc_amount)).toEqual([1000n, 1000n, 1000n]);
        expect(u.colored.filter((x) => x.rgb_allocations.length > 0)).toHaveLength(1);
        expect(u.vanilla).toHaveLength(2);
        expect(u.vanilla.every((x) => x.rgb_allocations.length === 0)).toBe(true);
        const bal = await W.btcBalance();
        expect(bal.vanilla.spendable).toBe(u.vanilla.reduce((a, x) => a + x.utxo.btc_amount, 0n));
        expect(bal.colored.settled).toBe(3000n);
      },
      T,
    );

    it(
      'refuses a bad address (1002), an amount above the vanilla balance (1003) and a dust amount (1010)',
      async () => {
        const bal = await W.btcBalance();
        const other =
          kind === 'Taproot'
            ? 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'
            : 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq';
        for (const address of ['bcrt1qnotanaddress', other, '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2']) {
          const r = await begin({ address, amount: 10_000, fee_rate: FEE_RATE });
          expect([r.status, errorOf(r).code]).toEqual([400, 1002]);
        }
        const tooMuch = await begin({
          address: await minerAddress(),
          amount: Number(bal.vanilla.spendable),
          fee_rate: FEE_RATE,
        });
        expect([tooMuch.status, errorOf(tooMuch).code]).toEqual([400, 1003]);
        expect(errorOf(tooMuch).details.available).toBe(Number(bal.vanilla.spendable));
        const dust = await begin({ address: await minerAddress(), amount: 293, fee_rate: FEE_RATE });
        expect([dust.status, errorOf(dust).code]).toEqual([400, 1010]);
        expect(errorOf(dust).details.dust_limit).toBe(kind === 'Taproot' ? 330 : 294);
        const noFee = await begin({ address: await minerAddress(), amount: 10_000 });
        expect([noFee.status, errorOf(noFee).code]).toEqual([422, 1001]);
        // nothing was reserved by the refused calls
        expect(existsSync(join(dir, 'data', keys.masterFingerprint, 'rgbx-btc-reservations.json'))).toBe(
          false,
        );
      },
      T,
    );

    it(
      'sends BTC from vanilla UTXOs only: exact payment on chain, colored UTXOs and asset untouched',
      async () => {
        const before = await unspents();
        const coloredBefore = before.colored.map((u) => outpoint(u.utxo.outpoint)).sort();
        const vanillaBefore = new Set(before.vanilla.map((u) => outpoint(u.utxo.outpoint)));
        const balBefore = await W.btcBalance();
        const assetBefore = await W.assetBalance(assetId);
        const to = await minerAddress();

        const r = await begin({ address: to, amount: Number(SEND), fee_rate: FEE_RATE });
        expect(r.status).toBe(200);
        const psbt = r.json as string;
        const d = decode(psbt);
        // Largest-first: the bigger vanilla UTXO alone pays; never a colored one.
        expect(d.inputs).toHaveLength(1);
        for (const i of d.inputs) {
          expect(coloredBefore).not.toContain(i.outpoint);
          expect(vanillaBefore.has(i.outpoint)).toBe(true);
        }
        const [largest] = before.vanilla.map((u) => u.utxo.btc_amount).sort((a, b) => (a < b ? 1 : -1));
        expect(d.inputs[0]?.amount).toBe(largest);

        // The signer checks the outputs: the recipient exactly, everything else must derive from the mnemonic.
        const signed = signPsbt(psbt, keys.mnemonic, { expectOutputs: [{ address: to, amount: SEND }] });
        const e = await end({ signed_psbt: signed });
        expect(e.status).toBe(200);
        expect(e.json).toEqual({ txid: d.txid });
        const txid = d.txid;

        const entry = await devnet.rpc<{ vsize: number; fees: { base: number } }>('getmempoolentry', [txid]);
        const fee = sats(entry.fees.base);
        const inputTotal = d.inputs.reduce((a, i) => a + i.amount, 0n);
        const outputTotal = d.outputs.reduce((a, o) => a + (o.amount as bigint), 0n);
        expect(fee).toBe(inputTotal - outputTotal);
        expect(fee).toBeGreaterThanOrEqual(BigInt(FEE_RATE * entry.vsize));
        expect(fee).toBeLessThanOrEqual(BigInt(FEE_RATE * (entry.vsize + 1)));

        // a retried sendbtcend is idempotent (same txid, nothing new)
        const again = await end({ signedPsbt: signed });
        expect([again.status, again.json]).toEqual([200, { txid }]);

        await mineAndSync(devnet);
        expect(sats(await devnet.wallet.call<number>('getreceivedbyaddress', [to, 1]))).toBe(SEND);
        const raw = await devnet.rpc<{
          confirmations: number;
          vout: { value: number; scriptPubKey: { address?: string } }[];
        }>('getrawtransaction', [txid, true]);
        expect(raw.confirmations).toBe(1);
        expect(raw.vout.filter((o) => o.scriptPubKey.address === to).map((o) => sats(o.value))).toEqual([
          SEND,
        ]);

        const after = await unspents();
        expect(after.colored.map((u) => outpoint(u.utxo.outpoint)).sort()).toEqual(coloredBefore);
        expect(after.colored.filter((u) => u.rgb_allocations.length > 0)).toHaveLength(1);
        expect(await W.assetBalance(assetId)).toEqual(assetBefore);
        // the change came back to a vanilla UTXO of this wallet
        const change = d.outputs.findIndex((o) => o.amount !== SEND);
        expect(after.vanilla.map((u) => outpoint(u.utxo.outpoint))).toContain(`${txid}:${change}`);
        const balAfter = await W.btcBalance();
        expect(balAfter.vanilla.settled).toBe(balBefore.vanilla.settled - SEND - fee);
        expect(balAfter.vanilla.spendable).toBe(balAfter.vanilla.settled);
        expect(balAfter.colored).toEqual(balBefore.colored);
      },
      T,
    );

    it(
      'keeps pending begins apart: no shared inputs, then 1003 while all vanilla UTXOs are held, across a restart',
      async () => {
        const vanilla = (await unspents()).vanilla;
        expect(vanilla).toHaveLength(2);
        const a = await begin({ address: await minerAddress(), amount: 100_000, fee_rate: FEE_RATE });
        const b = await begin({
          address: await minerAddress(),
          amount: 100_000,
          fee_rate: FEE_RATE,
          skip_sync: true,
        });
        expect([a.status, b.status]).toEqual([200, 200]);
        const ia = decode(a.json as string).inputs.map((i) => i.outpoint);
        const ib = decode(b.json as string).inputs.map((i) => i.outpoint);
        expect(ia).toHaveLength(1);
        expect(ib).toHaveLength(1);
        expect(ia).not.toEqual(ib);
        expect(new Set([...ia, ...ib])).toEqual(new Set(vanilla.map((u) => outpoint(u.utxo.outpoint))));

        const file = join(dir, 'data', keys.masterFingerprint, 'rgbx-btc-reservations.json');
        expect(statSync(file).mode & 0o777).toBe(0o600);
        const held = JSON.parse(readFileSync(file, 'utf8')) as {
          reservations: Record<string, { outpoints: string[] }>;
        };
        expect(Object.keys(held.reservations).sort()).toContain(decode(a.json as string).txid);
        expect(Object.keys(held.reservations).sort()).toContain(decode(b.json as string).txid);

        const c = await begin({ address: await minerAddress(), amount: 10_000, fee_rate: FEE_RATE });
        expect([c.status, errorOf(c).code]).toEqual([400, 1003]);
        expect(errorOf(c).details.available).toBe(0);
        // the send of the previous test is reserved too (until it expires), so 3 outpoints are held
        expect(errorOf(c).details.reserved_utxos).toBe(3);

        expect(await node.stop()).toBe(0);
        node = await startNode(cfgFile);
        W = new WalletNodeClient(node.url, {
          xpubVanilla: keys.accountXpubVanilla,
          xpubColored: keys.accountXpubColored,
          fingerprint: keys.masterFingerprint,
        });
        const afterRestart = await begin({
          address: await minerAddress(),
          amount: 10_000,
          fee_rate: FEE_RATE,
        });
        expect([afterRestart.status, errorOf(afterRestart).code]).toEqual([400, 1003]);

        // b is still accepted after the restart
        const bTx = decode(b.json as string);
        const eb = await end({ signed_psbt: signPsbt(b.json as string, keys.mnemonic) });
        expect([eb.status, eb.json]).toEqual([200, { txid: bTx.txid }]);
        // sendbtcend synced rgb-lib: a begin that skips its own sync already sees b's (unconfirmed) change,
        // the only vanilla UTXO not held, and spends it (unconfirmed UTXOs count, as in vanilla.spendable)
        const bChange = bTx.outputs.findIndex((o) => o.amount !== 100_000n);
        const c2 = await begin({
          address: await minerAddress(),
          amount: 10_000,
          fee_rate: FEE_RATE,
          skip_sync: true,
        });
        expect(c2.status).toBe(200);
        expect(decode(c2.json as string).inputs.map((i) => i.outpoint)).toEqual([`${bTx.txid}:${bChange}`]);
        const ec2 = await end({ signed_psbt: signPsbt(c2.json as string, keys.mnemonic), skip_sync: true });
        expect(ec2.status).toBe(200);
        expect(await mempool()).toEqual(expect.arrayContaining([bTx.txid, decode(c2.json as string).txid]));
        await mineAndSync(devnet);
        expect(node.stderr()).not.toMatch(/sync after sendbtcend failed/);

        // a is still pending: rgb-lib's createutxosbegin would spend its input too (rgb-lib spends every vanilla
        // UTXO it does not hold itself), two signed transactions on one outpoint. Refused, nothing held.
        const aInput = ia[0]!;
        const cu = await post('/wallet/createutxosbegin', { num: 1, size: 1000, fee_rate: 2 });
        expect([cu.status, errorOf(cu).code, errorOf(cu).details.held_by]).toEqual([
          409,
          1009,
          'sendbtcbegin',
        ]);
        expect(errorOf(cu).details.outpoints).toContain(aInput);
        expect((await W.listPendingBegins()).map((p) => p.kind)).toEqual(['SendBtc']);
        // Released, the same call goes through; and the other way round, a sendbtcbegin never takes what a
        // pending createutxosbegin holds (here: everything, so 1003).
        await W.abortBegin({ txid: decode(a.json as string).txid });
        const cu2 = await W.createUtxosBegin({ num: 1, size: 1000, fee_rate: 2 });
        const heldByCu = (await W.listPendingBegins()).find((p) => p.kind === 'CreateUtxos')!.outpoints;
        expect(heldByCu).toContain(aInput);
        const d = await begin({
          address: await minerAddress(),
          amount: 10_000,
          fee_rate: FEE_RATE,
          skip_sync: true,
        });
        if (d.status === 200) {
          for (const i of decode(d.json as string).inputs) expect(heldByCu).not.toContain(i.outpoint);
          await W.abortBegin({ txid: decode(d.json as string).txid });
        } else expect([d.status, errorOf(d).code]).toEqual([400, 1003]);
        await W.abortBegin({ psbt: cu2 });
      },
      T,
    );

    it(
      'refuses (400 1007) and broadcasts nothing for a PSBT begin did not build or that was changed',
      async () => {
        const pool = await mempool();
        // 1. the createutxos PSBT: signed by the same mnemonic, spends this wallet's vanilla UTXOs
        const cu = signPsbt(await W.createUtxosBegin({ num: 1, size: 1000, fee_rate: 2 }), keys.mnemonic);
        const r1 = await end({ signed_psbt: cu });
        expect([r1.status, errorOf(r1).code]).toEqual([400, 1007]);
        expect(errorOf(r1).details.received).toBe(signedTxid(cu));
        expect(errorOf(r1).message).toMatch(/not one a pending sendbtcbegin of this wallet built/);
        await notOnChain(signedTxid(cu));
        // Released: a sendbtcbegin never takes what a pending createutxosbegin holds (all of it here).
        await W.abortBegin({ txid: signedTxid(cu) });

        // 2. a begin PSBT whose change output was redirected to someone else before signing
        const to = await minerAddress();
        const b = await begin({ address: to, amount: 50_000, fee_rate: FEE_RATE });
        expect(b.status).toBe(200);
        const tx = decode(b.json as string).tx;
        const changeIdx = tx.getOutput(0).amount === 50_000n ? 1 : 0;
        expect(tx.outputsLength).toBe(2);
        const thief = await minerAddress();
        tx.updateOutput(changeIdx, { script: OutScript.encode(Address(REGTEST).decode(thief)) });
        const tampered = signPsbt(Buffer.from(tx.toPSBT()).toString('base64'), keys.mnemonic);
        const r2 = await end({ signed_psbt: tampered });
        expect([r2.status, errorOf(r2).code]).toEqual([400, 1007]);
        expect(errorOf(r2).details.pending).toContain(decode(b.json as string).txid);
        await notOnChain(signedTxid(tampered));

        // 3. the begin PSBT unsigned: nothing to broadcast
        const r3 = await end({ signed_psbt: b.json });
        expect([r3.status, errorOf(r3).code]).toEqual([400, 1007]);
        expect(errorOf(r3).message).toMatch(/input 0 cannot be finalized/);
        // 4. not a PSBT at all
        const r4 = await end({ signed_psbt: 'aGVsbG8=' });
        expect([r4.status, errorOf(r4).code]).toEqual([400, 1007]);

        expect((await mempool()).sort()).toEqual(pool.sort());
        // 5. a node refusal: the tampered transaction reaches bitcoind some other way first, so the genuine
        // one conflicts with it; the indexer's rejection is a 400 1007 carrying the node's message
        const tamperedHex = Buffer.from(
          Transaction.fromPSBT(Buffer.from(tampered, 'base64'), { allowUnknownOutputs: true }).extract(),
        ).toString('hex');
        expect(await devnet.rpc('sendrawtransaction', [tamperedHex])).toBe(signedTxid(tampered));
        const genuine = await end({ signed_psbt: signPsbt(b.json as string, keys.mnemonic) });
        expect([genuine.status, errorOf(genuine).code]).toEqual([400, 1007]);
        expect(errorOf(genuine).details.indexer_error).toMatch(/insufficient fee|conflict/);
        expect(errorOf(genuine).message).toMatch(/^invalid PSBT: the node refused the transaction: /);
        await notOnChain(decode(b.json as string).txid);
        await mineAndSync(devnet);
        expect(sats(await devnet.wallet.call<number>('getreceivedbyaddress', [to, 1]))).toBe(50_000n);
        expect(sats(await devnet.wallet.call<number>('getreceivedbyaddress', [thief, 1]))).toBe(
          decode(b.json as string).outputs[changeIdx]?.amount as bigint,
        );
      },
      T,
    );
  },
);
