/**
 * BitcoinWallet against the real devnet: bitcoind regtest + our Electrum server. The fee rate is the
 * server's `estimatefee` (its 1 sat/vB fallback until bitcoind has seen enough blocks, then bitcoind's own
 * estimate, ~20 sat/vB from the miner wallet's transactions), read again here to check every fee exactly.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildHtlc, ElectrumServerError, electrumRequest, fulfilCommitmentScript } from '@rgbx/chains/btc';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { p2tr, utils } from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BitcoinWallet, InsufficientFunds } from './bitcoin.ts';
import type { IntentView, SignedTx } from './wallet.ts';

interface VerboseTx {
  txid: string;
  vsize: number;
  confirmations?: number;
  vin: { txid: string; vout: number; txinwitness?: string[] }[];
  vout: { value: number; n: number; scriptPubKey: { hex: string; address?: string } }[];
}

let devnet: Devnet;
let dir: string;
const wallets: BitcoinWallet[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'resolver-btc-wallet-'));
  devnet = await startDevnet({ dir });
}, 120_000);

afterAll(async () => {
  await Promise.all(wallets.map((w) => w.close()));
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function wallet(privateKey: Uint8Array = utils.randomPrivateKeyBytes()): BitcoinWallet {
  const w = new BitcoinWallet({ electrumUrl: devnet.info.electrum, network: 'regtest', privateKey });
  wallets.push(w);
  return w;
}

const sats = (btc: number) => BigInt(Math.round(btc * 1e8));
const verbose = (txid: string) => devnet.rpc<VerboseTx>('getrawtransaction', [txid, true]);
const payee = () => devnet.wallet.call<string>('getnewaddress', ['', 'bech32']);

/** The rate the wallet must use now: the server's estimate (BTC/kvB) in sat/vB, rounded up. */
async function rate(): Promise<bigint> {
  const btcPerKvB = await electrumRequest<number>(devnet.info.electrum, 'blockchain.estimatefee', [2]);
  return (BigInt(Math.round(btcPerKvB * 1e8)) + 999n) / 1000n;
}

/** Sum of the values of `tx`'s inputs, read from their parents. */
async function inputSum(tx: VerboseTx): Promise<bigint> {
  let sum = 0n;
  for (const i of tx.vin) sum += sats((await verbose(i.txid)).vout[i.vout]!.value);
  return sum;
}

/** A wallet holding exactly the given confirmed UTXOs (BTC decimals). */
async function funded(...amounts: string[]): Promise<{ w: BitcoinWallet; key: Uint8Array }> {
  const key = utils.randomPrivateKeyBytes();
  const w = wallet(key);
  for (const a of amounts) await devnet.fund(w.address, a);
  await devnet.mine(1);
  return { w, key };
}

describe('BitcoinWallet on the devnet', () => {
  it('identity is the x-only key; the address its P2TR key path', () => {
    const key = utils.randomPrivateKeyBytes();
    const w = wallet(key);
    const xonly = utils.pubSchnorr(key);
    expect(w.identity).toBe(Buffer.from(xonly).toString('hex'));
    expect(w.type).toBe('BITCOIN');
    expect(w.address).toBe(
      p2tr(xonly, undefined, { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef }).address,
    );
    expect(w.address.startsWith('bcrt1p')).toBe(true);
  });

  it('balance: confirmed UTXOs; a third-party unconfirmed payment only once mined', async () => {
    const { w } = await funded('0.001', '0.001');
    expect(await w.balance('BTC')).toBe(200_000n);
    await devnet.fund(w.address, '0.0005');
    expect(await w.balance('BTC')).toBe(200_000n);
    await devnet.mine(1);
    expect(await w.balance('BTC')).toBe(250_000n);
    await expect(w.balance('USDC')).rejects.toThrow(/only BTC/);
    expect(await w.signDeposit({} as IntentView)).toBeNull();
  });

  it('pays with the commitment: exact outputs and fee; broadcast twice; unknown → pending → confirmed', async () => {
    const { w } = await funded('0.001', '0.002');
    const intentId = randomUUID();
    const commitment = fulfilCommitmentScript(intentId);
    const to = await payee();
    const tx = await w.signPayment({ intentId, token: 'BTC', to, amount: 150_000n, commitment });
    const r = await rate();
    expect(tx.meta.fee_rate).toBe(Number(r));
    expect(await w.status(tx)).toEqual({ state: 'unknown' });

    await w.broadcast(tx);
    await w.broadcast(tx); // already in the mempool: a no-op success
    expect(await w.status(tx)).toEqual({ state: 'pending' });

    const v = await verbose(tx.txid);
    expect(v.vin.map((i) => `${i.txid}:${i.vout}`).join(',')).toBe(tx.meta.inputs);
    expect(v.vout.map((o) => [sats(o.value), o.scriptPubKey.address ?? o.scriptPubKey.hex])).toEqual([
      [150_000n, to],
      [0n, commitment],
      [expect.any(BigInt), w.address],
    ]);
    // The 0.002 UTXO alone covers it (largest first); the fee is exactly vsize × the rate.
    expect(v.vin).toHaveLength(1);
    const fee = (await inputSum(v)) - v.vout.reduce((s, o) => s + sats(o.value), 0n);
    expect(fee).toBe(BigInt(v.vsize) * r);
    expect(String(fee)).toBe(tx.meta.fee);
    const change = sats(v.vout[2]!.value);
    expect(change).toBe(200_000n - 150_000n - fee);

    // Own unconfirmed change is spendable at once.
    expect(await w.balance('BTC')).toBe(100_000n + change);
    await devnet.mine(1);
    expect(await w.status(tx)).toEqual({ state: 'confirmed', confirmations: 1 });
    await w.broadcast(tx); // already mined (its outputs still unspent): success
    await devnet.mine(1);
    expect(await w.status(tx)).toEqual({ state: 'confirmed', confirmations: 2 });
  });

  it('spends its own unconfirmed change at once (a chain of two payments in one block)', async () => {
    const { w } = await funded('0.001');
    const to = await payee();
    const first = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 20_000n });
    await w.broadcast(first);
    const second = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 30_000n });
    expect(second.meta.inputs).toBe(`${first.txid}:1`);
    await w.broadcast(second);
    expect(await w.status(second)).toEqual({ state: 'pending' });
    await devnet.mine(1);
    expect(await w.status(first)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await w.status(second)).toEqual({ state: 'confirmed', confirmations: 1 });
  });

  it('a payment without commitment and with dust change puts the remainder into the fee', async () => {
    const { w } = await funded('0.0001');
    const to = await payee(); // P2WPKH: 1 key-path input, 1 output = 99 vB
    const r = await rate();
    const amount = 10_000n - 99n * r - 200n; // 200 sats left over: less than a change output is worth
    const tx = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount });
    await w.broadcast(tx);
    const v = await verbose(tx.txid);
    expect(v.vsize).toBe(99);
    expect(v.vout.map((o) => [sats(o.value), o.scriptPubKey.address])).toEqual([[amount, to]]);
    expect(tx.meta.fee).toBe(String(99n * r + 200n));
  });

  it('reserves the inputs of signed transactions; one signed before a crash lands later with the same txid', async () => {
    const { w, key } = await funded('0.001', '0.001', '0.001');
    const to = await payee();
    const [a, b] = await Promise.all([
      w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 50_000n }),
      w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 60_000n }),
    ]);
    const ins = (t: SignedTx) => String(t.meta.inputs).split(',');
    expect(ins(a).filter((o) => ins(b).includes(o))).toEqual([]);
    expect(await w.balance('BTC')).toBe(100_000n); // two of the three UTXOs are promised

    // "Crash": `a` was stored, never broadcast. Blocks go by; a new process broadcasts the stored bytes.
    await devnet.mine(2);
    const restarted = wallet(key);
    restarted.track(a);
    restarted.track(b);
    expect(await restarted.balance('BTC')).toBe(100_000n);
    expect(await restarted.status(a)).toEqual({ state: 'unknown' });
    await restarted.broadcast(a);
    await restarted.broadcast(b);
    await devnet.mine(1);
    expect(await restarted.status(a)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect((await verbose(a.txid)).txid).toBe(a.txid);
    expect((await verbose(b.txid)).confirmations).toBe(1);
  });

  it('release: a payment dropped unsent frees its inputs for the next payment', async () => {
    const { w } = await funded('0.001');
    const to = await payee();
    const dropped = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 50_000n });
    expect(await w.balance('BTC')).toBe(0n); // the only UTXO is promised
    await expect(
      w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 50_000n }),
    ).rejects.toThrow(/insufficient/i);
    w.release(dropped);
    expect(await w.balance('BTC')).toBe(100_000n);
    const next = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 60_000n });
    expect(String(next.meta.inputs)).toBe(String(dropped.meta.inputs));
    await w.broadcast(next);
    await devnet.mine(1);
    expect(await w.status(next)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await w.status(dropped)).toEqual({ state: 'dead' });
  });

  it('a transaction whose input another transaction spent is dead once that one is mined', async () => {
    const { w, key } = await funded('0.001');
    const to = await payee();
    const c = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 40_000n });
    expect(await w.status(c)).toEqual({ state: 'unknown' });
    // A process that does not know `c` (nothing reserved) spends the same single UTXO.
    const other = wallet(key);
    const d = await other.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 41_000n });
    expect(d.meta.inputs).toBe(c.meta.inputs);
    await other.broadcast(d);
    // Only a confirmed conflict kills `c`: `d` could still leave the mempool.
    expect(await w.status(c)).toEqual({ state: 'unknown' });
    expect(await w.status(d)).toEqual({ state: 'pending' });
    // Same size and fee: `c` cannot replace `d`; the refusal is passed on since `c` is not on chain.
    await expect(w.broadcast(c)).rejects.toBeInstanceOf(ElectrumServerError);
    await devnet.mine(1);
    expect(await w.status(c)).toEqual({ state: 'dead' });
    await expect(w.broadcast(c)).rejects.toThrow(/missingorspent/);
    expect(await w.status(d)).toEqual({ state: 'confirmed', confirmations: 1 });
  });

  it('rebroadcast of a mined transaction whose outputs are all spent succeeds (bad-txns-inputs-missingorspent)', async () => {
    const { w } = await funded('0.001');
    const { w: f } = await funded();
    const p = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to: f.address, amount: 50_000n });
    await w.broadcast(p);
    await devnet.mine(1);
    // Spend both of p's outputs: w's change and f's payment (amounts leave room for the fee the node
    // estimates, which the earlier tests' blocks move: ~20 sat/vB after them).
    const to = await payee();
    const q = await w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 40_000n });
    const r = await f.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 40_000n });
    expect([q.meta.inputs, r.meta.inputs]).toEqual([`${p.txid}:1`, `${p.txid}:0`]);
    await w.broadcast(q);
    await f.broadcast(r);
    await devnet.mine(1);
    // What bitcoind answers for it, and the wallet, which then finds p itself on chain.
    await expect(devnet.rpc('sendrawtransaction', [p.raw])).rejects.toThrow(/bad-txns-inputs-missingorspent/);
    await w.broadcast(p);
    expect(await w.status(p)).toEqual({ state: 'confirmed', confirmations: 2 });
  });

  it('InsufficientFunds with expected and available', async () => {
    const { w } = await funded('0.0001');
    const to = await payee();
    const err = await w
      .signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 10_000n })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientFunds);
    expect((err as InsufficientFunds).available).toBe(10_000n);
    expect((err as InsufficientFunds).expected).toBeGreaterThan(10_000n);
    const empty = wallet();
    const e2 = await empty
      .signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 1_000n })
      .catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(InsufficientFunds);
    expect((e2 as InsufficientFunds).available).toBe(0n);
    await expect(
      w.signPayment({ intentId: randomUUID(), token: 'BTC', to, amount: 1_000n, commitment: '6a0100' }),
    ).rejects.toThrow(/commitment/);
  });

  it('claims a real HTLC with the preimage to its own address', async () => {
    const w = wallet();
    const preimage = randomBytes(32);
    const secretHash = `0x${createHash('sha256').update(preimage).digest('hex')}`;
    const userKey = utils.pubSchnorr(utils.randomPrivateKeyBytes());
    const height = await devnet.rpc<number>('getblockcount');
    const htlc = buildHtlc({
      secretHash,
      resolverPubkey: w.identity,
      userPubkey: userKey,
      locktime: height + 100,
      network: 'regtest',
    });
    const fundingTxid = await devnet.fund(htlc.address, '0.002', { confirm: true });
    const funding = await verbose(fundingTxid);
    const vout = funding.vout.find((o) => o.scriptPubKey.address === htlc.address)!.n;
    const execution = {
      funding_txid: fundingTxid,
      htlc_vout: vout,
      amount: '200000',
      htlc_address: htlc.address,
      locktime: htlc.locktime,
      network: 'regtest',
      secret_hash: secretHash,
      resolver_pubkey: w.identity,
      user_pubkey: Buffer.from(userKey).toString('hex'),
    };
    const view = (ex: Record<string, unknown>) =>
      ({ secret_hash: secretHash, execution: ex, fulfil_commitment: null }) as unknown as IntentView;

    await expect(w.signClaim(view(execution), `0x${'00'.repeat(32)}`)).rejects.toThrow(/preimage/i);
    await expect(wallet().signClaim(view(execution), `0x${preimage.toString('hex')}`)).rejects.toThrow(
      /resolver_pubkey/,
    );
    await expect(
      w.signClaim(view({ ...execution, amount: '199999' }), `0x${preimage.toString('hex')}`),
    ).rejects.toThrow(/not an HTLC output/);

    const claim = await w.signClaim(view(execution), `0x${preimage.toString('hex')}`);
    if (!claim) throw new Error('expected a claim');
    const r = await rate();
    expect(claim.meta.inputs).toBe(`${fundingTxid}:${vout}`);
    expect(await w.status(claim)).toEqual({ state: 'unknown' });
    await w.broadcast(claim);
    await w.broadcast(claim);
    expect(await w.status(claim)).toEqual({ state: 'pending' });
    await devnet.mine(1);
    expect(await w.status(claim)).toEqual({ state: 'confirmed', confirmations: 1 });
    const v = await verbose(claim.txid);
    expect(v.vin[0]!.txinwitness![1]).toBe(preimage.toString('hex'));
    expect(v.vout).toHaveLength(1);
    expect(v.vout[0]!.scriptPubKey.address).toBe(w.address);
    expect(sats(v.vout[0]!.value)).toBe(200_000n - BigInt(v.vsize) * r);
    expect(await w.balance('BTC')).toBe(200_000n - BigInt(v.vsize) * r);
  });
});
