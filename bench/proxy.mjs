#!/usr/bin/env node
/**
 * RGB proxy round-trip benchmark: consignment.post (multipart) + consignment.get against the built
 * proxy (`apps/rgb-proxy/dist/main.js`, spawned), next to a baseline measured in the same run: a
 * plain HTTP POST of the same bytes to a trivial node:http server that discards the body, and a
 * plain GET of the same bytes from it. Both servers run as separate processes; the client is
 * this process (global fetch) for both. Runs are interleaved; medians are reported.
 *
 * usage: npx tsc -b && node bench/proxy.mjs [--runs N] [--sizes 1048576,10485760]
 * Prints one JSON document on stdout.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const MAIN_JS = fileURLToPath(new URL('../apps/rgb-proxy/dist/main.js', import.meta.url));
const MiB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '9' },
    warmup: { type: 'string', default: '2' },
    sizes: { type: 'string', default: `${MiB},${10 * MiB}` },
  },
});
const RUNS = Math.max(7, Number(values.runs));
const WARMUP = Math.max(0, Number(values.warmup));
const SIZES = values.sizes.split(',').map(Number);

/** The baseline server: POST reads and discards the body, GET answers the bytes it was given. */
const BASELINE_SERVER = `
import { createServer } from 'node:http';
import { median } from './lib.mjs';
let payload = Buffer.alloc(0);
const server = createServer((req, res) => {
  if (req.method === 'PUT') {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => { payload = Buffer.concat(parts); res.end('ok'); });
  } else if (req.method === 'POST') {
    req.on('data', () => {});
    req.on('end', () => res.end('ok'));
  } else {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': payload.length });
    res.end(payload);
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ event: 'listening', url: 'http://127.0.0.1:' + server.address().port }) + '\\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

function startProcess(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line from ${args.join(' ')}`)), 20_000);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.trim()) continue;
        try {
          const msg = JSON.parse(line);
          if (msg.event === 'listening') {
            clearTimeout(timer);
            resolve({ child, url: msg.url });
            return;
          }
        } catch {}
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

async function stop(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const round = (x) => Math.round(x * 100) / 100;

let seq = 0;

async function proxyRoundTrip(rpcUrl, bytes) {
  const recipient = `bench-${process.pid}-${++seq}`;
  const fd = new FormData();
  fd.set('method', 'consignment.post');
  fd.set('jsonrpc', '2.0');
  fd.set('id', 'null');
  fd.set('params', JSON.stringify({ recipient_id: recipient, txid: 'f'.repeat(64), vout: 0 }));
  fd.set('file', new Blob([bytes]), 'consignment_out');
  const t0 = performance.now();
  const posted = await (await fetch(rpcUrl, { method: 'POST', body: fd })).json();
  const t1 = performance.now();
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      method: 'consignment.get',
      params: { recipient_id: recipient },
    }),
  });
  const got = await res.json();
  const back = Buffer.from(got.result.consignment, 'base64');
  const t2 = performance.now();
  if (posted.result !== true) throw new Error(`consignment.post failed: ${JSON.stringify(posted)}`);
  if (!back.equals(bytes)) throw new Error('consignment.get returned different bytes');
  return { post: t1 - t0, get: t2 - t1, total: t2 - t0 };
}

async function baselineRoundTrip(url, bytes) {
  const t0 = performance.now();
  await (
    await fetch(`${url}/upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
    })
  ).text();
  const t1 = performance.now();
  const back = Buffer.from(await (await fetch(`${url}/download`)).arrayBuffer());
  const t2 = performance.now();
  if (back.length !== bytes.length) throw new Error('baseline GET returned a different length');
  return { post: t1 - t0, get: t2 - t1, total: t2 - t0 };
}

function summarize(samples) {
  return {
    post_ms: round(median(samples.map((s) => s.post))),
    get_ms: round(median(samples.map((s) => s.get))),
    roundtrip_ms: round(median(samples.map((s) => s.total))),
    roundtrip_min_ms: round(Math.min(...samples.map((s) => s.total))),
    roundtrip_max_ms: round(Math.max(...samples.map((s) => s.total))),
  };
}

async function main() {
  if (!existsSync(MAIN_JS)) {
    process.stderr.write(`bench/proxy.mjs: ${MAIN_JS} is missing, run \`npx tsc -b\` first\n`);
    process.exit(2);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'rgbx-bench-proxy-'));
  const proxy = await startProcess([
    MAIN_JS,
    '--port',
    '0',
    '--metrics-port',
    '0',
    '--data-dir',
    dataDir,
    '--log-level',
    'warn',
  ]);
  const baseline = await startProcess(['--input-type=module', '-e', BASELINE_SERVER]);
  const rpcUrl = `${proxy.url}/json-rpc`;
  const results = [];
  try {
    for (const size of SIZES) {
      const bytes = randomBytes(size);
      await fetch(`${baseline.url}/set`, { method: 'PUT', body: bytes }).then((r) => r.text());
      for (let i = 0; i < WARMUP; i++) {
        await proxyRoundTrip(rpcUrl, bytes);
        await baselineRoundTrip(baseline.url, bytes);
      }
      const p = [];
      const b = [];
      for (let i = 0; i < RUNS; i++) {
        // alternate the order so neither side always runs on a warmer machine
        if (i % 2 === 0) {
          p.push(await proxyRoundTrip(rpcUrl, bytes));
          b.push(await baselineRoundTrip(baseline.url, bytes));
        } else {
          b.push(await baselineRoundTrip(baseline.url, bytes));
          p.push(await proxyRoundTrip(rpcUrl, bytes));
        }
      }
      const ps = summarize(p);
      const bs = summarize(b);
      results.push({
        bytes: size,
        runs: RUNS,
        proxy: ps,
        baseline: bs,
        ratio: {
          roundtrip: round(ps.roundtrip_ms / bs.roundtrip_ms),
          post: round(ps.post_ms / bs.post_ms),
          get: round(ps.get_ms / bs.get_ms),
        },
      });
    }
  } finally {
    await stop(proxy.child);
    await stop(baseline.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
  const doc = {
    bench: 'rgb-proxy consignment round trip',
    node: process.version,
    cpus: cpus().length,
    warmup: WARMUP,
    note:
      'proxy = consignment.post (multipart, sha256 + fsync + SQLite insert) + consignment.get (base64 JSON); ' +
      'baseline = POST discarded by node:http + GET of the raw bytes; medians in ms',
    results,
  };
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench/proxy.mjs: ${err.stack ?? err}\n`);
  process.exit(1);
});
