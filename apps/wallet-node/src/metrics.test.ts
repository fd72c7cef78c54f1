/**
 * The wallet node's metrics, from its build output (`npx tsc -b` first) as a real process with real rgb-lib
 * children: the exposition after a scripted workload has exactly what the workload did (HTTP requests by route
 * and status, rgb-lib calls by name, the 503 refusal, children by state, wallets against the budget, a child
 * killed counted as a restart), passes `promtool check metrics`, and is served on `[metrics]`'s own listener
 * only; `[metrics] enabled = false` serves nothing; a taken metrics port stops the start, naming `[metrics]`.
 * No devnet: the indexer is unreachable (register creates the wallet, then fails to go online), and the calls
 * made after it are offline ones.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServiceProcess, spawnService } from '@rgbx/devnet';
import { waitFor } from '@rgbx/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerOffline, syntheticIdentity, WALLET_NODE_MAIN } from './test-support.ts';

const PROMTOOL = '/usr/bin/promtool';
const dir = mkdtempSync(join(tmpdir(), 'wn-metrics-'));
const IDENTITY = syntheticIdentity('c0ffee01');
const LISTASSETS = 5;

function config(name: string, metrics: string[]): string {
  const file = join(dir, `${name}.toml`);
  writeFileSync(
    file,
    [
      '[api]',
      'port = 0',
      '[metrics]',
      ...metrics,
      '[wallet]',
      `data_dir = ${JSON.stringify(join(dir, name))}`,
      'network = "regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "u"',
      'btc_rpc_password = "p"',
      'indexer_address = "tcp://127.0.0.1:9"',
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      'workers = 2',
      'max_online_wallets = 4',
      'max_open_wallets = 8',
      'check_indexer_at_start = false',
      'refresh_interval_secs = 0',
      '',
    ].join('\n'),
  );
  return file;
}

/** Starts the node; resolves with its API URL and the `metrics_url` of its listening line (if any). */
function start(file: string): Promise<ServiceProcess<{ url: string; metrics: string | undefined }>> {
  return spawnService('wallet node', [WALLET_NODE_MAIN, '-c', file], {
    pick: (j) =>
      j.event === 'listening' && typeof j.url === 'string'
        ? { url: j.url, metrics: typeof j.metrics_url === 'string' ? j.metrics_url : undefined }
        : undefined,
  });
}

/** Samples of the exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const childPids = (pid: number) =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);

let node: ServiceProcess<{ url: string; metrics: string | undefined }>;
let url: string;
let metricsUrl: string;

beforeAll(async () => {
  node = await start(config('on', ['port = 0']));
  url = node.value.url;
  metricsUrl = node.value.metrics!;
}, 60_000);

afterAll(async () => {
  await node?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const scrape = async () => {
  const r = await fetch(metricsUrl);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
};

describe('wallet node metrics', () => {
  it('are served on their own listener, announced in the listening line, never on the API', async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(metricsUrl).port).not.toBe(new URL(url).port);
    expect(new URL(metricsUrl).port).not.toBe('9401');
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    expect(node.stderr()).toContain(`"url":"${metricsUrl}"`);
  });

  it('count exactly what a scripted workload did', async () => {
    await registerOffline(url, IDENTITY);
    for (let i = 0; i < LISTASSETS; i++) {
      const r = await fetch(`${url}/wallet/listassets`, { method: 'POST', headers: IDENTITY });
      expect(r.status).toBe(200);
    }
    expect((await fetch(`${url}/healthcheck`)).status).toBe(200);
    const m = samples(await scrape());
    const P = 'rgbx_wallet_node_';
    // HTTP, by route template and status (the scrape's own request is not the API's).
    expect(m.get(`${P}http_requests_total{method="POST",route="/wallet/listassets",status_code="200"}`)).toBe(
      LISTASSETS,
    );
    expect(m.get(`${P}http_requests_total{method="POST",route="/wallet/register",status_code="503"}`)).toBe(
      1,
    );
    expect(m.get(`${P}http_requests_total{method="GET",route="/healthcheck",status_code="200"}`)).toBe(1);
    expect(m.get(`${P}http_request_duration_seconds_count{method="POST",route="/wallet/listassets"}`)).toBe(
      LISTASSETS,
    );
    // The 503: the indexer refused going online.
    expect(m.get(`${P}refusals_total{reason="indexer_unavailable"}`)).toBe(1);
    expect(m.get(`${P}refusals_total{reason="wallets_busy"}`)).toBe(0);
    // rgb-lib calls by name: one open, go_online tried 3 times (refused at once: retried after 100 and 400 ms), every
    // listassets once.
    expect(m.get(`${P}rgblib_call_duration_seconds_count{call="rgblib_list_assets"}`)).toBe(LISTASSETS);
    expect(m.get(`${P}rgblib_call_duration_seconds_count{call="rgblib_new_wallet"}`)).toBe(1);
    expect(m.get(`${P}rgblib_call_duration_seconds_count{call="rgblib_go_online"}`)).toBe(3);
    expect(m.get(`${P}rgblib_call_errors_total{call="rgblib_go_online"}`)).toBe(3);
    expect(m.get(`${P}rgblib_call_errors_total{call="rgblib_list_assets"}`)).toBe(0);
    expect(m.get(`${P}rgblib_call_duration_seconds_bucket{call="rgblib_list_assets",le="+Inf"}`)).toBe(
      LISTASSETS,
    );
    // Children, wallets and the budget, read at scrape time.
    expect(m.get(`${P}children{state="idle"}`)).toBe(2);
    expect(m.get(`${P}children{state="busy"}`)).toBe(0);
    expect(m.get(`${P}children{state="stuck"}`)).toBe(0);
    expect(m.get(`${P}children{state="stopped"}`)).toBe(0);
    expect(m.get(`${P}wallets_known`)).toBe(1);
    expect(m.get(`${P}wallets_open`)).toBe(1);
    expect(m.get(`${P}wallets_online`)).toBe(0);
    expect(m.get(`${P}budget_seats_used{kind="open"}`)).toBe(1);
    expect(m.get(`${P}budget_seats_used{kind="online"}`)).toBe(0);
    expect(m.get(`${P}budget_seats_max{kind="open"}`)).toBe(8);
    expect(m.get(`${P}budget_seats_max{kind="online"}`)).toBe(4);
    expect(m.get(`${P}queued_calls{priority="foreground"}`)).toBe(0);
    expect(m.get(`${P}budget_waiting_calls{priority="foreground"}`)).toBe(0);
    expect(m.get(`${P}wallet_moves_total{reason="isolation"}`)).toBe(0);
    expect(m.get(`${P}child_restarts_total{reason="died"}`)).toBe(0);
    expect(m.get(`${P}background_refresh_runs_total`)).toBe(0);
    expect(m.get(`${P}pending_begins`)).toBe(0);
    expect(m.get(`${P}oldest_pending_begin_age_seconds`)).toBe(0);
    // Node's own.
    expect(m.get('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('count a child killed from outside as a restart, and its wallet reopens', async () => {
    const kids = childPids(node.proc.pid!);
    expect(kids.length).toBe(2);
    for (const k of kids) process.kill(k, 'SIGKILL');
    await waitFor(
      'both exits counted',
      async () => samples(await scrape()).get('rgbx_wallet_node_child_restarts_total{reason="died"}') === 2,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const r = await fetch(`${url}/wallet/listassets`, { method: 'POST', headers: IDENTITY });
    expect(r.status).toBe(200);
    const m = samples(await scrape());
    expect(m.get('rgbx_wallet_node_child_restarts_total{reason="died"}')).toBe(2);
    expect(m.get('rgbx_wallet_node_child_restarts_total{reason="isolation"}')).toBe(0);
    // Reopened: a second rgblib_new_wallet; one more listassets.
    expect(m.get('rgbx_wallet_node_rgblib_call_duration_seconds_count{call="rgblib_new_wallet"}')).toBe(2);
    expect(m.get('rgbx_wallet_node_rgblib_call_duration_seconds_count{call="rgblib_list_assets"}')).toBe(
      LISTASSETS + 1,
    );
    expect(m.get('rgbx_wallet_node_wallets_open')).toBe(1);
  });

  it.skipIf(!existsSync(PROMTOOL))('pass promtool check metrics', async () => {
    const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: await scrape(), encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  });

  it('with [metrics] enabled = false: no listener, no metrics_url, the API answers as before', async () => {
    const off = await start(config('off', ['enabled = false']));
    try {
      expect(off.value.metrics).toBeUndefined();
      expect(off.stderr()).not.toContain('metrics listening');
      expect((await fetch(`${off.value.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${off.value.url}/healthcheck`)).status).toBe(200);
    } finally {
      await off.stop();
    }
  });

  it('a taken metrics port stops the start, naming [metrics]', () => {
    const file = config('taken', [`port = ${new URL(metricsUrl).port}`]);
    const r = spawnSync(process.execPath, [WALLET_NODE_MAIN, '-c', file], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(
      `[metrics] cannot listen on 127.0.0.1:${new URL(metricsUrl).port} (EADDRINUSE)`,
    );
    expect(r.stdout).not.toContain('"event":"listening"');
  });
});
