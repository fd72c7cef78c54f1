/**
 * The market, as a user meets it: the devnet, the swap service and the reference resolver as real
 * processes (startMarket, as `npm start` runs them), blocks every second, and nothing but the user's
 * side driven by the test (examples/swap-pairs.mjs with the SDK). Every supported pair reaches
 * `Fulfilled` and the claim, with exact balances at the end for the user, the resolver and the
 * escrow. On SQLite and on PostgreSQL (the swap's and the resolver's stores).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tronAddressToEvm } from '@rgbx/chains/tron';
import {
  type BlockProducer,
  DEVNET_RESOLVER,
  DEVNET_RFQ_SECRET,
  type Devnet,
  devnetResolverBtcAddress,
  type Market,
  produceBlocks,
  SWAP_NET,
  startDevnet,
  startMarket,
} from '@rgbx/devnet';
import { type RfqRequest, signRfqRequest } from '@rgbx/sdk';
import { createTestPgDatabase, type Dialect } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM example without type declarations
import { marketContext, runPair } from '../examples/swap-pairs.mjs';

type Hex = `0x${string}`;
interface Leg {
  leg: string;
  txHash: string;
  amount: string;
  recipient: string;
}
interface PairResult {
  intentId: string;
  status: string;
  quote: { sourceAmountLots: string; maxDestAmountLots: string };
  before: { source: bigint; dest: bigint };
  after: { source: bigint; dest: bigint };
}
interface MarketCtx {
  swap: { swap(id: string): Promise<{ settlement: Leg[] }> };
  usdcBalance(a: string): Promise<bigint>;
  btcBalance(a: string): Promise<bigint>;
  solBalance(a: string): Promise<bigint>;
}

const RESOLVER_EVM = DEVNET_RESOLVER.evmAddress as Hex;
const RESOLVER_TRON_HEX = tronAddressToEvm(DEVNET_RESOLVER.tronAddress) as Hex;
const RESOLVER_SOL = DEVNET_RESOLVER.solanaAddress;
/** Solana's fee per signature (the devnode charges it as the network does). */
const SOL_SIGNATURE_FEE = 5000n;

describe.each<Dialect>(['sqlite', 'postgres'])('the market on the devnet (%s stores)', (dialect) => {
  const dir = mkdtempSync(join(tmpdir(), 'rgbx-market-'));
  let devnet: Devnet;
  let market: Market;
  let blocks: BlockProducer | undefined;
  let m: MarketCtx;
  const dbs: { drop(): Promise<void> }[] = [];

  beforeAll(async () => {
    devnet = await startDevnet({ dir: join(dir, 'devnet') });
    const urls: { swapDatabaseUrl?: string; resolverDatabaseUrl?: string } = {};
    if (dialect === 'postgres') {
      const swapDb = await createTestPgDatabase('rgbx_market_swap');
      const resolverDb = await createTestPgDatabase('rgbx_market_resolver');
      dbs.push(swapDb, resolverDb);
      urls.swapDatabaseUrl = swapDb.url;
      urls.resolverDatabaseUrl = resolverDb.url;
    }
    market = await startMarket({ dir, devnet, logLevel: 'warn', ...urls });
    blocks = produceBlocks({ devnet, intervalMs: 1000, evmRpcUrl: market.evm.rpcUrl });
    m = (await marketContext({
      swapUrl: market.swapUrl,
      apiKey: market.swapApiKey,
      evm: market.evm,
      solanaRpcUrl: market.solanaRpcUrl,
      devnet,
    })) as MarketCtx;
  }, 240_000);

  afterAll(async () => {
    await blocks?.stop();
    await market?.stop();
    await devnet?.stop();
    for (const d of dbs) await d.drop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  /** The resolver's and the escrow's balances that a pair can move. */
  async function book() {
    return {
      resolverBtc: await m.btcBalance(devnetResolverBtcAddress()),
      resolverUsdc: await m.usdcBalance(RESOLVER_EVM),
      resolverTronUsdt: await m.usdcBalance(RESOLVER_TRON_HEX),
      resolverSol: await m.solBalance(RESOLVER_SOL),
      escrowUsdc: await m.usdcBalance(market.evm.escrow),
    };
  }

  /** Runs one pair from the user's side, then waits for the resolver's claim (when the source has one). */
  async function swapAndSettle(pair: string, claims: boolean) {
    const before = await book();
    const r = (await runPair(m, pair, { log: () => {}, timeoutMs: 120_000 })) as PairResult;
    expect(r.status, `${pair}: ${r.intentId}`).toBe('Fulfilled');
    let legs: Leg[] = [];
    const until = Date.now() + 60_000;
    for (;;) {
      legs = (await m.swap.swap(r.intentId)).settlement;
      if (!claims || legs.some((l) => l.leg === 'claim') || Date.now() > until) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    expect(legs.map((l) => l.leg)).toEqual(claims ? ['deposit', 'fulfil', 'claim'] : ['deposit', 'fulfil']);
    // The user receives exactly what the quote promised (its maximum: the resolver pays its own quote).
    expect(r.after.dest - r.before.dest).toBe(BigInt(r.quote.maxDestAmountLots));
    return { r, legs, before, after: await book() };
  }

  /** sats of a transaction's fee: inputs − outputs, from bitcoind. */
  async function btcFee(txid: string): Promise<bigint> {
    const tx = await devnet.rpc<{ vin: { txid: string; vout: number }[]; vout: { value: number }[] }>(
      'getrawtransaction',
      [txid, true],
    );
    const sats = (v: number) => BigInt(Math.round(v * 1e8));
    let inputs = 0n;
    for (const i of tx.vin) {
      const prev = await devnet.rpc<{ vout: { value: number }[] }>('getrawtransaction', [i.txid, true]);
      inputs += sats(prev.vout[i.vout]!.value);
    }
    return inputs - tx.vout.reduce((a, o) => a + sats(o.value), 0n);
  }

  it('BTC → USDC (EVM): HTLC funding, ERC-20 payment, HTLC claim; every balance exact', async () => {
    const { r, legs, before, after } = await swapAndSettle('BTC->USDC', true);
    const amount = BigInt(r.quote.sourceAmountLots);
    // The user's BTC: exactly the HTLC amount plus the funding fee the user signed for.
    const fundingFee = await btcFee(legs[0]!.txHash);
    expect(BigInt(legs[0]!.amount)).toBe(amount);
    expect(r.before.source - r.after.source).toBe(amount + fundingFee);
    expect(fundingFee > 0n && fundingFee <= 20_000n).toBe(true);
    // The resolver: paid exactly the quote in USDC; claimed the HTLC (amount − the claim's fee).
    expect(before.resolverUsdc - after.resolverUsdc).toBe(BigInt(r.quote.maxDestAmountLots));
    const claimFee = await btcFee(legs[2]!.txHash);
    expect(after.resolverBtc - before.resolverBtc).toBe(amount - claimFee);
    expect(after.escrowUsdc).toBe(before.escrowUsdc);
  });

  it('USDC (EVM) → BTC: escrow pull, BTC payment with its commitment, escrow claim; every balance exact', async () => {
    const { r, legs, before, after } = await swapAndSettle('USDC->BTC', true);
    const amount = BigInt(r.quote.sourceAmountLots);
    expect(r.before.source - r.after.source).toBe(amount);
    const paymentFee = await btcFee(legs[1]!.txHash);
    expect(before.resolverBtc - after.resolverBtc).toBe(BigInt(r.quote.maxDestAmountLots) + paymentFee);
    expect(after.resolverUsdc - before.resolverUsdc).toBe(amount);
    // Deposited into the escrow and claimed out of it: the escrow holds what it held.
    expect(after.escrowUsdc).toBe(before.escrowUsdc);
  });

  it('USDT (Tron) → USDC (EVM): TIP-712 Permit2 pull, payment, escrow claim to the Tron identity; exact', async () => {
    const { r, before, after } = await swapAndSettle('USDT(TRON)->USDC', true);
    const amount = BigInt(r.quote.sourceAmountLots);
    expect(r.before.source - r.after.source).toBe(amount);
    expect(before.resolverUsdc - after.resolverUsdc).toBe(BigInt(r.quote.maxDestAmountLots));
    expect(after.resolverTronUsdt - before.resolverTronUsdt).toBe(amount);
    expect(after.escrowUsdc).toBe(before.escrowUsdc);
  });

  it('SOL → USDC (EVM): the co-signed transfer to the resolver is the deposit (no claim leg); exact', async () => {
    const { r, before, after } = await swapAndSettle('SOL->USDC', false);
    const amount = BigInt(r.quote.sourceAmountLots);
    // The resolver pays the fee (it is the fee payer at position 0; two signatures).
    expect(r.before.source - r.after.source).toBe(amount);
    expect(after.resolverSol - before.resolverSol).toBe(amount - 2n * SOL_SIGNATURE_FEE);
    expect(before.resolverUsdc - after.resolverUsdc).toBe(BigInt(r.quote.maxDestAmountLots));
  });

  it('USDC (EVM) → SOL: escrow pull, System transfer to the user, escrow claim; exact', async () => {
    const { r, before, after } = await swapAndSettle('USDC->SOL', true);
    const amount = BigInt(r.quote.sourceAmountLots);
    expect(r.before.source - r.after.source).toBe(amount);
    expect(before.resolverSol - after.resolverSol).toBe(
      BigInt(r.quote.maxDestAmountLots) + SOL_SIGNATURE_FEE,
    );
    expect(after.resolverUsdc - before.resolverUsdc).toBe(amount);
    expect(after.escrowUsdc).toBe(before.escrowUsdc);
  });

  it('the resolver process answers a signed RFQ once, and refuses its replay, a forged signature and a stale one', async () => {
    const rfqUrl = `${market.resolver!.value}/rfq`;
    const request = (timestamp: number): RfqRequest => ({
      request_id: randomUUID(),
      resolver_id: DEVNET_RESOLVER.id,
      timestamp,
      source_network: { id: SWAP_NET.btc, type: 'BITCOIN', chain_id: 'regtest' },
      source_token: { address: 'BTC', symbol: 'BTC', decimals: 8 },
      dest_network: { id: SWAP_NET.evm, type: 'EVM', chain_id: market.evm.chainId.toString() },
      dest_token: { address: market.evm.usdc, symbol: 'USDC', decimals: 18 },
      amount_lots: '1000000',
    });
    const post = async (m: { body: string; headers: Record<string, string> }) => {
      const res = await fetch(rfqUrl, { method: 'POST', body: m.body, headers: m.headers });
      return { status: res.status, body: (await res.json()) as { dest_amount_lots?: string; code?: string } };
    };
    const now = Math.floor(Date.now() / 1000);
    const signed = signRfqRequest(DEVNET_RFQ_SECRET, request(now));
    const first = await post(signed);
    expect(first.status).toBe(200);
    // 0.01 BTC at the devnet rate 60 000 minus the 10 bps spread, in 18-decimal USDC lots.
    expect(first.body.dest_amount_lots).toBe((599_400n * 10n ** 15n).toString());
    expect(await post(signed)).toMatchObject({ status: 401, body: { code: 'replayed' } });
    const forged = signRfqRequest('a-guess-that-is-not-the-shared-secret-0123456789', request(now));
    expect(await post(forged)).toMatchObject({ status: 401, body: { code: 'bad_signature' } });
    const stale = signRfqRequest(DEVNET_RFQ_SECRET, request(now - 600));
    expect(await post(stale)).toMatchObject({ status: 401, body: { code: 'stale' } });
  });

  it('five users at once, one per pair: every swap fills, each user paid exactly once', async () => {
    const pairs = ['BTC->USDC', 'USDC->BTC', 'USDT(TRON)->USDC', 'SOL->USDC', 'USDC->SOL'];
    const results = (await Promise.all(
      pairs.map((p) => runPair(m, p, { log: () => {}, timeoutMs: 120_000 })),
    )) as PairResult[];
    for (const [i, r] of results.entries()) {
      expect(r.status, pairs[i]).toBe('Fulfilled');
      expect(r.after.dest - r.before.dest, pairs[i]).toBe(BigInt(r.quote.maxDestAmountLots));
    }
  });
});
