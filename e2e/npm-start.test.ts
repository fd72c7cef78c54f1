/**
 * `npm start`, the README's first command, as a user runs it: the devnet and every service come up on
 * loopback, the printed endpoints answer (with the printed credentials), and Ctrl-C (SIGINT to the
 * process group, as a terminal sends it) stops everything and exits 0. Runs `npm start` itself, so its
 * `tsc -b` step too (incremental: the test run has built already).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ElectrumConnection } from '@rgbx/chains/btc';
import { freePort, isListening, waitFor } from '@rgbx/service-kit';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'rgbx-npm-start-'));

interface Endpoints {
  devnet: { bitcoind: { rpc_url: string }; electrum: string; proxy: string };
  wallet_node: string;
  evm_devnode: { rpc_url: string; chain_id: string; usdc: string };
  solana_devnode: { rpc_url: string };
  swap: { api: string; dev_api_key_file: string };
  resolver: { rfq_url: string; config: string };
  cloud: { api: string; console: string; dev_token_file: string };
  metrics: Record<string, string>;
  blocks: { interval_secs: number; chains: string[] };
}

let child: ChildProcess | undefined;
let output = '';

afterAll(() => {
  // A failed assertion must not leave the devnet running: kill the whole group.
  if (child?.pid && child.exitCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Resolves with the endpoints JSON printed after "rgbx is up"; rejects if the process exits first. */
function endpoints(p: ChildProcess): Promise<Endpoints> {
  return new Promise((resolve, reject) => {
    p.stdout!.on('data', (b: Buffer) => {
      output += b.toString();
      const at = output.indexOf('rgbx is up');
      if (at < 0) return;
      const json = output.slice(output.indexOf('{', at));
      try {
        resolve(JSON.parse(json) as Endpoints);
      } catch {
        // not all printed yet
      }
    });
    p.stderr!.on('data', (b: Buffer) => {
      output += b.toString();
    });
    p.once('exit', (code) => reject(new Error(`npm start exited (${code}) before it was up:\n${output}`)));
  });
}

const rpc = async (url: string, method: string, params: unknown[] = []) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
};

describe('npm start (everything on loopback, Ctrl-C stops it)', () => {
  it('starts the devnet and the services, every printed endpoint answers, SIGINT stops them all', async () => {
    const [walletPort, swapPort, cloudPort, resolverPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    child = spawn('npm', ['start'], {
      cwd: root,
      detached: true, // its own process group, so SIGINT reaches every process as Ctrl-C would
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        RGBX_DEVNET_DIR: dir,
        RGBX_WALLET_NODE_PORT: String(walletPort),
        RGBX_SWAP_PORT: String(swapPort),
        RGBX_CLOUD_PORT: String(cloudPort),
        RGBX_CLOUD_METRICS_PORT: '0', // any free one: never the default 9403 in tests
        RGBX_WALLET_NODE_METRICS_PORT: '0', // nor the wallet node's 9401
        RGBX_RESOLVER_PORT: String(resolverPort),
        RGBX_BLOCK_INTERVAL_SECS: '1',
      },
    });
    const up = await endpoints(child);
    expect(up.wallet_node).toBe(`http://127.0.0.1:${walletPort}`);
    expect(up.swap.api).toBe(`http://127.0.0.1:${swapPort}`);
    expect(up.cloud.api).toBe(`http://127.0.0.1:${cloudPort}`);

    // devnet: bitcoind has mature coins, our Electrum server follows it
    const electrum = new URL(up.devnet.electrum);
    const conn = await ElectrumConnection.connect(up.devnet.electrum);
    try {
      const tip = await conn.request<{ height: number }>('blockchain.headers.subscribe');
      expect(tip.height).toBeGreaterThanOrEqual(101);
      // Blocks come by themselves (every second here): Bitcoin, seen through Electrum, and the EVM devnode.
      expect(up.blocks).toEqual({ interval_secs: 1, chains: ['bitcoin', 'evm'] });
      const evmBefore = BigInt((await rpc(up.evm_devnode.rpc_url, 'eth_blockNumber')) as string);
      await waitFor(
        'two more Bitcoin blocks without a mine call',
        async () =>
          (await conn.request<{ height: number }>('blockchain.headers.subscribe')).height >= tip.height + 2,
        { timeoutMs: 20_000 },
      );
      expect(BigInt((await rpc(up.evm_devnode.rpc_url, 'eth_blockNumber')) as string)).toBeGreaterThan(
        evmBefore,
      );
    } finally {
      conn.close();
    }

    // wallet node
    expect((await fetch(`${up.wallet_node}/healthcheck`)).status).toBe(200);

    // swap: the printed key authenticates, every network's node is reachable (health is 503 otherwise)
    const key = readFileSync(up.swap.dev_api_key_file, 'utf8').trim();
    expect(statSync(up.swap.dev_api_key_file).mode & 0o777).toBe(0o600);
    expect((await fetch(`${up.swap.api}/healthcheck`)).status).toBe(401);
    const health = await fetch(`${up.swap.api}/healthcheck`, { headers: { 'x-api-key': key } });
    expect(health.status, await health.clone().text()).toBe(200);
    const networks = (await (
      await fetch(`${up.swap.api}/networks`, { headers: { 'x-api-key': key } })
    ).json()) as { networks: { type: string }[] };
    expect(new Set(networks.networks.map((n) => n.type))).toEqual(
      new Set(['BITCOIN', 'EVM', 'TRON', 'SOLANA']),
    );

    // The market works by itself: the example script (the README's "A full swap") swaps from fresh user
    // keys with the SDK, the user's side only; the reference resolver that npm start runs fills it.
    expect(up.resolver.rfq_url).toBe(`http://127.0.0.1:${resolverPort}/rfq`);
    // Asynchronously: npm start's output keeps being read meanwhile (a full pipe would stall it).
    const example = await new Promise<{ status: number | null; stdout: string; stderr: string }>((res) => {
      execFile(
        process.execPath,
        ['examples/swap-pairs.mjs', 'BTC->USDC', 'USDC->SOL'],
        { cwd: root, env: { ...process.env, RGBX_DEVNET_DIR: dir }, timeout: 180_000 },
        (err, stdout, stderr) =>
          res({ status: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
      );
    });
    expect(example.status, `${example.stdout}\n${example.stderr}`).toBe(0);
    expect(example.stdout).toMatch(/\[BTC->USDC\] done Fulfilled/);
    expect(example.stdout).toMatch(/\[USDC->SOL\] done Fulfilled/);

    // the EVM devnode holds the deployed test USDC; the Solana devnode answers
    expect(BigInt((await rpc(up.evm_devnode.rpc_url, 'eth_chainId')) as string)).toBe(
      BigInt(up.evm_devnode.chain_id),
    );
    expect(await rpc(up.evm_devnode.rpc_url, 'eth_getCode', [up.evm_devnode.usdc, 'latest'])).toMatch(
      /^0x[0-9a-f]{100,}$/,
    );
    expect(await rpc(up.solana_devnode.rpc_url, 'getHealth')).toBe('ok');

    // cloud: the printed token authenticates; the console is served
    const token = readFileSync(up.cloud.dev_token_file, 'utf8').trim();
    expect((await fetch(`${up.cloud.api}/api/nodes`)).status).toBe(401);
    const nodes = await fetch(`${up.cloud.api}/api/nodes`, { headers: { authorization: `Bearer ${token}` } });
    expect(nodes.status).toBe(200);
    expect(await nodes.json()).toEqual({ data: [] });
    expect((await fetch(up.cloud.console)).headers.get('content-type')).toMatch(/text\/html/);
    // …and its metrics, on their own listener (a free port here), printed with the others.
    expect(up.metrics.cloud).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(up.metrics.cloud).not.toBe('http://127.0.0.1:9403/metrics');
    expect(await (await fetch(up.metrics.cloud!)).text()).toContain('rgbx_cloud_nodes{status="RUNNING"} 0');
    // The wallet node's too (its rgb-lib children, none stuck).
    expect(up.metrics.wallet_node).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(up.metrics.wallet_node).not.toBe('http://127.0.0.1:9401/metrics');
    expect(await (await fetch(up.metrics.wallet_node!)).text()).toContain(
      'rgbx_wallet_node_children{state="stuck"} 0',
    );

    // Ctrl-C: the start script stops every process it started; npm then ends by the signal, as it does
    // for Ctrl-C (npm re-raises it: no exit code), and no port is left listening.
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child!.once('exit', (code, signal) => r({ code, signal })),
    );
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
    expect(output).toContain('stopping…');
    expect(output).not.toMatch(/exited unexpectedly|npm start: /);
    const ports = [
      walletPort,
      swapPort,
      cloudPort,
      resolverPort,
      Number(electrum.port),
      Number(new URL(up.devnet.proxy).port),
      Number(new URL(up.devnet.bitcoind.rpc_url).port),
      Number(new URL(up.evm_devnode.rpc_url).port),
      Number(new URL(up.solana_devnode.rpc_url).port),
    ];
    for (const port of ports)
      await waitFor(`port ${port} closed`, async () => !(await isListening(port)), { timeoutMs: 15_000 });
  }, 300_000);
});
