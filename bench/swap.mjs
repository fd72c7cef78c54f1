#!/usr/bin/env node
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
/**
 * Swap service benchmark, on the built dist (`npx tsc -b` first), SQLite versus PostgreSQL:
 * - intents created per second (Permit2 on EVM: typed data + witness built by the chains module,
 *   preimage generated and sealed, intent + event + nonce stored in one transaction), next to the
 *   raw rate of the chains module building the same typed data in the same run;
 * - Permit2 approvals verified per second through the service (signer recovery + the ERC-20
 *   allowance read by `eth_call` from the EVM devnode + the guarded transition), next to its two
 *   unavoidable steps measured alone in the same round: `verifyPermit2Signature` on the same signatures
 *   and the allowance `eth_call` (`readErc20Allowance`, the same client the service uses); the floor is
 *   the slowest of the two and the durable commit below;
 * - Solana co-sign approvals verified per second, next to raw `verifyCosignTransaction`;
 * - the durable commit of an approval alone (a transaction rewriting a row with the approval's
 *   `approval` and `execution` texts and inserting an event row, in the service's own database and
 *   settings, `synchronous = FULL` on SQLite): an approval cannot answer before its state is durable,
 *   so each approval's floor is the slowest of its verification steps and this commit;
 * - status reads per second (`GET /intents/{id}/status`).
 * Requests go through `app.inject` (in process, no sockets) with 8 in flight; the raw side is driven
 * the same way (the same worker pool, 8 calls in flight, same item count). Each figure is the median
 * of --rounds rounds. Within a round every service phase sits next to its raw phase, and their order
 * alternates from round to round (service first in rounds 1, 3, …, raw first in rounds 2, 4, …; a
 * raw-first typed-data phase uses the previous round's intent contexts, same shape). Ratios (service ÷
 * raw) are medians of the per-round ratios. The EVM devnode and the Solana devnode (recent blockhashes
 * for Solana intents, untimed setup) run as their own processes, as a chain node is another machine's
 * process in production (in process, EthereumJS executing the `eth_call` shared the service's event loop).
 *
 * One warm-up round per store runs first and is not counted.
 *
 * usage: npx tsc -b && node bench/swap.mjs [--rounds 5] [--n 400] [--verify-threads 1]
 * Prints a table on stderr and one JSON document on stdout.
 *
 * `--metrics` measures instead what Prometheus metrics cost a Permit2 approval: the service as real
 * processes (`apps/swap/dist/main.js`), per store one with `[metrics] enabled = true` (port 0) and one
 * with `enabled = false`, driven over HTTP (node:http, kept-alive, 8 in flight) with the same workload.
 * Every round starts both processes anew, on two databases, the metrics side moving between them by
 * round (neither a process's nor a database's own speed leans to one side). Per round and store, both
 * get N + 100 quotes, intents and signatures and 100 approvals untimed (warm-up), then their N
 * approvals are timed in blocks of 50, the two processes alternating block by block (ABBA; on first in
 * rounds 1, 3, …, off first in 2, 4, …; the stores alternate too). `--control`: both sides with
 * metrics off (an A/A run: the spread and lean of the pairing alone). CPU per approval = the service
 * process's CPU over its blocks ÷ N, from `/proc/<pid>/task/<tid>/schedstat` (ns, every thread: the
 * signature thread included) and, as a cross-check, `/proc/<pid>/stat` utime + stime (10 ms ticks);
 * approvals per second of its blocks' wall clock. Ratios on ÷ off are per round, then the median. One
 * warm-up round is not counted. After the rounds: the approvals counted by the on process (exactly the
 * approvals made), the CPU of one scrape of `/metrics`, the idle CPU of all four processes side by side,
 * and, in this process, the CPU the metrics add to one request of the swap's own app (`app.inject`,
 * on and off alternating in batches), which is small and steady where the approval's CPU is noisy.
 *   node bench/swap.mjs --metrics [--rounds 15] [--n 400] [--stores sqlite,postgres] [--node-args '--cpu-prof …'] > bench/results/swap-metrics.json
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateKeyPairSigner, signBytes } from '@solana/kit';
import { privateKeyToAccount } from 'viem/accounts';
import { median, procCpuMs } from './lib.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    n: { type: 'string', default: '400' },
    'verify-threads': { type: 'string', default: '1' },
    metrics: { type: 'boolean', default: false },
    control: { type: 'boolean', default: false },
    stores: { type: 'string', default: 'sqlite,postgres' },
    // --metrics: extra node options for the service processes (space-separated), e.g. '--cpu-prof --cpu-prof-dir=/tmp/p'.
    'node-args': { type: 'string', default: '' },
    // --metrics: extra node options for the metrics-on process only (an isolating run, e.g. '--import <file>').
    'on-node-args': { type: 'string', default: '' },
    // --metrics: the metrics-on process also runs prom-client's GC observer (nodejs_gc_duration_seconds, as the kit
    // did before it became opt-in) into a registry of its own: what that observer alone costs (an isolating run).
    'on-gc-observer': { type: 'boolean', default: false },
  },
});
const ROUNDS = Math.max(3, Number(values.rounds));
const N = Math.max(20, Number(values.n));
const CONCURRENCY = 8;
const VERIFY_THREADS = Number(values['verify-threads']);

const swap = await import('../apps/swap/dist/index.js');
const { typedDataOf } = await import('../apps/swap/dist/kinds/evm/permit2-approval.js');
const { readErc20Allowance, verifyPermit2Signature } = await import('../packages/chains/dist/evm/index.js');
const { verifyCosignTransaction } = await import('../packages/chains/dist/sol/index.js');
const { swapDevnetToml } = await import('../packages/devnet/dist/index.js');
const { deployTestToken, approveErc20 } = await import('../packages/devnet/dist/evm-devnode/index.js');
const { createTestPgDatabase } = await import('../packages/store/dist/index.js');
const { signCosignApproval, signPermit2Approval } = await import('../packages/sdk/dist/index.js');

async function pool(items, fn) {
  let i = 0;
  const worker = async () => {
    while (i < items.length) {
      const k = i++;
      await fn(items[k], k);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function rate(items, fn) {
  const t0 = performance.now();
  await pool(items, fn);
  return items.length / ((performance.now() - t0) / 1000);
}

/** The raw side: same pool, same concurrency, same timing as the service side. */
const rawRate = rate;

/** Runs the service phase and its raw phase next to each other, order alternating by round. */
async function pair(r, service, raw) {
  if (r % 2 === 0) {
    await service();
    await raw();
  } else {
    await raw();
    await service();
  }
}

const ok = (res, what) => {
  if (res.statusCode >= 300) throw new Error(`${what}: ${res.statusCode} ${res.body}`);
  return res.json();
};

const ESCROW = '0x31Abdc5caf4f704864C85FF83A3438db804710B6';
const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
const RESOLVER_SOL = '6RAPtMP2RUnwpwUDjVCPppHt8XanXWdp15d4YcfxvfS1';
const SOL = 'So11111111111111111111111111111111111111112';
/** The Permit2 quotes' source amount (`amountLots`). */
const SOURCE_LOTS = 1000000000000000000000n;

// Settlement readers are required by the config. Nothing measured here reads Bitcoin (closed port);
// Solana intents take a recent blockhash from the Solana devnode (a separate process, untimed setup).
function config(databaseUrl, rpcUrl, token, solRpcUrl) {
  return swapDevnetToml({
    service: {
      devnet: false,
      database_url: databaseUrl,
      preimage_key: 'ab'.repeat(32),
      log_level: 'silent',
      // In process nothing serves /metrics; were it started, it would take a free port.
      metrics: { port: 0 },
    },
    swap: { quote_ttl_secs: 3600, scheduler_interval_ms: 3600000, verify_threads: VERIFY_THREADS },
    bitcoin: { electrumUrl: 'tcp://127.0.0.1:1' },
    evm: { rpcUrl, chainId: 31337, permit2: PERMIT2, escrow: ESCROW, usdc: token },
    solana: { rpcUrl: solRpcUrl },
    resolver: { apiKeySha256: '00'.repeat(32), solanaAddress: RESOLVER_SOL },
    rates: [
      { source_network: 2, source_token: token, dest_network: 1, dest_token: 'BTC', rate: '0.0000166' },
      { source_network: 4, source_token: SOL, dest_network: 2, dest_token: token, rate: '150' },
    ],
  });
}

const METRICS = [
  'intents_per_s',
  'typed_data_raw_per_s',
  'permit2_approvals_per_s',
  'permit2_verify_raw_per_s',
  'allowance_call_raw_per_s',
  'permit2_cpu_ms_service',
  'permit2_cpu_ms_devnode',
  'permit2_cpu_ms_database',
  'cosign_approvals_per_s',
  'cosign_verify_raw_per_s',
  'commit_raw_per_s',
  'status_reads_per_s',
];

async function openService(dialect, url, node, token, solRpcUrl) {
  const cfg = swap.loadConfig({ text: config(url, node.rpcUrl, token, solRpcUrl) }, {});
  const { db, close } = await swap.openSwapDatabase(cfg.databaseUrl);
  const { app } = swap.buildSwapApp({ config: cfg, db, dialect });
  await app.ready();
  const key = (await swap.createApiKey(db, 'bench')).key;
  // Scratch tables for the durable-commit floor, shaped like an approval's writes.
  await db.schema
    .createTable('bench_rows')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('approval', 'text')
    .addColumn('execution', 'text')
    .addColumn('updated_at', 'bigint')
    .execute();
  await db.schema
    .createTable('bench_events')
    .addColumn('id', dialect === 'sqlite' ? 'integer' : 'serial', (c) =>
      dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey(),
    )
    .addColumn('row_id', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .execute();
  const inject = (method, path, payload) =>
    app.inject({
      method,
      url: path,
      headers: { 'x-api-key': key },
      ...(payload === undefined ? {} : { payload }),
    });
  return {
    dialect,
    db,
    inject,
    out: Object.fromEntries(METRICS.map((m) => [m, []])),
    async close() {
      await app.close();
      await close();
    },
  };
}

/**
 * utime + stime of every PostgreSQL server process on this machine, in ms: the backends serving the
 * service, the WAL writer and the checkpointer. 0 for SQLite, which runs inside the service process.
 */
function postgresCpuMs(dialect) {
  if (dialect !== 'postgres') return 0;
  let sum = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === 'postgres') sum += procCpuMs(pid);
    } catch {
      // the process ended between the listing and the read
    }
  }
  return sum;
}

async function round(svc, r, token, owner, solUsers, rpcUrl, devnodePid) {
  const { db, inject, out } = svc;
  // Quotes are set up untimed; intent creation is timed.
  const quotes = [];
  for (let i = 0; i < N; i++) {
    quotes.push(
      ok(
        await inject('POST', '/quote', {
          sourceChain: 2,
          sourceToken: token,
          destChain: 1,
          destToken: 'BTC',
          amountLots: SOURCE_LOTS.toString(),
        }),
        'quote',
      ).quoteId,
    );
  }
  const intents = new Array(N);
  const createIntents = async () => {
    out.intents_per_s.push(
      await rate(quotes, async (quoteId, k) => {
        intents[k] = ok(
          await inject('POST', '/intents', {
            quoteId,
            sourceAddress: owner.address,
            refundAddress: owner.address,
            destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
          }),
          'intent',
        );
      }),
    );
  };
  const contextsOf = () =>
    Promise.all(
      intents.map(async (i) =>
        JSON.parse(
          (
            await db
              .selectFrom('intents')
              .select('verify_context')
              .where('id', '=', i.intentId)
              .executeTakeFirstOrThrow()
          ).verify_context,
        ),
      ),
    );
  let contexts;
  if (r % 2 === 0) {
    await createIntents();
    contexts = await contextsOf();
    out.typed_data_raw_per_s.push(await rawRate(contexts, async (c) => typedDataOf(c)));
  } else {
    // Raw first, on the previous round's contexts (round 0 always runs service first).
    out.typed_data_raw_per_s.push(await rawRate(svc.lastContexts, async (c) => typedDataOf(c)));
    await createIntents();
    contexts = await contextsOf();
  }
  svc.lastContexts = contexts;

  const sigs = await Promise.all(
    intents.map((i) =>
      signPermit2Approval(
        i.permit2,
        { signTypedData: (td) => owner.signTypedData(td) },
        { chainId: 31337, permit2Address: PERMIT2, escrowAddress: ESCROW, token, amount: SOURCE_LOTS },
      ),
    ),
  );
  const tds = contexts.map((c) => typedDataOf(c));
  // What an approval writes (taken from the stored approvals after round 1's service phase; an
  // equal-sized stand-in before it), for the durable-commit floor.
  const approved = await db
    .selectFrom('intents')
    .select(['approval', 'execution'])
    .where('approval', 'is not', null)
    .limit(1)
    .executeTakeFirst();
  const writes = intents.map((i) => ({
    id: `${r}:${i.intentId}`,
    approval: approved?.approval ?? JSON.stringify({ type: 'permit2', signature: sigs[0].permit2 }),
    execution:
      approved?.execution ??
      JSON.stringify({ typedData: tds[0], owner: owner.address }, (_k, v) =>
        typeof v === 'bigint' ? v.toString() : v,
      ),
  }));
  await db
    .insertInto('bench_rows')
    .values(writes.map((w) => ({ id: w.id, updated_at: 0 })))
    .execute();
  const commitAlone = (w) =>
    db.transaction().execute(async (tx) => {
      const now = Date.now();
      await tx
        .updateTable('bench_rows')
        .set({ approval: w.approval, execution: w.execution, updated_at: now })
        .where('id', '=', w.id)
        .execute();
      await tx.insertInto('bench_events').values({ row_id: w.id, at: now }).execute();
    });
  await pair(
    r,
    async () => {
      // CPU of every process an approval runs in: this one (the in-process client, the service's event
      // loop and its signature thread), the EVM devnode answering the allowance eth_call, and on
      // PostgreSQL the database server.
      const cpu0 = process.cpuUsage();
      const dev0 = procCpuMs(devnodePid);
      const pg0 = postgresCpuMs(svc.dialect);
      out.permit2_approvals_per_s.push(
        await rate(intents, async (i, k) => {
          ok(await inject('POST', `/intents/${i.intentId}/approvals`, sigs[k]), 'approval');
        }),
      );
      const cpu = process.cpuUsage(cpu0);
      out.permit2_cpu_ms_service.push((cpu.user + cpu.system) / 1000 / intents.length);
      out.permit2_cpu_ms_devnode.push((procCpuMs(devnodePid) - dev0) / intents.length);
      out.permit2_cpu_ms_database.push((postgresCpuMs(svc.dialect) - pg0) / intents.length);
    },
    async () => {
      out.permit2_verify_raw_per_s.push(
        await rawRate(
          tds.map((td, k) => [td, sigs[k].permit2]),
          ([td, sig]) => verifyPermit2Signature(td, sig, owner.address), // throws unless it verifies
        ),
      );
      out.allowance_call_raw_per_s.push(
        await rawRate(intents, async () => {
          if ((await readErc20Allowance(rpcUrl, token, owner.address, PERMIT2)) < SOURCE_LOTS)
            throw new Error('allowance read: below the approved amount');
        }),
      );
      out.commit_raw_per_s.push(await rawRate(writes, commitAlone));
    },
  );

  // Solana co-sign approvals.
  const solIntents = [];
  for (let i = 0; i < N / 2; i++) {
    const u = solUsers[i % solUsers.length];
    const q = ok(
      await inject('POST', '/quote', {
        sourceChain: 4,
        sourceToken: SOL,
        destChain: 2,
        destToken: token,
        amount: '1',
      }),
      'quote',
    );
    const it = ok(
      await inject('POST', '/intents', {
        quoteId: q.quoteId,
        sourceAddress: u.address,
        sourcePublicKey: u.address,
        refundAddress: u.address,
        destinationAddress: owner.address,
      }),
      'sol intent',
    );
    solIntents.push({
      it,
      body: await signCosignApproval(
        it.cosign,
        { address: u.address, sign: (m) => signBytes(u.keyPair.privateKey, m) },
        // no solana_escrow_address configured: the lamports go to the resolver, which pays the fee
        { destination: RESOLVER_SOL, lamports: BigInt(q.sourceAmountLots), feePayer: RESOLVER_SOL },
      ),
    });
  }
  await pair(
    r,
    async () =>
      out.cosign_approvals_per_s.push(
        await rate(solIntents, async ({ it, body }) => {
          ok(await inject('POST', `/intents/${it.intentId}/approvals`, body), 'cosign approval');
        }),
      ),
    async () =>
      out.cosign_verify_raw_per_s.push(
        await rawRate(solIntents, ({ it, body }) =>
          verifyCosignTransaction({
            unsignedTransactionHex: it.cosign.transaction,
            signedTransactionHex: body.cosign.transaction,
            userAddress: body.cosign.userAddress,
          }),
        ),
      ),
  );

  const reads = Array.from({ length: N * 5 }, (_, k) => intents[k % intents.length].intentId);
  out.status_reads_per_s.push(
    await rate(reads, async (id) => {
      ok(await inject('GET', `/intents/${id}/status`), 'status');
    }),
  );
}

const RATIOS = {
  intents_vs_typed_data_raw: ['intents_per_s', 'typed_data_raw_per_s'],
  permit2_approvals_vs_verify_raw: ['permit2_approvals_per_s', 'permit2_verify_raw_per_s'],
  permit2_approvals_vs_allowance_raw: ['permit2_approvals_per_s', 'allowance_call_raw_per_s'],
  permit2_approvals_vs_floor: ['permit2_approvals_per_s', 'permit2_floor_per_s'],
  permit2_approvals_vs_cpu_ceiling: ['permit2_approvals_per_s', 'permit2_cpu_ceiling_per_s'],
  cosign_approvals_vs_verify_raw: ['cosign_approvals_per_s', 'cosign_verify_raw_per_s'],
  cosign_approvals_vs_floor: ['cosign_approvals_per_s', 'cosign_floor_per_s'],
};
/** Medians of the rates, and of the per-round ratios service ÷ raw (round 1 = service first). */
const summary = (o) => summaryOf(withFloor(o));
/** Each round's floors: the slowest of an approval's unavoidable steps measured alone, the commit included. */
const withFloor = (o) => ({
  ...o,
  permit2_floor_per_s: o.permit2_verify_raw_per_s.map((v, i) =>
    Math.min(v, o.allowance_call_raw_per_s[i], o.commit_raw_per_s[i]),
  ),
  cosign_floor_per_s: o.cosign_verify_raw_per_s.map((v, i) => Math.min(v, o.commit_raw_per_s[i])),
  // What the cores allow: cores × 1000 ms ÷ the CPU ms one approval takes in every process involved.
  permit2_cpu_ceiling_per_s: o.permit2_cpu_ms_service.map(
    (c, i) => (cpus().length * 1000) / (c + o.permit2_cpu_ms_devnode[i] + o.permit2_cpu_ms_database[i]),
  ),
});
const summaryOf = (out) => ({
  ...Object.fromEntries(
    Object.entries(out).map(([k, v]) => {
      const r = k.includes('_ms_') ? (x) => Math.round(x * 100) / 100 : Math.round; // CPU ms: 2 decimals
      return [k, { median: r(median(v)), runs: v.map(r) }];
    }),
  ),
  ratios: Object.fromEntries(
    Object.entries(RATIOS).map(([k, [svc, raw]]) => {
      const per = out[svc].map((x, i) => x / out[raw][i]);
      return [
        k,
        { median: Math.round(median(per) * 1000) / 1000, runs: per.map((x) => Math.round(x * 1000) / 1000) },
      ];
    }),
  ),
});

/** A devnode as its own process: `main.js` prints one JSON line once listening. */
function startDevnodeProcess(main) {
  const child = spawn(process.execPath, [fileURLToPath(new URL(main, import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    // Before it is up: the start fails. After: said at once (its own stderr is inherited just above), so a
    // devnode that dies mid-run is not first seen as a connection error of the next call.
    child.once('exit', (code, signal) => {
      const why = `${main} exited with ${code ?? signal}`;
      reject(new Error(why));
      process.stderr.write(`bench: ${why}\n`);
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ ...JSON.parse(buf.slice(0, nl)), child });
    });
  });
}
const stopDevnode = (d) => {
  d?.child.removeAllListeners('exit');
  d?.child.kill('SIGTERM');
};

// ---------------------------------------------------------------------------------------------------
// --metrics: what Prometheus metrics cost an approval, metrics on vs off, real processes, interleaved.

const SWAP_MAIN = fileURLToPath(new URL('../apps/swap/dist/main.js', import.meta.url));
const NODE_ARGS = values['node-args'].split(' ').filter((a) => a !== '');
const ON_NODE_ARGS = values['on-node-args'].split(' ').filter((a) => a !== '');
const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/**
 * One HTTP call over the kept-alive agent; the parsed JSON answer, or throws on a status ≥ 300. A kept-alive
 * socket the server closed as idle just as it was reused (ECONNRESET on a reused socket, the request never
 * read) is retried once on a new one, as Node's documentation advises.
 */
function call(base, method, path, key, body, retried = false) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const headers = { 'x-api-key': key };
    if (data !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(data);
    }
    const req = http.request(`${base}${path}`, { method, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
        else
          resolve(
            text === '' ? undefined : res.headers['content-type']?.includes('json') ? JSON.parse(text) : text,
          );
      });
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!retried && req.reusedSocket && err.code === 'ECONNRESET')
        resolve(call(base, method, path, key, body, true));
      else reject(err);
    });
    req.end(data);
  });
}

/** The configuration of a swap service of the --metrics bench: metrics on (port 0) or off. */
function metricsBenchToml(databaseUrl, metricsOn, rpcUrl, token) {
  return swapDevnetToml({
    service: {
      devnet: false,
      host: '127.0.0.1',
      port: 0,
      database_url: databaseUrl,
      preimage_key: 'ab'.repeat(32),
      log_level: 'silent',
      // Every swap of this bench: port 0 when on (a free port), nothing at all when off.
      metrics: { enabled: metricsOn, listen_address: '127.0.0.1', port: 0 },
    },
    swap: { quote_ttl_secs: 3600, scheduler_interval_ms: 3600000, verify_threads: VERIFY_THREADS },
    bitcoin: { electrumUrl: 'tcp://127.0.0.1:1' },
    evm: { rpcUrl, chainId: 31337, permit2: PERMIT2, escrow: ESCROW, usdc: token },
    resolver: { apiKeySha256: '00'.repeat(32) },
    rates: [
      { source_network: 2, source_token: token, dest_network: 1, dest_token: 'BTC', rate: '0.0000166' },
    ],
  });
}

/** A swap service process, metrics on or off; resolves once it announced itself. */
async function startSwapProcess(dir, name, databaseUrl, metricsOn, rpcUrl, token) {
  const file = join(dir, `${name}.toml`);
  writeFileSync(file, metricsBenchToml(databaseUrl, metricsOn, rpcUrl, token));
  const { key } = JSON.parse(
    execFileSync(process.execPath, [SWAP_MAIN, 'keys', 'create', '--name', 'bench', '-c', file], {
      encoding: 'utf8',
    }),
  );
  const onArgs = [...ON_NODE_ARGS];
  if (values['on-gc-observer']) {
    const pre = join(dir, 'gc-observer.cjs');
    const gc = fileURLToPath(new URL('../node_modules/prom-client/lib/metrics/gc.js', import.meta.url));
    const reg = fileURLToPath(new URL('../node_modules/prom-client/lib/registry.js', import.meta.url));
    writeFileSync(pre, `require(${JSON.stringify(gc)})(new (require(${JSON.stringify(reg)}))(), {});\n`);
    onArgs.push('--require', pre);
  }
  const nodeArgs = [...NODE_ARGS, ...(name.endsWith('-on') ? onArgs : [])];
  const child = spawn(process.execPath, [...nodeArgs, SWAP_MAIN, '-c', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.on('data', (d) => process.stderr.write(`[swap ${name}] ${d}`));
  const line = await new Promise((resolve, reject) => {
    let buf = '';
    child.once('exit', (code) => reject(new Error(`swap ${name} exited with ${code}`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const l = buf.split('\n').find((x) => x.includes('"event":"listening"'));
      if (l) resolve(JSON.parse(l));
    });
  });
  child.removeAllListeners('exit');
  if (metricsOn !== (line.metrics_url !== undefined))
    throw new Error(`swap ${name}: metrics ${metricsOn ? 'on' : 'off'} but metrics_url ${line.metrics_url}`);
  return { name, metricsOn, url: line.url, metricsUrl: line.metrics_url, key, child, pid: child.pid };
}

function stopProcess(p) {
  if (!p || p.child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    p.child.once('exit', resolve);
    p.child.kill('SIGTERM');
  });
}

/** Untimed: `n` quotes, intents and signed approvals on process `p`. */
async function prepareApprovals(p, token, owner, n) {
  const quotes = new Array(n);
  await pool(quotes, async (_q, k) => {
    quotes[k] = await call(p.url, 'POST', '/quote', p.key, {
      sourceChain: 2,
      sourceToken: token,
      destChain: 1,
      destToken: 'BTC',
      amountLots: SOURCE_LOTS.toString(),
    });
  });
  const intents = new Array(n);
  await pool(quotes, async (q, k) => {
    intents[k] = await call(p.url, 'POST', '/intents', p.key, {
      quoteId: q.quoteId,
      sourceAddress: owner.address,
      refundAddress: owner.address,
      destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    });
  });
  return Promise.all(
    intents.map(async (i) => ({
      id: i.intentId,
      body: await signPermit2Approval(
        i.permit2,
        { signTypedData: (td) => owner.signTypedData(td) },
        { chainId: 31337, permit2Address: PERMIT2, escrowAddress: ESCROW, token, amount: SOURCE_LOTS },
      ),
    })),
  );
}

/**
 * CPU ns the live threads of a process have run (`/proc/<pid>/task/<tid>/schedstat`, first field): ns
 * resolution where `/proc/<pid>/stat` counts 10 ms ticks. The swap's threads (event loop, signature
 * thread, libuv pool, V8's) live as long as the process, so a difference over a block is its CPU.
 */
function procCpuNs(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns;
}

/** Approvals timed per block; a round alternates the on and off processes block by block. */
const BLOCK = 50;
/** Untimed approvals on each new process before its timed ones. */
const WARM = 100;

/**
 * Timed: each process's N approvals in blocks of BLOCK, 8 in flight, the two processes alternating
 * block by block in the order `first, second, second, first, first, …` (ABBA: a linear drift of the
 * machine's speed hits both alike). Per process: CPU ms per approval from schedstat (ns) and from
 * `/proc/<pid>/stat` (ticks), summed over its blocks, and approvals per second of its blocks' wall clock.
 */
async function timeApprovalsInterleaved(first, second, items) {
  const acc = new Map([first, second].map((p) => [p, { ns: 0, ticksMs: 0, s: 0, done: 0 }]));
  const blocks = Math.ceil(N / BLOCK);
  for (let b = 0; b < 2 * blocks; b++) {
    const p = [first, second, second, first][b % 4];
    const a = acc.get(p);
    const batch = items.get(p).slice(a.done, a.done + BLOCK);
    const ns0 = procCpuNs(p.pid);
    const ms0 = procCpuMs(p.pid);
    const t0 = performance.now();
    await pool(batch, async ({ id, body }) => {
      const r = await call(p.url, 'POST', `/intents/${id}/approvals`, p.key, body);
      if (r.status !== 'ApprovalAdded') throw new Error(`approval ${id}: ${JSON.stringify(r)}`);
    });
    a.s += (performance.now() - t0) / 1000;
    a.ns += procCpuNs(p.pid) - ns0;
    a.ticksMs += procCpuMs(p.pid) - ms0;
    a.done += batch.length;
  }
  return new Map(
    [...acc].map(([p, a]) => {
      if (a.done !== N) throw new Error(`${p.name}: ${a.done} approvals timed, expected ${N}`);
      return [p, { cpu: a.ns / 1e6 / N, cpuStat: a.ticksMs / N, rate: N / a.s }];
    }),
  );
}

const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * p;
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
};
const r4 = (x) => Math.round(x * 10000) / 10000;
const spread = (xs) => ({
  median: r4(median(xs)),
  p25: r4(q(xs, 0.25)),
  p75: r4(q(xs, 0.75)),
  min: r4(Math.min(...xs)),
  max: r4(Math.max(...xs)),
  runs: xs.map(r4),
});

/** The value of one sample line of an exposition (`name{labels} value`). */
const sampleOf = (text, series) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

/**
 * In process, what the metrics add to one request of the swap's own app (`buildSwapApp`, SQLite), metrics on
 * vs off: `GET /networks` (auth, a matched route, no chain read) through `app.inject`, one at a time,
 * `reqs` per batch, on and off batches alternating (ABBA) after 2 warm-up batches each; CPU of this process
 * (`process.cpuUsage`, µs) per request; the added cost is the median of the paired per-batch differences.
 * Small and steady where the service's CPU per approval is large and noisy on a loaded machine.
 */
async function inProcessAdded(dir, rpcUrl, token, batches = 40, reqs = 1000) {
  const apps = [];
  for (const on of [true, false]) {
    const cfg = swap.loadConfig(
      { text: metricsBenchToml(`sqlite:${join(dir, `inproc-${on}.db`)}`, on, rpcUrl, token) },
      {},
    );
    const { db, close } = await swap.openSwapDatabase(cfg.databaseUrl);
    const { app } = swap.buildSwapApp({ config: cfg, db, dialect: 'sqlite' });
    await app.ready();
    const key = (await swap.createApiKey(db, 'bench')).key;
    apps.push({ on, app, headers: { 'x-api-key': key }, close });
  }
  try {
    const us = { on: [], off: [] };
    for (let b = -2; b < batches; b++) {
      const order = [0, 1, 1, 0][(b + 4) % 4] === 0 ? apps : [...apps].reverse();
      for (const a of order) {
        const c0 = process.cpuUsage();
        for (let i = 0; i < reqs; i++) {
          const res = await a.app.inject({ method: 'GET', url: '/networks', headers: a.headers });
          if (res.statusCode !== 200) throw new Error(`GET /networks: ${res.statusCode} ${res.body}`);
        }
        const c = process.cpuUsage(c0);
        if (b >= 0) us[a.on ? 'on' : 'off'].push((c.user + c.system) / reqs);
      }
    }
    const text = await apps[0].app.inject({ method: 'GET', url: '/metrics', headers: apps[0].headers });
    if (text.statusCode !== 404) throw new Error('the API must not serve /metrics');
    // The approval's own counter, alone: ns per inc, on (prom-client) and off (the no-op).
    const { SwapMetrics } = await import('../apps/swap/dist/metrics.js');
    const incNs = {};
    for (const on of [true, false]) {
      const m = new SwapMetrics({ enabled: on, processMetrics: false });
      const labels = { mechanism: 'permit2', result: 'approved' };
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 1_000_000; i++) m.approvals.inc(labels);
      incNs[on ? 'on' : 'off'] = Number(process.hrtime.bigint() - t0) / 1_000_000;
    }
    return {
      approvals_inc_ns: { on: Math.round(incNs.on), off: Math.round(incNs.off) },
      route: 'GET /networks',
      batches,
      requests_per_batch: reqs,
      cpu_us_per_request_on: spread(us.on),
      cpu_us_per_request_off: spread(us.off),
      added_us_per_request: spread(us.on.map((x, i) => x - us.off[i])),
    };
  } finally {
    for (const a of apps) {
      await a.app.close();
      await a.close();
    }
  }
}

async function benchMetrics() {
  const STORES = values.stores.split(',');
  const evmDev = await startDevnodeProcess('../packages/devnet/dist/evm-devnode/main.js');
  const dir = mkdtempSync(join(tmpdir(), 'swap-bench-metrics-'));
  const pgs = [];
  const procs = [];
  try {
    const rpcUrl = evmDev.rpc_url;
    const chainId = BigInt(evmDev.chain_id);
    const keys = evmDev.accounts.map((a) => a.private_key);
    const token = await deployTestToken(rpcUrl, chainId, keys[0], { symbol: 'USDC', supply: 10n ** 30n });
    const owner = privateKeyToAccount(keys[1]);
    await approveErc20(rpcUrl, chainId, keys[1], token, PERMIT2, 2n ** 255n);
    const stores = [];
    for (const store of STORES) {
      const dbs = [];
      for (const x of ['a', 'b']) {
        if (store === 'sqlite') dbs.push(`sqlite:${join(dir, `${store}-${x}.db`)}`);
        else {
          const pg = await createTestPgDatabase(`rgbx_swap_bench_m${x}`);
          pgs.push(pg);
          dbs.push(pg.url);
        }
      }
      stores.push({
        store,
        dbs,
        out: { cpu_on: [], cpu_off: [], cpu_stat_on: [], cpu_stat_off: [], rate_on: [], rate_off: [] },
      });
    }
    const loads = [];
    // Round 0 is the warm-up (JIT, the devnode's and the databases' caches), not counted.
    for (let r = 0; r <= ROUNDS; r++) {
      loads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
      for (const s of r % 2 === 0 ? stores : [...stores].reverse()) {
        // Fresh processes every round, the metrics side moving between the two databases (a in odd
        // rounds, b in even ones): neither a process's nor a database's own speed leans to one side.
        // --control: both with metrics off (an A/A run: what the pairing alone shows).
        for (const p of [s.on, s.off]) await stopProcess(p);
        const [onDb, offDb] = r % 2 === 1 ? s.dbs : [...s.dbs].reverse();
        s.on = await startSwapProcess(dir, `${s.store}-on`, onDb, !values.control, rpcUrl, token);
        s.off = await startSwapProcess(dir, `${s.store}-off`, offDb, false, rpcUrl, token);
        s.on.metricsOn = true; // the side it stands for in the figures
        const order = r % 2 === 1 ? [s.on, s.off] : [s.off, s.on]; // round 1 (the first counted): on first
        const items = new Map();
        for (const p of order) {
          const all = await prepareApprovals(p, token, owner, N + WARM);
          // Untimed: WARM approvals on the new process (its JIT), then the N timed ones.
          await pool(all.slice(0, WARM), ({ id, body }) =>
            call(p.url, 'POST', `/intents/${id}/approvals`, p.key, body),
          );
          items.set(p, all.slice(WARM));
        }
        const timed = await timeApprovalsInterleaved(order[0], order[1], items);
        if (r > 0)
          for (const [p, { cpu, cpuStat, rate }] of timed) {
            const side = p.metricsOn ? 'on' : 'off';
            s.out[`cpu_${side}`].push(cpu);
            s.out[`cpu_stat_${side}`].push(cpuStat);
            s.out[`rate_${side}`].push(rate);
          }
        if (r > 0)
          process.stderr.write(
            `${s.store} round ${r}/${ROUNDS}: CPU ms/approval on ${s.out.cpu_on.at(-1).toFixed(3)} off ${s.out.cpu_off.at(-1).toFixed(3)}, approvals/s on ${Math.round(s.out.rate_on.at(-1))} off ${Math.round(s.out.rate_off.at(-1))}\n`,
          );
        else process.stderr.write(`${s.store} warm-up round done\n`);
      }
    }
    procs.push(...stores.flatMap((s) => [s.on, s.off]));

    // What a scrape costs the service (not in the figures above: nothing scraped during the rounds).
    const SCRAPES = 20;
    for (const s of values.control ? [] : stores) {
      const text = await call(s.on.metricsUrl, 'GET', '', '');
      const approved = sampleOf(text, 'rgbx_swap_approvals_total{mechanism="permit2",result="approved"}');
      const httpApproved = sampleOf(
        text,
        'rgbx_swap_http_requests_total{method="POST",route="/intents/:id/approvals",status_code="200"}',
      );
      // The counters moved by exactly the approvals made (warm-up included).
      // The last round's on process counted exactly its approvals (warm-up included).
      if (approved !== N + WARM || httpApproved !== N + WARM)
        throw new Error(`${s.store}: approvals counted ${approved} / ${httpApproved}, made ${N + WARM}`);
      const c0 = procCpuNs(s.on.pid);
      for (let i = 0; i < SCRAPES; i++) await call(s.on.metricsUrl, 'GET', '', '');
      s.scrape_cpu_ms = (procCpuNs(s.on.pid) - c0) / 1e6 / SCRAPES;
      s.counted = approved;
    }
    // Idle: every process side by side, 5 windows of 5 s, ms of CPU per second (schedstat, ns).
    const idle = new Map(procs.map((p) => [p, []]));
    for (let w = 0; w < 5; w++) {
      const c0 = new Map(procs.map((p) => [p, procCpuNs(p.pid)]));
      const t0 = performance.now();
      await new Promise((res) => setTimeout(res, 5000));
      const sec = (performance.now() - t0) / 1000;
      for (const p of procs) idle.get(p).push((procCpuNs(p.pid) - c0.get(p)) / 1e6 / sec);
    }

    const inProcess = values.control
      ? { added_us_per_request: { median: 0 } }
      : await inProcessAdded(dir, rpcUrl, token);
    if (!values.control)
      process.stderr.write(
        `in process, GET /networks: CPU µs/request on ${inProcess.cpu_us_per_request_on.median} off ${inProcess.cpu_us_per_request_off.median}, added ${inProcess.added_us_per_request.median} (p25 ${inProcess.added_us_per_request.p25}, p75 ${inProcess.added_us_per_request.p75})\n`,
      );
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      n: N,
      rounds: ROUNDS,
      warmup_rounds: 1,
      concurrency: CONCURRENCY,
      verify_threads: VERIFY_THREADS,
      load_average_1m_per_round: loads.map(Number),
      block: BLOCK,
      warm_approvals_per_process: WARM,
      control: values.control,
      node_args: NODE_ARGS,
      on_node_args: ON_NODE_ARGS,
      on_gc_observer: values['on-gc-observer'],
      cpu_measure:
        'CPU of the swap service process over its approval blocks ÷ N: cpu_ms_per_approval from /proc/<pid>/task/*/schedstat (run time in ns, every thread), cpu_ms_per_approval_stat from /proc/<pid>/stat utime + stime (CLK_TCK 100: 10 ms ticks)',
      order:
        'per round and store: two new service processes, metrics on and off, on two databases a and b (on uses a in odd rounds, b in even ones); each gets N + warm quotes, intents and signatures and `warm` approvals untimed, then their N approvals in blocks of `block`, alternating ABBA between the two (on first in odd rounds 1, 3, …, off first in even ones); the stores alternate their order by round',
    };
    result.in_process = inProcess;
    for (const s of stores) {
      const o = s.out;
      const cpuRatio = o.cpu_on.map((x, i) => x / o.cpu_off[i]);
      const rateRatio = o.rate_on.map((x, i) => x / o.rate_off[i]);
      result[s.store] = {
        cpu_ms_per_approval_on: spread(o.cpu_on),
        cpu_ms_per_approval_off: spread(o.cpu_off),
        cpu_ms_per_approval_stat_on: spread(o.cpu_stat_on),
        cpu_ms_per_approval_stat_off: spread(o.cpu_stat_off),
        cpu_ratio_on_off_stat: spread(o.cpu_stat_on.map((x, i) => x / o.cpu_stat_off[i])),
        approvals_per_s_on: spread(o.rate_on),
        approvals_per_s_off: spread(o.rate_off),
        cpu_ratio_on_off: spread(cpuRatio),
        cpu_ratio_of_medians: r4(median(o.cpu_on) / median(o.cpu_off)),
        cpu_added_ms_median: r4(median(o.cpu_on.map((x, i) => x - o.cpu_off[i]))),
        // The in-process added CPU of the HTTP hooks over this store's CPU per approval with metrics off.
        cpu_ratio_from_in_process: r4(1 + inProcess.added_us_per_request.median / 1000 / median(o.cpu_off)),
        rate_ratio_on_off: spread(rateRatio),
        scrape_cpu_ms: s.scrape_cpu_ms === undefined ? null : r4(s.scrape_cpu_ms),
        approvals_counted_on: s.counted,
        idle_cpu_ms_per_s_on: spread(idle.get(s.on)),
        idle_cpu_ms_per_s_off: spread(idle.get(s.off)),
      };
      process.stderr.write(
        `\n${s.store}: CPU ms/approval on ${median(o.cpu_on).toFixed(3)} off ${median(o.cpu_off).toFixed(3)}; ratio on/off median ${median(cpuRatio).toFixed(4)} (p25 ${q(cpuRatio, 0.25).toFixed(4)}, p75 ${q(cpuRatio, 0.75).toFixed(4)}, ${Math.min(...cpuRatio).toFixed(4)}–${Math.max(...cpuRatio).toFixed(4)}); approvals/s on ${Math.round(median(o.rate_on))} off ${Math.round(median(o.rate_off))}, ratio ${median(rateRatio).toFixed(4)}; scrape ${s.scrape_cpu_ms?.toFixed(2)} ms CPU\n`,
      );
    }
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const p of procs) await stopProcess(p);
    for (const pg of pgs) await pg.drop();
    stopDevnode(evmDev);
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (values.metrics) {
  await benchMetrics();
  process.exit(0);
}

const evm = await startDevnodeProcess('../packages/devnet/dist/evm-devnode/main.js');
const node = {
  rpcUrl: evm.rpc_url,
  chainId: BigInt(evm.chain_id),
  accounts: evm.accounts.map((a) => ({ address: a.address, privateKey: a.private_key })),
};
const tmp = mkdtempSync(join(tmpdir(), 'swap-bench-'));
let pg;
let sol;
try {
  sol = await startDevnodeProcess('../packages/devnet/dist/sol-devnode/main.js');
  const token = await deployTestToken(node.rpcUrl, node.chainId, node.accounts[0].privateKey, {
    symbol: 'USDC',
    supply: 10n ** 30n,
  });
  const ownerKey = node.accounts[1].privateKey;
  const owner = privateKeyToAccount(ownerKey);
  await approveErc20(
    node.rpcUrl,
    node.chainId,
    ownerKey,
    token,
    '0x000000000022D473030F116dDEE9F6B43aC78BA3',
    2n ** 255n,
  );
  const solUsers = await Promise.all(Array.from({ length: 8 }, () => generateKeyPairSigner()));
  pg = await createTestPgDatabase('rgbx_swap_bench');
  // Both stores run in every round, in alternating order, so load on the machine hits both alike.
  const services = [
    await openService('sqlite', `sqlite:${join(tmp, 'bench.db')}`, node, token, sol.url),
    await openService('postgres', pg.url, node, token, sol.url),
  ];
  try {
    // One warm-up round per store, not counted: the first round ran cold (JIT, caches, the devnode's
    // state) and its ratios were the lowest of every run.
    for (const svc of services) {
      await round(svc, 0, token, owner, solUsers, node.rpcUrl, evm.child.pid);
      for (const m of METRICS) svc.out[m] = [];
      process.stderr.write(`${svc.dialect} warm-up round done\n`);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const svc of r % 2 === 0 ? services : [...services].reverse()) {
        await round(svc, r, token, owner, solUsers, node.rpcUrl, evm.child.pid);
        process.stderr.write(`${svc.dialect} round ${r + 1}/${ROUNDS}\n`);
      }
    }
  } finally {
    for (const svc of services) await svc.close();
  }
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    n: N,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
    raw_concurrency: CONCURRENCY,
    verify_threads: VERIFY_THREADS,
    warmup_rounds: 1,
    order:
      'service and raw phases side by side in each round; service first in odd-numbered rounds (1, 3, …), raw first in even-numbered ones',
    sqlite: summary(services[0].out),
    postgres: summary(services[1].out),
  };
  const rows = [
    ...METRICS,
    'permit2_floor_per_s',
    'cosign_floor_per_s',
    'permit2_cpu_ceiling_per_s',
    ...Object.keys(RATIOS),
  ].map((k) => {
    const get = (d) => (d[k] ?? d.ratios[k]).median;
    return `${k.padEnd(32)} ${String(get(result.sqlite)).padStart(8)} ${String(get(result.postgres)).padStart(10)}`;
  });
  process.stderr.write(
    `\n${'median (per second; ratios)'.padEnd(32)} ${'sqlite'.padStart(8)} ${'postgres'.padStart(10)}\n${rows.join('\n')}\n`,
  );
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await pg?.drop();
  stopDevnode(evm);
  stopDevnode(sol);
  rmSync(tmp, { recursive: true, force: true });
}
