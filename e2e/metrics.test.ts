/**
 * Metrics as an operator meets them: a real Prometheus (Debian's `prometheus`, installed by
 * `scripts/install-test-tools.sh`) scrapes every service of the devnet market, the cloud service
 * (on the devnet's follow-mode plug-in, as `npm start` runs it; no hosted nodes) and a wallet node on the
 * devnet, each on its own metrics listener; `promtool check metrics` passes on each exposition; after a
 * scripted workload, PromQL through Prometheus's HTTP API returns exactly what the workload did.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BlockProducer,
  type Devnet,
  type Market,
  produceBlocks,
  type ServiceProcess,
  spawnService,
  startDevnet,
  startMarket,
} from '@rgbx/devnet';
import { closeDefaultHost, generateKeys } from '@rgbx/rgb';
import { freePort, waitFor, writeToml } from '@rgbx/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM example without type declarations
import { marketContext, runPair } from '../examples/swap-pairs.mjs';
import { WALLET_NODE_MAIN, walletClient, writeNodeConfig } from './helpers/wallet-node.ts';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const CLOUD_MAIN = new URL('../apps/cloud/dist/main.js', import.meta.url).pathname;

describe('every service scraped by a real Prometheus', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rgbx-metrics-'));
  let devnet: Devnet;
  let market: Market;
  let blocks: BlockProducer | undefined;
  let cloud: ServiceProcess<{ url: string; metrics: string }> | undefined;
  let cloudToml = '';
  let walletNode: ServiceProcess<{ url: string; metrics: string }> | undefined;
  let prometheus: ChildProcess | undefined;
  let promUrl = '';
  /** job → metrics URL. */
  let targets: Record<string, string> = {};

  beforeAll(async () => {
    devnet = await startDevnet({ dir: join(dir, 'devnet') });
    market = await startMarket({ dir, devnet, logLevel: 'warn' });
    blocks = produceBlocks({ devnet, intervalMs: 1000, evmRpcUrl: market.evm.rpcUrl });
    // The cloud as `npm start` configures it (the devnet follow-mode plug-in), on free ports.
    const cl = join(dir, 'cloud');
    mkdirSync(cl, { recursive: true });
    cloudToml = join(cl, 'cloud.toml');
    writeFileSync(
      cloudToml,
      writeToml({
        signing_keys: { encryption_key: randomBytes(32).toString('hex') },
        api: { listen_address: '127.0.0.1', port: 0 },
        metrics: { listen_address: '127.0.0.1', port: 0 },
        cloud: { data_dir: join(cl, 'data'), log_level: 'warn' },
        backend: { plugin: '@rgbx/devnet/cloud-backend', plugin_options: { dir: join(dir, 'devnet') } },
      }),
      { mode: 0o600 },
    );
    cloud = await spawnService('cloud service', [CLOUD_MAIN, '-c', cloudToml], {
      pick: (j) =>
        j.event === 'listening' && typeof j.url === 'string' && typeof j.metrics_url === 'string'
          ? { url: j.url, metrics: j.metrics_url }
          : undefined,
    });
    // A wallet node on the devnet (metrics on a free port, as every test's), no background refresh: the
    // workload below is all it does.
    const wn = join(dir, 'wallet-node');
    mkdirSync(wn, { recursive: true });
    walletNode = await spawnService(
      'wallet node',
      [WALLET_NODE_MAIN, '-c', writeNodeConfig(wn, devnet.info, { workers: 2, refresh_interval_secs: 0 })],
      {
        pick: (j) =>
          j.event === 'listening' && typeof j.url === 'string' && typeof j.metrics_url === 'string'
            ? { url: j.url, metrics: j.metrics_url }
            : undefined,
      },
    );
    targets = {
      electrum: devnet.info.metrics.electrum,
      rgb_proxy: devnet.info.metrics.proxy,
      swap: market.metrics.swap,
      resolver: market.metrics.resolver,
      cloud: cloud.value.metrics,
      wallet_node: walletNode.value.metrics,
    };
    const port = await freePort();
    const config = join(dir, 'prometheus.yml');
    const jobs = Object.entries(targets).map(([job, url]) => {
      const u = new URL(url);
      return `  - job_name: ${job}\n    metrics_path: ${u.pathname}\n    static_configs:\n      - targets: ['${u.host}']`;
    });
    writeFileSync(
      config,
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n${jobs.join('\n')}\n`,
    );
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: 'ignore' },
    );
    promUrl = `http://127.0.0.1:${port}`;
    await waitFor(
      'prometheus ready',
      async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok === true,
      {
        timeoutMs: 60_000,
      },
    );
  }, 300_000);

  afterAll(async () => {
    prometheus?.kill('SIGTERM');
    await cloud?.stop();
    await walletNode?.stop();
    await closeDefaultHost();
    await blocks?.stop();
    await market?.stop();
    await devnet?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  /** One instant-vector query; the samples' values by their labels. */
  async function query(q: string): Promise<{ metric: Record<string, string>; value: number }[]> {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as {
      status: string;
      data: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    expect(body.status).toBe('success');
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** The value of a single-sample query once Prometheus has scraped it as `want` (or the last one seen). */
  async function settled(q: string, want: number): Promise<number | undefined> {
    let last: number | undefined;
    await waitFor(
      `${q} = ${want}`,
      async () => {
        const r = await query(q);
        last = r.length === 1 ? r[0]!.value : undefined;
        return last === want;
      },
      { timeoutMs: 20_000, intervalMs: 500 },
    ).catch(() => {});
    return last;
  }

  it('scrapes every service (up = 1 for each job) and promtool passes on every exposition', async () => {
    await waitFor(
      'every target scraped',
      async () => (await query('up == 1')).length === Object.keys(targets).length,
      {
        timeoutMs: 30_000,
      },
    );
    expect((await query('up')).map((s) => [s.metric.job, s.value]).sort()).toEqual(
      Object.keys(targets)
        .map((j) => [j, 1])
        .sort(),
    );
    for (const [job, url] of Object.entries(targets)) {
      const text = await (await fetch(url)).text();
      const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ job, status: r.status, out: `${r.stdout}${r.stderr}` }).toEqual({ job, status: 0, out: '' });
    }
  });

  it('the cloud: after three node listings and a refused request, PromQL returns exactly those', async () => {
    const r = spawnSync(
      process.execPath,
      [CLOUD_MAIN, '-c', cloudToml, 'tokens', 'create', '--account', 'ops'],
      {
        encoding: 'utf8',
      },
    );
    expect(r.status).toBe(0);
    const token = JSON.parse(r.stdout.trim().split('\n').pop()!).token as string;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${cloud!.value.url}/api/nodes`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
    }
    expect((await fetch(`${cloud!.value.url}/api/nodes`)).status).toBe(401);
    expect(
      await settled('rgbx_cloud_http_requests_total{method="GET",route="/api/nodes",status_code="200"}', 3),
    ).toBe(3);
    expect(
      await settled('rgbx_cloud_http_requests_total{method="GET",route="/api/nodes",status_code="401"}', 1),
    ).toBe(1);
    // Read from the database at scrape time: no hosted nodes; the signing key made at the first start.
    expect(await settled('sum(rgbx_cloud_nodes)', 0)).toBe(0);
    expect((await query('rgbx_cloud_signing_key_age_seconds > 0')).length).toBe(1);
  }, 60_000);

  it('the wallet node: after a register and three listassets, PromQL returns exactly those', async () => {
    const keys = await generateKeys('Regtest', 'SegWitV0');
    const w = walletClient(walletNode!.value.url, keys);
    await w.register();
    for (let i = 0; i < 3; i++) expect(await w.listAssets()).toBeDefined();
    const P = 'rgbx_wallet_node_';
    expect(
      await settled(`${P}http_requests_total{method="POST",route="/wallet/listassets",status_code="200"}`, 3),
    ).toBe(3);
    expect(
      await settled(`${P}http_requests_total{method="POST",route="/wallet/register",status_code="200"}`, 1),
    ).toBe(1);
    expect(await settled(`${P}rgblib_call_duration_seconds_count{call="rgblib_list_assets"}`, 3)).toBe(3);
    expect(await settled(`${P}rgblib_call_duration_seconds_count{call="rgblib_new_wallet"}`, 1)).toBe(1);
    // Read at scrape time: the wallet is open and online, against a budget of (512 - 2) / 2 = 255.
    expect(await settled(`${P}wallets_online`, 1)).toBe(1);
    expect(await settled(`${P}budget_seats_max{kind="online"}`, 255)).toBe(255);
    expect(await settled(`sum(${P}children)`, 2)).toBe(2);
    expect(await settled(`${P}children{state="stuck"}`, 0)).toBe(0);
    expect(await settled(`sum(${P}refusals_total)`, 0)).toBe(0);
  }, 60_000);

  it('after two swaps and three RGB proxy calls, PromQL returns exactly what happened', async () => {
    const m = await marketContext({
      swapUrl: market.swapUrl,
      apiKey: market.swapApiKey,
      evm: market.evm,
      solanaRpcUrl: market.solanaRpcUrl,
      devnet,
    });
    for (const pair of ['BTC->USDC', 'SOL->USDC'])
      expect((await runPair(m, pair, { log: () => {}, timeoutMs: 120_000 })).status).toBe('Fulfilled');
    const proxy = devnet.info.proxy.replace(/^rpc:/, 'http:');
    for (let i = 0; i < 3; i++) {
      const r = await fetch(proxy, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'server.info', params: null }),
      });
      expect(r.status).toBe(200);
    }

    expect(await settled('sum(rgbx_swap_quotes_total{outcome="ok"})', 2)).toBe(2);
    expect(await settled('sum(rgbx_swap_rfq_answers_total{resolver="reference",outcome="quoted"})', 2)).toBe(
      2,
    );
    expect(await settled('sum(rgbx_resolver_rfqs_total{outcome="quoted"})', 2)).toBe(2);
    expect(await settled('sum(rgbx_resolver_fills_total{transition="accepted"})', 2)).toBe(2);
    expect(await settled('sum(rgbx_resolver_fills_total{transition="paid"})', 2)).toBe(2);
    expect(await settled('rgbx_swap_intents{status="Fulfilled"}', 2)).toBe(2);
    expect(await settled('sum(rgbx_rgb_proxy_rpc_requests_total{method="server.info"})', 3)).toBe(3);
    // Per route: the two approvals went through POST /intents/:intentId/approvals.
    expect(
      await settled(
        'sum(rgbx_swap_http_requests_total{method="POST",route="/intents/:id/approvals",status_code="200"})',
        2,
      ),
    ).toBe(2);
    // The Electrum server follows bitcoind: its lag is 0 blocks once the blocks have been indexed.
    expect(await settled('rgbx_electrum_tip_lag_blocks', 0)).toBe(0);
  }, 300_000);
});
