/**
 * Electrum conformance suite against a real devnet: bitcoind 30.2 and our Electrum server as separate
 * processes. Every answer is checked against bitcoind itself or recomputed independently here.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElectrumClient, ElectrumReplyError } from './client.ts';

let devnet: Devnet;
let dir: string;
const clients: ElectrumClient[] = [];

async function client(version: string | string[] = ['1.4', '1.6']): Promise<ElectrumClient> {
  const c = await ElectrumClient.connect(devnet.info.electrum);
  clients.push(c);
  await c.request('server.version', ['conformance', version]);
  return c;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();
const sha256d = (b: Buffer) => sha256(sha256(b));
const rev = (hex: string) => Buffer.from(hex, 'hex').reverse();

async function scripthashOf(address: string): Promise<string> {
  const info = await devnet.wallet.call<{ scriptPubKey: string }>('getaddressinfo', [address]);
  return Buffer.from(sha256(Buffer.from(info.scriptPubKey, 'hex')))
    .reverse()
    .toString('hex');
}

/** Polls until `fn` returns a truthy value (the server follows bitcoind by polling). */
async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let v = await fn();
  while (!ok(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    v = await fn();
  }
  return v;
}

async function tipOf(c: ElectrumClient): Promise<number> {
  return (await c.request<{ height: number }>('blockchain.headers.subscribe')).height;
}

async function waitTip(c: ElectrumClient, height: number): Promise<void> {
  const h = await eventually(
    () => tipOf(c),
    (x) => x === height,
  );
  expect(h).toBe(height);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'electrum-conf-'));
  devnet = await startDevnet({ dir });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('server.*', () => {
  it('negotiates the highest common version of 1.4 and 1.6 on each connection', async () => {
    const cases: Array<[unknown, string]> = [
      [['1.4', '1.6'], '1.6'],
      ['1.4', '1.4'],
      [['1.2', '1.5'], '1.4'],
      [['1.4', '1.7'], '1.6'],
      [undefined, '1.4'],
    ];
    for (const [requested, expected] of cases) {
      const c = await ElectrumClient.connect(devnet.info.electrum);
      clients.push(c);
      const params = requested === undefined ? ['x'] : ['x', requested];
      const [software, v] = await c.request<[string, string]>('server.version', params);
      expect(software).toMatch(/^rgbx-electrum /);
      expect({ requested, v }).toEqual({ requested, v: expected });
    }
  });

  it('answers features, banner, ping, peers and donation address', async () => {
    const c = await client();
    const features = await c.request<Record<string, unknown>>('server.features');
    expect(features.genesis_hash).toBe(await devnet.rpc('getblockhash', [0]));
    expect(features).toMatchObject({
      protocol_min: '1.4',
      protocol_max: '1.6',
      hash_function: 'sha256',
      pruning: null,
    });
    // hosts: the address this server listens on.
    const u = new URL(devnet.info.electrum);
    expect(features.hosts).toEqual({ [u.hostname]: { tcp_port: Number(u.port), ssl_port: null } });
    expect(typeof (await c.request('server.banner'))).toBe('string');
    expect(await c.request('server.ping')).toBeNull();
    expect(await c.request('server.peers.subscribe')).toEqual([]);
    expect(await c.request('server.donation_address')).toBe('');
  });
});

describe('headers', () => {
  it('serves raw headers equal to bitcoind and both blockchain.block.headers forms', async () => {
    const c14 = await client('1.4');
    const c16 = await client('1.6');
    const tip = await devnet.rpc<number>('getblockcount');
    await waitTip(c14, tip);
    for (const h of [0, 1, tip]) {
      const hash = await devnet.rpc<string>('getblockhash', [h]);
      expect(await c14.request('blockchain.block.header', [h])).toBe(
        await devnet.rpc('getblockheader', [hash, false]),
      );
    }
    const r14 = await c14.request<{ count: number; hex: string; max: number }>('blockchain.block.headers', [
      tip - 7,
      8,
    ]);
    const r16 = await c16.request<{ count: number; headers: string[]; max: number }>(
      'blockchain.block.headers',
      [tip - 7, 8],
    );
    expect(r14.count).toBe(8);
    expect(r14.max).toBe(2016);
    expect(r14.hex).toBe(r16.headers.join(''));
    expect(r16.headers).toHaveLength(8);
    expect('hex' in r16).toBe(false);
    // Each header links to the previous one.
    for (let i = 1; i < 8; i++) {
      const prev = Buffer.from(r16.headers[i - 1]!, 'hex');
      expect(Buffer.from(r16.headers[i]!, 'hex').subarray(4, 36).equals(sha256d(prev))).toBe(true);
    }
    // Past the tip: truncated, not an error.
    expect((await c16.request<{ count: number }>('blockchain.block.headers', [tip - 1, 10])).count).toBe(2);
    await expect(c14.request('blockchain.block.header', [tip + 1])).rejects.toThrow(/out of range/);
  });

  it('proves a header against a checkpoint (cp_height)', async () => {
    const c = await client();
    const tip = await tipOf(c);
    const r = await c.request<{ header: string; branch: string[]; root: string }>('blockchain.block.header', [
      3,
      tip,
    ]);
    let node = sha256d(Buffer.from(r.header, 'hex'));
    let idx = 3;
    for (const s of r.branch) {
      node = idx & 1 ? sha256d(Buffer.concat([rev(s), node])) : sha256d(Buffer.concat([node, rev(s)]));
      idx >>= 1;
    }
    expect(Buffer.from(node).reverse().toString('hex')).toBe(r.root);
  });

  it('pushes a headers notification for each new tip', async () => {
    const c = await client();
    const start = await tipOf(c);
    await devnet.mine(1);
    const n = await c.nextNotification((x) => x.method === 'blockchain.headers.subscribe');
    const [{ height, hex }] = n.params as [{ height: number; hex: string }];
    expect(height).toBe(start + 1);
    expect(hex).toBe(await devnet.rpc('getblockheader', [await devnet.rpc('getblockhash', [height]), false]));
  });
});

describe('scripthash and transactions', () => {
  it('follows a payment from mempool to block: history, mempool, balance, utxos, status and notifications', async () => {
    const c = await client();
    const addr = await devnet.wallet.call<string>('getnewaddress');
    const sh = await scripthashOf(addr);
    expect(await c.request('blockchain.scripthash.subscribe', [sh])).toBeNull();
    expect(await c.request('blockchain.scripthash.get_history', [sh])).toEqual([]);

    const txid = await devnet.fund(addr, '0.12345678');
    const note = await c.nextNotification(
      (n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === sh,
    );
    const entry = await devnet.rpc<{ fees: { base: number } }>('getmempoolentry', [txid]);
    const feeSats = Math.round(entry.fees.base * 1e8);
    const mempool = await c.request<Array<{ tx_hash: string; height: number; fee: number }>>(
      'blockchain.scripthash.get_mempool',
      [sh],
    );
    expect(mempool).toEqual([{ tx_hash: txid, height: 0, fee: feeSats }]);
    expect(await c.request('blockchain.scripthash.get_history', [sh])).toEqual(mempool);
    expect(await c.request('blockchain.scripthash.get_balance', [sh])).toEqual({
      confirmed: 0,
      unconfirmed: 12_345_678,
    });
    const utxos = await c.request<Array<{ tx_hash: string; tx_pos: number; height: number; value: number }>>(
      'blockchain.scripthash.listunspent',
      [sh],
    );
    expect(utxos).toHaveLength(1);
    expect(utxos[0]).toMatchObject({ tx_hash: txid, height: 0, value: 12_345_678 });
    const expectedStatus = (entries: Array<{ tx_hash: string; height: number }>) =>
      createHash('sha256')
        .update(entries.map((e) => `${e.tx_hash}:${e.height}:`).join(''))
        .digest('hex');
    expect(note.params[1]).toBe(expectedStatus(mempool));

    const [blockHash] = await devnet.mine(1);
    const height = await devnet.rpc<number>('getblockcount');
    const note2 = await c.nextNotification(
      (n) => n.method === 'blockchain.scripthash.subscribe' && n.params[0] === sh,
    );
    const history = await c.request<Array<{ tx_hash: string; height: number }>>(
      'blockchain.scripthash.get_history',
      [sh],
    );
    expect(history).toEqual([{ tx_hash: txid, height }]);
    expect(note2.params[1]).toBe(expectedStatus(history));
    expect(await c.request('blockchain.scripthash.get_mempool', [sh])).toEqual([]);
    expect(await c.request('blockchain.scripthash.get_balance', [sh])).toEqual({
      confirmed: 12_345_678,
      unconfirmed: 0,
    });
    expect(await c.request('blockchain.scripthash.listunspent', [sh])).toEqual([
      { tx_hash: txid, tx_pos: utxos[0]!.tx_pos, height, value: 12_345_678 },
    ]);
    const block = await devnet.rpc<{ tx: string[] }>('getblock', [blockHash, 1]);
    expect(block.tx).toContain(txid);

    // Spending it: history gains the spend, balance goes to zero, the utxo disappears.
    const dest = await devnet.wallet.call<string>('getnewaddress');
    const spendHex = await devnet.wallet.call<{ hex: string }>('createrawtransaction', [
      [{ txid, vout: utxos[0]!.tx_pos }],
      [{ [dest]: '0.12' }],
    ]);
    const signed = await devnet.wallet.call<{ hex: string }>('signrawtransactionwithwallet', [spendHex]);
    const spendId = await c.request<string>('blockchain.transaction.broadcast', [signed.hex]);
    const afterSpend = await eventually(
      () => c.request<Array<{ tx_hash: string; height: number }>>('blockchain.scripthash.get_history', [sh]),
      (h) => h.length === 2,
    );
    expect(afterSpend[1]).toMatchObject({ tx_hash: spendId, height: 0 });
    expect(await c.request('blockchain.scripthash.get_balance', [sh])).toEqual({
      confirmed: 12_345_678,
      unconfirmed: -12_345_678,
    });
    expect(await c.request('blockchain.scripthash.listunspent', [sh])).toEqual([]);
    expect(await c.request('blockchain.scripthash.unsubscribe', [sh])).toBe(true);
  });

  it('marks a mempool tx spending an unconfirmed parent with height -1', async () => {
    const c = await client();
    const a = await devnet.wallet.call<string>('getnewaddress');
    const parent = await devnet.fund(a, '0.5');
    const vout = (
      await devnet.rpc<{ vout: Array<{ scriptPubKey: { address?: string } }> }>('getrawtransaction', [
        parent,
        true,
      ])
    ).vout.findIndex((o) => o.scriptPubKey.address === a);
    const b = await devnet.wallet.call<string>('getnewaddress');
    const raw = await devnet.wallet.call<string>('createrawtransaction', [
      [{ txid: parent, vout }],
      [{ [b]: '0.499' }],
    ]);
    const signed = await devnet.wallet.call<{ hex: string }>('signrawtransactionwithwallet', [raw]);
    const child = await c.request<string>('blockchain.transaction.broadcast', [signed.hex]);
    await expect(c.request('blockchain.scripthash.get_history', [''])).rejects.toThrow(/64 hex characters/);
    const shB = await scripthashOf(b);
    const hB = await eventually(
      () =>
        c.request<Array<{ tx_hash: string; height: number; fee: number }>>(
          'blockchain.scripthash.get_history',
          [shB],
        ),
      (h) => h.length === 1,
    );
    expect(hB).toEqual([{ tx_hash: child, height: -1, fee: 10_000_000 - 9_900_000 }]);
    await devnet.mine(1);
  });

  it('returns raw and verbose transactions exactly as bitcoind, with rgb-lib error texts', async () => {
    const c = await client();
    const addr = await devnet.wallet.call<string>('getnewaddress');
    const txid = await devnet.fund(addr, '0.01');
    const rawHex = await c.request<string>('blockchain.transaction.get', [txid]);
    expect(rawHex).toBe(await devnet.rpc('getrawtransaction', [txid, false]));
    expect(await c.request('blockchain.transaction.get', [txid, false])).toBe(rawHex);
    const memVerbose = await c.request<Record<string, unknown>>('blockchain.transaction.get', [txid, true]);
    expect(memVerbose.hex).toBe(rawHex);
    expect(memVerbose).not.toHaveProperty('confirmations');
    expect(memVerbose).not.toHaveProperty('blocktime');
    await devnet.mine(2);
    await waitTip(c, await devnet.rpc<number>('getblockcount'));
    const verbose = await c.request<Record<string, unknown>>('blockchain.transaction.get', [txid, true]);
    expect(verbose).toEqual(await devnet.rpc('getrawtransaction', [txid, true]));
    expect(verbose.confirmations).toBe(2);
    expect(typeof verbose.blocktime).toBe('number');
    // Numbers keep bitcoind's text (e.g. "0.01000000"), not a float re-rendering.
    const line = c.lines.at(-1)!;
    expect(line).toMatch(/"value":0\.01000000/);

    const missing = 'ab'.repeat(32);
    const e1 = await c
      .request('blockchain.transaction.get', [missing, true])
      .catch((e: ElectrumReplyError) => e);
    expect(e1).toBeInstanceOf(ElectrumReplyError);
    expect((e1 as Error).message).toContain('No such mempool or blockchain transaction');
    const genesisCoinbase = '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b';
    for (const verboseFlag of [false, true]) {
      const e = await c
        .request('blockchain.transaction.get', [genesisCoinbase, verboseFlag])
        .catch((x: Error) => x);
      expect((e as Error).message).toContain(
        'genesis block coinbase is not considered an ordinary transaction',
      );
    }
  });

  it('serves merkle proofs that verify against the block header, and id_from_pos', async () => {
    const c = await client();
    const txids: string[] = [];
    for (let i = 0; i < 11; i++)
      txids.push(await devnet.fund(await devnet.wallet.call<string>('getnewaddress'), '0.001'));
    const [hash] = await devnet.mine(1);
    const height = await devnet.rpc<number>('getblockcount');
    await waitTip(c, height);
    const block = await devnet.rpc<{ tx: string[] }>('getblock', [hash, 1]);
    expect(block.tx.length).toBe(12);
    const header = Buffer.from(await c.request<string>('blockchain.block.header', [height]), 'hex');
    const root = header.subarray(36, 68);
    for (const txid of block.tx) {
      const p = await c.request<{ block_height: number; merkle: string[]; pos: number }>(
        'blockchain.transaction.get_merkle',
        [txid, height],
      );
      expect(p.block_height).toBe(height);
      expect(p.pos).toBe(block.tx.indexOf(txid));
      let node = rev(txid);
      let idx = p.pos;
      for (const s of p.merkle) {
        node = idx & 1 ? sha256d(Buffer.concat([rev(s), node])) : sha256d(Buffer.concat([node, rev(s)]));
        idx >>= 1;
      }
      expect(node.equals(root)).toBe(true);
      expect(await c.request('blockchain.transaction.id_from_pos', [height, p.pos])).toBe(txid);
      expect(await c.request('blockchain.transaction.id_from_pos', [height, p.pos, true])).toEqual({
        tx_hash: txid,
        merkle: p.merkle,
      });
    }
    await expect(c.request('blockchain.transaction.get_merkle', [block.tx[1], height - 1])).rejects.toThrow(
      /not in the block/,
    );
    await expect(c.request('blockchain.transaction.id_from_pos', [height, 99])).rejects.toThrow(
      /no tx at position 99/,
    );
  });

  it('passes bitcoind broadcast errors through unchanged', async () => {
    const c = await client();
    const e = (await c
      .request('blockchain.transaction.broadcast', ['00'])
      .catch((x) => x)) as ElectrumReplyError;
    const direct = (await devnet.rpc('sendrawtransaction', ['00']).catch((x) => x)) as {
      code: number;
      message: string;
    };
    expect(e.code).toBe(direct.code);
    expect(e.message).toBe(direct.message);
    await expect(c.request('blockchain.transaction.broadcast', ['zz'])).rejects.toThrow(
      /raw transaction hex/,
    );
  });

  it('answers fee methods: estimatefee fallback on regtest, relayfee and histogram', async () => {
    const c = await client();
    expect(await c.request('blockchain.estimatefee', [6])).toBe(0.00001);
    const net = await devnet.rpc<{ relayfee: number }>('getnetworkinfo');
    expect(await c.request('blockchain.relayfee')).toBe(net.relayfee);
    await devnet.fund(await devnet.wallet.call<string>('getnewaddress'), '0.01');
    const hist = await eventually(
      () => c.request<Array<[number, number]>>('mempool.get_fee_histogram'),
      (h) => h.length > 0,
    );
    expect(hist[0]![0]).toBeGreaterThan(0);
    expect(hist[0]![1]).toBeGreaterThan(0);
    await devnet.mine(1);
  });
});

describe('reorg', () => {
  it('rolls history back on invalidateblock and follows the new chain', async () => {
    const c = await client();
    const addr = await devnet.wallet.call<string>('getnewaddress');
    const sh = await scripthashOf(addr);
    const txid = await devnet.fund(addr, '0.2');
    const [h1] = await devnet.mine(1);
    const height = await devnet.rpc<number>('getblockcount');
    await waitTip(c, height);
    expect(await c.request('blockchain.scripthash.get_history', [sh])).toEqual([{ tx_hash: txid, height }]);
    const oldHeader = await c.request<string>('blockchain.block.header', [height]);

    await devnet.rpc('invalidateblock', [h1]);
    await waitTip(c, height - 1);
    const hist = await eventually(
      () => c.request<Array<{ tx_hash: string; height: number }>>('blockchain.scripthash.get_history', [sh]),
      (h) => h[0]?.height === 0,
    );
    expect(hist).toMatchObject([{ tx_hash: txid, height: 0 }]);
    await expect(c.request('blockchain.transaction.get_merkle', [txid, height])).rejects.toThrow();

    // A different block at the same height (a new coinbase address makes it different), then one more.
    await devnet.mine(2, await devnet.wallet.call<string>('getnewaddress'));
    await waitTip(c, height + 1);
    const newHeader = await c.request<string>('blockchain.block.header', [height]);
    expect(newHeader).not.toBe(oldHeader);
    const after = await c.request<Array<{ tx_hash: string; height: number }>>(
      'blockchain.scripthash.get_history',
      [sh],
    );
    expect(after).toEqual([{ tx_hash: txid, height }]);
    const p = await c.request<{ merkle: string[]; pos: number }>('blockchain.transaction.get_merkle', [
      txid,
      height,
    ]);
    expect(p.pos).toBeGreaterThan(0);
    await devnet.rpc('reconsiderblock', [h1]); // the old branch is shorter; the tip stays ours
    expect(await devnet.rpc('getblockcount')).toBe(height + 1);
  });
});

describe('reorg of a block that creates and spends the same output', () => {
  it('leaves no resurrected confirmed UTXO after invalidateblock', async () => {
    const c = await client();
    const a = await devnet.wallet.call<string>('getnewaddress');
    const shA = await scripthashOf(a);
    const parent = await devnet.fund(a, '0.3');
    const tx = await devnet.rpc<{ vout: Array<{ scriptPubKey: { address?: string } }> }>(
      'getrawtransaction',
      [parent, true],
    );
    const vout = tx.vout.findIndex((o) => o.scriptPubKey.address === a);
    const b = await devnet.wallet.call<string>('getnewaddress');
    const raw = await devnet.wallet.call<string>('createrawtransaction', [
      [{ txid: parent, vout }],
      [{ [b]: '0.299' }],
    ]);
    const signed = await devnet.wallet.call<{ hex: string }>('signrawtransactionwithwallet', [raw]);
    await devnet.rpc('sendrawtransaction', [signed.hex]);
    const [hash] = await devnet.mine(1); // parent and child in one block
    await waitTip(c, await devnet.rpc<number>('getblockcount'));
    expect(await c.request('blockchain.scripthash.get_balance', [shA])).toEqual({
      confirmed: 0,
      unconfirmed: 0,
    });
    await devnet.rpc('invalidateblock', [hash]);
    const bal = await eventually(
      () => c.request<{ confirmed: number; unconfirmed: number }>('blockchain.scripthash.get_balance', [shA]),
      (x) => x.confirmed === 0 && x.unconfirmed === 0,
    );
    // Both txs are back in the mempool: A's output exists only there, already spent by the child.
    expect(bal).toEqual({ confirmed: 0, unconfirmed: 0 });
    expect(await c.request('blockchain.scripthash.listunspent', [shA])).toEqual([]);
    const hist = await c.request<Array<{ height: number }>>('blockchain.scripthash.get_history', [shA]);
    expect(hist.map((h) => h.height).sort()).toEqual([-1, 0]);
    await devnet.rpc('reconsiderblock', [hash]);
    await devnet.mine(1);
  });
});

describe('robustness', () => {
  it('answers malformed input with JSON-RPC errors and keeps the connection', async () => {
    const c = await client();
    const before = c.lines.length;
    c.writeRaw('this is not json\n');
    c.writeRaw('[]\n');
    c.writeRaw('42\n');
    c.writeRaw('{"id":5,"method":"no.such.method","params":[]}\n');
    c.writeRaw('{"id":6,"method":"blockchain.block.header","params":["x"]}\n');
    c.writeRaw('{"id":7,"method":"blockchain.scripthash.get_history","params":{"a":1}}\n');
    c.writeRaw('[{"id":8,"method":"server.ping"},{"id":9,"method":"server.banner"}]\n');
    const lines = (await c.waitLines(before + 7)).slice(before).map((l) => JSON.parse(l));
    expect(lines[0].error.code).toBe(-32700);
    expect(lines[1].error.code).toBe(-32600);
    expect(lines[2].error.code).toBe(-32600);
    expect(lines[3]).toMatchObject({ id: 5, error: { code: -32601 } });
    expect(lines[4]).toMatchObject({ id: 6, error: { code: -32602 } });
    expect(lines[4].error.message).toMatch(/expected height as an integer/);
    expect(lines[5]).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(lines[6]).toEqual([
      { jsonrpc: '2.0', id: 8, result: null },
      { jsonrpc: '2.0', id: 9, result: expect.any(String) },
    ]);
    expect(await c.request('server.ping')).toBeNull();
  });

  it('closes a connection whose line exceeds the limit, without affecting others', async () => {
    const victim = await client();
    const other = await client();
    victim.writeRaw(Buffer.alloc(9 * 1024 * 1024, 0x61));
    const deadline = Date.now() + 10_000;
    while (!victim.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(victim.closed).toBe(true);
    expect(JSON.parse(victim.lines.at(-1)!).error.message).toMatch(/longer than/);
    expect(await other.request('server.ping')).toBeNull();
  });

  it('answers every arbitrary request line with exactly one JSON-RPC reply (property)', async () => {
    const c = await client();
    const methods = [
      'server.ping',
      'blockchain.block.header',
      'blockchain.scripthash.get_history',
      'blockchain.transaction.get',
      'blockchain.transaction.get_merkle',
      'blockchain.block.headers',
      'blockchain.estimatefee',
      'blockchain.transaction.id_from_pos',
      'nope',
    ];
    const arbLine = fc.oneof(
      // Well-framed requests with arbitrary params.
      fc
        .record({
          id: fc.integer({ min: 1, max: 1e9 }),
          method: fc.constantFrom(...methods),
          params: fc.array(fc.jsonValue(), { maxLength: 4 }),
        })
        .map((r) => JSON.stringify(r)),
      // Arbitrary text without newlines (parse errors or invalid requests).
      fc
        .string({ maxLength: 200 })
        .map((x) => x.replace(/[\r\n]/g, ' '))
        .filter((x) => x.trim().length > 0),
    );
    await fc.assert(
      fc.asyncProperty(arbLine, async (line) => {
        const before = c.lines.length;
        c.writeRaw(`${line}\n`);
        const lines = await c.waitLines(before + 1);
        expect(lines.length).toBe(before + 1);
        const reply = JSON.parse(lines[before]!);
        expect(reply.jsonrpc).toBe('2.0');
        expect('result' in reply || typeof reply.error?.code === 'number').toBe(true);
      }),
      { numRuns: 150 },
    );
    expect(await c.request('server.ping')).toBeNull();
  });

  it('serves many concurrent clients', async () => {
    const many = await Promise.all(Array.from({ length: 60 }, () => client()));
    const tip = await devnet.rpc<number>('getblockcount');
    const results = await Promise.all(
      many.flatMap((c) =>
        Array.from({ length: 10 }, (_, i) => c.request<string>('blockchain.block.header', [tip - i])),
      ),
    );
    expect(results).toHaveLength(600);
    expect(new Set(results).size).toBe(10);
  });
});

/** A wallet-signed transaction spending `inputs` to `outputs` (amounts in satoshis); not broadcast. */
async function signedTx(
  inputs: Array<{ txid: string; vout: number; sats: number; scriptPubKey: string }>,
  outputs: Array<{ address: string; sats: number }>,
): Promise<{ hex: string; txid: string }> {
  const btc = (sats: number) => (sats / 1e8).toFixed(8);
  const raw = await devnet.wallet.call<string>('createrawtransaction', [
    inputs.map((i) => ({ txid: i.txid, vout: i.vout })),
    outputs.map((o) => ({ [o.address]: btc(o.sats) })),
  ]);
  const signed = await devnet.wallet.call<{ hex: string; complete: boolean }>(
    'signrawtransactionwithwallet',
    [
      raw,
      inputs.map((i) => ({ txid: i.txid, vout: i.vout, scriptPubKey: i.scriptPubKey, amount: btc(i.sats) })),
    ],
  );
  expect(signed.complete).toBe(true);
  const { txid } = await devnet.rpc<{ txid: string }>('decoderawtransaction', [signed.hex]);
  return { hex: signed.hex, txid };
}

const newAddress = () => devnet.wallet.call<string>('getnewaddress');
const spkOf = async (address: string) =>
  (await devnet.wallet.call<{ scriptPubKey: string }>('getaddressinfo', [address])).scriptPubKey;

/** `n` fresh confirmed coins of 1 BTC each (one sendmany, one block), for transactions built by hand. */
async function takeCoins(
  n: number,
): Promise<Array<{ txid: string; vout: number; sats: number; scriptPubKey: string }>> {
  const addrs = await Promise.all(Array.from({ length: n }, () => newAddress()));
  const txid = await devnet.wallet.call<string>('sendmany', [
    '',
    Object.fromEntries(addrs.map((a) => [a, '1'])),
  ]);
  await devnet.mine(1);
  const tx = await devnet.rpc<{
    vout: Array<{ n: number; scriptPubKey: { address?: string; hex: string } }>;
  }>('getrawtransaction', [txid, true]);
  return addrs.map((a) => {
    const o = tx.vout.find((v) => v.scriptPubKey.address === a)!;
    return { txid, vout: o.n, sats: 100_000_000, scriptPubKey: o.scriptPubKey.hex };
  });
}

describe('protocol rules', () => {
  it('closes the connection after a failed version negotiation (error 1)', async () => {
    for (const requested of ['1.2', ['1.0', '1.3'], '2.0', { v: 1 }, 'x']) {
      const c = await ElectrumClient.connect(devnet.info.electrum);
      clients.push(c);
      const e = (await c.request('server.version', ['x', requested]).catch((x) => x)) as ElectrumReplyError;
      expect(e).toBeInstanceOf(ElectrumReplyError);
      expect(e.code).toBe(1);
      expect(e.message).toMatch(/unsupported protocol version/);
      const deadline = Date.now() + 5_000;
      while (!c.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect({ requested, closed: c.closed }).toEqual({ requested, closed: true });
    }
  });

  it('accepts only the first server.version of a connection; the negotiated version stays', async () => {
    const c = await ElectrumClient.connect(devnet.info.electrum);
    clients.push(c);
    expect((await c.request<[string, string]>('server.version', ['x', '1.4']))[1]).toBe('1.4');
    const again = (await c
      .request('server.version', ['x', ['1.4', '1.6']])
      .catch((x) => x)) as ElectrumReplyError;
    expect(again).toBeInstanceOf(ElectrumReplyError);
    expect({ code: again.code, message: again.message }).toEqual({
      code: 1,
      message: 'server.version already sent',
    });
    // Still 1.4: block.headers answers the concatenated-hex form, and the connection stays open.
    const r = await c.request<Record<string, unknown>>('blockchain.block.headers', [0, 2]);
    expect(r).toHaveProperty('hex');
    expect(r).not.toHaveProperty('headers');
    expect(c.closed).toBe(false);
  });

  it('ignores extraneous server.version arguments (1.6), positional or named', async () => {
    const a = await ElectrumClient.connect(devnet.info.electrum);
    clients.push(a);
    expect(
      (
        await a.request<[string, string]>('server.version', [
          'electrum/4.6.2',
          ['1.4', '1.6'],
          'trailing',
          9999.9,
          {},
        ])
      )[1],
    ).toBe('1.6');
    const b = await ElectrumClient.connect(devnet.info.electrum);
    clients.push(b);
    b.writeRaw(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server.version', params: { client_name: 'n', protocol_version: ['1.4', '1.6'], dd: {} } })}\n`,
    );
    const [line] = await b.waitLines(1);
    expect(JSON.parse(line!)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: [expect.stringMatching(/^rgbx-electrum /), '1.6'],
    });
  });

  it('accepts params by name (the protocol names) and refuses unknown names', async () => {
    const c = await client();
    const tip = await tipOf(c);
    const hash = await devnet.rpc<string>('getblockhash', [tip]);
    const block = await devnet.rpc<{ tx: string[] }>('getblock', [hash, 1]);
    const sh = await scripthashOf(await newAddress());
    const send = async (method: string, params: unknown) => {
      const before = c.lines.length;
      c.writeRaw(`${JSON.stringify({ jsonrpc: '2.0', id: 77, method, params })}\n`);
      return JSON.parse((await c.waitLines(before + 1))[before]!);
    };
    expect((await send('blockchain.block.header', { height: tip })).result).toBe(
      await devnet.rpc('getblockheader', [hash, false]),
    );
    expect((await send('blockchain.block.headers', { start_height: tip, count: 1 })).result.count).toBe(1);
    expect((await send('blockchain.scripthash.get_balance', { scripthash: sh })).result).toEqual({
      confirmed: 0,
      unconfirmed: 0,
    });
    expect((await send('blockchain.transaction.get', { tx_hash: block.tx[0], verbose: false })).result).toBe(
      await devnet.rpc('getrawtransaction', [block.tx[0], false]),
    );
    expect((await send('blockchain.transaction.id_from_pos', { height: tip, tx_pos: 0 })).result).toBe(
      block.tx[0],
    );
    expect(
      (await send('blockchain.transaction.get_merkle', { tx_hash: block.tx[0], height: tip })).result.pos,
    ).toBe(0);
    expect((await send('blockchain.estimatefee', { number: 2 })).result).toBe(0.00001);
    const unknown = await send('blockchain.scripthash.get_balance', { scripthash: sh, extra: 1 });
    expect(unknown.error.code).toBe(-32602);
    expect(unknown.error.message).toMatch(/unknown parameter "extra"; its parameters are scripthash/);
    const missing = await send('blockchain.scripthash.get_balance', {});
    expect(missing.error.code).toBe(-32602);
    expect(missing.error.message).toMatch(/expected scripthash as 64 hex characters/);
  });

  it('lists unspent outputs in blockchain order: by block, then by position in the block', async () => {
    const c = await client();
    const target = await newAddress();
    const sh = await scripthashOf(target);
    const [coin] = await takeCoins(1);
    const changeAddr = await newAddress();
    const change = coin!.sats - 30_000_000 - 10_000;
    // A pays the target at output 1; B, A's child (so after A in the block), pays it at output 0.
    const a = await signedTx(
      [coin!],
      [
        { address: changeAddr, sats: change },
        { address: target, sats: 30_000_000 },
      ],
    );
    const b = await signedTx(
      [{ txid: a.txid, vout: 0, sats: change, scriptPubKey: await spkOf(changeAddr) }],
      [
        { address: target, sats: 20_000_000 },
        { address: changeAddr, sats: change - 20_000_000 - 10_000 },
      ],
    );
    await devnet.rpc('sendrawtransaction', [a.hex]);
    await devnet.rpc('sendrawtransaction', [b.hex]);
    const [hash] = await devnet.mine(1);
    const height = await devnet.rpc<number>('getblockcount');
    await waitTip(c, height);
    const order = (await devnet.rpc<{ tx: string[] }>('getblock', [hash, 1])).tx;
    expect(order.indexOf(a.txid)).toBeLessThan(order.indexOf(b.txid));
    expect(await c.request('blockchain.scripthash.listunspent', [sh])).toEqual([
      { tx_hash: a.txid, tx_pos: 1, height, value: 30_000_000 },
      { tx_hash: b.txid, tx_pos: 0, height, value: 20_000_000 },
    ]);
  });

  it('broadcasts a package through submitpackage (1.6): success, per-tx errors, malformed packages', async () => {
    const c = await client();
    const [c1, c2, c3] = await takeCoins(3);
    const parentAddr = await newAddress();
    const childAddr = await newAddress();
    const shChild = await scripthashOf(childAddr);
    const parent = await signedTx([c1!], [{ address: parentAddr, sats: c1!.sats - 20_000 }]);
    const child = await signedTx(
      [{ txid: parent.txid, vout: 0, sats: c1!.sats - 20_000, scriptPubKey: await spkOf(parentAddr) }],
      [{ address: childAddr, sats: c1!.sats - 40_000 }],
    );
    expect(await c.request('blockchain.transaction.broadcast_package', [[parent.hex, child.hex]])).toEqual({
      success: true,
    });
    const mempool = await devnet.rpc<string[]>('getrawmempool');
    expect(mempool).toEqual(expect.arrayContaining([parent.txid, child.txid]));
    // Visible at once (the mempool view syncs before the next index answer).
    expect(await c.request('blockchain.scripthash.get_mempool', [shChild])).toEqual([
      { tx_hash: child.txid, height: -1, fee: 20_000 },
    ]);

    // A child that double-spends a coin already spent in the mempool with a higher fee: rejected per tx.
    const spender = await signedTx([c2!], [{ address: await newAddress(), sats: c2!.sats - 1_000_000 }]);
    await devnet.rpc('sendrawtransaction', [spender.hex]);
    const p2Addr = await newAddress();
    const p2 = await signedTx([c3!], [{ address: p2Addr, sats: c3!.sats - 20_000 }]);
    const badChild = await signedTx(
      [{ txid: p2.txid, vout: 0, sats: c3!.sats - 20_000, scriptPubKey: await spkOf(p2Addr) }, c2!],
      [{ address: await newAddress(), sats: c3!.sats - 20_000 + c2!.sats - 20_000 }],
    );
    const verbose = await c.request<Record<string, unknown>>('blockchain.transaction.broadcast_package', [
      [p2.hex, badChild.hex],
      true,
    ]);
    expect(verbose).toHaveProperty('package_msg');
    expect(verbose).toHaveProperty('tx-results');
    const failed = await c.request<{ success: boolean; errors?: Array<{ txid: string; error: string }> }>(
      'blockchain.transaction.broadcast_package',
      [[p2.hex, badChild.hex]],
    );
    expect(failed.success).toBe(false);
    expect(failed.errors).toEqual([
      { txid: badChild.txid, error: expect.stringMatching(/fee|replace|conflict/i) },
    ]);

    // Not a package bitcoind accepts at all: its RPC error, passed through like broadcast's.
    const direct = (await devnet
      .rpc('submitpackage', [[child.hex, parent.hex, child.hex]])
      .catch((x) => x)) as { code: number; message: string };
    const viaElectrum = (await c
      .request('blockchain.transaction.broadcast_package', [[child.hex, parent.hex, child.hex]])
      .catch((x) => x)) as ElectrumReplyError;
    expect(viaElectrum).toBeInstanceOf(ElectrumReplyError);
    expect({ code: viaElectrum.code, message: viaElectrum.message }).toEqual({
      code: direct.code,
      message: direct.message,
    });
    await expect(c.request('blockchain.transaction.broadcast_package', [[]])).rejects.toThrow(
      /non-empty array/,
    );
    await expect(c.request('blockchain.transaction.broadcast_package', ['00'])).rejects.toThrow(
      /non-empty array/,
    );
    await devnet.mine(1);
  });
});
