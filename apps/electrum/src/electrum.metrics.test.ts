/**
 * The Electrum server's metrics on a real process (the build output) against the devnet's bitcoind:
 * after a scripted workload, exact request counts by method and outcome, sessions, subscriptions, the
 * tip and its lag; the `listening` line announces `metrics_url`; `/metrics` is served there only (the
 * Electrum port answers an HTTP request with a JSON-RPC parse error, never the exposition); and
 * `promtool check metrics` accepts the exposition.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElectrumClient, ElectrumReplyError } from './client.ts';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PROMTOOL = '/usr/bin/promtool';

let devnet: Devnet;
let dir: string;
let child: ChildProcess;
let listening: { url: string; metrics_url: string; height: number };
const clients: ElectrumClient[] = [];

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'electrum-metrics-'));
  devnet = await startDevnet({ dir });
  const b = devnet.info.bitcoind;
  const conf = join(dir, 'electrum-metrics.toml');
  writeFileSync(
    conf,
    `[server]\nport = 0\n[bitcoind]\nrpc_url = "${b.rpc_url}"\nrpc_user = "${b.rpc_user}"\nrpc_password = "${b.rpc_password}"\n[metrics]\nport = 0\n[log]\nlevel = "warn"\n`,
  );
  child = spawn(process.execPath, [MAIN, '-c', conf], { stdio: ['ignore', 'pipe', 'inherit'] });
  listening = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"event":"listening"'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (c) => reject(new Error(`electrum exited ${c}`)));
  });
});

afterAll(async () => {
  for (const c of clients) c.close();
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('electrum metrics', () => {
  it('counts exactly what a scripted workload did, serves it on its own listener only, and passes promtool', async () => {
    expect(listening.metrics_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const c = await ElectrumClient.connect(listening.url);
    clients.push(c);
    await c.request('server.version', ['metrics-test', ['1.4', '1.6']]);
    for (let i = 0; i < 3; i++) await c.request('blockchain.headers.subscribe');
    await c.request('blockchain.scripthash.subscribe', ['aa'.repeat(32)]);
    await c.request('blockchain.scripthash.subscribe', ['bb'.repeat(32)]);
    await expect(c.request('no.such.method')).rejects.toBeInstanceOf(ElectrumReplyError);
    await expect(c.request('blockchain.scripthash.get_balance', ['zz'])).rejects.toBeInstanceOf(
      ElectrumReplyError,
    );
    // A block: the subscribed connection is told, the index follows.
    const notified = c.nextNotification((n) => n.method === 'blockchain.headers.subscribe');
    await devnet.mine(1);
    await notified;

    // The Electrum port is no HTTP server: a GET /metrics gets a JSON-RPC parse error, not the exposition.
    const onElectrum = await new Promise<string>((resolve, reject) => {
      const u = new URL(listening.url.replace('tcp://', 'http://'));
      const s = connect(Number(u.port), u.hostname, () =>
        s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      s.once('data', (d) => {
        resolve(d.toString());
        s.destroy();
      });
      s.once('error', reject);
    });
    expect(onElectrum).toMatch(/^\{"jsonrpc":"2\.0","id":null,"error":\{"code":-32700/);

    // Scraped once the probe's connection is gone on the server side too (the workload's one stays).
    let text = '';
    for (const until = Date.now() + 5000; Date.now() < until; ) {
      const res = await fetch(listening.metrics_url);
      expect(res.status).toBe(200);
      text = await res.text();
      if (sample(text, 'rgbx_electrum_sessions') === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await fetch(listening.metrics_url.replace('/metrics', '/'))).status).toBe(404);

    const want: Record<string, number> = {
      'rgbx_electrum_requests_total{method="server.version",outcome="ok"}': 1,
      'rgbx_electrum_requests_total{method="blockchain.headers.subscribe",outcome="ok"}': 3,
      'rgbx_electrum_requests_total{method="blockchain.scripthash.subscribe",outcome="ok"}': 2,
      'rgbx_electrum_requests_total{method="unknown",outcome="method_not_found"}': 1,
      'rgbx_electrum_requests_total{method="blockchain.scripthash.get_balance",outcome="invalid_params"}': 1,
      'rgbx_electrum_request_duration_seconds_count{method="blockchain.headers.subscribe"}': 3,
      rgbx_electrum_sessions: 1,
      'rgbx_electrum_subscriptions{kind="headers"}': 1,
      'rgbx_electrum_subscriptions{kind="scripthash"}': 2,
      rgbx_electrum_tip_height: listening.height + 1,
      rgbx_electrum_tip_lag_blocks: 0,
      rgbx_electrum_bitcoind_reachable: 1,
    };
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, sample(text, k)]));
    expect(got, text).toEqual(want);
    // The probe's two non-empty lines (request line, Host header) are two parse errors.
    expect(text).toMatch(/^rgbx_electrum_requests_total\{method="unknown",outcome="parse_error"\} 2$/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);

    if (existsSync(PROMTOOL)) {
      const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ status: r.status, out: `${r.stdout}${r.stderr}` }).toEqual({ status: 0, out: '' });
    }
  });
});
