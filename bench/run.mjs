// Runs every benchmark and prints one JSON document; `npm run bench` builds first. Results are saved to
// bench/results/latest.json after each benchmark, so a failure late in the run keeps the earlier figures.
// Figures are medians of interleaved runs, each next to a baseline measured in the same run.
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
  writeFileSync(new URL(`./results/${only ?? 'latest'}.json`, import.meta.url), `${json}\n`);
  return json;
};

const benches = {
  electrum: benchElectrum,
  goonline: benchGoOnline,
  wallet_node: benchWalletNode,
  swap: async () => {
    const r = spawnSync(process.execPath, [fileURLToPath(new URL('./swap.mjs', import.meta.url))], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`bench/swap.mjs failed: ${r.stderr}`);
    return JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
  },
  settlement: async () => {
    const r = spawnSync(process.execPath, [fileURLToPath(new URL('./settlement.mjs', import.meta.url))], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`bench/settlement.mjs failed: ${r.stderr}`);
    return JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
  },
  cloud: async () => (await import('./cloud.mjs')).benchCloud(),
  proxy: async () => {
    // proxy.mjs is a standalone script (own flags); run it as a process and keep its JSON.
    const r = spawnSync(process.execPath, [fileURLToPath(new URL('./proxy.mjs', import.meta.url))], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`bench/proxy.mjs failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  },
};
for (const [name, fn] of Object.entries(benches)) {
  if (only && only !== name) continue;
  try {
    out[name] = await fn();
  } catch (err) {
    out[name] = { error: err.message };
  }
  save();
}
console.info(save());
process.exit(0);
