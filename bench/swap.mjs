#!/usr/bin/env node
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
    service: { devnet: false, database_url: databaseUrl, preimage_key: 'ab'.repeat(32), log_level: 'silent' },
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
    child.once('exit', (code) => reject(new Error(`${main} exited with ${code}`)));
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
