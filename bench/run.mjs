// Runs every benchmark and prints one JSON document; `npm run bench` builds first. Results are saved to
// bench/results/latest.json after each benchmark, so a failure late in the run keeps the earlier figures.
// Figures are medians of interleaved runs, each next to a baseline measured in the same run.
// A failed benchmark is recorded as `{ error }`, named on stderr, and makes the run exit 1 once the others ran;
// an unknown name exits 2.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchElectrum } from './electrum.mjs';
import { benchGoOnline } from './rgb-goonline.mjs';
import { benchWalletNode } from './wallet-node.mjs';

const only = process.argv[2];
const out = { date: new Date().toISOString(), node: process.version, cpus: cpus().length };
const save = () => {
  const json = JSON.stringify(out, (_k, v) => (typeof v === 'bigint' ? String(v) : v), 2);
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  // `wallet_node` writes results/wallet-node.json: file names use dashes, as the committed results do.
  writeFileSync(
    new URL(`./results/${(only ?? 'latest').replaceAll('_', '-')}.json`, import.meta.url),
    `${json}\n`,
  );
  return json;
};

/** Runs a standalone benchmark script as a process and returns the JSON it prints (from its first `{`). */
function runScript(file) {
  const r = spawnSync(process.execPath, [fileURLToPath(new URL(file, import.meta.url))], {
    encoding: 'utf8',
  });
  if (r.error) throw new Error(`bench/${file.slice(2)} could not run: ${r.error.message}`);
  if (r.status !== 0) {
    const how = r.status === null ? `killed by ${r.signal}` : `exit ${r.status}`;
    throw new Error(`bench/${file.slice(2)} failed (${how}): ${r.stderr.trim() || '(no stderr)'}`);
  }
  return JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
}

const benches = {
  electrum: benchElectrum,
  goonline: benchGoOnline,
  wallet_node: benchWalletNode,
  swap: async () => runScript('./swap.mjs'),
  settlement: async () => runScript('./settlement.mjs'),
  cloud: async () => (await import('./cloud.mjs')).benchCloud(),
  wallet_node_isolation: async () => (await import('./wallet-node-isolation.mjs')).run(),
  // 1,000 wallets registered, 10 and 100 in rotation on one node (~6 min); `node bench/wallet-node-scale.mjs --full`
  // for 10,000 / 1,000.
  wallet_node_scale: async () => (await import('./wallet-node-scale.mjs')).run(),
  // proxy.mjs is a standalone script (own flags); run it as a process and keep its JSON.
  proxy: async () => runScript('./proxy.mjs'),
  // The devnet swap market end to end (~3 min; BENCH_MARKET_INTERVALS=1000,3000 for more block intervals).
  market: async () => runScript('./market.mjs'),
};
if (only && !Object.hasOwn(benches, only)) {
  console.error(`unknown benchmark ${JSON.stringify(only)}; one of: ${Object.keys(benches).join(', ')}`);
  process.exit(2);
}
const failed = [];
for (const [name, fn] of Object.entries(benches)) {
  if (only && only !== name) continue;
  try {
    out[name] = await fn();
  } catch (err) {
    out[name] = { error: err instanceof Error ? err.message : String(err) };
    failed.push(name);
    console.error(`benchmark ${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
  }
  save();
}
console.info(save());
if (failed.length > 0) {
  console.error(`${failed.length} benchmark(s) failed: ${failed.join(', ')}`);
  process.exit(1);
}
process.exit(0);
