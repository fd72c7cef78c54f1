#!/usr/bin/env node
/**
 * Cloud webhook benchmark (built code: `npx tsc -b apps/cloud && node bench/cloud.mjs`).
 *
 * Rounds (default 4); in each, SQLite and PostgreSQL run one after the other, alternating which goes
 * first, and the floor is measured right before and after each store's phase:
 * 1. Floor: raw `crypto.sign('sha256', payload, rsa3072)` per second with as many threads as the
 *    dispatcher signs with (`[webhooks] sign_threads`, 1), each thread in a worker, summed.
 * 2. Throughput: N events already in the outbox, the dispatcher started, time until the HTTPS
 *    receiver (a separate process) has them all: signed webhooks delivered per second (each one is
 *    a lease + attempt log in the database, an RSA-3072 signature, an HTTPS POST and the result).
 * 3. Latency at a steady rate: status changes committed at R/s; p50/p99 from the status change
 *    (before the transaction) to the receiver reading the request.
 * Figures are medians of the rounds; ratios are medians of the per-round ratios (delivered ÷ the
 * mean of the floors measured before and after that phase). PostgreSQL: RGBX_TEST_PG_URL or
 * 127.0.0.1:5432, skipped when unreachable.
 *
 * usage: node bench/cloud.mjs [--rounds 4] [--events 2000] [--nodes 50] [--rate 50] [--seconds 10]
 *        [--sign-threads 1]
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { buildCloud, changeNode, createToken, loadConfig } from '../apps/cloud/dist/index.js';
import { createLogger } from '../packages/service-kit/dist/index.js';
import { createTestPgDatabase } from '../packages/store/dist/index.js';
import { median, round, stats } from './lib.mjs';

let EVENTS = 2000;
let NODES = 50;
let RATE = 50;
let SECONDS = 10;
let ROUNDS = 4;
let SIGN_THREADS = 1;
let CONCURRENCY = 32;

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
// Detached: leave with the benchmark even if it dies.
process.stdin.on('end', () => process.exit(0)).resume();
`;

const SIGNER = `
const { parentPort, workerData } = require('node:worker_threads');
const { sign } = require('node:crypto');
const { key, payload, ms } = workerData;
for (let i = 0; i < 20; i++) sign('sha256', payload, key);
let n = 0;
const t0 = performance.now();
while (performance.now() - t0 < ms) {
  sign('sha256', payload, key);
  n++;
}
parentPort.postMessage((n * 1000) / (performance.now() - t0));
`;

const signKey = generateKeyPairSync('rsa', { modulusLength: 3072 }).privateKey;

/** Raw RSA-3072 signatures per second with `threads` threads signing at once (summed). */
async function signRate(threads, ms = 2000) {
  const payload = Buffer.from(
    JSON.stringify({
      eventType: 'NODE_STATUS_UPDATED',
      eventTimestamp: new Date().toISOString(),
      details: { nodeId: '5d1f8b56-7f0e-4d8e-9f77-5d8c7d2f0a11', status: 'RUNNING' },
      nodeId: '5d1f8b56-7f0e-4d8e-9f77-5d8c7d2f0a11',
    }),
  );
  const rates = await Promise.all(
    Array.from({ length: Math.max(1, threads) }, () => {
      const w = new Worker(SIGNER, { eval: true, workerData: { key: signKey, payload, ms } });
      return new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      }).finally(() => w.terminate());
    }),
  );
  return round(rates.reduce((a, b) => a + b, 0));
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
    // Its own session (setsid): the receiver stands for another machine, so with the kernel's
    // per-session CPU fair share (autogroup) it does not take its CPU from the cloud process.
    { stdio: ['pipe', 'pipe', 'inherit'], detached: true },
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
      `concurrency = ${CONCURRENCY}`,
      'poll_interval_ms = 1000',
      `sign_threads = ${SIGN_THREADS}`,
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
    const elu0 = performance.eventLoopUtilization();
    const cpu0 = process.cpuUsage();
    cloud.dispatcher.start();
    await waitFor(() => receiver.arrivals.size >= total, 300_000);
    const seconds = (performance.now() - t0) / 1000;
    const elu = performance.eventLoopUtilization(elu0).utilization;
    const cpu = process.cpuUsage(cpu0);
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
      // During the throughput phase: how busy the main thread's event loop was, and the process's
      // CPU time (all threads) per delivery.
      event_loop_utilization: round(elu),
      cpu_ms_per_delivery: round((cpu.user + cpu.system) / 1000 / total),
      latency_ms: { rate_per_s: RATE, ...stats(lat) },
    };
  } finally {
    await cloud.close();
    receiver.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function phase(label, databaseUrlOf, floorBefore) {
  const load = loadavg()[0];
  const r = await run(label, databaseUrlOf);
  const floorAfter = await signRate(SIGN_THREADS);
  const floor = (floorBefore + floorAfter) / 2;
  return {
    ...r,
    load_avg_1m: round(load),
    floor_sign_per_s: { before: floorBefore, after: floorAfter },
    ratio: round(r.webhooks_per_s / floor),
    floorAfter,
  };
}

/** Runs the whole benchmark; `bench/run.mjs` may call it (`node bench/run.mjs cloud`). */
export async function benchCloud(opts = {}) {
  EVENTS = opts.events ?? EVENTS;
  NODES = opts.nodes ?? NODES;
  RATE = opts.rate ?? RATE;
  SECONDS = opts.seconds ?? SECONDS;
  ROUNDS = opts.rounds ?? ROUNDS;
  SIGN_THREADS = opts.signThreads ?? SIGN_THREADS;
  CONCURRENCY = opts.concurrency ?? CONCURRENCY;
  const out = {
    node: process.version,
    cpus: cpus().length,
    key: 'RSA-3072, PKCS#1 v1.5, SHA-256',
    sign_threads: SIGN_THREADS,
    floor: `raw crypto.sign per second with ${Math.max(1, SIGN_THREADS)} thread(s) (worker threads), measured before and after each phase`,
    events: EVENTS + NODES,
    concurrency: CONCURRENCY,
    rounds: [],
  };
  let pgReachable = true;
  try {
    await (await createTestPgDatabase('bench_cloud_probe')).drop();
  } catch {
    pgReachable = false;
    out.postgres = 'skipped: no PostgreSQL reachable';
  }
  const stores = {
    sqlite: () => phase.bind(null, 'sqlite', (dir) => `sqlite:${join(dir, 'cloud.db')}`),
    postgres: () => async (floorBefore) => {
      const pg = await createTestPgDatabase('bench_cloud');
      try {
        return await phase('postgres', () => pg.url, floorBefore);
      } finally {
        await pg.drop();
      }
    },
  };
  for (let i = 0; i < ROUNDS; i++) {
    const order = pgReachable ? (i % 2 === 0 ? ['sqlite', 'postgres'] : ['postgres', 'sqlite']) : ['sqlite'];
    const round_ = { round: i + 1, order, phases: {} };
    let floor = await signRate(SIGN_THREADS);
    for (const name of order) {
      const { floorAfter, ...p } = await stores[name]()(floor);
      round_.phases[name] = p;
      floor = floorAfter;
    }
    out.rounds.push(round_);
    process.stderr.write(`cloud bench round ${i + 1}/${ROUNDS}: ${JSON.stringify(round_)}\n`);
  }
  out.summary = {};
  for (const name of pgReachable ? ['sqlite', 'postgres'] : ['sqlite']) {
    const ps = out.rounds.map((r) => r.phases[name]);
    const floors = ps.map((p) => (p.floor_sign_per_s.before + p.floor_sign_per_s.after) / 2);
    out.summary[name] = {
      webhooks_per_s: round(median(ps.map((p) => p.webhooks_per_s))),
      floor_sign_per_s: round(median(floors)),
      ratio: round(median(ps.map((p) => p.ratio))),
      ratio_range: [round(Math.min(...ps.map((p) => p.ratio))), round(Math.max(...ps.map((p) => p.ratio)))],
      latency_ms: {
        rate_per_s: RATE,
        p50: round(median(ps.map((p) => p.latency_ms.p50))),
        p90: round(median(ps.map((p) => p.latency_ms.p90))),
        p99: round(median(ps.map((p) => p.latency_ms.p99))),
        p99_worst_round: round(Math.max(...ps.map((p) => p.latency_ms.p99))),
      },
      load_avg_1m: round(median(ps.map((p) => p.load_avg_1m))),
    };
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '2000' },
      nodes: { type: 'string', default: '50' },
      rate: { type: 'string', default: '50' },
      seconds: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '4' },
      'sign-threads': { type: 'string', default: '1' },
      concurrency: { type: 'string', default: '32' },
    },
  });
  const out = await benchCloud({
    events: Number(values.events),
    nodes: Number(values.nodes),
    rate: Number(values.rate),
    seconds: Number(values.seconds),
    rounds: Number(values.rounds),
    signThreads: Number(values['sign-threads']),
    concurrency: Number(values.concurrency),
  });
  console.info(JSON.stringify({ date: new Date().toISOString(), ...out }, null, 2));
}
