/**
 * The swap service's metrics after a scripted workload, in-process on SQLite and PostgreSQL: exact
 * counter values for what the workload did (quotes by outcome, RFQ answers and latency per resolver,
 * approvals, settlement verifications, intents by status, scheduler passes), `/metrics` served on its
 * own listener only, and the exposition accepted by `promtool check metrics`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { IntentCreated, SwapQuote } from '@rgbx/sdk';
import { signPermit2Approval } from '@rgbx/sdk';
import { serveMetrics } from '@rgbx/service-kit';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainGateway } from './chains/chain-gateway.ts';
import { createChainGateway } from './chains/chain-gateway.ts';
import { startScheduler } from './domain/scheduler.ts';
import {
  DIALECTS,
  ESCROW,
  NET,
  PERMIT2,
  RESOLVER_BTC,
  RESOLVER_EVM,
  RESOLVER_KEY,
  RGB_ASSET,
  startTestService,
  type TestService,
  testClock,
  testDatabases,
  USDC,
} from './test-support.ts';

const PROMTOOL = '/usr/bin/promtool';
const dbs = testDatabases();

/** Chains that answer tips and know no transaction (an acceptance happens; every report is refused). */
function quietChains(): ChainGateway {
  const real = createChainGateway({ electrumUrl: 'tcp://127.0.0.1:9', electrumTimeoutMs: 1000 });
  const btc = real.bitcoin();
  return {
    close: () => real.close(),
    allowance: (...a) => real.allowance(...a),
    solana: (n) => real.solana(n),
    bitcoin: () =>
      Object.assign(Object.create(btc) as typeof btc, {
        tip: async () => 100,
        transaction: async () => null,
      }),
    evm: () => ({
      blockNumber: async () => 1000n,
      receipt: async () => null,
      transaction: async () => null,
      blockTime: async () => null,
    }),
  };
}

/** A remote resolver nobody answers for (the discard port): each RFQ to it ends in `error`. */
const REMOTE = `
[[resolvers]]
id = "remote"
name = "Remote resolver (unreachable)"
api_key_sha256 = "${'0'.repeat(64)}"
quote_url = "http://127.0.0.1:9/rfq"
rfq_secret = "${'s'.repeat(40)}"
bitcoin_claim_pubkey = "${Buffer.from(RESOLVER_BTC.xonly).toString('hex')}"
evm_address = "${RESOLVER_EVM.address}"
`;

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe.each(DIALECTS)('swap metrics on %s', (dialect) => {
  let s: TestService;
  const clock = testClock();

  beforeAll(async () => {
    s = await startTestService({
      databaseUrl: dbs.url(dialect),
      now: clock.now,
      gateway: quietChains(),
      intentTtlSecs: 600,
      extra: REMOTE,
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function call(method: 'GET' | 'POST', url: string, payload?: unknown, key = s.apiKey) {
    const res = await s.app.inject({
      method,
      url,
      headers: { 'x-api-key': key },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
  }

  it('counts exactly what a scripted workload did, serves it on its own listener only, and passes promtool', async () => {
    const quoteBody = {
      sourceChain: NET.evm,
      sourceToken: USDC,
      destChain: NET.btc,
      destToken: 'BTC',
      amountLots: '250000000',
    };
    // 3 quotes answered (the reference resolver; the remote one fails each time), 1 refused.
    const quotes: SwapQuote[] = [];
    for (let i = 0; i < 3; i++) {
      const q = await call('POST', '/quote', quoteBody);
      expect(q.status, JSON.stringify(q.body)).toBe(200);
      quotes.push(q.body as SwapQuote);
    }
    const noRoute = await call('POST', '/quote', {
      ...quoteBody,
      sourceChain: NET.btc,
      sourceToken: RGB_ASSET,
    });
    expect(noRoute.body.type).toBe('NO_ROUTE');

    // 2 intents; one approved (then the same approval again, then one of the wrong type).
    const owner = privateKeyToAccount(generatePrivateKey());
    const intents: IntentCreated[] = [];
    for (const q of quotes.slice(0, 2)) {
      const r = await call('POST', '/intents', {
        quoteId: q.quoteId,
        sourceAddress: owner.address,
        refundAddress: owner.address,
        destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      intents.push(r.body as IntentCreated);
    }
    const approved = intents[0]!;
    const approval = await signPermit2Approval(
      approved.permit2!,
      { signTypedData: (td) => owner.signTypedData(td as never) },
      { chainId: 31337, permit2Address: PERMIT2, escrowAddress: ESCROW, token: USDC, amount: 250_000_000n },
    );
    const url = `/intents/${approved.intentId}/approvals`;
    expect((await call('POST', url, approval)).status).toBe(200);
    expect((await call('POST', url, approval)).status).toBe(200);
    expect((await call('POST', url, { type: 'psbt', psbt: 'cHNidP8=' })).status).toBe(422);

    // Accepted (the tips are read), then two deposit reports the chain does not know: refused.
    const resolver = (path: string, body: unknown = {}) =>
      call('POST', `/resolver/v1/intents/${approved.intentId}/${path}`, body, RESOLVER_KEY);
    const acc = await resolver('accept');
    expect(acc.status, JSON.stringify(acc.body)).toBe(200);
    for (const b of ['aa', 'bb']) {
      const dep = await resolver('deposit', { tx_hash: `0x${b.repeat(32)}` });
      expect(dep.body.type, JSON.stringify(dep.body)).toBe('TX_NOT_VERIFIED');
    }

    // The scheduler: both intents (one Initiated, one Accepted) expire on a pass.
    const scheduler = startScheduler(s.ctx, 3_600_000);
    clock.advance(601_000);
    expect(await scheduler.tick()).toBe(2);
    expect(await scheduler.tick()).toBe(0);
    await scheduler.stop();

    const server = await serveMetrics(s.ctx.metrics, {
      enabled: true,
      listen_address: '127.0.0.1',
      port: 0,
    });
    let text: string;
    try {
      const res = await fetch(server!.url);
      expect(res.status).toBe(200);
      text = await res.text();
      // The metrics listener serves nothing else; the public API does not serve /metrics.
      expect((await fetch(server!.url.replace('/metrics', '/quote'))).status).toBe(404);
    } finally {
      await server!.close();
    }
    expect((await s.app.inject({ url: '/metrics' })).statusCode).toBe(404);

    const want: Record<string, number> = {
      'rgbx_swap_quotes_total{outcome="ok"}': 3,
      'rgbx_swap_quotes_total{outcome="no_route"}': 1,
      'rgbx_swap_rfq_answers_total{resolver="remote",outcome="error"}': 3,
      'rgbx_swap_rfq_duration_seconds_count{resolver="reference"}': 3,
      'rgbx_swap_rfq_duration_seconds_count{resolver="remote"}': 3,
      'rgbx_swap_approvals_total{mechanism="permit2",result="approved"}': 1,
      'rgbx_swap_approvals_total{mechanism="permit2",result="unchanged"}': 1,
      'rgbx_swap_approvals_total{mechanism="permit2",result="approval_mechanism_mismatch"}': 1,
      'rgbx_swap_settlement_verifications_total{network="2",leg="deposit",result="tx_not_verified"}': 2,
      'rgbx_swap_settlement_verification_duration_seconds_count{network="2"}': 2,
      'rgbx_swap_intents{status="Accepted"}': 0,
      'rgbx_swap_intents{status="Expired"}': 2,
      'rgbx_swap_intents{status="Initiated"}': 0,
      'rgbx_swap_scheduler_passes_total{result="ok"}': 2,
      rgbx_swap_scheduler_expired_intents_total: 2,
      'rgbx_swap_http_requests_total{method="POST",route="/quote",status_code="200"}': 3,
      'rgbx_swap_http_requests_total{method="POST",route="/quote",status_code="422"}': 1,
      'rgbx_swap_http_requests_total{method="POST",route="/resolver/v1/intents/:intent_id/deposit",status_code="422"}': 2,
    };
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, sample(text, k)]));
    expect(got, text).toEqual(want);
    expect(text).not.toContain('rgbx_swap_rfq_answers_total{resolver="reference"');
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);

    if (existsSync(PROMTOOL)) {
      const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ status: r.status, out: `${r.stdout}${r.stderr}` }).toEqual({ status: 0, out: '' });
    }
  });

  it('measures how late each scheduler tick runs', async () => {
    const before = sample(await s.ctx.metrics.kit.text(), 'rgbx_swap_scheduler_lag_seconds_count') ?? 0;
    const scheduler = startScheduler(s.ctx, 50);
    await new Promise((r) => setTimeout(r, 400));
    await scheduler.stop();
    const after = sample(await s.ctx.metrics.kit.text(), 'rgbx_swap_scheduler_lag_seconds_count')!;
    expect(after - before).toBeGreaterThanOrEqual(3);
  });
});
