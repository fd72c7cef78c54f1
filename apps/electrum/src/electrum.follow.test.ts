/**
 * Event-driven follow of bitcoind: the `waitfornewblock` long-poll carries our tip, is aborted at once by
 * stop() (no socket left open), and an idle server makes (almost) no RPC calls while block
 * notifications still arrive promptly. The ZMTP subscriber is checked against a scripted peer.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BitcoindRpc } from '@rgbx/chains/btc';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElectrumClient } from './client.ts';
import { BitcoindFollower, type FollowReason } from './follow.ts';
import { ElectrumServer } from './server.ts';
import { parseZmqAddress, ZmqSubscriber } from './zmq.ts';

const silent = { info() {}, warn() {}, error() {}, debug() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(ok: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('BitcoindFollower against a scripted bitcoind', () => {
  it('passes our tip to waitfornewblock, syncs on a new block only, and stop() closes the held request at once', async () => {
    const waits: unknown[][] = [];
    const held: Array<{ res: ServerResponse; closed: boolean }> = [];
    const http = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const { method, params, id } = JSON.parse(body) as { method: string; params: unknown[]; id: number };
        res.setHeader('content-type', 'application/json');
        if (method !== 'waitfornewblock') {
          res.statusCode = 404;
          res.end(JSON.stringify({ id, result: null, error: { code: -32601, message: 'Method not found' } }));
          return;
        }
        waits.push(params);
        // 1st: a new block; 2nd: a timeout (bitcoind answers its tip, which is ours); then held.
        if (waits.length <= 2) {
          res.end(JSON.stringify({ id, result: { hash: 'bb'.repeat(32), height: 2 }, error: null }));
          return;
        }
        const h = { res, closed: false };
        held.push(h);
        req.socket.on('close', () => {
          h.closed = true;
        });
      });
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
    const port = (http.address() as { port: number }).port;
    const url = `http://127.0.0.1:${port}`;
    let tip = 'aa'.repeat(32);
    const reasons: FollowReason[] = [];
    const f = new BitcoindFollower({
      url,
      user: 'u',
      password: 'p',
      rpc: new BitcoindRpc({ url, user: 'u', password: 'p' }),
      waitMs: 60_000,
      retryMs: 50,
      zmq: true,
      onDegraded: () => {},
      tip: () => tip,
      sync: async (why) => {
        reasons.push(why);
        tip = 'bb'.repeat(32);
        return true;
      },
      logger: silent,
    });
    try {
      f.start();
      await until(() => held.length === 1, 5000, 'the third long-poll');
      expect(waits[0]).toEqual([60_000, 'aa'.repeat(32)]);
      expect(reasons).toEqual(['block']); // the timeout return cost no sync
      // The next waits carry the tip the sync brought, so a block found meanwhile returns at once.
      expect(waits[1]).toEqual([60_000, 'bb'.repeat(32)]);
      expect(waits[2]).toEqual([60_000, 'bb'.repeat(32)]);
      expect(f.waiting).toBe(true);
      expect(f.blocksPushed).toBe(true);
      expect(f.mempoolPushed).toBe(false); // getzmqnotifications refused: the mempool is polled
      const t0 = performance.now();
      f.stop();
      await until(() => held[0]!.closed, 1000, 'the held request to be closed');
      expect(performance.now() - t0).toBeLessThan(1000);
      expect(f.waiting).toBe(false);
      expect(f.blocksPushed).toBe(false);
      await sleep(100);
      expect(waits).toHaveLength(3); // no new long-poll after stop
    } finally {
      f.stop();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });
});

describe('ZmqSubscriber', () => {
  it('does the ZMTP 3 handshake, subscribes to its topic and delivers multipart messages', async () => {
    const got: Buffer[][] = [];
    let subscription: Buffer | null = null;
    const peers: Socket[] = [];
    const tcp = createTcpServer((s) => {
      peers.push(s);
      let buf = Buffer.alloc(0);
      let stage = 0;
      s.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        if (stage === 0 && buf.length >= 64) {
          expect(buf[0]).toBe(0xff);
          expect(buf.subarray(12, 16).toString()).toBe('NULL');
          buf = buf.subarray(64);
          const greeting = Buffer.alloc(64);
          greeting[0] = 0xff;
          greeting[9] = 0x7f;
          greeting[10] = 3;
          greeting[11] = 1;
          greeting.write('NULL', 12);
          const name = Buffer.from('Socket-Type');
          const ready = Buffer.concat([
            Buffer.from([5]),
            Buffer.from('READY'),
            Buffer.from([name.length]),
            name,
            Buffer.from([0, 0, 0, 3]),
            Buffer.from('PUB'),
          ]);
          s.write(Buffer.concat([greeting, Buffer.from([0x04, ready.length]), ready]));
          stage = 1;
        }
        // Their READY command, then the subscription message (0x01 + topic).
        while (stage >= 1 && buf.length >= 2 && buf.length >= 2 + buf[1]!) {
          const flags = buf[0]!;
          const body = buf.subarray(2, 2 + buf[1]!);
          buf = buf.subarray(2 + buf[1]!);
          if (flags & 0x04) expect(body.subarray(1, 6).toString()).toBe('READY');
          else subscription = Buffer.from(body);
        }
      });
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
    const port = (tcp.address() as { port: number }).port;
    const endpoint = parseZmqAddress(`tcp://0.0.0.0:${port}`, '127.0.0.1');
    expect(endpoint).toEqual({ host: '127.0.0.1', port });
    expect(parseZmqAddress('ipc:///tmp/x/zmq.sock', 'h')).toEqual({ path: '/tmp/x/zmq.sock' });
    let closed: Error | null = null;
    const sub = new ZmqSubscriber(
      endpoint!,
      'sequence',
      (m) => got.push(m),
      (e) => {
        closed = e;
      },
    );
    try {
      await sub.ready;
      await until(() => subscription !== null, 2000, 'the subscription');
      expect(subscription!.toString('latin1')).toBe('\x01sequence');
      const long = Buffer.alloc(300, 7);
      // Frames split across writes, one long frame (8-byte size).
      const msg = Buffer.concat([
        Buffer.from([0x01, 8]),
        Buffer.from('sequence'),
        Buffer.from([0x03]),
        Buffer.from([0, 0, 0, 0, 0, 0, 1, 44]),
        long,
        Buffer.from([0x00, 4, 1, 0, 0, 0]),
      ]);
      peers[0]!.write(msg.subarray(0, 5));
      await sleep(20);
      peers[0]!.write(msg.subarray(5));
      await until(() => got.length === 1, 2000, 'the message');
      expect(got[0]!.map((b) => b.length)).toEqual([8, 300, 4]);
      expect(got[0]![0]!.toString()).toBe('sequence');
      expect(got[0]![1]!.equals(long)).toBe(true);
      peers[0]!.destroy();
      await until(() => closed !== null, 2000, 'onClose');
    } finally {
      sub.close();
      await new Promise((r) => tcp.close(r));
    }
  });
});

describe('ElectrumServer following a real bitcoind', () => {
  let devnet: Devnet;
  let dir: string;

  /** Counts the RPCs a server makes through its BitcoindRpc (the long-poll has its own connection). */
  class CountingRpc extends BitcoindRpc {
    calls = 0;
    override call<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
      this.calls++;
      return super.call<T>(method, params);
    }
    override batch(items: Parameters<BitcoindRpc['batch']>[0]): ReturnType<BitcoindRpc['batch']> {
      this.calls++;
      return super.batch(items);
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'electrum-follow-'));
    devnet = await startDevnet({ dir });
  }, 120_000);

  afterAll(async () => {
    await devnet?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function serve(follow: 'events' | 'poll', zmq = true) {
    const b = devnet.info.bitcoind;
    const rpc = new CountingRpc({ url: b.rpc_url, user: b.rpc_user, password: b.rpc_password });
    const server = new ElectrumServer({
      rpc,
      port: 0,
      follow,
      rpcAuth: { user: b.rpc_user, password: b.rpc_password },
      longPollMs: 60_000,
      zmq,
    });
    const { port } = await server.start();
    const c = await ElectrumClient.connect(`tcp://127.0.0.1:${port}`);
    await c.request('server.version', ['follow', '1.4']);
    await c.request('blockchain.headers.subscribe');
    return { rpc, server, c };
  }

  it('makes no RPC while idle in events mode, yet pushes a new tip and a mempool tx promptly (poll mode polls)', async () => {
    const ev = await serve('events');
    const poll = await serve('poll');
    try {
      const addr = await devnet.wallet.call<string>('getnewaddress');
      const { scriptPubKey } = await devnet.wallet.call<{ scriptPubKey: string }>('getaddressinfo', [addr]);
      const sh = createHash('sha256')
        .update(Buffer.from(scriptPubKey, 'hex'))
        .digest()
        .reverse()
        .toString('hex');
      expect(await ev.c.request('blockchain.scripthash.subscribe', [sh])).toBeNull();
      await until(() => ev.server.follower?.waiting === true, 5000, 'the long-poll');
      // The devnet's bitcoind publishes ZMQ `sequence`: found and subscribed by itself.
      await until(() => ev.server.follower?.mempoolPushed === true, 5000, 'the ZMQ feed');
      await sleep(200); // the sync that follows the subscription
      const e0 = ev.rpc.calls;
      const p0 = poll.rpc.calls;
      await sleep(1500);
      const idleEvents = ev.rpc.calls - e0;
      const idlePoll = poll.rpc.calls - p0;
      expect(idlePoll).toBeGreaterThan(10); // the counter sees polling: ~3 calls per 100 ms
      expect(idleEvents).toBe(0);

      const start = await devnet.rpc<number>('getblockcount');
      const t0 = performance.now();
      await devnet.mine(1);
      const n = await ev.c.nextNotification((x) => x.method === 'blockchain.headers.subscribe', 5000);
      expect((n.params[0] as { height: number }).height).toBe(start + 1);
      expect(performance.now() - t0).toBeLessThan(2000);

      const t1 = performance.now();
      const txid = await devnet.fund(addr, '0.001');
      const note = await ev.c.nextNotification(
        (x) => x.method === 'blockchain.scripthash.subscribe' && x.params[0] === sh,
        5000,
      );
      expect(performance.now() - t1).toBeLessThan(2000);
      expect(await ev.c.request('blockchain.scripthash.get_mempool', [sh])).toMatchObject([
        { tx_hash: txid },
      ]);
      expect(note.params[1]).not.toBeNull();
    } finally {
      for (const s of [ev, poll]) {
        s.c.close();
        await s.server.close();
      }
    }
    expect(ev.server.follower?.waiting).toBe(false);
  }, 60_000);

  it('without ZMQ, polls the mempool only while a client is subscribed to a scripthash (one cheap RPC)', async () => {
    const s = await serve('events', false);
    try {
      await until(() => s.server.follower?.waiting === true, 5000, 'the long-poll');
      await sleep(300);
      expect(s.server.follower?.mempoolPushed).toBe(false);
      let c0 = s.rpc.calls;
      await sleep(1000);
      expect(s.rpc.calls - c0).toBe(0); // headers only: the long-poll covers them
      const addr = await devnet.wallet.call<string>('getnewaddress');
      const { scriptPubKey } = await devnet.wallet.call<{ scriptPubKey: string }>('getaddressinfo', [addr]);
      const sh = createHash('sha256')
        .update(Buffer.from(scriptPubKey, 'hex'))
        .digest()
        .reverse()
        .toString('hex');
      await s.c.request('blockchain.scripthash.subscribe', [sh]);
      await sleep(300);
      c0 = s.rpc.calls;
      await sleep(1000);
      const idle = s.rpc.calls - c0;
      expect(idle).toBeGreaterThan(3); // getrawmempool's sequence, ~every 100 ms…
      expect(idle).toBeLessThan(15); // …not the 3-call snapshot of poll mode
      const txid = await devnet.fund(addr, '0.001');
      await s.c.nextNotification(
        (x) => x.method === 'blockchain.scripthash.subscribe' && x.params[0] === sh,
        5000,
      );
      expect(await s.c.request('blockchain.scripthash.get_mempool', [sh])).toMatchObject([{ tx_hash: txid }]);
    } finally {
      s.c.close();
      await s.server.close();
    }
  }, 60_000);

  it('refuses events mode without the long-poll credentials', () => {
    const b = devnet.info.bitcoind;
    const rpc = new BitcoindRpc({ url: b.rpc_url, user: b.rpc_user, password: b.rpc_password });
    expect(() => new ElectrumServer({ rpc, follow: 'events' })).toThrow(/rpcAuth/);
  });
});
