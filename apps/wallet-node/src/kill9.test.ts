/**
 * kill -9 of the wallet node's main process while a wallet call is blocked in its rgb-lib child, then a
 * restart on the same data_dir: no child of the killed node survives and the wallet answers normally (the
 * reported bug: an orphaned child kept the wallet open and the restarted node got "database is locked").
 *
 * The built process (`npx tsc -b` first), no devnet: the blocking call is `/wallet/register`, whose
 * `goOnline` waits ~10 s on an indexer that accepts connections and never answers.
 */
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceProcess } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerOffline, startWalletNode, syntheticIdentity } from './test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'wn-kill9-'));
const dataDir = join(dir, 'data');
const pidDir = join(dataDir, '.children');
const config = join(dir, 'wallet-node.toml');
const ID = syntheticIdentity('c0ffee01');

// A hung indexer: accepts, reads, never answers (while `refuse` is set it hangs up at once instead).
const sockets = new Set<Socket>();
let onConnection: (() => void) | undefined;
let refuse = true;
const hung = createServer((s) => {
  if (refuse) {
    s.destroy();
    return;
  }
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
  s.on('error', () => {});
  onConnection?.();
});
const nextConnection = () => new Promise<void>((r) => (onConnection = r));

let node: ServiceProcess<string>;
const stopped: number[] = [];

/** `/proc/<pid>/stat` → state and ppid, or undefined once the process is gone. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}
/** Runs (a zombie, killed and not yet reaped by whoever adopted it, holds nothing any more). */
const running = (pid: number) => {
  const s = stat(pid)?.state;
  return s !== undefined && s !== 'Z' && s !== 'X';
};
/** Every running rgb-lib child recorded in this data_dir, whoever its parent. */
function rgbChildren(): Array<{ pid: number; ppid: number }> {
  const out: Array<{ pid: number; ppid: number }> = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    let cmd: string[];
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (cmd.includes(`--rgbx-rgb-child=${pidDir}`) && running(pid)) out.push({ pid, ppid: stat(pid)!.ppid });
  }
  return out;
}

async function post(path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${node.value}${path}`, { method: 'POST', headers: ID });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  hung.listen(0, '127.0.0.1');
  await once(hung, 'listening');
  const port = (hung.address() as { port: number }).port;
  writeFileSync(
    config,
    [
      '[api]',
      'port = 0',
      '[metrics]', // any free port: never the default 9401 in tests
      'port = 0',
      '[wallet]',
      `data_dir = ${JSON.stringify(dataDir)}`,
      'network = "regtest"',
      'btc_rpc_address = "127.0.0.1:18443"',
      'btc_rpc_user = "u"',
      'btc_rpc_password = "p"',
      `indexer_address = "tcp://127.0.0.1:${port}"`,
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      'workers = 1',
      'check_indexer_at_start = false',
      '',
    ].join('\n'),
  );
  node = await startWalletNode(config);
  // The wallet exists on disk before the first crash: register creates it (only it may), then fails to go
  // online fast against an indexer that hangs up; from then on the indexer hangs.
  await registerOffline(node.value, ID);
  refuse = false;
  expect(await post('/wallet/listassets')).toEqual({
    status: 200,
    body: { nia: [], uda: [], cfa: [], ifa: [] },
  });
}, 60_000);

afterAll(async () => {
  await node?.stop();
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  for (const s of sockets) s.destroy();
  hung.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('kill -9 of the wallet node while its child is blocked in a wallet call', () => {
  it.each([
    ['right after the request was sent', 'sent'],
    ['as the child starts the blocking goOnline', 'started'],
    ['3 s into the blocked goOnline', 'blocked'],
    ['blocked, with the child SIGSTOPped (its watchdog cannot run): the restart kills it', 'stopped'],
  ] as const)(
    '%s',
    async (_name, point) => {
      const old = node;
      const kids = rgbChildren();
      expect(kids).toEqual([{ pid: expect.any(Number), ppid: old.proc.pid }]);
      const kid = kids[0]!.pid;

      const connected = nextConnection();
      const req = request(`${old.value}/wallet/register`, {
        method: 'POST',
        headers: { ...ID, 'content-length': '0' },
      });
      req.on('error', () => {}); // the node dies under it
      req.end();
      await once(req, 'finish');
      if (point !== 'sent') await connected; // the child is inside goOnline: blocked
      if (point === 'blocked') await new Promise((r) => setTimeout(r, 3_000));
      if (point === 'stopped') {
        process.kill(kid, 'SIGSTOP');
        stopped.push(kid);
      }

      const exited = once(old.proc, 'exit');
      const t = performance.now();
      old.proc.kill('SIGKILL');
      await exited;
      if (point === 'stopped') {
        await new Promise((r) => setTimeout(r, 600));
        expect(running(kid)).toBe(true); // an orphan that nothing but the next start can stop
      } else {
        while (running(kid) && performance.now() - t < 2_000) await new Promise((r) => setTimeout(r, 5));
        const ms = performance.now() - t;
        console.info(`[wallet-node] kill -9 ${point}: child gone ${ms.toFixed(0)} ms after the main process`);
        expect(running(kid)).toBe(false);
      }

      node = await startWalletNode(config);
      expect(running(kid)).toBe(false);
      const now = rgbChildren();
      expect(now).toEqual([{ pid: expect.any(Number), ppid: node.proc.pid }]);
      expect(readdirSync(pidDir)).toEqual([`child-${now[0]!.pid}.pid`]);
      if (point === 'stopped') {
        expect(node.stderr()).toMatch(/"killed":1.*killed leftover rgb-lib children of a previous instance/);
      } else {
        expect(node.stderr()).not.toContain('killed leftover');
      }

      // The wallet is open in the new child only: reads and writes answer normally.
      expect(await post('/wallet/listassets')).toEqual({
        status: 200,
        body: { nia: [], uda: [], cfa: [], ifa: [] },
      });
      const address = await post('/wallet/address');
      expect(address.status).toBe(200);
      expect(address.body).toMatch(/^bcrt1/);
    },
    60_000,
  );

  it('a clean stop leaves no pid file behind', async () => {
    await node.stop();
    expect(readdirSync(pidDir)).toEqual([]);
    expect(rgbChildren()).toEqual([]);
  });
});
