/**
 * The Bitcoin path end to end on a real regtest devnet (bitcoind + our Electrum server), on SQLite
 * and PostgreSQL, through the SDK over real HTTP:
 * quote → intent (UTXOs found through Electrum) → the user signs the PSBT with @scure/btc-signer →
 * approval (tampered, added-output and wrong-key PSBTs rejected first) → resolver accepts (the
 * service broadcasts the funding tx) → deposit checked on chain → fulfil (a real ERC-20 payment from
 * the resolver on the EVM devnode, verified) → preimage → the resolver
 * claims the HTLC through the claim leaf → Fulfilled with swap_tx.
 * Refund path: the deadline passes → Expired → refund request → the user spends the refund leaf →
 * refund tx checked on chain → Refunded.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schnorr } from '@noble/curves/secp256k1.js';
import { buildHtlc, buildHtlcClaimTx, buildHtlcRefundTx } from '@rgbx/chains/btc';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { ResolverClient, SigningCheckError, SwapApiError, SwapClient, signHtlcApproval } from '@rgbx/sdk';
import { SigHash, Transaction } from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestChains, type TestChains } from '../../test-chains.ts';
import {
  btcKey,
  DIALECTS,
  NET,
  RESOLVER_BTC,
  RESOLVER_EVM_KEY,
  RESOLVER_KEY,
  randomEvmAddress,
  startTestService,
  type TestService,
  testClock,
  testDatabases,
} from '../../test-support.ts';

const dbs = testDatabases();
let devnet: Devnet;
let dir: string;

let chains: TestChains;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'swap-devnet-'));
  [devnet, chains] = await Promise.all([startDevnet({ dir }), startTestChains()]);
}, 120_000);

afterAll(async () => {
  await chains?.stop();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function expectApiError(p: Promise<unknown>, type: string, reason?: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected ${type}`).toBeInstanceOf(SwapApiError);
  expect((err as SwapApiError).type, (err as Error).message).toBe(type);
  if (reason !== undefined) expect((err as SwapApiError).details?.reason).toBe(reason);
}

describe.each(DIALECTS)('Bitcoin HTLC swap on the devnet (%s)', (dialect) => {
  let s: TestService;
  let swap: SwapClient;
  let res: ResolverClient;
  const clock = testClock();

  beforeAll(async () => {
    s = await startTestService({
      databaseUrl: dbs.url(dialect),
      electrumUrl: devnet.info.electrum,
      now: clock.now,
      intentTtlSecs: 3600,
      minConfirmations: 1,
      ...chains.config,
      // A devnet margin, so the refund test's CLTV is already in the chain's past.
      refundSafetyMarginSecs: 60,
    });
    await s.app.listen({ host: '127.0.0.1', port: 0 });
    const baseUrl = `http://127.0.0.1:${(s.app.server.address() as AddressInfo).port}`;
    swap = new SwapClient({ baseUrl, apiKey: s.apiKey });
    res = new ResolverClient({ baseUrl, apiKey: RESOLVER_KEY });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function fundedUser(btc: string) {
    const user = btcKey();
    await devnet.fund(user.address, btc, { confirm: true });
    return user;
  }

  async function newIntent(
    user: ReturnType<typeof btcKey>,
    amount: string,
    destination = randomEvmAddress(),
  ) {
    const quote = await swap.quote({
      sourceChain: NET.btc,
      sourceToken: 'BTC',
      destChain: NET.evm,
      destToken: chains.usdc,
      amount,
    });
    expect(quote.approvalMechanism).toBe('htlc');
    const intent = await swap.createIntent({
      quoteId: quote.quoteId,
      sourceAddress: user.address,
      sourcePublicKey: Buffer.from(user.xonly).toString('hex'),
      refundAddress: user.address,
      destinationAddress: destination,
    });
    return { quote, intent, destination };
  }

  /** The user spends the HTLC refund leaf of `intent` back to their address (mined): the refund transaction. */
  async function spendRefundLeaf(
    user: ReturnType<typeof btcKey>,
    quote: { sourceAmountLots: string },
    intent: { htlc?: { fundingTxid: string; htlcVout: number } | null },
    ex: Record<string, string | number>,
  ): Promise<{ txid: string }> {
    const htlc = buildHtlc({
      secretHash: String(ex.secret_hash).slice(2),
      resolverPubkey: String(ex.resolver_pubkey),
      userPubkey: String(ex.user_pubkey),
      locktime: Number(ex.locktime),
      network: 'regtest',
    });
    const refund = buildHtlcRefundTx({
      htlc,
      fundingTxid: intent.htlc!.fundingTxid,
      vout: intent.htlc!.htlcVout,
      amount: BigInt(quote.sourceAmountLots),
      destinationAddress: user.address,
      feeRate: 2n,
      userPrivateKey: user.privateKey,
    });
    await devnet.rpc('sendrawtransaction', [refund.txHex]);
    await devnet.mine(1);
    return refund;
  }

  it('quote → intent → signed PSBT → accept → deposit → fulfil → claim with the preimage → Fulfilled', async () => {
    const user = await fundedUser('0.5');
    const { quote, intent, destination } = await newIntent(user, '0.1');
    const htlc = intent.htlc!;
    const expectation = {
      amountSats: BigInt(quote.sourceAmountLots),
      secretHash: intent.secretHash,
      minLocktime: intent.deadlineSecs,
    };
    // The user's refund opens the safety margin after the last accepted fulfilment.
    expect(htlc.locktime).toBe(intent.deadlineSecs + 60);
    expect(htlc.inputs).toEqual([0]);
    const unsigned = Transaction.fromPSBT(Buffer.from(htlc.psbt, 'base64'));
    expect(unsigned.getOutput(0).amount).toBe(BigInt(quote.sourceAmountLots));
    expect(unsigned.id).toBe(htlc.fundingTxid);

    // Negative approvals first: each is rejected and the intent stays Initiated.
    const signed = signHtlcApproval(htlc, user.privateKey, expectation);
    // Tampered: the change output raised by 100 sat (fee lowered), then validly signed over the changed tx.
    const tampered = Transaction.fromPSBT(Buffer.from(htlc.psbt, 'base64'), { allowUnknownOutputs: true });
    tampered.updateOutput(1, { amount: (tampered.getOutput(1).amount ?? 0n) + 100n });
    const tamperedSigned = signHtlcApproval(
      { ...htlc, psbt: Buffer.from(tampered.toPSBT()).toString('base64') },
      user.privateKey,
      { amountSats: BigInt(quote.sourceAmountLots) },
    );
    await expectApiError(swap.addApproval(intent.intentId, tamperedSigned), 'INVALID_PSBT');
    // Added output: 600 sat taken from the change and paid to someone else.
    const added = Transaction.fromPSBT(Buffer.from(htlc.psbt, 'base64'), { allowUnknownOutputs: true });
    added.updateOutput(1, { amount: (added.getOutput(1).amount ?? 0n) - 600n });
    added.addOutputAddress(RESOLVER_BTC.address, 600n, {
      bech32: 'bcrt',
      pubKeyHash: 0x6f,
      scriptHash: 0xc4,
      wif: 0xef,
    });
    // The SDK refuses to sign it (an output to someone else); a signer without that check would.
    expect(() =>
      signHtlcApproval(
        { ...htlc, psbt: Buffer.from(added.toPSBT()).toString('base64') },
        user.privateKey,
        expectation,
      ),
    ).toThrow(SigningCheckError);
    added.signIdx(user.privateKey, 0);
    added.finalizeIdx(0);
    await expectApiError(
      swap.addApproval(intent.intentId, { psbt: Buffer.from(added.toPSBT()).toString('base64') }),
      'INVALID_PSBT',
    );
    // Wrong key: a valid BIP-341 key-path signature by someone else over the right transaction.
    const stranger = btcKey();
    const strangerTx = Transaction.fromPSBT(Buffer.from(htlc.psbt, 'base64'));
    const prev = strangerTx.getInput(0).witnessUtxo!;
    const sighash = strangerTx.preimageWitnessV1(0, [prev.script], SigHash.DEFAULT, [prev.amount]);
    strangerTx.updateInput(0, { finalScriptWitness: [schnorr.sign(sighash, stranger.privateKey)] }, true);
    await expectApiError(
      swap.addApproval(intent.intentId, { psbt: Buffer.from(strangerTx.toPSBT()).toString('base64') }),
      'INVALID_PSBT',
      'invalid_signature',
    );
    await expectApiError(
      swap.addApproval(intent.intentId, { psbt: htlc.psbt }),
      'INVALID_PSBT',
      'missing_signature',
    );
    expect(await swap.status(intent.intentId)).toBe('Initiated');

    expect(await swap.addApproval(intent.intentId, signed)).toEqual({
      intentId: intent.intentId,
      status: 'ApprovalAdded',
    });
    expect((await swap.addApproval(intent.intentId, signed)).status).toBe('ApprovalAdded'); // replay: idempotent
    const resigned = signHtlcApproval(htlc, user.privateKey, expectation); // fresh Schnorr nonce: a different approval
    if (resigned.psbt !== signed.psbt)
      await expectApiError(swap.addApproval(intent.intentId, resigned), 'APPROVAL_CONFLICT');

    // The user cannot refund before the deadline: bitcoind refuses the CLTV spend.
    const view = await res.intent(intent.intentId);
    const ex = view.execution as Record<string, string | number>;
    const htlcScript = buildHtlc({
      secretHash: String(ex.secret_hash).slice(2),
      resolverPubkey: String(ex.resolver_pubkey),
      userPubkey: String(ex.user_pubkey),
      locktime: Number(ex.locktime),
      network: 'regtest',
    });
    expect(htlcScript.address).toBe(htlc.htlcAddress);

    // The resolver accepts: the service broadcasts the approved funding transaction.
    expect((await res.accept(intent.intentId)).status).toBe('Accepted');
    await expectApiError(res.deposit(intent.intentId, htlc.fundingTxid), 'TX_NOT_VERIFIED');
    await expectApiError(res.deposit(intent.intentId, 'ab'.repeat(32)), 'TX_NOT_VERIFIED');
    await devnet.mine(1);
    expect((await res.deposit(intent.intentId, htlc.fundingTxid)).status).toBe('UserDeposited');

    const early = buildHtlcRefundTx({
      htlc: htlcScript,
      fundingTxid: htlc.fundingTxid,
      vout: htlc.htlcVout,
      amount: BigInt(quote.sourceAmountLots),
      destinationAddress: user.address,
      feeRate: 2n,
      userPrivateKey: user.privateKey,
    });
    await expect(devnet.rpc('sendrawtransaction', [early.txHex])).rejects.toThrow(/non-final|locktime/i);

    await expectApiError(res.secret(intent.intentId), 'SECRET_NOT_RELEASED');
    // The destination leg, for real: the resolver pays the user the quoted minimum in the ERC-20.
    await expectApiError(res.fulfil(intent.intentId, `0x${'12'.repeat(32)}`), 'TX_NOT_VERIFIED', 'not_found');
    const paid = await chains.erc20Transfer(
      RESOLVER_EVM_KEY,
      chains.usdc,
      destination,
      BigInt(quote.minDestAmountLots),
    );
    expect((await res.fulfil(intent.intentId, paid)).status).toBe('Fulfilled');
    const preimage = await res.secret(intent.intentId);
    expect(
      `0x${createHash('sha256')
        .update(Buffer.from(preimage.slice(2), 'hex'))
        .digest('hex')}`,
    ).toBe(intent.secretHash);

    const claim = buildHtlcClaimTx({
      htlc: htlcScript,
      fundingTxid: String(ex.funding_txid),
      vout: Number(ex.htlc_vout),
      amount: BigInt(String(ex.amount)),
      destinationAddress: RESOLVER_BTC.address,
      feeRate: 2n,
      preimage: Buffer.from(preimage.slice(2), 'hex'),
      resolverPrivateKey: RESOLVER_BTC.privateKey,
    });
    await devnet.rpc('sendrawtransaction', [claim.txHex]);
    await expectApiError(res.claim(intent.intentId, claim.txid), 'TX_NOT_VERIFIED'); // not confirmed yet
    await devnet.mine(1);
    expect((await res.claim(intent.intentId, claim.txid)).status).toBe('Fulfilled');
    const record = await swap.swap(intent.intentId);
    expect(record.status).toBe('Fulfilled');
    expect(record.swapMetadata).toMatchObject({
      proxyAddress: htlc.htlcAddress,
      userDepositTx: htlc.fundingTxid,
      swapTx: claim.txid,
    });
    expect(record.swapMetadata.fulfilledAt).not.toBeNull();
    expect(record.swapMetadata.swappedAt).not.toBeNull();
    // The preimage is sealed at rest: the row never holds it in clear.
    const row = await s.ctx.db
      .selectFrom('intents')
      .select('secret_sealed')
      .where('id', '=', intent.intentId)
      .executeTakeFirstOrThrow();
    expect(row.secret_sealed).not.toContain(preimage.slice(2));
  });

  it('refund path: deadline passes → Expired → refund request → refund-leaf spend checked on chain → Refunded', async () => {
    const user = await fundedUser('0.3');
    // The service's clock runs two hours behind the chain, so the intent's deadline (its CLTV) is
    // already in the chain's past: the refund leaf is spendable as soon as the service says Expired.
    clock.set(Date.now() - 3 * 3600_000);
    try {
      const { quote, intent } = await newIntent(user, '0.05');
      await swap.addApproval(
        intent.intentId,
        signHtlcApproval(intent.htlc!, user.privateKey, { amountSats: BigInt(quote.sourceAmountLots) }),
      );
      await res.accept(intent.intentId);
      await devnet.mine(1);
      await res.deposit(intent.intentId, intent.htlc!.fundingTxid);
      await expectApiError(swap.requestRefund(intent.intentId), 'INVALID_TRANSITION');

      clock.set(intent.deadlineSecs * 1000 + 1000);
      expect(
        await s.ctx.db
          .selectFrom('intents')
          .select('status')
          .where('id', '=', intent.intentId)
          .executeTakeFirstOrThrow(),
      ).toEqual({
        status: 'UserDeposited',
      });
      const { startScheduler } = await import('../../domain/scheduler.ts');
      const scheduler = startScheduler(s.ctx, 3_600_000);
      expect(await scheduler.tick()).toBeGreaterThanOrEqual(1);
      await scheduler.stop();
      expect(await swap.status(intent.intentId)).toBe('Expired');
      await expectApiError(res.fulfil(intent.intentId, 'cd'.repeat(32)), 'INTENT_EXPIRED');
      expect((await swap.requestRefund(intent.intentId)).status).toBe('RefundRequested');

      const ex = (await res.intent(intent.intentId)).execution as Record<string, string | number>;
      const refund = await spendRefundLeaf(user, quote, intent, ex);
      // A claim report for a refund spend is refused (wrong leaf); the refund report moves the status.
      await expectApiError(res.claim(intent.intentId, refund.txid), 'INVALID_TRANSITION');
      expect((await swap.reportRefundTx(intent.intentId, refund.txid)).status).toBe('Refunded');
      const record = await swap.swap(intent.intentId);
      expect(record.swapMetadata).toMatchObject({
        refundTx: refund.txid,
        userDepositTx: intent.htlc!.fundingTxid,
      });
      expect(record.swapMetadata.refundRequestedAt).not.toBeNull();
      expect(record.swapMetadata.refundedAt).not.toBeNull();
    } finally {
      clock.set(Date.now());
    }
  });

  it('a resolver that has accepted cannot decline (the funding is broadcast); one that broadcasts the approved funding without accepting cannot keep the user from recording the refund', async () => {
    const user = await fundedUser('0.3');
    clock.set(Date.now() - 3 * 3600_000); // the deadline (CLTV) already in the chain's past, as above
    try {
      // Accepted: the service broadcast the user's funding, so a decline would leave the funds locked
      // under a terminal status.
      const a = await newIntent(user, '0.02');
      await swap.addApproval(
        a.intent.intentId,
        signHtlcApproval(a.intent.htlc!, user.privateKey, { amountSats: BigInt(a.quote.sourceAmountLots) }),
      );
      await res.accept(a.intent.intentId);
      await expectApiError(res.decline(a.intent.intentId, 'changed my mind'), 'INVALID_TRANSITION');
      expect(await swap.status(a.intent.intentId)).toBe('Accepted');

      // Approved only: the resolver is shown the signed funding and broadcasts it itself, never
      // accepting, never reporting. The intent expires with no deposit recorded.
      await devnet.mine(1);
      const { quote, intent } = await newIntent(user, '0.03');
      await swap.addApproval(
        intent.intentId,
        signHtlcApproval(intent.htlc!, user.privateKey, { amountSats: BigInt(quote.sourceAmountLots) }),
      );
      const ex = (await res.intent(intent.intentId)).execution as Record<string, string | number>;
      expect(ex.funding_txid).toBe(intent.htlc!.fundingTxid);
      await devnet.rpc('sendrawtransaction', [String(ex.funding_tx_hex)]);
      await devnet.mine(1);
      clock.set(intent.deadlineSecs * 1000 + 1000);
      expect(await swap.status(intent.intentId)).toBe('Expired');
      // The funding exists from the approval on: the refund request is the user's to make.
      expect((await swap.requestRefund(intent.intentId)).status).toBe('RefundRequested');

      const refund = await spendRefundLeaf(user, quote, intent, ex);
      expect((await swap.reportRefundTx(intent.intentId, refund.txid)).status).toBe('Refunded');
      const record = await swap.swap(intent.intentId);
      expect(record.swapMetadata).toMatchObject({ refundTx: refund.txid, userDepositTx: null });
      expect(record.settlement.map((l) => l.leg)).toEqual(['refund']);
    } finally {
      clock.set(Date.now());
    }
  });

  it('refuses a source without enough confirmed funds, and a public key that is not the address', async () => {
    const poor = btcKey();
    const quote = await swap.quote({
      sourceChain: NET.btc,
      sourceToken: 'BTC',
      destChain: NET.evm,
      destToken: chains.usdc,
      amount: '0.1',
    });
    await expectApiError(
      swap.createIntent({
        quoteId: quote.quoteId,
        sourceAddress: poor.address,
        sourcePublicKey: Buffer.from(poor.xonly).toString('hex'),
        refundAddress: poor.address,
        destinationAddress: s.ctx.config.resolvers[0]!.evm_address!,
      }),
      'INSUFFICIENT_FUNDS',
    );
    await expectApiError(
      swap.createIntent({
        quoteId: quote.quoteId,
        sourceAddress: poor.address,
        sourcePublicKey: Buffer.from(btcKey().xonly).toString('hex'),
        refundAddress: poor.address,
        destinationAddress: s.ctx.config.resolvers[0]!.evm_address!,
      }),
      'INVALID_ADDRESS',
    );
    await expectApiError(
      swap.createIntent({
        quoteId: quote.quoteId,
        sourceAddress: poor.address,
        refundAddress: poor.address,
        destinationAddress: s.ctx.config.resolvers[0]!.evm_address!,
      }),
      'PUBLIC_KEY_REQUIRED',
    );
  });
});
