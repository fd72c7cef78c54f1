// `npm start`: the devnet plus every service on loopback, in the foreground; Ctrl-C stops everything.
// Services run from their build output (`tsc -b` runs first) with configs generated under the devnet dir.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevnet } from '@rgbx/devnet';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const dir = resolve(process.env.RGBX_DEVNET_DIR ?? join(root, '.devnet'));
const children = [];
let devnet;
let stopping = false;

/**
 * Starts a service process and resolves with what `pick` takes from its first matching stdout JSON line
 * (default: the URL of the `{"event":"listening","url"}` line every service prints).
 */
function startService(name, args, { env, pick = (j) => j.event === 'listening' && j.url } = {}) {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    children.push(p);
    let out = '';
    let err = '';
    let started = false;
    p.stderr.on('data', (d) => {
      err = (err + d).slice(-4000);
    });
    p.stdout.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        try {
          const v = pick(JSON.parse(line));
          if (v) {
            started = true;
            out = ''; // nothing more to parse
            return res(v);
          }
        } catch {}
      }
    });
    p.once('exit', (code) => {
      if (!started) rej(new Error(`${name} exited with ${code}:\n${err}`));
      else if (!stopping) console.error(`npm start: ${name} exited unexpectedly (code ${code}):\n${err}`);
    });
  });
}

async function main() {
  devnet = await startDevnet({ dir });
  const info = devnet.info;
  const endpoints = { devnet: info };

  // Wallet node on the devnet.
  const wn = join(dir, 'wallet-node');
  mkdirSync(wn, { recursive: true });
  const rpc = new URL(info.bitcoind.rpc_url);
  writeFileSync(
    join(wn, 'config.toml'),
    [
      '[api]',
      'listen_address = "127.0.0.1"',
      `port = ${process.env.RGBX_WALLET_NODE_PORT ?? 3000}`,
      '',
      '[wallet]',
      `data_dir = "${join(wn, 'data')}"`,
      'network = "regtest"',
      `btc_rpc_address = "${rpc.host}"`,
      `btc_rpc_user = "${info.bitcoind.rpc_user}"`,
      `btc_rpc_password = "${info.bitcoind.rpc_password}"`,
      `indexer_address = "${info.electrum}"`,
      `proxy_address = ["${info.proxy}"]`,
      'refresh_interval_secs = 30',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  endpoints.wallet_node = await startService('wallet node', [
    join(root, 'apps/wallet-node/dist/main.js'),
    '-c',
    join(wn, 'config.toml'),
  ]);

  // Swap service: Bitcoin through the devnet, a local EVM devnode (EthereumJS), Tron and Solana without nodes.
  const sw = join(dir, 'swap');
  mkdirSync(sw, { recursive: true });
  const evm = await startService('evm devnode', [join(root, 'packages/chains/dist/evm-devnode/main.js')], {
    pick: (j) => j.rpc_url && j,
  });
  endpoints.evm_devnode = { rpc_url: evm.rpc_url, chain_id: evm.chain_id };
  const keyFile = join(sw, 'preimage.key');
  if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  const swapConfig = readFileSync(join(root, 'apps/swap/config/devnet.toml'), 'utf8')
    .replace(/^data_dir = .*$/m, `data_dir = "${join(sw, 'data')}"`)
    .replace(/^port = .*$/m, `port = ${process.env.RGBX_SWAP_PORT ?? 3100}`);
  writeFileSync(join(sw, 'config.toml'), swapConfig, { mode: 0o600 });
  endpoints.swap = await startService(
    'swap service',
    [join(root, 'apps/swap/dist/main.js'), '-c', join(sw, 'config.toml')],
    {
      env: {
        SWAP_PREIMAGE_KEY: readFileSync(keyFile, 'utf8').trim(),
        ELECTRUM_URL: info.electrum,
        EVM_RPC_URL: evm.rpc_url,
      },
    },
  );

  // Cloud hosting service with its console; hosted nodes are wallet nodes on this devnet.
  const cl = join(dir, 'cloud');
  mkdirSync(cl, { recursive: true });
  const cloudToml = join(cl, 'cloud.toml');
  writeFileSync(
    cloudToml,
    [
      '[api]',
      'listen_address = "127.0.0.1"',
      `port = ${process.env.RGBX_CLOUD_PORT ?? 3200}`,
      '',
      '[cloud]',
      `data_dir = "${join(cl, 'data')}"`,
      '',
      '[backend]',
      `devnet_dir = "${dir}"`,
      '',
      '[nodes]',
      'stop_on_shutdown = true',
      '',
      '# dev allowlist: webhooks may go to loopback receivers (never in production)',
      '[webhooks]',
      'allow_cidrs = ["127.0.0.0/8", "::1/128"]',
      'allow_http = true',
      '',
    ].join('\n'),
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

  console.info(
    `rgbx is up (state in ${dir}); Ctrl-C stops everything\n${JSON.stringify(endpoints, null, 2)}`,
  );
  await new Promise((r) => {
    process.once('SIGINT', r);
    process.once('SIGTERM', r);
  });
  console.info('stopping…');
  stopping = true;
  await Promise.all(
    children.map(
      (c) =>
        new Promise((r) => {
          if (c.exitCode !== null) return r();
          c.removeAllListeners('exit');
          c.once('exit', r);
          c.kill('SIGTERM');
        }),
    ),
  );
  await devnet.stop();
}

main().catch(async (err) => {
  console.error(`npm start: ${err.message}`);
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  await devnet?.stop().catch(() => {}); // never leave the devnet running behind a failed start
  process.exit(1);
});
