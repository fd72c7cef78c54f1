/**
 * The RGB proxy's metrics on a real process (the build output): after a scripted workload, exact
 * counts of RPC calls by method and outcome and of rejected uploads by reason, the stored
 * consignments, media and bytes; the `listening` line announces `metrics_url`; `/metrics` is served
 * there only (the public port answers 404); `promtool check metrics` accepts the exposition.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type ProxyProcess, startProxy, upload } from './test-util.ts';

const PROMTOOL = '/usr/bin/promtool';
const TXID = 'a'.repeat(64);
const bytes = (s: string) => new Uint8Array(Buffer.from(s));

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

let proxy: ProxyProcess;
beforeAll(async () => {
  proxy = await startProxy({ args: ['--max-upload-bytes', '1000'] });
});
afterAll(async () => {
  await proxy?.stop();
  if (proxy) rmSync(proxy.dataDir, { recursive: true, force: true });
});

describe('rgb-proxy metrics', () => {
  it('counts exactly what a scripted workload did, serves it on its own listener only, and passes promtool', async () => {
    expect(proxy.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const url = proxy.rpcUrl;
    for (let i = 0; i < 2; i++) expect((await call(url, 'server.info')).json.result).toBeTruthy();
    const consignment = bytes('consignment bytes');
    const params = { recipient_id: 'rcpt-metrics', txid: TXID, vout: 1 };
    expect((await upload(url, 'consignment.post', params, consignment)).json.result).toBe(true);
    // The same recipient with other content: refused (an upload rejected).
    const conflict = await upload(url, 'consignment.post', params, bytes('other bytes'));
    expect(conflict.json.error.code).toBe(-101);
    // Over --max-upload-bytes: refused before any method runs.
    const big = await upload(url, 'media.post', { attachment_id: 'big' }, new Uint8Array(2000));
    expect(big.json.error.code).toBe(-32000);
    const media = bytes('media!');
    expect((await upload(url, 'media.post', { attachment_id: 'm-1' }, media)).json.result).toBe(true);
    expect((await call(url, 'no.such.method')).json.error.code).toBe(-32601);
    // The public API does not serve /metrics.
    expect((await fetch(`${proxy.url}/metrics`)).status).toBe(404);

    const res = await fetch(proxy.metricsUrl!);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect((await fetch(proxy.metricsUrl!.replace('/metrics', '/json-rpc'), { method: 'POST' })).status).toBe(
      404,
    );
    const want: Record<string, number> = {
      'rgbx_rgb_proxy_rpc_requests_total{method="server.info",outcome="ok"}': 2,
      'rgbx_rgb_proxy_rpc_requests_total{method="consignment.post",outcome="ok"}': 1,
      'rgbx_rgb_proxy_rpc_requests_total{method="consignment.post",outcome="cannot_change_uploaded_file"}': 1,
      'rgbx_rgb_proxy_rpc_requests_total{method="media.post",outcome="ok"}': 1,
      'rgbx_rgb_proxy_rpc_requests_total{method="unknown",outcome="method_not_found"}': 1,
      'rgbx_rgb_proxy_rejected_uploads_total{reason="cannot_change_uploaded_file"}': 1,
      'rgbx_rgb_proxy_rejected_uploads_total{reason="payload_too_large"}': 1,
      rgbx_rgb_proxy_consignments: 1,
      rgbx_rgb_proxy_media: 1,
      'rgbx_rgb_proxy_stored_bytes{kind="consignments"}': consignment.length,
      'rgbx_rgb_proxy_stored_bytes{kind="media"}': media.length,
      'rgbx_rgb_proxy_http_requests_total{method="POST",route="/json-rpc",status_code="200"}': 7,
      'rgbx_rgb_proxy_http_requests_total{method="GET",route="unmatched",status_code="404"}': 1,
    };
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, sample(text, k)]));
    expect(got, text).toEqual(want);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);

    if (existsSync(PROMTOOL)) {
      const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ status: r.status, out: `${r.stdout}${r.stderr}` }).toEqual({ status: 0, out: '' });
    }
  });
});
