#!/usr/bin/env node
/**
 * Cloud webhook benchmark (built code: `npx tsc -b && node bench/cloud.mjs`).
 *
 * 1. Baseline: raw `crypto.sign('sha256', payload, rsa3072)` per second on this machine, in this run.
 * 2. Throughput: N events already in the outbox, the dispatcher started, time until the HTTPS
 *    receiver (a separate process) has them all: signed webhooks delivered per second (each one is
 *    a claim + attempt log in the database, an RSA-3072 signature, an HTTPS POST and the bookkeeping).
 * 3. Latency at a steady rate: status changes committed at R/s; p50/p99 from the status change
 *    (before the transaction) to the receiver reading the request.
 * Runs on SQLite, and on PostgreSQL when it is reachable (RGBX_TEST_PG_URL or 127.0.0.1:5432).
 *
 * usage: node bench/cloud.mjs [--events 2000] [--nodes 50] [--rate 50] [--seconds 10]
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { buildCloud, changeNode, createToken, loadConfig } from '../apps/cloud/dist/index.js';
import { createLogger } from '../packages/service-kit/dist/index.js';
import { createTestPgDatabase } from '../packages/store/dist/index.js';
import { round, stats } from './lib.mjs';

let EVENTS = 2000;
let NODES = 50;
let RATE = 50;
let SECONDS = 10;

const RECEIVER = `
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
const server = createServer({ key: readFileSync(process.argv[1]), cert: readFileSync(process.argv[2]) }, (req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(parts).toString());
    // Arrival time on the shared wall clock (same machine), microsecond resolution.
    process.stdout.write(JSON.stringify({ k: body.nodeId + '|' + body.eventTimestamp + '|' + body.details.status, t: performance.timeOrigin + performance.now() }) + '\\n');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"message":"ok"}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
process.on('SIGTERM', () => process.exit(0));
`;

function signRate(ms = 2000) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 3072 });
  const payload = Buffer.from(
    JSON.stringify({
      eventType: 'NODE_STATUS_UPDATED',
      eventTimestamp: new Date().toISOString(),
      details: { nodeId: '5d1f8b56-7f0e-4d8e-9f77-5d8c7d2f0a11', status: 'RUNNING' },
      nodeId: '5d1f8b56-7f0e-4d8e-9f77-5d8c7d2f0a11',
    }),
  );
  for (let i = 0; i < 20; i++) sign('sha256', payload, privateKey);
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    sign('sha256', payload, privateKey);
    n++;
  }
  return round((n * 1000) / (performance.now() - t0));
}

function startReceiver(dir) {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'k.pem'),
      '-out',
      join(dir, 'c.pem'),
    ],
    { stdio: 'ignore' },
  );
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', RECEIVER, join(dir, 'k.pem'), join(dir, 'c.pem')],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const arrivals = new Map();
  let buf = '';
  let onPort;
  const port = new Promise((r) => {
    onPort = r;
  });
  child.stdout.on('data', (c) => {
    buf += c;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      if (m.port) onPort(m.port);
      else if (!arrivals.has(m.k)) arrivals.set(m.k, m.t);
    }
  });
  return { child, arrivals, port, caFile: join(dir, 'c.pem') };
}

async function waitFor(fn, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('benchmark timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function run(label, databaseUrlOf) {
  // The webhook signing keys are encrypted at rest; a throwaway key unless the environment sets one.
  process.env.RGBX_CLOUD_ENCRYPTION_KEY ??= 'cd'.repeat(32);
  const dir = mkdtempSync(join(tmpdir(), 'bench-cloud-'));
  const receiver = startReceiver(dir);
  const port = await receiver.port;
  const cfg = loadConfig({
    text: [
      '[cloud]',
      `data_dir = ${JSON.stringify(dir)}`,
      'log_level = "silent"',
      '[database]',
      `url = ${JSON.stringify(await databaseUrlOf(dir))}`,
      '[backend]',
      'btc_rpc_address = "127.0.0.1:1"',
      'indexer_address = "tcp://127.0.0.1:1"',
      '[nodes]',
      `max_per_account = ${NODES}`,
      '[webhooks]',
      'allow_cidrs = ["127.0.0.0/8"]',
      `extra_ca_file = ${JSON.stringify(receiver.caFile)}`,
      'concurrency = 16',
      'poll_interval_ms = 1000',
    ].join('\n'),
  });
  const cloud = await buildCloud(cfg, { logger: createLogger({ name: 'bench', level: 'silent' }) });
  const deps = {
    db: cloud.db,
    dialect: cloud.dialect,
    maxPayloadBytes: 16384,
    onEvent: () => cloud.dispatcher.wake(),
  };
  try {
    const { info } = await createToken(cloud.db, 'bench', 'bench');
    const nodes = [];
    for (let i = 0; i < NODES; i++) {
      nodes.push(
        (
          await cloud.manager.create(info.accountId, {
            name: `n${i}`,
            network: 'regtest',
            webhookUrl: `https://127.0.0.1:${port}/hook`,
          })
        ).id,
      );
    }
    // 1) throughput: the outbox is filled first (NODES creation events + EVENTS more), then drained.
    const flip = new Map(nodes.map((id) => [id, 'STARTING']));
    for (let i = 0; i < EVENTS; i++) {
      const id = nodes[i % NODES];
      const next = flip.get(id) === 'RUNNING' ? 'IN_PROGRESS' : 'RUNNING';
      flip.set(id, next);
      await changeNode(deps, id, next, {});
    }
    const total = EVENTS + NODES;
    const t0 = performance.now();
    cloud.dispatcher.start();
    await waitFor(() => receiver.arrivals.size >= total, 300_000);
    const seconds = (performance.now() - t0) / 1000;
    const throughput = round(total / seconds);

    // 2) latency at a steady rate.
    const sent = new Map();
    const interval = 1000 / RATE;
    const count = RATE * SECONDS;
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const due = start + i * interval;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const id = nodes[i % NODES];
      const next = flip.get(id) === 'RUNNING' ? 'IN_PROGRESS' : 'RUNNING';
      flip.set(id, next);
      const at = Date.now() + (i % 2); // distinct timestamps per node keep the keys unique
      const t = performance.timeOrigin + performance.now();
      await changeNode(deps, id, next, {}, {}, at);
      sent.set(`${id}|${new Date(at).toISOString()}|${next}`, t);
    }
    await waitFor(() => [...sent.keys()].every((k) => receiver.arrivals.has(k)), 60_000);
    const lat = [...sent].map(([k, t]) => receiver.arrivals.get(k) - t);
    return {
      database: label,
      delivered: total,
      seconds: round(seconds),
      webhooks_per_s: throughput,
      latency_ms: { rate_per_s: RATE, ...stats(lat) },
    };
  } finally {
    await cloud.close();
    receiver.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the whole benchmark; `bench/run.mjs` may call it (`node bench/run.mjs cloud`). */
export async function benchCloud(opts = {}) {
  EVENTS = opts.events ?? EVENTS;
  NODES = opts.nodes ?? NODES;
  RATE = opts.rate ?? RATE;
  SECONDS = opts.seconds ?? SECONDS;
  const out = {
    node: process.version,
    cpus: cpus().length,
    key: 'RSA-3072, PKCS#1 v1.5, SHA-256',
    raw_crypto_sign_per_s: signRate(),
    runs: [],
  };
  out.runs.push(await run('sqlite', (dir) => `sqlite:${join(dir, 'cloud.db')}`));
  let pg;
  try {
    pg = await createTestPgDatabase('bench_cloud');
  } catch {
    out.postgres = 'skipped: no PostgreSQL reachable';
  }
  if (pg) {
    try {
      out.runs.push(await run('postgres', () => pg.url));
    } finally {
      await pg.drop();
    }
  }
  out.raw_crypto_sign_per_s_after = signRate();
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '2000' },
      nodes: { type: 'string', default: '50' },
      rate: { type: 'string', default: '50' },
      seconds: { type: 'string', default: '10' },
    },
  });
  const out = await benchCloud({
    events: Number(values.events),
    nodes: Number(values.nodes),
    rate: Number(values.rate),
    seconds: Number(values.seconds),
  });
  console.info(JSON.stringify({ date: new Date().toISOString(), ...out }, null, 2));
}
