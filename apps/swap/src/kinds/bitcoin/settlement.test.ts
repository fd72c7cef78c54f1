/**
 * The Bitcoin verifier's logic around the chain, with a stand-in indexer (a map of transactions and
 * a header chain) serving real, signed transactions built by `@rgbx/chains/btc`: which HTLC leaf a
 * claim or refund spends, which outpoint, "not before the deposit", and the block height read as its
 * block's own under a moving tip. The same rules on real chains: settlement.devnet.test.ts and
 * settlement-binding.devnet.test.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { schnorr } from '@noble/curves/secp256k1.js';
import {
  buildHtlc,
  buildHtlcClaimTx,
  buildHtlcRefundTx,
  fulfilCommitmentScript,
  reversedHex,
  secretHashOf,
  sha256d,
} from '@rgbx/chains/btc';
import { Transaction } from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import type { BitcoinGateway, BitcoinTxInfo, ChainGateway } from '../../chains/chain-gateway.ts';
import type { NetworkConfig } from '../../config.ts';
import type { After, LegCheck } from '../../settlement/check.ts';
import type { Intent } from '../../store/intent-store.ts';
import type { Leg, LegRecord } from '../../store/legs.ts';
import { btcKey } from '../../test-support.ts';
import type { HtlcContext } from './htlc-approval.ts';
import { minedHeight, verifyBitcoinLeg } from './settlement.ts';

const NETWORK = { id: 1, type: 'BITCOIN', bitcoin_network: 'regtest' } as unknown as NetworkConfig;

/** A stand-in indexer: `height` blocks of random headers, transactions placed in them. */
function standInChain(height: number) {
  const headers: string[] = [];
  const grow = () => headers.push(randomBytes(80).toString('hex'));
  for (let h = 0; h <= height; h++) grow();
  const hashAt = (h: number) => reversedHex(sha256d(Buffer.from(headers[h]!, 'hex')));
  const txs = new Map<string, { hex: string; height: number | null }>();
  let beforeTip: (() => void) | undefined;
  const btc: BitcoinGateway = {
    listUnspent: async () => [],
    history: async () => [],
    async transaction(txid): Promise<BitcoinTxInfo | null> {
      const t = txs.get(txid);
      if (!t) return null;
      const tip = headers.length - 1;
      return t.height === null
        ? { hex: t.hex, confirmations: 0, blockHash: null, blockTime: null }
        : { hex: t.hex, confirmations: tip - t.height + 1, blockHash: hashAt(t.height), blockTime: 1 };
    },
    async tip() {
      beforeTip?.();
      return headers.length - 1;
    },
    async blockHeader(h) {
      const header = headers[h];
      if (header === undefined) throw new Error(`no block at ${h}`);
      return header;
    },
    broadcast: async (_hex, txid) => txid,
    ping: async () => {},
  };
  const gateway = { bitcoin: () => btc } as unknown as ChainGateway;
  return {
    btc,
    gateway,
    place(txid: string, hex: string, at: number | null) {
      txs.set(txid, { hex, height: at });
    },
    /** Blocks mined between the next transaction read and tip read. */
    raceNextTip(blocks: number) {
      beforeTip = () => {
        beforeTip = undefined;
        for (let i = 0; i < blocks; i++) grow();
      };
    },
    /** A reorganisation: every header from `h` up is replaced. */
    reorgFrom(h: number) {
      for (let i = h; i < headers.length; i++) headers[i] = randomBytes(80).toString('hex');
    },
    mine: (n: number) => {
      for (let i = 0; i < n; i++) grow();
    },
    tipHeight: () => headers.length - 1,
  };
}

/** An HTLC intent whose deposit is proven at `depositHeight`, with the keys to spend its HTLC. */
function htlcIntent(depositHeight: number) {
  const resolverKey = randomBytes(32);
  const userKey = randomBytes(32);
  const preimage = randomBytes(32);
  const locktime = 1_700_000_000;
  const htlc = buildHtlc({
    secretHash: Buffer.from(secretHashOf(preimage)).toString('hex'),
    resolverPubkey: Buffer.from(schnorr.getPublicKey(resolverKey)).toString('hex'),
    userPubkey: Buffer.from(schnorr.getPublicKey(userKey)).toString('hex'),
    locktime,
    network: 'regtest',
  });
  const fundingTxid = randomBytes(32).toString('hex');
  const hc: Partial<HtlcContext> = {
    network: 'regtest',
    secretHash: `0x${Buffer.from(secretHashOf(preimage)).toString('hex')}`,
    resolverPubkey: Buffer.from(htlc.resolverKey).toString('hex'),
    userPubkey: Buffer.from(htlc.userKey).toString('hex'),
    locktime,
    fundingTxid,
    htlcVout: 0,
    amount: '100000',
    proxyAddress: htlc.address,
  };
  const id = randomUUID();
  const intent = {
    id,
    mechanism: 'htlc',
    sourceToken: 'BTC',
    destToken: 'BTC',
    userDestAddress: btcKey().address,
    minDestAmountLots: 50_000n,
    context: hc,
  } as unknown as Intent;
  const deposit = { leg: 'deposit', blockHeight: String(depositHeight), amount: '100000' } as LegRecord;
  const spend = {
    htlc,
    fundingTxid,
    vout: 0,
    amount: 100_000n,
    destinationAddress: btcKey().address,
    feeRate: 2n,
  };
  return {
    intent,
    deposit,
    claim: () => buildHtlcClaimTx({ ...spend, preimage, resolverPrivateKey: resolverKey }),
    refund: () => buildHtlcRefundTx({ ...spend, userPrivateKey: userKey }),
  };
}

function check(
  intent: Intent,
  leg: Leg,
  txHash: string,
  after: After | null,
  deposit: LegRecord | null,
): LegCheck {
  return {
    intent,
    leg,
    network: NETWORK,
    txHash,
    minConfirmations: 1,
    after,
    deposit,
    resolver: {} as LegCheck['resolver'],
    refundSafetyMarginSecs: 3600,
  };
}

const reason = (p: Promise<unknown>) =>
  p.then(
    () => 'verified',
    (e: { details?: { reason?: string }; code?: string }) => e.details?.reason ?? e.code ?? String(e),
  );

describe('Bitcoin claim and refund: a spend of THIS intent’s HTLC output through the right leaf (stand-in indexer)', () => {
  it('a claim-leaf spend is the claim and never the refund; a refund-leaf spend the reverse', async () => {
    const chain = standInChain(120);
    const a = htlcIntent(110);
    const claim = a.claim();
    const refund = a.refund();
    chain.place(claim.txid, claim.txHex, 115);
    chain.place(refund.txid, refund.txHex, 116);
    const afterDeposit: After = { event: 'deposit', height: 110n, sameBlock: true };
    const v = (leg: Leg, tx: string) =>
      reason(verifyBitcoinLeg(chain.gateway, check(a.intent, leg, tx, afterDeposit, a.deposit)));
    expect(await v('claim', claim.txid)).toBe('verified');
    expect(await v('refund', refund.txid)).toBe('verified');
    expect(await v('refund', claim.txid)).toBe('leaf');
    expect(await v('claim', refund.txid)).toBe('leaf');
  });

  it("another intent's HTLC spend, with the same leaves' shape, is not this intent's", async () => {
    const chain = standInChain(120);
    const a = htlcIntent(110);
    const b = htlcIntent(110);
    const bClaim = b.claim();
    const bRefund = b.refund();
    chain.place(bClaim.txid, bClaim.txHex, 115);
    chain.place(bRefund.txid, bRefund.txHex, 115);
    const afterDeposit: After = { event: 'deposit', height: 110n, sameBlock: true };
    for (const [leg, tx] of [
      ['claim', bClaim.txid],
      ['refund', bRefund.txid],
    ] as const)
      expect(
        await reason(verifyBitcoinLeg(chain.gateway, check(a.intent, leg, tx, afterDeposit, a.deposit))),
      ).toBe('not_spending_htlc');
  });

  it('not before the deposit: the same block counts (a spend can share its funding block), an earlier one does not', async () => {
    const chain = standInChain(120);
    const a = htlcIntent(110);
    const claim = a.claim();
    const afterDeposit: After = { event: 'deposit', height: 110n, sameBlock: true };
    const v = () =>
      reason(verifyBitcoinLeg(chain.gateway, check(a.intent, 'claim', claim.txid, afterDeposit, a.deposit)));
    chain.place(claim.txid, claim.txHex, 109);
    expect(await v()).toBe('older_than_deposit');
    chain.place(claim.txid, claim.txHex, 110);
    expect(await v()).toBe('verified');
  });
});

describe('Bitcoin fulfilment: the commitment binds the payment to the intent (stand-in indexer)', () => {
  function payment(to: string, sats: bigint, data?: string) {
    const tx = new Transaction({ allowUnknownOutputs: true });
    tx.addOutputAddress(to, sats, { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef });
    if (data) tx.addOutput({ script: Buffer.from(data, 'hex'), amount: 0n });
    // Outputs first: an input that carries a witness marks the transaction signed.
    tx.addInput({ txid: randomBytes(32), index: 0, finalScriptWitness: [randomBytes(64)] });
    return { txid: tx.id, hex: tx.hex };
  }

  it('refuses a payment without this intent’s OP_RETURN, accepts one with it', async () => {
    const chain = standInChain(120);
    const a = htlcIntent(100);
    const fresh: After = { event: 'acceptance', height: 105n, sameBlock: false };
    const v = (tx: string) =>
      reason(verifyBitcoinLeg(chain.gateway, check(a.intent, 'fulfil', tx, fresh, null)));
    const none = payment(a.intent.userDestAddress, 60_000n);
    const other = payment(a.intent.userDestAddress, 60_000n, fulfilCommitmentScript(randomUUID()));
    const ours = payment(a.intent.userDestAddress, 60_000n, fulfilCommitmentScript(a.intent.id));
    const early = payment(a.intent.userDestAddress, 60_000n, fulfilCommitmentScript(a.intent.id));
    for (const [p, at] of [
      [none, 110],
      [other, 110],
      [ours, 110],
      [early, 105],
    ] as const)
      chain.place(p.txid, p.hex, at);
    expect(await v(none.txid)).toBe('commitment');
    expect(await v(other.txid)).toBe('commitment');
    expect(await v(early.txid)).toBe('older_than_acceptance');
    expect(await v(ours.txid)).toBe('verified');
  });
});

describe('a Bitcoin transaction’s height is its block’s own (stand-in indexer)', () => {
  it('blocks mined between the transaction read and the tip read do not move it', async () => {
    for (const raced of [0, 1, 2, 5]) {
      const chain = standInChain(100);
      chain.place('aa'.repeat(32), '00', 90);
      const info = (await chain.btc.transaction('aa'.repeat(32)))!;
      chain.raceNextTip(raced);
      expect(await minedHeight(chain.btc, info)).toBe(90n);
    }
  });

  it('a block that is no longer on the best chain (reorganised between the reads) is a 503, never a guess', async () => {
    const chain = standInChain(100);
    chain.place('bb'.repeat(32), '00', 95);
    const info = (await chain.btc.transaction('bb'.repeat(32)))!;
    chain.reorgFrom(93);
    const err = await minedHeight(chain.btc, info).then(
      () => null,
      (e: { statusCode?: number; code?: unknown }) => e,
    );
    expect(err?.statusCode).toBe(503);
  });

  it('a mempool transaction has no height', async () => {
    const chain = standInChain(10);
    chain.place('cc'.repeat(32), '00', null);
    expect(await minedHeight(chain.btc, (await chain.btc.transaction('cc'.repeat(32)))!)).toBeNull();
  });
});
