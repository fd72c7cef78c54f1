// `npm start`: the devnet plus every service on loopback, in the foreground; Ctrl-C stops everything.
// Services run from their build output (`tsc -b` runs first) with configs generated under the devnet dir.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { produceBlocks, spawnService, startDevnet, startMarket, walletNodeToml } from '@rgbx/devnet';
import { writeToml } from '@rgbx/service-kit';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const dir = resolve(process.env.RGBX_DEVNET_DIR ?? join(root, '.devnet'));
const children = [];
let devnet;
/** The swap market (EVM and Solana devnodes, swap service, reference resolver). */
let market;
let stopping = false;
/** The block producer (RGBX_BLOCK_INTERVAL_SECS). */
let blocks;

/** Starts a service (see spawnService) and keeps it for shutdown; a service that dies later is reported. */
async function startService(name, args, opts = {}) {
  const svc = await spawnService(name, args, {
    ...opts,
    onExit: (code, err) => {
      if (!stopping) console.error(`npm start: ${name} exited unexpectedly (code ${code}):\n${err}`);
    },
  });
  children.push(svc);
  return svc.value;
}

async function main() {
  devnet = await startDevnet({ dir });
  const info = devnet.info;
  const endpoints = { devnet: info };

  // Wallet node on the devnet.
  const wn = join(dir, 'wallet-node');
  mkdirSync(wn, { recursive: true });
  writeFileSync(
    join(wn, 'config.toml'),
    walletNodeToml(info, {
      dataDir: join(wn, 'data'),
      port: Number(process.env.RGBX_WALLET_NODE_PORT ?? 3000),
      // Prometheus: GET /metrics on a loopback listener of its own (the wallet node's default port; 0: any free one).
      metrics: { port: Number(process.env.RGBX_WALLET_NODE_METRICS_PORT ?? 9401) },
    }),
    { mode: 0o600 },
  );
  const walletNode = await startService(
    'wallet node',
    [join(root, 'apps/wallet-node/dist/main.js'), '-c', join(wn, 'config.toml')],
    {
      // Its listening line also names where its metrics listen.
      pick: (j) =>
        j.event === 'listening' && typeof j.url === 'string'
          ? { url: j.url, metrics: j.metrics_url }
          : undefined,
    },
  );
  endpoints.wallet_node = walletNode.url;

  // The swap market: the EVM devnode (EthereumJS) with a test USDC, our Permit2-compatible
  // SignatureTransfer and the SwapEscrow; "Tron" read through the same devnode's Ethereum-compatible
  // JSON-RPC (as a Tron full node's /jsonrpc), with the same contracts; Solana on the litesvm devnode;
  // the swap service on all four networks; and the reference resolver (apps/resolver), funded on every
  // chain, answering the swap's RFQs and filling the intents it wins (startMarket in packages/devnet).
  market = await startMarket({
    dir,
    devnet,
    swapPort: Number(process.env.RGBX_SWAP_PORT ?? 3100),
    resolverPort: Number(process.env.RGBX_RESOLVER_PORT ?? 3300),
    onExit: (name, code, err) => {
      if (!stopping) console.error(`npm start: ${name} exited unexpectedly (code ${code}):\n${err}`);
    },
  });
  const m = market;
  endpoints.evm_devnode = {
    rpc_url: m.evm.rpcUrl,
    chain_id: m.evm.chainId.toString(),
    usdc: m.evm.usdc,
    permit2: m.evm.permit2,
    escrow: m.evm.escrow,
    funder_key: m.evm.funderKey,
  };
  endpoints.solana_devnode = { rpc_url: m.solanaRpcUrl };
  endpoints.swap = { api: m.swapUrl, dev_api_key_file: join(dir, 'swap', 'dev-api-key') };
  endpoints.resolver = { rfq_url: `${m.resolver.value}/rfq`, config: m.resolverConfig };
  // Prometheus: every service serves GET /metrics on a loopback listener of its own.
  endpoints.metrics = {
    ...info.metrics,
    wallet_node: walletNode.metrics,
    swap: m.metrics.swap,
    resolver: m.metrics.resolver,
  };

  // Cloud hosting service with its console; hosted nodes are wallet nodes on this devnet.
  const cl = join(dir, 'cloud');
  mkdirSync(cl, { recursive: true });
  const cloudToml = join(cl, 'cloud.toml');
  // The AES-256-GCM key that seals the webhook signing keys at rest: made once (0600), kept.
  const cloudKeyFile = join(cl, 'signing-keys.key');
  if (!existsSync(cloudKeyFile))
    writeFileSync(cloudKeyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  writeFileSync(
    cloudToml,
    writeToml(
      {
        signing_keys: { encryption_key_file: cloudKeyFile },
        api: { listen_address: '127.0.0.1', port: Number(process.env.RGBX_CLOUD_PORT ?? 3200) },
        // Prometheus: GET /metrics on a loopback listener of its own (the cloud's default port; 0: any free one).
        metrics: { listen_address: '127.0.0.1', port: Number(process.env.RGBX_CLOUD_METRICS_PORT ?? 9403) },
        cloud: { data_dir: join(cl, 'data') },
        // The devnet follow-mode, a dev-only plug-in of the devnet kit (loaded because this config names it).
        backend: { plugin: '@rgbx/devnet/cloud-backend', plugin_options: { dir } },
        nodes: { stop_on_shutdown: true },
        webhooks: { allow_cidrs: ['127.0.0.0/8', '::1/128'], allow_http: true },
      },
      [
        'written by npm start; [webhooks]: a dev allowlist, webhooks may go to loopback receivers (never in production)',
      ],
    ),
    { mode: 0o600 },
  );
  const cloudMain = join(root, 'apps/cloud/dist/main.js');
  const tokenFile = join(cl, 'dev-token');
  if (!existsSync(tokenFile)) {
    // A first API token for the console, printed below and kept (0600) for the next starts.
    const r = spawnSync(
      process.execPath,
      [cloudMain, '-c', cloudToml, 'tokens', 'create', '--account', 'dev'],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`cloud tokens create failed: ${r.stderr}`);
    writeFileSync(tokenFile, JSON.parse(r.stdout.trim().split('\n').pop()).token, { mode: 0o600 });
  }
  const cloudSvc = await startService('cloud service', [cloudMain, '-c', cloudToml], {
    // Its listening line also names where its metrics listen.
    pick: (j) =>
      j.event === 'listening' && typeof j.url === 'string'
        ? { url: j.url, metrics: j.metrics_url }
        : undefined,
  });
  const cloudUrl = cloudSvc.url;
  endpoints.cloud = { api: cloudUrl, console: `${cloudUrl}/console/`, dev_token_file: tokenFile };
  endpoints.metrics.cloud = cloudSvc.metrics;

  // Blocks by themselves, as on a real chain (RGBX_BLOCK_INTERVAL_SECS, default 5; 0 = only on demand).
  const intervalSecs = Number(process.env.RGBX_BLOCK_INTERVAL_SECS ?? 5);
  if (!(intervalSecs >= 0)) throw new Error(`RGBX_BLOCK_INTERVAL_SECS must be a number of seconds ≥ 0`);
  if (intervalSecs > 0) {
    blocks = produceBlocks({
      devnet,
      intervalMs: intervalSecs * 1000,
      evmRpcUrl: market.evm.rpcUrl,
      onError: (err) => console.error(`npm start: block production: ${err.message}`),
    });
  }
  endpoints.blocks = { interval_secs: intervalSecs, chains: intervalSecs > 0 ? ['bitcoin', 'evm'] : [] };

  // Also kept in the devnet dir, for scripts (examples/swap-pairs.mjs reads it).
  writeFileSync(join(dir, 'endpoints.json'), `${JSON.stringify(endpoints, null, 2)}\n`, { mode: 0o600 });
  console.info(
    `rgbx is up (state in ${dir}); Ctrl-C stops everything\n${JSON.stringify(endpoints, null, 2)}`,
  );
  await new Promise((r) => {
    process.once('SIGINT', r);
    process.once('SIGTERM', r);
  });
  console.info('stopping…');
  stopping = true;
  await blocks?.stop();
  await Promise.all(children.map((c) => c.stop()));
  await market?.stop();
  await devnet.stop();
}

main().catch(async (err) => {
  console.error(`npm start: ${err.message}`);
  stopping = true;
  await blocks?.stop();
  await Promise.allSettled(children.map((c) => c.stop()));
  await market?.stop().catch(() => {});
  await devnet?.stop().catch(() => {}); // never leave the devnet running behind a failed start
  process.exit(1);
});
