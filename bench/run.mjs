// Runs every benchmark and prints one JSON document; `npm run bench` builds first.
// Figures are medians of interleaved runs, each next to a baseline measured in the same run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchElectrum } from './electrum.mjs';
import { benchGoOnline } from './rgb-goonline.mjs';
import { benchWalletNode } from './wallet-node.mjs';

const only = process.argv[2];
const out = { date: new Date().toISOString(), node: process.version, cpus: cpus().length };
if (!only || only === 'electrum') out.electrum = await benchElectrum();
if (!only || only === 'goonline') out.goonline = await benchGoOnline();
if (!only || only === 'wallet-node') out.wallet_node = await benchWalletNode();
if (!only || only === 'proxy') {
  // proxy.mjs is a standalone script (own flags); run it as a process and keep its JSON.
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('./proxy.mjs', import.meta.url))], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`bench/proxy.mjs failed: ${r.stderr}`);
  out.proxy = JSON.parse(r.stdout);
}
const json = JSON.stringify(out, (_k, v) => (typeof v === 'bigint' ? String(v) : v), 2);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/latest.json', import.meta.url), `${json}\n`);
console.info(json);
