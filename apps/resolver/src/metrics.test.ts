/**
 * The resolver's metrics after a scripted workload: the real RFQ server, store and fill engine
 * (`startResolver`, in-process, SQLite) against a FAKE swap service (a node:http server with the
 * resolver API routes the resolver calls, and an event feed that drops its first connection). Exact
 * counter values for the RFQs by outcome, the fill transition, the feed reconnection and the RFQ
 * server's requests; `/metrics` only on its own listener; `promtool check metrics` on the exposition.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rfq } from '@rgbx/contracts/swap';
import type { ResolverClient } from '@rgbx/sdk';
import { createLogger } from '@rgbx/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningResolver, startResolver } from './app.ts';
import { loadConfig } from './config.ts';
import { FillEngine } from './engine.ts';
import { ResolverMetrics } from './metrics.ts';
import { Reservations } from './pricing.ts';
import { openResolverStore } from './store.ts';
import type { ChainWallet, SignedTx } from './wallets/wallet.ts';

const PROMTOOL = '/usr/bin/promtool';
const SECRET = 's'.repeat(40);

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The swap service as far as the resolver sees it: one approved intent it cannot fill, a feed. */
function fakeSwap() {
  const view = {
    intent: {
      intent_id: 'i-1',
      status: 'ApprovalAdded',
      source_chain: 1,
      dest_chain: 2,
      source_token: 'BTC',
      dest_token: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      user_dest_address: '0x00000000000000000000000000000000000000A1',
      max_dest_amount_lots: '500',
      source_amount_lots: '1000',
      settlement: [],
    },
    approval_mechanism: 'htlc',
    deadline_secs: Math.floor(Date.now() / 1000) + 3600,
    secret_hash: `0x${'aa'.repeat(32)}`,
    refund_address: 'user-refund-address',
    execution: null,
    fulfil_commitment: null,
  };
  let feedConnections = 0;
  const declined: string[] = [];
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/resolver/v1/events') {
      feedConnections++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (feedConnections === 1) {
        // One event, then the connection drops: the client connects again.
        res.end(
          `id: 1\nevent: status\ndata: ${JSON.stringify({ intent_id: 'i-2', status: 'Accepted' })}\n\n`,
        );
      } else res.write(': open\n\n');
      return;
    }
    if (url.pathname === '/resolver/v1/intents') {
      const data = url.searchParams.get('status') === view.intent.status ? [view] : [];
      return json(res, 200, { data, pagination: { total: data.length, limit: 100, offset: 0 } });
    }
    if (url.pathname === '/resolver/v1/intents/i-1') return json(res, 200, view);
    if (url.pathname === '/resolver/v1/intents/i-1/decline' && req.method === 'POST') {
      req.resume();
      declined.push('i-1');
      view.intent.status = 'Declined';
      return json(res, 200, { intent_id: 'i-1', status: 'Declined' });
    }
    json(res, 404, { code: 5, type: 'INTENT_NOT_FOUND', message: 'not found' });
  });
  return { server, declined, connections: () => feedConnections };
}

describe('resolver metrics', () => {
  const dir = mkdtempSync(join(tmpdir(), 'resolver-metrics-'));
  const swap = fakeSwap();
  let running: RunningResolver;

  beforeAll(async () => {
    await new Promise<void>((r) => swap.server.listen(0, '127.0.0.1', () => r()));
    const port = (swap.server.address() as AddressInfo).port;
    const cfg = loadConfig({
      text: `data_dir = "${dir}"\nlog_level = "silent"\n[metrics]\nport = 0\n[swap]\nurl = "http://127.0.0.1:${port}"\nresolver_id = "ref"\napi_key = "k"\n[rfq]\nport = 0\nsecret = "${SECRET}"\n[fill]\npoll_interval_ms = 60000\n`,
      env: {},
    });
    running = await startResolver(cfg, createLogger({ name: 'resolver-metrics-test', level: 'silent' }));
  });
  afterAll(async () => {
    await running?.close();
    swap.server.closeAllConnections();
    await new Promise<void>((r) => swap.server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  function rfq(resolverId: string, secret = SECRET, requestId = crypto.randomUUID()) {
    return Rfq.signRfqRequest(secret, {
      request_id: requestId,
      resolver_id: resolverId,
      timestamp: Math.floor(Date.now() / 1000),
      source_network: { id: 1, type: 'BITCOIN', chain_id: 'regtest' },
      source_token: { address: 'BTC', symbol: 'BTC', decimals: 8 },
      dest_network: { id: 2, type: 'EVM', chain_id: '31337' },
      dest_token: { address: '0x5FbDB2315678afecb367f032d93F642f64180aa3', symbol: 'USDC', decimals: 6 },
      amount_lots: '100000',
    });
  }

  it('counts exactly what a scripted workload did, serves it on its own listener only, and passes promtool', async () => {
    const post = (m: { headers: Record<string, string>; body: string }) =>
      fetch(running.rfqUrl, { method: 'POST', headers: m.headers, body: m.body });
    // RFQs: one for another resolver, two for a pair it does not quote (one then replayed), a forgery, a GET.
    expect((await post(rfq('other'))).status).toBe(200);
    const first = rfq('ref');
    expect((await post(first)).status).toBe(200);
    expect((await post(rfq('ref'))).status).toBe(200);
    expect((await post(first)).status).toBe(401);
    expect((await post(rfq('ref', 'x'.repeat(40)))).status).toBe(401);
    expect((await fetch(running.rfqUrl)).status).toBe(405);
    expect((await fetch(running.rfqUrl.replace('/rfq', '/healthcheck'))).status).toBe(200);
    // The public RFQ server does not serve /metrics.
    expect((await fetch(running.rfqUrl.replace('/rfq', '/metrics'))).status).toBe(404);

    // The engine declined the approved intent (no wallet for its source); the feed reconnected once.
    const until = Date.now() + 10_000;
    while ((swap.declined.length < 1 || swap.connections() < 2) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    await running.engine.idle();
    expect([swap.declined, swap.connections()]).toEqual([['i-1'], 2]);

    const res = await fetch(running.metricsUrl!);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect((await fetch(running.metricsUrl!.replace('/metrics', '/rfq'), { method: 'POST' })).status).toBe(
      404,
    );

    const want: Record<string, number> = {
      'rgbx_resolver_rfqs_total{outcome="no_quote",reason="other_resolver"}': 1,
      'rgbx_resolver_rfqs_total{outcome="no_quote",reason="no_pair"}': 2,
      'rgbx_resolver_rfqs_total{outcome="refused",reason="replayed"}': 1,
      'rgbx_resolver_rfqs_total{outcome="refused",reason="bad_signature"}': 1,
      'rgbx_resolver_rfqs_total{outcome="refused",reason="method_not_allowed"}': 1,
      'rgbx_resolver_http_requests_total{method="POST",path="/rfq",status_code="200"}': 3,
      'rgbx_resolver_http_requests_total{method="POST",path="/rfq",status_code="401"}': 2,
      'rgbx_resolver_http_requests_total{method="GET",path="/rfq",status_code="405"}': 1,
      'rgbx_resolver_http_requests_total{method="GET",path="/healthcheck",status_code="200"}': 1,
      'rgbx_resolver_http_requests_total{method="GET",path="other",status_code="404"}': 1,
      'rgbx_resolver_http_request_duration_seconds_count{path="/rfq"}': 6,
      'rgbx_resolver_fills_total{transition="declined",reason="no_source_wallet"}': 1,
      rgbx_resolver_event_feed_reconnects_total: 1,
    };
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, sample(text, k)]));
    expect(got, text).toEqual(want);
    expect(text).not.toContain('rgbx_resolver_fills_total{transition="accepted"');
    expect(text).not.toContain('rgbx_resolver_rfqs_total{outcome="quoted"');
    expect(sample(text, 'rgbx_resolver_event_feed_last_event_age_seconds')).toBeLessThan(30);
    expect(text).toContain('# TYPE rgbx_resolver_open_transactions gauge');
    expect(text).toContain('# TYPE rgbx_resolver_inventory_lots gauge');
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);

    if (existsSync(PROMTOOL)) {
      const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ status: r.status, out: `${r.stdout}${r.stderr}` }).toEqual({ status: 0, out: '' });
    }
  });

  it('counts a fill from acceptance to claim: transitions and each transaction signed and broadcast', async () => {
    const store = await openResolverStore(`sqlite:${join(dir, 'engine.db')}`);
    const metrics = new ResolverMetrics({ processMetrics: false });
    const status = { value: 'ApprovalAdded' };
    const next: Record<string, string> = {
      accept: 'Accepted',
      deposit: 'UserDeposited',
      fulfil: 'Fulfilled',
      claim: 'Claimed',
    };
    const view = () => ({
      intent: {
        intent_id: 'f-1',
        status: status.value,
        source_chain: 2,
        dest_chain: 4,
        source_token: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
        dest_token: 'So11111111111111111111111111111111111111112',
        user_dest_address: 'user',
        max_dest_amount_lots: '500',
        source_amount_lots: '1000',
        settlement: status.value === 'Claimed' ? [{ leg: 'claim', tx_hash: 'c' }] : [],
      },
      approval_mechanism: 'permit2',
      deadline_secs: Math.floor(Date.now() / 1000) + 3600,
      secret_hash: `0x${'aa'.repeat(32)}`,
      refund_address: 'r',
      execution: null,
      fulfil_commitment: null,
    });
    const act = (step: string) => async () => {
      status.value = next[step]!;
      return {};
    };
    const api = {
      intent: async () => view(),
      intents: async () => ({ data: [], pagination: { total: 0, limit: 100, offset: 0 } }),
      accept: act('accept'),
      deposit: act('deposit'),
      fulfil: act('fulfil'),
      claim: act('claim'),
      secret: async () => `0x${'7e'.repeat(32)}`,
    } as unknown as ResolverClient;
    let n = 0;
    const signed = async (): Promise<SignedTx> => ({ txid: `tx-${++n}`, raw: 'ff', meta: {} });
    const sent = new Set<string>();
    const wallet = (type: ChainWallet['type']): ChainWallet => ({
      type,
      identity: `id-${type}`,
      balance: async () => 10_000n,
      signPayment: signed,
      signDeposit: signed,
      signClaim: signed,
      broadcast: async (t) => {
        sent.add(t.txid);
      },
      status: async (t) =>
        sent.has(t.txid) ? { state: 'confirmed', confirmations: 1 } : { state: 'unknown' },
    });
    const cfg = loadConfig({
      text: `[swap]\nurl = "https://swap.example"\nresolver_id = "ref"\napi_key = "k"\n[rfq]\nsecret = "${SECRET}"\n`,
      env: {},
    });
    const engine = new FillEngine({
      cfg,
      db: store.db,
      api,
      wallets: new Map([
        [2, wallet('EVM')],
        [4, wallet('SOLANA')],
      ]),
      reservations: new Reservations(),
      log: createLogger({ name: 'engine-metrics-test', level: 'silent' }),
      metrics,
    });
    try {
      engine.kick('f-1');
      await engine.idle();
      expect(status.value).toBe('Claimed');
      const text = await metrics.kit.text();
      const want: Record<string, number> = {
        'rgbx_resolver_fills_total{transition="accepted",reason="none"}': 1,
        'rgbx_resolver_fills_total{transition="paid",reason="none"}': 1,
        'rgbx_resolver_fills_total{transition="claimed",reason="none"}': 1,
        'rgbx_resolver_transactions_total{network="2",role="deposit",event="signed"}': 1,
        'rgbx_resolver_transactions_total{network="2",role="deposit",event="broadcast"}': 1,
        'rgbx_resolver_transactions_total{network="4",role="payment",event="signed"}': 1,
        'rgbx_resolver_transactions_total{network="4",role="payment",event="broadcast"}': 1,
        'rgbx_resolver_transactions_total{network="2",role="claim",event="signed"}': 1,
        'rgbx_resolver_transactions_total{network="2",role="claim",event="broadcast"}': 1,
      };
      const got = Object.fromEntries(Object.keys(want).map((k) => [k, sample(text, k)]));
      expect(got, text).toEqual(want);
      expect(text).not.toContain('event="dead"');
      expect(text).not.toContain('rgbx_resolver_fill_step_failures_total{');
    } finally {
      await engine.stop();
      await store.close();
    }
  });
});
