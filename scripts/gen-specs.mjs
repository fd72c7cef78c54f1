// Writes each service's OpenAPI document to specs/<service>.openapi.json from its built app (the TypeBox
// route schemas are the source), and the other generated files that are committed (the swap's devnet
// configuration). `--check` fails when a committed file differs from the code (CI drift check).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');

/** Each entry builds an app without starting anything (no listeners, no children) and returns its document. */
const services = {
  cloud: async () => (await import('@rgbx/cloud')).generateOpenApi(),
  swap: async () => (await import('@rgbx/swap')).generateOpenApi(),
  'wallet-node': async () => {
    const { buildWalletNode } = await import('@rgbx/wallet-node');
    const { createLogger } = await import('@rgbx/service-kit');
    const cfg = {
      api: { listen_address: '127.0.0.1', port: 3000, body_limit_bytes: 5242880 },
      wallet: {
        data_dir: '/nonexistent',
        network: 'regtest',
        btc_rpc_address: '127.0.0.1:18443',
        btc_rpc_user: 'u',
        btc_rpc_password: 'p',
        indexer_address: 'tcp://127.0.0.1:50001',
        proxy_address: ['rpc://127.0.0.1:3000/json-rpc'],
        witness_version: 'Taproot',
        workers: 1,
        idle_timeout_secs: 0,
        refresh_interval_secs: 0,
        call_timeout_secs: 300,
        check_indexer_at_start: false,
      },
    };
    const node = buildWalletNode(cfg, createLogger({ name: 'specs', level: 'silent' }));
    await node.app.ready();
    const doc = node.app.swagger();
    await node.app.close();
    return doc;
  },
};

/** Other generated files, committed: path → its text. */
const generated = {
  'apps/swap/config/devnet.toml': async () => (await import('@rgbx/devnet')).swapDevnetTemplateToml(),
};

let drift = false;
const outputs = [
  ...Object.entries(services).map(([name, build]) => [
    `specs/${name}.openapi.json`,
    async () => `${JSON.stringify(await build(), null, 2)}\n`,
  ]),
  ...Object.entries(generated),
];
for (const [path, build] of outputs) {
  const doc = await build();
  const file = join(root, path);
  if (check) {
    let committed = '';
    try {
      committed = readFileSync(file, 'utf8');
    } catch {}
    if (committed !== doc) {
      drift = true;
      console.error(`${path} is out of date: run "npm run specs" and commit it`);
    }
  } else {
    writeFileSync(file, doc);
    console.info(`wrote ${path}`);
  }
}
process.exit(drift ? 1 : 0);
