#!/usr/bin/env node
/**
 * Settlement verification benchmark, on the built dist (`npx tsc -b` first), SQLite and PostgreSQL:
 * verified fulfilments per second per destination network — `verifyLeg(ctx, intent, 'fulfil', tx)`
 * of the swap service (tx id normalized, one indexed select that the tx settles no leg yet, then the
 * network's verifier) — next to the raw RPC round trip of the verifier's first read of the same
 * transaction, done directly against the same node in the same run:
 * - Bitcoin: Electrum `blockchain.transaction.get` verbose (one request on a kept-open TCP connection);
 *   the verifier adds `blockchain.headers.subscribe` and `blockchain.block.header` (the block's own
 *   height: the header at tip − confirmations + 1 must hash to the transaction's block hash);
 * - EVM: `eth_getTransactionReceipt` over HTTP (fetch); the verifier adds `eth_blockNumber` and
 *   `eth_getBlockByNumber`;
 * - Solana: `getTransaction` (base64) over HTTP; the verifier adds `getSignatureStatuses`.
 * Also measured, same rounds: every read the verifier makes, done directly in sequence ("raw, all
 * reads"), and the DB read alone (`assertTxUnused`), to show where the time goes.
 *
 * The setup is real: bitcoind regtest + our Electrum server (the devnet), the EVM devnode with a
 * test USDC and our Permit2-compatible SignatureTransfer + SwapEscrow, the Solana devnode; the
 * nodes run as their own processes, as a real node would. For each store the service is driven over
 * HTTP (`app.inject`) to one `UserDeposited` intent per destination network — EVM → Bitcoin and
 * EVM → Solana (the escrow pulls the user's USDC with the Permit2 signature), Solana → EVM (the
 * co-signed transaction executes) — and the resolver's fulfilment is sent on chain (a BTC payment,
 * an ERC-20 transfer, a System transfer) but not reported, so it can be verified again and again
 * (verification does not write).
 *
 * Each round runs, per network, every case for --n sequential calls (one in flight), the order of
 * the cases rotating from round to round; a figure is the median over --rounds rounds of the
 * round's rate, a ratio is the median of the per-round ratios (paired within the round).
 *
 * usage: npx tsc -b && node bench/settlement.mjs [--rounds 9] [--n 60] > bench/results/settlement.json
 * (or `node bench/run.mjs settlement`). Prints a table on stderr and one JSON document on stdout.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { p2tr, utils } from '@scure/btc-signer';
import {
  AccountRole,
  appendTransactionMessageInstruction,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { median, round as round3, stats } from './lib.mjs';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '9' }, n: { type: 'string', default: '60' } },
});
const ROUNDS = Math.max(5, Number(values.rounds));
const N = Math.max(10, Number(values.n));

const { buildSwapApp } = await import('../apps/swap/dist/app.js');
const { loadConfig } = await import('../apps/swap/dist/config.js');
const { openSwapDatabase } = await import('../apps/swap/dist/store/database.js');
const { createApiKey } = await import('../apps/swap/dist/store/api-keys.js');
const { loadIntent } = await import('../apps/swap/dist/store/intent-store.js');
const { verifyLeg } = await import('../apps/swap/dist/settlement/verify.js');
const { assertTxUnused } = await import('../apps/swap/dist/store/legs.js');
const { deploySwapContracts, deployTestToken, escrowDeposit, TEST_TOKEN } = await import(
  '../packages/devnet/dist/evm-devnode/index.js'
);
const { startDevnet, swapDevnetToml } = await import('../packages/devnet/dist/index.js');
const { fulfilCommitment } = await import('../packages/chains/dist/btc/index.js');
const { ElectrumConnection } = await import('../packages/chains/dist/btc/index.js');
const { jsonRpcTransport } = await import('../packages/chains/dist/evm/transport.js');
const { createTestPgDatabase } = await import('../packages/store/dist/index.js');
const { signCosignApproval, signPermit2Approval } = await import('../packages/sdk/dist/index.js');

const log = (m) => process.stderr.write(`${m}\n`);

const NET = { btc: 1, evm: 2, sol: 4 };
const SOL_MINT = 'So11111111111111111111111111111111111111112';
const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };
const REFUND_DELAY_SECS = 3600n;
const RESOLVER_KEY = `rgbx_resolver_${'r'.repeat(43)}`;
const btcAddress = () => p2tr(utils.pubSchnorr(utils.randomPrivateKeyBytes()), undefined, REGTEST).address;
const sats = (n) => `${n / 100_000_000n}.${(n % 100_000_000n).toString().padStart(8, '0')}`;

// ---------------------------------------------------------------------------------------------
// Nodes: the EVM and Solana devnodes as processes (their `main.js`), the Bitcoin devnet.

const children = [];
function startNodeProcess(rel) {
  const child = spawn(process.execPath, [fileURLToPath(new URL(rel, import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    child.once('exit', (code) => reject(new Error(`${rel} exited with ${code}`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)));
    });
  });
}

// The direct reads go through the kept-alive node:http JSON-RPC transport the EVM readers use (the
// cheapest client here; `fetch` cost more CPU per call than the whole verifier's client side).
const transports = new Map();
function jsonRpc(url, method, params) {
  let t = transports.get(url);
  if (!t) {
    t = jsonRpcTransport(url, 10_000);
    transports.set(url, t);
  }
  return t.request({ method, params });
}

// ---------------------------------------------------------------------------------------------
// The service configuration: Bitcoin regtest (Electrum), the EVM devnode, the Solana devnode.

function configToml(o) {
  return swapDevnetToml({
    service: { database_url: o.databaseUrl, preimage_key: 'ab'.repeat(32), log_level: 'silent' },
    swap: {
      quote_ttl_secs: 600,
      intent_ttl_secs: 3600,
      scheduler_interval_ms: 3600000,
      refund_safety_margin_secs: Number(REFUND_DELAY_SECS),
    },
    bitcoin: { electrumUrl: o.electrum },
    evm: {
      rpcUrl: o.evmRpc,
      chainId: o.chainId,
      permit2: o.permit2,
      escrow: o.escrow,
      usdc: o.usdc,
      token: { decimals: 6 },
    },
    solana: { rpcUrl: o.solRpc },
    resolver: {
      apiKeySha256: createHash('sha256').update(RESOLVER_KEY).digest('hex'),
      bitcoinClaimPubkey: Buffer.from(utils.pubSchnorr(utils.randomPrivateKeyBytes())).toString('hex'),
      evmAddress: o.resolverEvm,
      solanaAddress: o.resolverSol,
    },
    rates: [
      {
        source_network: NET.evm,
        source_token: o.usdc,
        dest_network: NET.btc,
        dest_token: 'BTC',
        rate: '0.0000166',
      },
      {
        source_network: NET.sol,
        source_token: SOL_MINT,
        dest_network: NET.evm,
        dest_token: o.usdc,
        rate: '150.25',
      },
      {
        source_network: NET.evm,
        source_token: o.usdc,
        dest_network: NET.sol,
        dest_token: SOL_MINT,
        rate: '0.005',
      },
    ],
  });
}

// ---------------------------------------------------------------------------------------------

const tmp = mkdtempSync(join(tmpdir(), 'settlement-bench-'));
let devnet;
let pg;
const services = [];
const conns = [];
try {
  const t0 = performance.now();
  const [dn, evmInfo, solInfo] = await Promise.all([
    startDevnet({ dir: join(tmp, 'devnet') }),
    startNodeProcess('../packages/devnet/dist/evm-devnode/main.js'),
    startNodeProcess('../packages/devnet/dist/sol-devnode/main.js'),
  ]);
  devnet = dn;
  const evmRpc = evmInfo.rpc_url;
  const solRpc = solInfo.url;
  const chainId = BigInt(evmInfo.chain_id);
  const deployer = evmInfo.accounts[0].private_key;
  const chain = defineChain({
    id: Number(chainId),
    name: 'devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [evmRpc] } },
  });
  const pub = createPublicClient({ chain, transport: http(evmRpc) });
  const wallet = (key) =>
    createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(evmRpc) });
  const mined = async (hash) => {
    const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (r.status !== 'success') throw new Error(`${hash} reverted`);
    return hash;
  };
  const erc20 = (fromKey, functionName, token, to, amount) =>
    wallet(fromKey)
      .writeContract({ address: token, abi: TEST_TOKEN.abi, functionName, args: [to, amount] })
      .then(mined);
  const ethTransfer = (fromKey, to, value) => wallet(fromKey).sendTransaction({ to, value }).then(mined);
  const solAirdrop = (address, lamports) => jsonRpc(solRpc, 'requestAirdrop', [address, Number(lamports)]);
  async function solTransfer(from, to, lamports) {
    const { value } = await jsonRpc(solRpc, 'getLatestBlockhash', [{ commitment: 'finalized' }]);
    const data = new Uint8Array(12);
    const view = new DataView(data.buffer);
    view.setUint32(0, 2, true); // System program: Transfer
    view.setBigUint64(4, lamports, true);
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(from, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: value.blockhash, lastValidBlockHeight: BigInt(value.lastValidBlockHeight) },
          m,
        ),
      (m) =>
        appendTransactionMessageInstruction(
          {
            programAddress: '11111111111111111111111111111111',
            accounts: [
              { address: from.address, role: AccountRole.WRITABLE_SIGNER, signer: from },
              { address: to, role: AccountRole.WRITABLE },
            ],
            data,
          },
          m,
        ),
    );
    const signed = await signTransactionMessageWithSigners(message);
    return jsonRpc(solRpc, 'sendTransaction', [
      getBase64EncodedWireTransaction(signed),
      { encoding: 'base64' },
    ]);
  }

  // Contracts and the resolver's identities (gas, USDC, lamports to pay destinations).
  const usdc = await deployTestToken(evmRpc, chainId, deployer, { symbol: 'USDC', supply: 10n ** 30n });
  const { permit2, escrow } = await deploySwapContracts(evmRpc, chainId, deployer, {
    refundDelaySecs: REFUND_DELAY_SECS,
  });
  const resolverEvmKey = generatePrivateKey();
  const resolverEvm = privateKeyToAccount(resolverEvmKey).address;
  const resolverSol = await generateKeyPairSigner();
  await ethTransfer(deployer, resolverEvm, 10n ** 20n);
  await erc20(deployer, 'transfer', usdc, resolverEvm, 10n ** 27n);
  await solAirdrop(resolverSol.address, 100n * 10n ** 9n);
  log(`setup: nodes and contracts in ${Math.round(performance.now() - t0)} ms`);

  pg = await createTestPgDatabase('rgbx_settlement_bench');

  async function openService(dialect, databaseUrl) {
    const cfg = loadConfig(
      {
        text: configToml({
          databaseUrl,
          electrum: devnet.info.electrum,
          evmRpc,
          solRpc,
          chainId,
          permit2,
          escrow,
          usdc,
          resolverEvm,
          resolverSol: resolverSol.address,
        }),
      },
      {},
    );
    const opened = await openSwapDatabase(cfg.databaseUrl);
    const built = buildSwapApp({ config: cfg, db: opened.db, dialect: opened.dialect });
    await built.app.ready();
    const apiKey = (await createApiKey(opened.db, 'bench')).key;
    const svc = {
      dialect,
      ctx: built.ctx,
      async close() {
        await built.app.close();
        await opened.close();
      },
    };
    services.push(svc);
    const call = async (method, url, payload, key = apiKey) => {
      const res = await built.app.inject({
        method,
        url,
        headers: { 'x-api-key': key },
        ...(payload === undefined ? {} : { payload }),
      });
      if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.body === '' ? undefined : res.json();
    };
    svc.call = call;
    svc.resolver = (id, action, payload = {}) =>
      call('POST', `/resolver/v1/intents/${id}/${action}`, payload, RESOLVER_KEY);
    svc.execution = async (id) =>
      (await call('GET', `/resolver/v1/intents/${id}`, undefined, RESOLVER_KEY)).execution;
    return svc;
  }

  /** EVM (USDC) → `dest`: Permit2 signed by a fresh owner, accepted, pulled by the escrow: UserDeposited. */
  async function evmSourceIntent(svc, destChain, destToken, destinationAddress, amountLots) {
    const ownerKey = generatePrivateKey();
    const owner = privateKeyToAccount(ownerKey);
    await ethTransfer(deployer, owner.address, 10n ** 19n);
    await erc20(deployer, 'transfer', usdc, owner.address, 10n ** 24n);
    const q = await svc.call('POST', '/quote', {
      sourceChain: NET.evm,
      sourceToken: usdc,
      destChain,
      destToken,
      amountLots,
    });
    const amount = BigInt(q.sourceAmountLots);
    await erc20(ownerKey, 'approve', usdc, permit2, amount);
    const i = await svc.call('POST', '/intents', {
      quoteId: q.quoteId,
      sourceAddress: owner.address,
      refundAddress: owner.address,
      destinationAddress,
    });
    const approval = await signPermit2Approval(
      i.permit2,
      { signTypedData: (td) => owner.signTypedData(td) },
      { chainId, permit2Address: permit2, escrowAddress: escrow, token: usdc, amount },
    );
    await svc.call('POST', `/intents/${i.intentId}/approvals`, approval);
    await svc.resolver(i.intentId, 'accept');
    const ex = await svc.execution(i.intentId);
    const m = ex.typed_data.message;
    const w = m.witness;
    const pulled = await escrowDeposit(evmRpc, chainId, deployer, escrow, {
      token: m.permitted.token,
      amount: BigInt(m.permitted.amount),
      nonce: BigInt(m.nonce),
      deadline: BigInt(m.deadline),
      owner: ex.owner,
      witness: {
        intentId: w.intentId,
        resolver: w.resolver,
        secretHash: w.secretHash,
        destChainId: BigInt(w.destChainId),
        destToken: w.destToken,
        destAddress: w.destAddress,
        minAmountOut: BigInt(w.minAmountOut),
        maxAmountOut: BigInt(w.maxAmountOut),
        deadline: BigInt(w.deadline),
      },
      signature: ex.permit2_signature,
    });
    const r = await svc.resolver(i.intentId, 'deposit', { tx_hash: pulled });
    if (r.status !== 'UserDeposited') throw new Error(`deposit: ${JSON.stringify(r)}`);
    return { id: i.intentId, min: BigInt(q.minDestAmountLots) };
  }

  /** Solana (SOL) → EVM USDC: the user-signed transaction co-signed by the resolver executes: UserDeposited. */
  async function solSourceIntent(svc, destinationAddress) {
    const user = await generateKeyPairSigner();
    await solAirdrop(user.address, 5n * 10n ** 9n);
    const q = await svc.call('POST', '/quote', {
      sourceChain: NET.sol,
      sourceToken: SOL_MINT,
      destChain: NET.evm,
      destToken: usdc,
      amount: '1',
    });
    const i = await svc.call('POST', '/intents', {
      quoteId: q.quoteId,
      sourceAddress: user.address,
      sourcePublicKey: user.address,
      refundAddress: user.address,
      destinationAddress,
    });
    const approval = await signCosignApproval(
      i.cosign,
      { address: user.address, sign: (msg) => signBytes(user.keyPair.privateKey, msg) },
      {
        destination: resolverSol.address,
        lamports: BigInt(q.sourceAmountLots),
        feePayer: resolverSol.address,
      },
    );
    await svc.call('POST', `/intents/${i.intentId}/approvals`, approval);
    await svc.resolver(i.intentId, 'accept');
    const wire = Buffer.from(String((await svc.execution(i.intentId)).signed_transaction), 'hex');
    const message = wire.subarray(1 + 64 * wire[0]);
    wire.set(await signBytes(resolverSol.keyPair.privateKey, message), 1); // the fee payer, position 0
    const sent = await jsonRpc(solRpc, 'sendTransaction', [wire.toString('base64'), { encoding: 'base64' }]);
    const r = await svc.resolver(i.intentId, 'deposit', { tx_hash: sent });
    if (r.status !== 'UserDeposited') throw new Error(`deposit: ${JSON.stringify(r)}`);
    return { id: i.intentId, min: BigInt(q.minDestAmountLots) };
  }

  /** Per network: the intent, the resolver's real fulfilment (sent, not reported), verified once. */
  async function prepare(svc) {
    const out = {};
    {
      const dest = btcAddress();
      const { id, min } = await evmSourceIntent(svc, NET.btc, 'BTC', dest, '250000000');
      // A Bitcoin fulfilment carries the intent's commitment (OP_RETURN), as the verifier requires.
      const data = fulfilCommitment(id).toString('hex');
      const tx = await devnet.fund(dest, sats(min), { confirm: true, data });
      out.bitcoin = { id, tx, min };
    }
    {
      const dest = privateKeyToAccount(generatePrivateKey()).address;
      const { id, min } = await solSourceIntent(svc, dest);
      const tx = await erc20(resolverEvmKey, 'transfer', usdc, dest, min);
      out.evm = { id, tx, min };
    }
    {
      const dest = (await generateKeyPairSigner()).address;
      const { id, min } = await evmSourceIntent(svc, NET.sol, SOL_MINT, dest, '500000000');
      const tx = await solTransfer(resolverSol, dest, min);
      out.solana = { id, tx, min };
    }
    for (const [net, p] of Object.entries(out)) {
      p.intent = await loadIntent(svc.ctx.db, p.id, { resolverId: 'reference' });
      if (p.intent.status !== 'UserDeposited') throw new Error(`${net}: ${p.intent.status}`);
      const proof = await verifyLeg(svc.ctx, p.intent, 'fulfil', p.tx);
      if (proof.amount < p.min || proof.confirmations < 1)
        throw new Error(`${net}: unexpected proof ${JSON.stringify(proof, (_k, v) => String(v))}`);
      p.proof = { amount: proof.amount.toString(), confirmations: proof.confirmations, index: proof.index };
    }
    return out;
  }

  const t1 = performance.now();
  const sqlite = await openService('sqlite', `sqlite:${join(tmp, 'swap.db')}`);
  const postgres = await openService('postgres', pg.url);
  const prepared = { sqlite: await prepare(sqlite), postgres: await prepare(postgres) };
  log(`setup: 6 intents to UserDeposited + 6 fulfilments in ${Math.round(performance.now() - t1)} ms`);

  // Raw reads, done directly against the same nodes (the SQLite side's transactions).
  const electrum = await ElectrumConnection.connect(devnet.info.electrum, { clientName: 'bench-settlement' });
  conns.push(electrum);
  const btcTx = prepared.sqlite.bitcoin.tx;
  const evmTx = prepared.sqlite.evm.tx;
  const solTx = prepared.sqlite.solana.tx;
  const mustHave = (x, what) => {
    if (x === null || x === undefined) throw new Error(`${what}: no result`);
    return x;
  };
  const raw = {
    bitcoin: {
      first_read: 'blockchain.transaction.get (verbose)',
      verifier_reads: [
        'blockchain.transaction.get (verbose)',
        'blockchain.headers.subscribe',
        'blockchain.block.header',
      ],
      first: async () =>
        mustHave((await electrum.request('blockchain.transaction.get', [btcTx, true])).hex, 'tx'),
      all: async () => {
        const t = await electrum.request('blockchain.transaction.get', [btcTx, true]);
        mustHave(t.hex, 'tx');
        const tip = mustHave((await electrum.request('blockchain.headers.subscribe')).height, 'tip');
        mustHave(await electrum.request('blockchain.block.header', [tip - t.confirmations + 1]), 'header');
      },
    },
    evm: {
      first_read: 'eth_getTransactionReceipt',
      verifier_reads: ['eth_getTransactionReceipt', 'eth_blockNumber', 'eth_getBlockByNumber'],
      first: async () => mustHave(await jsonRpc(evmRpc, 'eth_getTransactionReceipt', [evmTx]), 'receipt'),
      all: async () => {
        const r = mustHave(await jsonRpc(evmRpc, 'eth_getTransactionReceipt', [evmTx]), 'receipt');
        await jsonRpc(evmRpc, 'eth_blockNumber', []);
        mustHave(await jsonRpc(evmRpc, 'eth_getBlockByNumber', [r.blockNumber, false]), 'block');
      },
    },
    solana: {
      first_read: 'getTransaction (base64)',
      verifier_reads: ['getTransaction (base64)', 'getSignatureStatuses'],
      first: async () =>
        mustHave(
          await jsonRpc(solRpc, 'getTransaction', [
            solTx,
            { encoding: 'base64', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
          ]),
          'transaction',
        ),
      all: async () => {
        mustHave(
          await jsonRpc(solRpc, 'getTransaction', [
            solTx,
            { encoding: 'base64', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
          ]),
          'transaction',
        );
        await jsonRpc(solRpc, 'getSignatureStatuses', [[solTx], { searchTransactionHistory: true }]);
      },
    },
  };

  // The cases, per network: verified (each store), raw first read, raw all reads, DB read (each store).
  const NETS = ['bitcoin', 'evm', 'solana'];
  const cases = {};
  for (const net of NETS) {
    const c = {};
    for (const svc of services) {
      const p = prepared[svc.dialect][net];
      const networkId = NET[net === 'bitcoin' ? 'btc' : net === 'solana' ? 'sol' : 'evm'];
      // The id as stored: Bitcoin/EVM lower-case hex, Solana base58 (what normalizeTxHash yields).
      const stored = net === 'solana' ? p.tx : p.tx.toLowerCase();
      c[`verified_${svc.dialect}`] = () => verifyLeg(svc.ctx, p.intent, 'fulfil', p.tx);
      c[`db_read_${svc.dialect}`] = () => assertTxUnused(svc.ctx.db, networkId, stored);
    }
    c.raw_first = raw[net].first;
    c.raw_all = raw[net].all;
    cases[net] = c;
  }

  const samples = {}; // net → case → per-call ms (all rounds)
  const rates = {}; // net → case → per-round calls/s
  for (const net of NETS) {
    samples[net] = Object.fromEntries(Object.keys(cases[net]).map((k) => [k, []]));
    rates[net] = Object.fromEntries(Object.keys(cases[net]).map((k) => [k, []]));
  }
  async function batch(fn, n, into) {
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await fn();
      into?.push(performance.now() - t);
    }
    return n / ((performance.now() - start) / 1000);
  }
  // Warm-up: connections, JIT, DB caches.
  for (const net of NETS) for (const fn of Object.values(cases[net])) await batch(fn, 10);
  const t2 = performance.now();
  for (let r = 0; r < ROUNDS; r++) {
    const nets = NETS.map((_, i) => NETS[(i + r) % NETS.length]);
    for (const net of nets) {
      const names = Object.keys(cases[net]);
      const order = names.map((_, i) => names[(i + r) % names.length]);
      for (const k of order) rates[net][k].push(await batch(cases[net][k], N, samples[net][k]));
    }
    log(`round ${r + 1}/${ROUNDS} (${Math.round((performance.now() - t2) / 1000)} s)`);
  }
  const loadEnd = loadavg();

  const figure = (xs) => ({ median: Math.round(median(xs)), runs: xs.map(Math.round) });
  const networks = {};
  for (const net of NETS) {
    const R = rates[net];
    const per = (k) => ({ ...figure(R[k]), latency_ms: stats(samples[net][k]) });
    const ratio = (a, b) => round3(median(R[a].map((x, i) => x / R[b][i])));
    networks[net] = {
      first_read: raw[net].first_read,
      verifier_reads: raw[net].verifier_reads,
      tx: prepared.sqlite[net].tx,
      proof: prepared.sqlite[net].proof,
      raw_first_read_per_s: per('raw_first'),
      raw_all_reads_per_s: per('raw_all'),
    };
    for (const d of ['sqlite', 'postgres']) {
      networks[net][d] = {
        verified_per_s: per(`verified_${d}`),
        db_read_per_s: per(`db_read_${d}`),
        // Raw first reads per verified fulfilment (the cost of one verification in round trips).
        raw_first_per_verified: ratio('raw_first', `verified_${d}`),
        raw_all_per_verified: ratio('raw_all', `verified_${d}`),
        // Cross-check on single calls: p50 latency of a verification over p50 of the raw first read.
        p50_latency_ratio: round3(
          stats(samples[net][`verified_${d}`]).p50 / stats(samples[net].raw_first).p50,
        ),
      };
    }
  }
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadavg_end: loadEnd.map((x) => Math.round(x * 100) / 100),
    n: N,
    rounds: ROUNDS,
    in_flight: 1,
    networks,
  };

  const rows = [];
  for (const net of NETS) {
    const x = networks[net];
    for (const d of ['sqlite', 'postgres'])
      rows.push(
        [
          `${net}/${d}`.padEnd(18),
          String(x[d].verified_per_s.median).padStart(9),
          String(x.raw_first_read_per_s.median).padStart(9),
          `${x[d].raw_first_per_verified}×`.padStart(8),
          String(x.raw_all_reads_per_s.median).padStart(9),
          `${x[d].raw_all_per_verified}×`.padStart(8),
          String(x[d].db_read_per_s.median).padStart(8),
        ].join(' '),
      );
  }
  log(
    `\n${'median per second'.padEnd(18)} ${'verified'.padStart(9)} ${'raw 1st'.padStart(9)} ${'ratio'.padStart(8)} ${'raw all'.padStart(9)} ${'ratio'.padStart(8)} ${'db read'.padStart(8)}\n${rows.join('\n')}\n`,
  );
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  for (const c of conns) c.close();
  for (const svc of services) await svc.close().catch(() => {});
  await pg?.drop().catch(() => {});
  await devnet?.stop().catch(() => {});
  for (const c of children) c.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
