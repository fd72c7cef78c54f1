// `npm start`: the devnet plus every service on loopback, in the foreground; Ctrl-C stops everything.
// Services run from their build output (`tsc -b` runs first) with configs generated under the devnet dir.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tronAddressFromHex } from '@rgbx/chains/tron';
import { produceBlocks, spawnService, startDevnet, swapDevnetToml, walletNodeToml } from '@rgbx/devnet';
import { deploySwapDevnet } from '@rgbx/devnet/evm-devnode';
import { writeToml } from '@rgbx/service-kit';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const dir = resolve(process.env.RGBX_DEVNET_DIR ?? join(root, '.devnet'));
const children = [];
let devnet;
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
    }),
    { mode: 0o600 },
  );
  endpoints.wallet_node = await startService('wallet node', [
    join(root, 'apps/wallet-node/dist/main.js'),
    '-c',
    join(wn, 'config.toml'),
  ]);

  // Swap service: Bitcoin through the devnet; EVM on a local devnode (EthereumJS) with a test USDC, our
  // Permit2-compatible SignatureTransfer and the SwapEscrow deployed; "Tron" read through the same devnode's
  // Ethereum-compatible JSON-RPC (as a Tron full node's /jsonrpc), with the same contracts; Solana on the
  // litesvm devnode. The swap service fails closed: every network it serves needs a node to read.
  const sw = join(dir, 'swap');
  mkdirSync(sw, { recursive: true });
  const evm = await startService('evm devnode', [join(root, 'packages/devnet/dist/evm-devnode/main.js')], {
    pick: (j) => j.rpc_url && j,
  });
  const keyFile = join(sw, 'preimage.key');
  if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  const chainId = BigInt(evm.chain_id);
  const deployer = evm.accounts[0].private_key;
  // The escrow's refund delay is the swap's refund safety margin (swap.refund_safety_margin_secs, default 3600).
  const margin = 3600;
  // USDC, SignatureTransfer, SwapEscrow in this order from account 0 (nonces 0, 1, 2) as the first
  // transactions of this fresh devnode: always the addresses devnet.toml falls back to (held by
  // packages/devnet/src/evm-devnode/devnet-addresses.test.ts). Send nothing from account 0 before.
  const { usdc, permit2, escrow } = await deploySwapDevnet(evm.rpc_url, chainId, deployer, {
    refundDelaySecs: BigInt(margin),
  });
  endpoints.evm_devnode = { rpc_url: evm.rpc_url, chain_id: evm.chain_id, usdc, permit2, escrow };
  const sol = await startService('solana devnode', [join(root, 'packages/devnet/dist/sol-devnode/main.js')]);
  endpoints.solana_devnode = { rpc_url: sol };
  const swapMain = join(root, 'apps/swap/dist/main.js');
  // The devnet configuration (the same generator as apps/swap/config/devnet.toml) with this run's
  // endpoints, contracts, data directory and port.
  writeFileSync(
    join(sw, 'config.toml'),
    swapDevnetToml(
      {
        service: {
          host: '127.0.0.1',
          port: Number(process.env.RGBX_SWAP_PORT ?? 3100),
          data_dir: join(sw, 'data'),
          preimage_key_file: keyFile,
          log_level: 'info',
        },
        swap: { quote_ttl_secs: 120, intent_ttl_secs: 3600, scheduler_interval_ms: 5000 },
        bitcoin: { electrumUrl: info.electrum },
        evm: {
          rpcUrl: evm.rpc_url,
          chainId: Number(evm.chain_id),
          permit2,
          escrow,
          usdc,
          extra: { min_confirmations: 1 },
        },
        tron: {
          rpcUrl: evm.rpc_url,
          chainId: Number(evm.chain_id),
          permit2: tronAddressFromHex(permit2),
          escrow: tronAddressFromHex(escrow),
          usdt: tronAddressFromHex(usdc),
          extra: { min_confirmations: 1 },
        },
        solana: { rpcUrl: sol, extra: { min_confirmations: 1 } },
      },
      ['written by npm start (swapDevnetToml in packages/devnet)'],
    ),
    { mode: 0o600 },
  );
  const swapUrl = await startService('swap service', [swapMain, '-c', join(sw, 'config.toml')]);
  const swapKeyFile = join(sw, 'dev-api-key');
  if (!existsSync(swapKeyFile)) {
    // A first API key for trying the swap API (X-API-Key), kept (0600) for the next starts.
    const r = spawnSync(
      process.execPath,
      [swapMain, '-c', join(sw, 'config.toml'), 'keys', 'create', '--name', 'dev'],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`swap keys create failed: ${r.stderr}`);
    writeFileSync(swapKeyFile, JSON.parse(r.stdout.trim().split('\n').pop()).key, { mode: 0o600 });
  }
  endpoints.swap = { api: swapUrl, dev_api_key_file: swapKeyFile };

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
  const cloudUrl = await startService('cloud service', [cloudMain, '-c', cloudToml]);
  endpoints.cloud = { api: cloudUrl, console: `${cloudUrl}/console/`, dev_token_file: tokenFile };

  // Blocks by themselves, as on a real chain (RGBX_BLOCK_INTERVAL_SECS, default 5; 0 = only on demand).
  const intervalSecs = Number(process.env.RGBX_BLOCK_INTERVAL_SECS ?? 5);
  if (!(intervalSecs >= 0)) throw new Error(`RGBX_BLOCK_INTERVAL_SECS must be a number of seconds ≥ 0`);
  if (intervalSecs > 0) {
    blocks = produceBlocks({
      devnet,
      intervalMs: intervalSecs * 1000,
      evmRpcUrl: evm.rpc_url,
      onError: (err) => console.error(`npm start: block production: ${err.message}`),
    });
  }
  endpoints.blocks = { interval_secs: intervalSecs, chains: intervalSecs > 0 ? ['bitcoin', 'evm'] : [] };

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
  await devnet.stop();
}

main().catch(async (err) => {
  console.error(`npm start: ${err.message}`);
  stopping = true;
  await blocks?.stop();
  await Promise.allSettled(children.map((c) => c.stop()));
  await devnet?.stop().catch(() => {}); // never leave the devnet running behind a failed start
  process.exit(1);
});
