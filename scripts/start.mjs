// `npm start`: the devnet plus every service on loopback, in the foreground; Ctrl-C stops everything.
// Services run from their build output (`tsc -b` runs first) with configs generated under the devnet dir.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevnet } from '@rgbx/devnet';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const dir = resolve(process.env.RGBX_DEVNET_DIR ?? join(root, '.devnet'));
const children = [];

/** Starts a service process and resolves with the URL from its `{"event":"listening"}` stdout line. */
function startService(name, args) {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(p);
    let out = '';
    let err = '';
    p.stderr.on('data', (d) => {
      err = (err + d).slice(-4000);
    });
    p.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) res(JSON.parse(line).url);
    });
    p.once('exit', (code) => rej(new Error(`${name} exited with ${code}:\n${err}`)));
  });
}

async function main() {
  const devnet = await startDevnet({ dir });
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

  console.info(
    `rgbx is up (state in ${dir}); Ctrl-C stops everything\n${JSON.stringify(endpoints, null, 2)}`,
  );
  await new Promise((r) => {
    process.once('SIGINT', r);
    process.once('SIGTERM', r);
  });
  console.info('stopping…');
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
  for (const c of children) c.kill('SIGTERM');
  process.exit(1);
});
