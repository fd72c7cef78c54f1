/**
 * Both surfaces and the resolver API in-process (`app.inject`), on SQLite and PostgreSQL: auth and
 * tenancy, discovery and pagination, quotes, intents and real approvals for permit2 (EVM and Tron)
 * and cosign (Solana), the lifecycle through the resolver API, expiry, refunds, affiliates.
 * Bitcoin (htlc) runs end to end on the devnet in bitcoin.devnet.test.ts.
 */

import { type SolanaDevnode, startSolanaDevnode } from '@rgbx/devnet/sol-devnode';
import {
  affiliatePermit2TypedData,
  type IntentCreated,
  permit2TypedData,
  type SwapQuote as Quote,
  signCosignApproval,
  signPermit2Approval,
  toAffiliateApproval,
} from '@rgbx/sdk';
import { generateKeyPairSigner, signBytes } from '@solana/kit';
import { hashStruct } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../store/api-keys.ts';
import {
  DIALECTS,
  ESCROW,
  NET,
  PERMIT2,
  RESOLVER_KEY,
  RESOLVER_SOL,
  RGB_ASSET,
  SOL_MINT,
  startTestService,
  type TestService,
  TRON_USDT,
  testClock,
  testDatabases,
  tronKey,
  USDC,
} from '../test-support.ts';

const dbs = testDatabases();

let sol: SolanaDevnode;
beforeAll(async () => {
  sol = await startSolanaDevnode(); // co-signed transactions carry the node's recent blockhash
});
afterAll(async () => {
  await sol?.stop();
});

describe.each(DIALECTS)('swap API on %s', (dialect) => {
  let s: TestService;
  const clock = testClock();

  beforeAll(async () => {
    s = await startTestService({
      solRpcUrl: sol.rpcUrl,
      databaseUrl: dbs.url(dialect),
      now: clock.now,
      quoteTtlSecs: 60,
      intentTtlSecs: 600,
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function call(method: 'GET' | 'POST', url: string, payload?: unknown, key: string | null = s.apiKey) {
    const res = await s.app.inject({
      method,
      url,
      headers: key === null ? {} : { 'x-api-key': key },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json(), headers: res.headers };
  }
  const resolver = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    call(method, url, payload ?? (method === 'POST' ? {} : undefined), RESOLVER_KEY);

  async function quoteA(body: Record<string, unknown>): Promise<Quote> {
    const r = await call('POST', '/quote', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as Quote;
  }

  async function evmIntent(owner = privateKeyToAccount(generatePrivateKey()), amountLots = '250000000') {
    const quote = await quoteA({
      sourceChain: NET.evm,
      sourceToken: USDC,
      destChain: NET.btc,
      destToken: 'BTC',
      amountLots,
    });
    const r = await call('POST', '/intents', {
      quoteId: quote.quoteId,
      sourceAddress: owner.address,
      refundAddress: owner.address,
      destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { quote, intent: r.body as IntentCreated, owner };
  }

  const sign = (owner: ReturnType<typeof privateKeyToAccount>, intent: IntentCreated) =>
    signPermit2Approval(
      intent.permit2!,
      { signTypedData: (td) => owner.signTypedData(td as never) },
      { chainId: 31337, permit2Address: PERMIT2, escrowAddress: ESCROW, token: USDC, amount: 250_000_000n },
    );

  describe('authentication and tenancy', () => {
    it('answers 401 with the envelope without a key, with a bad key, with a revoked key, on every surface', async () => {
      const revoked = await createApiKey(s.ctx.db, 'to-revoke');
      await revokeApiKey(s.ctx.db, revoked.id);
      for (const key of [
        null,
        'nope',
        `${s.apiKey.slice(0, -1)}${s.apiKey.endsWith('x') ? 'y' : 'x'}`,
        revoked.key,
      ]) {
        for (const url of [
          '/networks',
          '/affiliate/v1/networks',
          '/healthcheck',
          '/affiliate/v1/system/live',
        ]) {
          const r = await call('GET', url, undefined, key);
          expect(r.status).toBe(401);
          expect(r.body).toEqual({
            code: 1,
            type: 'UNAUTHORIZED',
            message: 'Missing or invalid API key (send it in the X-API-Key header)',
          });
        }
        // 401 comes before body validation.
        expect((await call('POST', '/quote', { nonsense: true }, key)).status).toBe(401);
      }
      expect((await call('GET', '/resolver/v1/intents', undefined, s.apiKey)).status).toBe(401);
      expect(
        (await call('GET', '/intents/00000000-0000-4000-8000-000000000000/status', undefined, RESOLVER_KEY))
          .status,
      ).toBe(401);
    });

    it('scopes quotes, intents and swaps to the key that created them (another key gets 404)', async () => {
      const { quote, intent } = await evmIntent();
      const other = s.otherKey;
      expect((await call('GET', `/intents/${intent.intentId}/status`, undefined, other)).status).toBe(404);
      expect((await call('GET', `/swaps/${intent.intentId}`, undefined, other)).status).toBe(404);
      expect(
        (await call('GET', `/affiliate/v1/swaps/intents/${intent.intentId}`, undefined, other)).body.type,
      ).toBe('INTENT_NOT_FOUND');
      expect(
        (
          await call(
            'POST',
            `/intents/${intent.intentId}/approvals`,
            { permit2: `0x${'11'.repeat(65)}` },
            other,
          )
        ).status,
      ).toBe(404);
      const foreignQuote = await call(
        'POST',
        '/intents',
        {
          quoteId: quote.quoteId,
          sourceAddress: ESCROW,
          refundAddress: ESCROW,
          destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
        },
        other,
      );
      expect(foreignQuote.status).toBe(404);
      expect(foreignQuote.body.code).toBe(6);
      const list = await call('GET', '/swaps?limit=100', undefined, other);
      expect(list.body.swaps.map((x: { intentId: string }) => x.intentId)).not.toContain(intent.intentId);
    });
  });

  describe('networks and tokens', () => {
    it('lists networks on both surfaces, filtered by token', async () => {
      const a = await call('GET', '/networks');
      expect(a.body.networks.map((n: { id: number }) => n.id)).toEqual([1, 2, 3, 4]);
      expect(a.body.networks[0]).toEqual({
        id: 1,
        name: 'Bitcoin regtest',
        type: 'BITCOIN',
        iconUrl: '',
        features: { supportsCustomTokens: false, supportsOptimizedSwap: false },
      });
      const b = await call('GET', `/affiliate/v1/networks?token=${USDC.toLowerCase()}`);
      expect(b.body).toEqual([
        {
          id: 2,
          name: 'Local EVM',
          type: 'EVM',
          icon_url: '',
          supports_optimized_swap: false,
          supports_custom_tokens: false,
        },
      ]);
    });

    it('pages tokens with limit/offset, q and network id; documented default 20 and maximum 100', async () => {
      const all = await call('GET', '/tokens');
      expect(all.body.pagination).toEqual({ limit: 20, offset: 0, total: 6, pages: 1 });
      const page2 = await call('GET', '/tokens?limit=2&offset=2');
      expect(page2.body.tokens.map((t: { symbol: string }) => t.symbol)).toEqual(['USDT', 'SOL']); // config order: BTC, USDC, USDT, SOL, RGBT, ETH
      expect(page2.body.pagination).toEqual({ limit: 2, offset: 2, total: 6, pages: 3 });
      expect(
        (await call('GET', '/tokens?q=usd')).body.tokens.map((t: { symbol: string }) => t.symbol),
      ).toEqual(['USDC', 'USDT']);
      expect((await call('GET', `/tokens?network-id=${NET.evm}`)).body.tokens[1]).toMatchObject({
        symbol: 'ETH',
        wrappedTokenAddress: expect.any(String),
      });
      const b = await call('GET', `/affiliate/v1/tokens?network_id=${NET.tron}`);
      expect(b.body).toEqual({
        data: [
          {
            network_id: 3,
            name: 'Tether USD',
            contract_address: TRON_USDT,
            symbol: 'USDT',
            decimals: 6,
            icon_url: '',
          },
        ],
        pagination: { limit: 20, offset: 0, total: 1, pages: 1 },
      });
      for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'network-id=x']) {
        const r = await call('GET', `/tokens?${bad}`);
        expect(r.status).toBe(400);
        expect(r.body.code).toBe(2);
      }
    });
  });

  describe('quotes', () => {
    it('quotes on both surfaces with exact lots, expiry, slippage, min/max and affiliate fees', async () => {
      expect(
        (
          await call('POST', '/affiliates', {
            affiliateName: 'shop',
            payoutAddress: ESCROW,
            payoutNetworkId: NET.evm,
            payoutTokenAddress: USDC,
          })
        ).status,
      ).toBe(201);
      const q = await quoteA({
        sourceChain: NET.btc,
        sourceToken: 'BTC',
        destChain: NET.evm,
        destToken: USDC,
        amount: '0.5',
        slippageBps: 100,
        affiliateFees: { shop: { feeBps: 50 } },
      });
      // 0.5 BTC × 60000 = 30000 USDC = 30_000_000_000 lots; resolver fee 10 bps; affiliate 50 bps of that.
      const resolverNet = 30_000_000_000n - 30_000_000n;
      const fee = (resolverNet * 50n) / 10_000n;
      expect(q).toMatchObject({
        sourceAmountLots: '50000000',
        sourceAmountDecimals: 8,
        destAmountDecimals: 6,
        maxDestAmountLots: String(resolverNet - fee),
        minDestAmountLots: String(((resolverNet - fee) * 9_900n) / 10_000n),
        slippageBps: 100,
        approvalMechanism: 'htlc',
        expiry: Math.floor(clock.now() / 1000) + 60,
        affiliateFees: {
          shop: {
            feeBps: 50,
            networkId: NET.evm,
            token: USDC,
            feeAmountLots: String(fee),
            feeAmountDecimals: 6,
          },
        },
      });
      const b = await call('POST', '/affiliate/v1/quotes/best', {
        source_chain: NET.btc,
        source_token: 'BTC',
        dest_chain: NET.evm,
        dest_token: USDC,
        amount: 0.5,
        slippage_bps: '100',
      });
      expect(b.status).toBe(200);
      expect(b.body).toMatchObject({
        source_amount_lots: '50000000',
        slippage_bps: '100',
        approval_mechanism: 'htlc',
      });
      expect(b.body.quote_id).toBe(b.body.id);
    });

    it('answers documented errors: no route (RGB, unknown pair), unknown token, bad amounts, unknown affiliate', async () => {
      const base = { sourceChain: NET.btc, sourceToken: 'BTC', destChain: NET.evm, destToken: USDC };
      const cases: [Record<string, unknown>, number, string][] = [
        [{ ...base, sourceToken: RGB_ASSET, amountLots: '10' }, 422, 'NO_ROUTE'],
        [{ ...base, destChain: NET.sol, destToken: SOL_MINT, amount: '1' }, 422, 'NO_ROUTE'],
        [{ ...base, sourceToken: 'DOGE', amount: '1' }, 422, 'UNKNOWN_TOKEN'],
        [{ ...base, sourceChain: 99, amount: '1' }, 422, 'UNKNOWN_NETWORK'],
        [{ ...base, amount: '0.000000001' }, 422, 'INVALID_AMOUNT'],
        [{ ...base, amount: '0' }, 422, 'INVALID_AMOUNT'],
        [{ ...base }, 400, 'VALIDATION_ERROR'],
        [{ ...base, amount: '1', amountLots: '1' }, 400, 'VALIDATION_ERROR'],
        [{ ...base, amountLots: '100' }, 422, 'NO_ROUTE'], // below the resolver's minimum
        [{ ...base, amount: '1', slippageBps: 5001 }, 400, 'VALIDATION_ERROR'],
        [{ ...base, amount: '1', affiliateFees: { ghost: { feeBps: 1 } } }, 422, 'AFFILIATE_NOT_FOUND'],
      ];
      for (const [body, status, type] of cases) {
        const r = await call('POST', '/quote', body);
        expect([r.status, r.body.type], JSON.stringify(body)).toEqual([status, type]);
      }
    });
  });

  describe('permit2 approvals (EVM)', () => {
    it('returns typed data whose witness binds the intent; a viem signature by the owner is accepted once', async () => {
      const { quote, intent, owner } = await evmIntent();
      expect(intent.approvalMechanism).toBe('permit2');
      expect(intent.htlc).toBeUndefined();
      const p = intent.permit2!;
      expect(p.escrowContractAddress).toBe(ESCROW);
      expect(p.typedData.primaryType).toBe('PermitWitnessTransferFrom');
      expect(p.typedData.domain).not.toHaveProperty('version');
      const td = permit2TypedData(p);
      expect(td.message).toMatchObject({
        permitted: { token: USDC, amount: BigInt(quote.sourceAmountLots) },
        spender: ESCROW,
        nonce: BigInt(p.nonce),
        deadline: BigInt(intent.deadlineSecs),
      });
      expect((td.message.witness as { secretHash: string }).secretHash).toBe(intent.secretHash);
      // witness_hash and witness_type_string as viem computes them.
      const witnessType = p.typedData.types.PermitWitnessTransferFrom!.find(
        (f) => f.name === 'witness',
      )!.type;
      expect(p.additionalData.witnessHash).toBe(
        hashStruct({
          primaryType: witnessType as never,
          types: td.types as never,
          data: td.message.witness as never,
        }),
      );
      expect(p.additionalData.witnessTypeString).toMatch(
        new RegExp(`^${witnessType} witness\\)${witnessType}\\(bytes32 intentId,`),
      );
      expect(
        p.additionalData.witnessTypeString.endsWith('TokenPermissions(address token,uint256 amount)'),
      ).toBe(true);
      const w = td.message.witness as { minAmountOut: bigint; maxAmountOut: bigint };
      expect([w.minAmountOut, w.maxAmountOut]).toEqual([
        BigInt(quote.minDestAmountLots),
        BigInt(quote.maxDestAmountLots),
      ]);

      const body = await sign(owner, intent);
      const ok = await call('POST', `/intents/${intent.intentId}/approvals`, body);
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ intentId: intent.intentId, status: 'ApprovalAdded' });
      // Replay of the same approval: idempotent, on both surfaces.
      expect((await call('POST', `/intents/${intent.intentId}/approvals`, body)).status).toBe(200);
      const b = await call(
        'POST',
        `/affiliate/v1/intents/${intent.intentId}/approvals`,
        toAffiliateApproval(body),
      );
      expect(b.body).toEqual({ intent_id: intent.intentId, status: 'ApprovalAdded' });
      // The same signature with v as 0/1 is the same approval.
      const v = Number.parseInt(body.permit2.slice(-2), 16);
      const v01 = `${body.permit2.slice(0, -2)}${(v - 27).toString(16).padStart(2, '0')}`;
      expect((await call('POST', `/intents/${intent.intentId}/approvals`, { permit2: v01 })).status).toBe(
        200,
      );
      // A different approval after ApprovalAdded is a conflict.
      const stranger = privateKeyToAccount(generatePrivateKey());
      const r = await call('POST', `/intents/${intent.intentId}/approvals`, await sign(stranger, intent));
      expect([r.status, r.body.code]).toEqual([409, 20]);
      expect((await call('GET', `/intents/${intent.intentId}/status`)).body).toEqual({
        status: 'ApprovalAdded',
      });
    });

    it('the same approval posted 6 times at once: one transition, one event, every answer ApprovalAdded', async () => {
      const { intent, owner } = await evmIntent();
      const body = await sign(owner, intent);
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => call('POST', `/intents/${intent.intentId}/approvals`, body)),
      );
      expect(answers.map((a) => [a.status, a.body.status])).toEqual(Array(6).fill([200, 'ApprovalAdded']));
      const events = await s.ctx.db
        .selectFrom('intent_events')
        .select(['trigger', 'from_status', 'to_status'])
        .where('intent_id', '=', intent.intentId)
        .orderBy('id')
        .execute();
      expect(events).toEqual([
        { trigger: 'create', from_status: null, to_status: 'Initiated' },
        { trigger: 'approve', from_status: 'Initiated', to_status: 'ApprovalAdded' },
      ]);
    });

    it('rejects a wrong signer, a malformed signature, a wrong payload type, and several payloads', async () => {
      const { intent } = await evmIntent();
      const stranger = privateKeyToAccount(generatePrivateKey());
      const wrong = await call('POST', `/intents/${intent.intentId}/approvals`, await sign(stranger, intent));
      expect([wrong.status, wrong.body.code, wrong.body.details.reason]).toEqual([
        422,
        21,
        'signer_mismatch',
      ]);
      const bad = await call('POST', `/intents/${intent.intentId}/approvals`, { permit2: '0x1234' });
      expect([bad.status, bad.body.type]).toEqual([422, 'INVALID_SIGNATURE']);
      const psbt = await call('POST', `/intents/${intent.intentId}/approvals`, { psbt: 'cHNidP8=' });
      expect([psbt.status, psbt.body.type]).toEqual([422, 'APPROVAL_MECHANISM_MISMATCH']);
      const two = await call('POST', `/intents/${intent.intentId}/approvals`, {
        permit2: '0x12',
        psbt: 'cHNidP8=',
      });
      expect([two.status, two.body.code]).toEqual([400, 18]);
      const none = await call('POST', `/intents/${intent.intentId}/approvals`, {});
      expect([none.status, none.body.code]).toEqual([400, 18]);
      const htlcOnB = await call('POST', `/affiliate/v1/intents/${intent.intentId}/approvals`, {
        type: 'cosign',
        signed_data: 'x',
      });
      expect([htlcOnB.status, htlcOnB.body.type]).toEqual([400, 'VALIDATION_ERROR']);
      expect((await call('GET', `/intents/${intent.intentId}/status`)).body.status).toBe('Initiated');
    });

    it('refuses the owner’s valid Permit2 signature for intent A replayed as the approval of intent B (same owner, same amount): 422 signer_mismatch, B stays Initiated', async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const a = await evmIntent(owner);
      const b = await evmIntent(owner);
      const signedForA = await sign(owner, a.intent);
      const replayed = await call('POST', `/intents/${b.intent.intentId}/approvals`, signedForA);
      expect([replayed.status, replayed.body.type, replayed.body.details?.reason]).toEqual([
        422,
        'INVALID_SIGNATURE',
        'signer_mismatch',
      ]);
      expect((await call('GET', `/intents/${b.intent.intentId}/status`)).body).toEqual({
        status: 'Initiated',
      });
      // The signature is A's approval all the same.
      expect((await call('POST', `/intents/${a.intent.intentId}/approvals`, signedForA)).body).toEqual({
        intentId: a.intent.intentId,
        status: 'ApprovalAdded',
      });
    });

    it('refuses an expired quote, a used quote and an approval after the deadline', async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const quote = await quoteA({
        sourceChain: NET.evm,
        sourceToken: USDC,
        destChain: NET.btc,
        destToken: 'BTC',
        amountLots: '100000000',
      });
      const body = {
        quoteId: quote.quoteId,
        sourceAddress: owner.address,
        refundAddress: owner.address,
        destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
      };
      clock.advance(61_000);
      const expired = await call('POST', '/intents', body);
      expect([expired.status, expired.body.code]).toEqual([422, 7]);
      clock.advance(-61_000);
      expect((await call('POST', '/intents', body)).status).toBe(200);
      expect((await call('POST', '/intents', body)).body.type).toBe('QUOTE_ALREADY_USED');

      const { intent } = await evmIntent(owner);
      clock.advance(601_000);
      try {
        const late = await call('POST', `/intents/${intent.intentId}/approvals`, await sign(owner, intent));
        expect([late.status, late.body.type]).toEqual([422, 'INTENT_EXPIRED']);
        expect((await call('GET', `/intents/${intent.intentId}/status`)).body.status).toBe('Expired');
      } finally {
        clock.advance(-601_000);
      }
    });

    it('refuses addresses of the wrong network', async () => {
      const quote = await quoteA({
        sourceChain: NET.evm,
        sourceToken: USDC,
        destChain: NET.btc,
        destToken: 'BTC',
        amountLots: '100000000',
      });
      const r = await call('POST', '/intents', {
        quoteId: quote.quoteId,
        sourceAddress: ESCROW,
        refundAddress: ESCROW,
        destinationAddress: ESCROW,
      });
      expect([r.status, r.body.type]).toEqual([422, 'INVALID_ADDRESS']);
    });
  });

  it('permit2 on Tron (Surface B): TIP-712 built by the affiliate rules, signed by the key behind the T-address', async () => {
    const user = tronKey();
    const qr = await call('POST', '/affiliate/v1/quotes/best', {
      source_chain: NET.tron,
      source_token: TRON_USDT,
      dest_chain: NET.evm,
      dest_token: USDC,
      amount: '100',
    });
    expect(qr.body.approval_mechanism).toBe('permit2');
    const r = await call('POST', '/affiliate/v1/intents', {
      quote_id: qr.body.quote_id,
      user_source_address: user.address,
      refund_address: user.address,
      user_destination_address: ESCROW,
      user_source_public_key: null,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const params = r.body.params_to_sign;
    expect(params.escrow_contract_address).toMatch(/^T/);
    expect(params.additional_data.domain.chainId).toBe(728126428);
    expect(params.additional_data.witness_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const td = affiliatePermit2TypedData({
      params,
      sourceToken: qr.body.source_token,
      sourceAmountLots: qr.body.source_amount_lots,
      deadlineSecs: r.body.deadline_secs,
    });
    const account = privateKeyToAccount(user.privateKey);
    const sig = await account.signTypedData(td as never);
    const ok = await call('POST', `/affiliate/v1/intents/${r.body.intent_id}/approvals`, {
      type: 'permit2',
      signed_data: sig,
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await call('GET', `/affiliate/v1/intents/${r.body.intent_id}/status`)).body).toEqual({
      status: 'ApprovalAdded',
    });
    const other = privateKeyToAccount(tronKey().privateKey);
    const wrong = await call('POST', `/affiliate/v1/intents/${r.body.intent_id}/approvals`, {
      type: 'permit2',
      signed_data: await other.signTypedData(td as never),
    });
    expect([wrong.status, wrong.body.code]).toEqual([409, 20]);
  });

  it('Surface B permit2 typed data built by the affiliate rules equals the typed data of Surface A', async () => {
    const { quote, intent } = await evmIntent();
    const b = await s.ctx.db
      .selectFrom('intents')
      .select('id')
      .where('id', '=', intent.intentId)
      .executeTakeFirstOrThrow();
    const p = intent.permit2!;
    const fromB = affiliatePermit2TypedData({
      params: {
        escrow_contract_address: p.escrowContractAddress,
        nonce: p.nonce,
        additional_data: {
          domain: p.additionalData.domain,
          types: p.additionalData.types,
          witness: p.additionalData.witness,
        },
      },
      sourceToken: quote.sourceToken,
      sourceAmountLots: quote.sourceAmountLots,
      deadlineSecs: intent.deadlineSecs,
    });
    const fromA = permit2TypedData(p);
    expect(b.id).toBe(intent.intentId);
    expect(JSON.stringify(fromB, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)).toLowerCase()).toBe(
      JSON.stringify(fromA, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)).toLowerCase(),
    );
  });

  describe('cosign approvals (Solana)', () => {
    async function solIntent(given?: Awaited<ReturnType<typeof generateKeyPairSigner>>) {
      const user = given ?? (await generateKeyPairSigner());
      const quote = await quoteA({
        sourceChain: NET.sol,
        sourceToken: SOL_MINT,
        destChain: NET.evm,
        destToken: USDC,
        amount: '2.5',
      });
      const r = await call('POST', '/intents', {
        quoteId: quote.quoteId,
        sourceAddress: user.address,
        sourcePublicKey: user.address,
        refundAddress: user.address,
        destinationAddress: ESCROW,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return { user, intent: r.body as IntentCreated };
    }

    it("refuses a source that is the resolver's own address or a program with INVALID_ADDRESS (422), not a 500", async () => {
      for (const source of [
        RESOLVER_SOL,
        '11111111111111111111111111111111',
        'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
      ]) {
        const quote = await quoteA({
          sourceChain: NET.sol,
          sourceToken: SOL_MINT,
          destChain: NET.evm,
          destToken: USDC,
          amount: '1',
        });
        const r = await call('POST', '/intents', {
          quoteId: quote.quoteId,
          sourceAddress: source,
          sourcePublicKey: source,
          refundAddress: source,
          destinationAddress: ESCROW,
        });
        expect([r.status, r.body.type, r.body.entity], `${source}: ${JSON.stringify(r.body)}`).toEqual([
          422,
          'INVALID_ADDRESS',
          'Address',
        ]);
      }
    });

    it('verifies the user signature at position 1 and keeps positions 0 and 2 untouched', async () => {
      const { user, intent } = await solIntent();
      expect(intent.approvalMechanism).toBe('cosign');
      const body = await signCosignApproval(
        intent.cosign!,
        { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
        { destination: RESOLVER_SOL, lamports: 2_500_000_000n, feePayer: RESOLVER_SOL },
      );
      const ok = await call('POST', `/intents/${intent.intentId}/approvals`, body);
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect((await call('POST', `/intents/${intent.intentId}/approvals`, body)).status).toBe(200);
      const view = await resolver('GET', `/resolver/v1/intents/${intent.intentId}`);
      expect(view.body.execution.signed_transaction).toBe(body.cosign.transaction);
    });

    it('works the same on Surface B: params_to_sign.transaction, approval as {type: cosign, signed_data: {transaction, user_address}}', async () => {
      const user = await generateKeyPairSigner();
      const q = await call('POST', '/affiliate/v1/quotes/best', {
        source_chain: NET.sol,
        source_token: SOL_MINT,
        dest_chain: NET.evm,
        dest_token: USDC,
        amount_lots: '1000000000',
      });
      expect(q.body.approval_mechanism).toBe('cosign');
      const r = await call('POST', '/affiliate/v1/intents', {
        quote_id: q.body.quote_id,
        user_source_address: user.address,
        user_source_public_key: user.address,
        refund_address: user.address,
        user_destination_address: ESCROW,
        retail_user_id: 'retail-7',
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // `nonce`: what the Hotpot SDK decodes (the last block height at which the transaction can land).
      expect(Object.keys(r.body.params_to_sign)).toEqual(['transaction', 'nonce']);
      expect(r.body.params_to_sign.nonce).toEqual(expect.any(Number));
      expect(r.body.secret_hash).toMatch(/^0x[0-9a-f]{64}$/);
      const body = await signCosignApproval(
        r.body.params_to_sign,
        { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
        { destination: RESOLVER_SOL, lamports: 1_000_000_000n, feePayer: RESOLVER_SOL },
      );
      const wrongShape = await call('POST', `/affiliate/v1/intents/${r.body.intent_id}/approvals`, {
        type: 'cosign',
        signed_data: body.cosign.transaction,
      });
      expect([wrongShape.status, wrongShape.body.type]).toEqual([400, 'VALIDATION_ERROR']);
      const ok = await call(
        'POST',
        `/affiliate/v1/intents/${r.body.intent_id}/approvals`,
        toAffiliateApproval(body),
      );
      expect(ok.body).toEqual({ intent_id: r.body.intent_id, status: 'ApprovalAdded' });
      const rec = await call('GET', `/affiliate/v1/swaps/intents/${r.body.intent_id}`);
      expect(rec.body).toMatchObject({
        status: 'ApprovalAdded',
        source_amount_lots: '1000000000',
        source_amount_decimals: 9,
        user_source_address: user.address,
      });
      expect(
        (await call('GET', '/affiliate/v1/swaps/history?retail_id=retail-7')).body.data.map(
          (d: { intent_id: string }) => d.intent_id,
        ),
      ).toEqual([r.body.intent_id]);
    });

    it('rejects a signature by someone else, a filled resolver slot, a changed message, a wrong userAddress', async () => {
      const { user, intent } = await solIntent();
      const stranger = await generateKeyPairSigner();
      const good = await signCosignApproval(
        intent.cosign!,
        { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
        { destination: RESOLVER_SOL, lamports: 2_500_000_000n, feePayer: RESOLVER_SOL },
      );
      const tx = good.cosign.transaction;
      const forged = `${tx.slice(0, 2 + 128)}${Buffer.from(await signBytes(stranger.keyPair.privateKey, new Uint8Array(8))).toString('hex')}${tx.slice(2 + 256)}`;
      const slot0 = `${tx.slice(0, 2)}${'ff'.repeat(64)}${tx.slice(2 + 128)}`;
      const changed = `${tx.slice(0, -2)}${tx.slice(-2) === '00' ? '01' : '00'}`;
      for (const [transaction, userAddress, reason] of [
        [forged, user.address, 'invalid_signature'],
        [slot0, user.address, 'position_0_changed'],
        [changed, user.address, 'message_changed'],
        [tx, stranger.address, 'user_address'],
      ] as const) {
        const r = await call('POST', `/intents/${intent.intentId}/approvals`, {
          cosign: { transaction, userAddress },
        });
        expect([r.status, r.body.code, r.body.details?.reason], reason).toEqual([422, 23, reason]);
      }
      expect((await call('GET', `/intents/${intent.intentId}/status`)).body.status).toBe('Initiated');
    });

    it('refuses intent A’s user-signed Solana transaction replayed as the approval of intent B (same user, same lamports): 422 message_changed, B stays Initiated', async () => {
      const { user, intent: a } = await solIntent();
      const { intent: b } = await solIntent(user);
      const signedForA = await signCosignApproval(
        a.cosign!,
        { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
        { destination: RESOLVER_SOL, lamports: 2_500_000_000n, feePayer: RESOLVER_SOL },
      );
      const replayed = await call('POST', `/intents/${b.intentId}/approvals`, signedForA);
      expect([replayed.status, replayed.body.type, replayed.body.details?.reason]).toEqual([
        422,
        'INVALID_COSIGN',
        'message_changed',
      ]);
      expect((await call('GET', `/intents/${b.intentId}/status`)).body).toEqual({ status: 'Initiated' });
      expect((await call('POST', `/intents/${a.intentId}/approvals`, signedForA)).body).toEqual({
        intentId: a.intentId,
        status: 'ApprovalAdded',
      });
    });
  });

  describe('lifecycle through the resolver API', () => {
    it('fails closed: an acceptance whose chains cannot be read does not happen; nothing settles unread', async () => {
      const { intent, owner } = await evmIntent();
      const id = intent.intentId;
      expect((await resolver('POST', `/resolver/v1/intents/${id}/accept`)).body.type).toBe(
        'INVALID_TRANSITION',
      );
      await call('POST', `/intents/${id}/approvals`, await sign(owner, intent));
      const listed = await resolver('GET', '/resolver/v1/intents?status=ApprovalAdded&limit=100');
      expect(listed.body.data.map((d: { intent: { intent_id: string } }) => d.intent.intent_id)).toContain(
        id,
      );
      const view = (await resolver('GET', `/resolver/v1/intents/${id}`)).body;
      expect(view.execution.permit2_signature).toMatch(/^0x[0-9a-f]{130}$/);
      // The resolver submits exactly the typed data the user was handed and signed.
      expect(view.execution.typed_data).toEqual(intent.permit2!.typedData);
      expect((await resolver('GET', `/resolver/v1/intents/${id}/secret`)).body.type).toBe(
        'SECRET_NOT_RELEASED',
      );
      // The tips of the source and destination networks are recorded at acceptance (every later
      // fulfilment must be newer): this configuration's nodes are unreachable, so no acceptance.
      const acc = await resolver('POST', `/resolver/v1/intents/${id}/accept`);
      expect([acc.status, acc.body.type]).toEqual([503, 'UPSTREAM_UNAVAILABLE']);
      expect((await call('GET', `/intents/${id}/status`)).body.status).toBe('ApprovalAdded');
      const dep = await resolver('POST', `/resolver/v1/intents/${id}/deposit`, {
        tx_hash: `0x${'aa'.repeat(32)}`,
      });
      expect([dep.status, dep.body.type]).toEqual([409, 'INVALID_TRANSITION']);
      const rec = await call('GET', `/affiliate/v1/swaps/intents/${id}`);
      expect(rec.body.settlement).toEqual([]);
      expect(rec.body.swap_metadata).toMatchObject({ id, proxy_address: ESCROW, user_deposit_tx: null });
    });

    it('decline, expiry on the scheduler, and no refund request without a deposit', async () => {
      const a = await evmIntent();
      await call('POST', `/intents/${a.intent.intentId}/approvals`, await sign(a.owner, a.intent));
      expect(
        (
          await resolver('POST', `/resolver/v1/intents/${a.intent.intentId}/decline`, {
            reason: 'no liquidity',
          })
        ).body.status,
      ).toBe('Declined');
      expect((await call('POST', `/intents/${a.intent.intentId}/refund-request`)).body.type).toBe(
        'INVALID_TRANSITION',
      );
      const c = await evmIntent();
      clock.advance(601_000);
      try {
        const { expireDue } = await import('../store/intent-store.ts');
        expect(await expireDue(s.ctx.db, clock.now())).toBeGreaterThanOrEqual(1);
        expect((await call('GET', `/intents/${c.intent.intentId}/status`)).body.status).toBe('Expired');
        expect(
          (
            await resolver('POST', `/resolver/v1/intents/${c.intent.intentId}/fulfil`, {
              tx_hash: 'dd'.repeat(32),
            })
          ).body.type,
        ).toBe('INTENT_EXPIRED');
        expect((await call('POST', `/intents/${c.intent.intentId}/refund-request`)).body.details.reason).toBe(
          'nothing was deposited',
        );
      } finally {
        clock.advance(-601_000);
      }
    });
  });

  describe('swaps and affiliates', () => {
    it('lists swaps newest first with pagination and filters on both surfaces', async () => {
      const key = (await createApiKey(s.ctx.db, 'lister')).key;
      const owner = privateKeyToAccount(generatePrivateKey());
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        clock.advance(1);
        const q = await call(
          'POST',
          '/quote',
          {
            sourceChain: NET.evm,
            sourceToken: USDC,
            destChain: NET.btc,
            destToken: 'BTC',
            amountLots: '100000000',
          },
          key,
        );
        const r = await call(
          'POST',
          '/intents',
          {
            quoteId: q.body.quoteId,
            sourceAddress: owner.address,
            refundAddress: owner.address,
            destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
            retailUserId: `u${i}`,
          },
          key,
        );
        ids.push(r.body.intentId);
      }
      const page = await call('GET', '/swaps?limit=2', undefined, key);
      expect(page.body.swaps.map((x: { intentId: string }) => x.intentId)).toEqual([ids[2], ids[1]]);
      expect(page.body.pagination).toEqual({ limit: 2, offset: 0, total: 3, pages: 2 });
      expect((await call('GET', '/swaps?retailUserId=u0', undefined, key)).body.swaps[0].intentId).toBe(
        ids[0],
      );
      // `active`: absent or false = all (Hotpot clients always send active=false), true = in flight.
      expect((await call('GET', '/swaps?active=false', undefined, key)).body.pagination.total).toBe(3);
      expect((await call('GET', '/swaps?active=true', undefined, key)).body.pagination.total).toBe(3);
      expect((await call('GET', '/swaps?retailUserId=u0,u1', undefined, key)).body.pagination.total).toBe(2);
      expect(
        (await call('GET', '/swaps?retailUserId=u0&retailUserId=u2', undefined, key)).body.swaps.map(
          (x: { intentId: string }) => x.intentId,
        ),
      ).toEqual([ids[2], ids[0]]);
      const other = privateKeyToAccount(generatePrivateKey()).address;
      expect(
        (
          await call(
            'GET',
            `/affiliate/v1/swaps/history?active=false&wallet=${other}&wallet=${owner.address}`,
            undefined,
            key,
          )
        ).body.pagination.total,
      ).toBe(3);
      expect(
        (await call('GET', `/affiliate/v1/swaps/history?wallet=${other},${owner.address}`, undefined, key))
          .body.pagination.total,
      ).toBe(3);
      expect(
        (await call('GET', `/affiliate/v1/swaps/history?wallet=${other}`, undefined, key)).body.pagination
          .total,
      ).toBe(0);
      const hist = await call(
        'GET',
        `/affiliate/v1/swaps/history?wallet=${owner.address}&limit=1&offset=2`,
        undefined,
        key,
      );
      expect(hist.body.data.map((x: { intent_id: string }) => x.intent_id)).toEqual([ids[0]]);
      expect(hist.body.pagination).toEqual({ limit: 1, offset: 2, total: 3, pages: 3 });
    });

    it('creates affiliates per key with the key name in lists; duplicates conflict', async () => {
      const key = await createApiKey(s.ctx.db, 'affiliate-key');
      const body = {
        affiliateName: 'wallet-x',
        payoutAddress: ESCROW,
        payoutNetworkId: NET.evm,
        payoutTokenAddress: USDC,
      };
      const r = await call('POST', '/affiliates', body, key.key);
      expect([r.status, r.body]).toEqual([201, body]);
      expect((await call('POST', '/affiliates', body, key.key)).body.code).toBe(28);
      expect((await call('GET', '/affiliates', undefined, key.key)).body).toEqual({
        affiliates: [{ ...body, apiKeyName: 'affiliate-key' }],
      });
      expect((await call('GET', '/affiliates', undefined, s.otherKey)).body.affiliates).toEqual([]);
      const badAddr = await call(
        'POST',
        '/affiliates',
        { ...body, affiliateName: 'y', payoutAddress: 'bc1qnope' },
        key.key,
      );
      expect(badAddr.body.type).toBe('INVALID_ADDRESS');
    });
  });

  it('health checks answer 503 naming the networks whose node cannot be read (here all but Solana)', async () => {
    for (const url of ['/healthcheck', '/affiliate/v1/system/live']) {
      const r = await call('GET', url);
      expect([r.status, r.body.code, r.body.type]).toEqual([503, 35, 'SERVICE_UNAVAILABLE']);
      expect(r.body.message).toMatch(/cannot read networks 1, 2, 3/);
      expect(r.body.details.unreachable.map((u: { network: number }) => u.network)).toEqual([1, 2, 3]);
    }
  });
});
