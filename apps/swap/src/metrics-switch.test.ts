/**
 * `[metrics] enabled` on the real process (`dist/main.js`, `npx tsc -b` first): the same workload on a
 * service with metrics off and one with metrics on. Off: no `/metrics` listener (the configured port
 * stays closed, no `metrics_url` announced), every request answers as with metrics on, and the
 * in-process app records nothing (no HTTP hook, empty registry). On: exact counter values.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { swapDevnetToml } from '@rgbx/devnet';
import { freePort, isListening } from '@rgbx/service-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSwapApp } from './app.ts';
import { loadConfig } from './config.ts';
import { createApiKey } from './store/api-keys.ts';
import { openSwapDatabase } from './store/database.ts';
import { ESCROW, PERMIT2, UNREACHABLE_ELECTRUM, UNREACHABLE_RPC, USDC } from './test-support.ts';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'swap-metrics-switch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configToml(name: string, metrics: { enabled: boolean; port: number }): string {
  return swapDevnetToml({
    service: {
      host: '127.0.0.1',
      port: 0,
      database_url: `sqlite:${join(dir, `${name}.db`)}`,
      preimage_key: 'cd'.repeat(32),
      log_level: 'silent',
      metrics: { listen_address: '127.0.0.1', ...metrics },
    },
    swap: { scheduler_interval_ms: 3_600_000 },
    bitcoin: { electrumUrl: UNREACHABLE_ELECTRUM },
    evm: { rpcUrl: UNREACHABLE_RPC, chainId: 31337, permit2: PERMIT2, escrow: ESCROW, usdc: USDC },
  });
}

interface Started {
  url: string;
  metrics_url?: string;
  key: string;
  child: ChildProcess;
}

async function start(name: string, metrics: { enabled: boolean; port: number }): Promise<Started> {
  const cfg = join(dir, `${name}.toml`);
  writeFileSync(cfg, configToml(name, metrics));
  const created = await promisify(execFile)(process.execPath, [
    MAIN,
    'keys',
    'create',
    '--name',
    name,
    '-c',
    cfg,
  ]);
  const { key } = JSON.parse(created.stdout) as { key: string };
  const child = spawn(process.execPath, [MAIN, '-c', cfg], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<{ url: string; metrics_url?: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const l = out.split('\n').find((x) => x.includes('"event":"listening"'));
      if (l) resolve(JSON.parse(l));
    });
    child.once('exit', (c) => reject(new Error(`${name} exited ${c}`)));
  });
  return { ...line, key, child };
}

async function stop(s: Started | undefined): Promise<void> {
  if (!s || s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

/** The same requests on either service; their statuses in order. */
async function workload(s: Started): Promise<number[]> {
  const key = { 'x-api-key': s.key };
  const json = { ...key, 'content-type': 'application/json' };
  const quote = JSON.stringify({
    sourceChain: 2,
    sourceToken: USDC,
    destChain: 1,
    destToken: 'BTC',
    amountLots: '1000000000000000000000',
  });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await fetch(`${s.url}/networks`, { headers: key })).status);
  statuses.push((await fetch(`${s.url}/networks`)).status); // no key
  statuses.push((await fetch(`${s.url}/no/such/path`, { headers: key })).status);
  for (let i = 0; i < 2; i++)
    statuses.push((await fetch(`${s.url}/quote`, { method: 'POST', headers: json, body: quote })).status);
  statuses.push((await fetch(`${s.url}/metrics`, { headers: key })).status); // never on the API
  return statuses;
}

const EXPECTED_STATUSES = [200, 200, 200, 401, 404, 200, 200, 404];

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('[metrics] enabled, on the real process', () => {
  it('off: no listener, nothing announced, requests answer as with metrics on', async () => {
    const port = await freePort();
    let s: Started | undefined;
    try {
      s = await start('off', { enabled: false, port });
      expect(s.metrics_url).toBeUndefined();
      expect(await workload(s)).toEqual(EXPECTED_STATUSES);
      // The configured metrics port was free before the start and nothing listens on it.
      expect(await isListening(port)).toBe(false);
    } finally {
      await stop(s);
    }
  });

  it('on: the counters move by exactly the workload', async () => {
    let s: Started | undefined;
    try {
      s = await start('on', { enabled: true, port: 0 });
      expect(s.metrics_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(await workload(s)).toEqual(EXPECTED_STATUSES);
      const text = await (await fetch(s.metrics_url!)).text();
      const want: Record<string, number> = {
        'rgbx_swap_http_requests_total{method="GET",route="/networks",status_code="200"}': 3,
        'rgbx_swap_http_requests_total{method="GET",route="/networks",status_code="401"}': 1,
        'rgbx_swap_http_requests_total{method="GET",route="unmatched",status_code="404"}': 2,
        'rgbx_swap_http_requests_total{method="POST",route="/quote",status_code="200"}': 2,
        'rgbx_swap_http_request_duration_seconds_count{method="GET",route="/networks"}': 4,
        'rgbx_swap_http_request_duration_seconds_count{method="POST",route="/quote"}': 2,
        'rgbx_swap_quotes_total{outcome="ok"}': 2,
        'rgbx_swap_rfq_duration_seconds_count{resolver="reference"}': 2,
      };
      const got = Object.fromEntries(Object.keys(want).map((k) => [k, sample(text, k)]));
      expect(got, text).toEqual(want);
    } finally {
      await stop(s);
    }
  });
});

describe('[metrics] enabled = false, in process', () => {
  it('installs no HTTP hook and records nothing', async () => {
    const cfg = loadConfig({ text: configToml('inproc', { enabled: false, port: 0 }) }, {});
    const { db, dialect, close } = await openSwapDatabase(cfg.databaseUrl);
    const { app, ctx } = buildSwapApp({ config: cfg, db, dialect });
    try {
      await app.ready();
      const key = (await createApiKey(db, 'inproc')).key;
      const res = await app.inject({ url: '/networks', headers: { 'x-api-key': key } });
      expect(res.statusCode).toBe(200);
      expect(ctx.metrics.enabled).toBe(false);
      expect(ctx.rfqStats.listener).toBeUndefined();
      // The kit's instrument() registers its two HTTP metrics as it adds its hooks, collectDefaultMetrics
      // the process_* / nodejs_* ones, watchIntents its gauge: an empty registry means none of them ran.
      expect(ctx.metrics.kit.registry.getMetricsAsArray()).toEqual([]);
      expect(await ctx.metrics.kit.text()).toBe('\n'); // an empty exposition
      ctx.metrics.approvals.inc({ mechanism: 'permit2', result: 'approved' });
      expect(await ctx.metrics.kit.text()).toBe('\n'); // an empty exposition
    } finally {
      await app.close();
      await close();
    }
  });
});
