/**
 * Wallet events without rgb-lib: the diff of two snapshots, the per-wallet log (ids, retention, resume, a crash
 * between the log and its state, a torn line), and the SSE stream over a real HTTP socket (resume by id with no
 * duplicates, a reader that does not read: the node stops writing, then drops it).
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVENTS_FILE, EVENTS_STATE_FILE, EventLog } from './log.ts';
import { diffSnapshots, emptySnapshot, type Snapshot, snapshotOf, type WalletState } from './state.ts';
import { EventStream, resumePoint } from './stream.ts';

const HOUR = 3_600_000;

function transfer(idx: number, status: string, extra: Partial<WalletState['transfers'][number]> = {}) {
  return {
    idx,
    batchTransferIdx: idx,
    createdAt: 0,
    updatedAt: 0,
    status,
    requestedAssignment: { Fungible: 100n },
    assignments: [],
    kind: 'ReceiveBlind',
    txid: null,
    recipientId: `utxob:${idx}`,
    receiveUtxo: null,
    changeUtxo: null,
    expirationTimestamp: null,
    transportEndpoints: [],
    invoiceString: null,
    consignmentPath: null,
    psbtPath: null,
    assetId: 'rgb:A',
    ...extra,
  } as WalletState['transfers'][number];
}

const state = (transfers: WalletState['transfers'], balances: WalletState['balances'] = {}): Snapshot =>
  snapshotOf({ transfers, balances });

describe('diff', () => {
  it('gives one event per status change and per balance change, in order, none when equal', () => {
    const a = state([transfer(1, 'WaitingCounterparty'), transfer(2, 'Settled')], {
      'rgb:A': { settled: 0n, future: 100n, spendable: 0n },
    });
    expect(diffSnapshots(a, a)).toEqual([]);
    const b = state(
      [
        transfer(1, 'WaitingConfirmations', { txid: 'aa', assignments: [{ Fungible: 100n }] }),
        transfer(2, 'Settled'),
        transfer(3, 'WaitingCounterparty', { assetId: null, requestedAssignment: 'Any' }),
      ],
      {
        'rgb:A': { settled: 100n, future: 100n, spendable: 100n },
        'rgb:B': { settled: 0n, future: 0n, spendable: 0n },
      },
    );
    const d = diffSnapshots(a, b);
    expect(
      d.map((e) =>
        e.type === 'transfer'
          ? `${e.idx}:${e.old_status}>${e.new_status}`
          : `bal:${e.type === 'balance' ? e.asset_id : ''}`,
      ),
    ).toEqual([
      '1:WaitingCounterparty>WaitingConfirmations',
      '3:null>WaitingCounterparty',
      'bal:rgb:A',
      'bal:rgb:B',
    ]);
    expect(d[0]).toMatchObject({
      txid: 'aa',
      amount: '100',
      requested_amount: '100',
      asset_id: 'rgb:A',
      kind: 'ReceiveBlind',
    });
    expect(d[1]).toMatchObject({ asset_id: null, requested_amount: null });
    expect(d[2]).toMatchObject({
      old: { settled: '0', future: '100' },
      new: { settled: '100', spendable: '100' },
    });
    expect(d[3]).toMatchObject({ old: null });
  });

  it('keeps u64 amounts exact (decimal strings)', () => {
    const big = 18_446_744_073_709_551_615n;
    const s = state([
      transfer(1, 'Settled', { requestedAssignment: { Fungible: big }, assignments: [{ Fungible: big }] }),
    ]);
    expect(diffSnapshots(emptySnapshot(), s)[0]).toMatchObject({
      amount: big.toString(),
      requested_amount: big.toString(),
    });
  });
});

describe('log', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'wallet-events-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the first snapshot of a wallet with no state as its baseline (no event), then diffs', () => {
    const log = EventLog.open(dir, 'abcd0123', HOUR);
    expect(log.observe(state([transfer(1, 'Settled')]), 'call')).toEqual([]);
    expect(log.lastId).toBe(0);
    const ev = log.observe(state([transfer(1, 'Settled'), transfer(2, 'WaitingCounterparty')]), 'refresh');
    expect(ev).toMatchObject([
      { id: 1, type: 'transfer', idx: 2, old_status: null, wallet: 'abcd0123', source: 'refresh' },
    ]);
  });

  it('numbers events from 1, survives a restart without replaying anything, and reads after an id', () => {
    const log = EventLog.open(dir, 'abcd0123', HOUR);
    log.baseline();
    log.observe(state([transfer(1, 'WaitingCounterparty')]), 'call');
    log.observe(state([transfer(1, 'WaitingConfirmations')]), 'refresh');
    log.observe(state([transfer(1, 'Settled')]), 'refresh');
    // A restart: a new log object on the same files, the same wallet state observed again gives nothing.
    const again = EventLog.open(dir, 'abcd0123', HOUR);
    expect(again.lastId).toBe(3);
    expect(again.observe(state([transfer(1, 'Settled')]), 'refresh')).toEqual([]);
    expect(again.read(0, 100).map((e) => e.id)).toEqual([1, 2, 3]);
    expect(again.read(1, 100).map((e) => (e.type === 'transfer' ? e.new_status : ''))).toEqual([
      'WaitingConfirmations',
      'Settled',
    ]);
    expect(again.read(3, 100)).toEqual([]);
  });

  it('repairs a crash between the log append and the state (no event twice) and a torn last line', () => {
    const log = EventLog.open(dir, 'abcd0123', HOUR);
    log.baseline();
    log.observe(state([transfer(1, 'WaitingCounterparty')]), 'call');
    const stateBefore = readFileSync(join(dir, EVENTS_STATE_FILE), 'utf8');
    log.observe(state([transfer(1, 'Settled')]), 'refresh');
    // The crash: the state file as it was before the second append, and half a line after it.
    writeFileSync(join(dir, EVENTS_STATE_FILE), stateBefore);
    appendFileSync(join(dir, EVENTS_FILE), '{"id":3,"type":"tra');
    const reopened = EventLog.open(dir, 'abcd0123', HOUR);
    expect(reopened.lastId).toBe(2);
    expect(reopened.observe(state([transfer(1, 'Settled')]), 'refresh')).toEqual([]);
    const next = reopened.observe(
      state([transfer(1, 'Settled'), transfer(2, 'WaitingCounterparty')]),
      'call',
    );
    expect(next.map((e) => e.id)).toEqual([3]);
    expect(reopened.read(0, 100).map((e) => e.id)).toEqual([1, 2, 3]);
  });

  it('drops events past the retention; ids go on; a resume from before them is told (reset), one from after is not', () => {
    const log = EventLog.open(dir, 'abcd0123', HOUR);
    log.baseline();
    const t0 = Date.parse('2025-01-01T00:00:00Z');
    log.observe(state([transfer(1, 'WaitingCounterparty')]), 'call', t0);
    log.observe(state([transfer(1, 'Settled')]), 'call', t0 + 1000);
    log.observe(state([transfer(1, 'Settled'), transfer(2, 'WaitingCounterparty')]), 'call', t0 + 2 * HOUR);
    // Pruned by the append itself (at most once a minute), and not again.
    expect(log.prunedThrough).toBe(2);
    expect(log.prune(t0 + 2 * HOUR + 1)).toBe(0);
    expect(log.read(0, 100).map((e) => e.id)).toEqual([3]);
    expect(resumePoint(log, 0)).toMatchObject({ cursor: 2, reset: { reason: 'expired' } });
    expect(resumePoint(log, 1).reset?.reason).toBe('expired');
    expect(resumePoint(log, 2)).toEqual({ cursor: 2 });
    expect(resumePoint(log, 3)).toEqual({ cursor: 3 });
    expect(resumePoint(log, 9)).toMatchObject({ cursor: 3, reset: { reason: 'unknown' } });
    expect(resumePoint(log, undefined)).toEqual({ cursor: 3 });
    const reopened = EventLog.open(dir, 'abcd0123', HOUR);
    const next = reopened.observe(
      state([transfer(2, 'Settled'), transfer(1, 'Settled')]),
      'call',
      t0 + 3 * HOUR,
    );
    expect(next.map((e) => e.id)).toEqual([4]);
  });
});

describe('stream', () => {
  let dir: string;
  let server: Server;
  let log: EventLog;
  const streams: EventStream[] = [];
  let closed = 0;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wallet-events-'));
    log = EventLog.open(dir, 'abcd0123', HOUR);
    log.baseline();
    closed = 0;
    server = createServer((req, res) => {
      const h = req.headers['last-event-id'];
      const { cursor } = resumePoint(log, typeof h === 'string' ? Number(h) : undefined);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`retry: 1000\nid: ${cursor}\n\n`);
      const s = new EventStream(log, res, cursor, { heartbeatMs: 50, stallMs: 500, onClose: () => closed++ });
      streams.push(s);
      s.start();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterEach(async () => {
    for (const s of streams.splice(0)) s.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const url = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  /** Appends n transfer events (one new transfer each) and offers them to the open streams, as the hub does. */
  let nextIdx = 1;
  function emit(n: number): void {
    for (let i = 0; i < n; i++) {
      const snap = structuredClone(log.snapshot);
      snap.transfers[nextIdx] = state([transfer(nextIdx, 'WaitingCounterparty')]).transfers[nextIdx]!;
      nextIdx++;
      const ev = log.observe(snap, 'refresh');
      for (const s of streams) s.offer(ev);
    }
  }

  async function readIds(
    lastEventId: string | undefined,
    until: (ids: number[]) => boolean,
  ): Promise<number[]> {
    const ac = new AbortController();
    const res = await fetch(url(), {
      headers: lastEventId ? { 'last-event-id': lastEventId } : {},
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = '';
    const ids: number[] = [];
    while (!until(ids)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
      const frames = text.split('\n\n');
      text = frames.pop()!;
      for (const f of frames) {
        const m = /^id: (\d+)\nevent: (transfer|begin_released)\n/.exec(f);
        if (m) ids.push(Number(m[1]));
      }
    }
    ac.abort();
    return ids;
  }

  it('sends live events and, on a resume with Last-Event-ID, exactly the ones after it', async () => {
    emit(3);
    const live = readIds(undefined, (ids) => ids.length >= 2);
    await new Promise((r) => setTimeout(r, 100));
    emit(2);
    expect(await live).toEqual([4, 5]);
    // Missed while away: 6..8; resuming after 5 gives them once each, then live ones.
    emit(3);
    const resumed = readIds('5', (ids) => ids.length >= 5);
    await new Promise((r) => setTimeout(r, 100));
    emit(2);
    expect(await resumed).toEqual([6, 7, 8, 9, 10]);
    expect(await readIds('0', (ids) => ids.length >= 10)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('stops writing to a reader that does not read, then drops it; its resume gets everything once', async () => {
    // A raw socket that never reads: the node may only fill the socket buffers, never its own memory.
    const port = (server.address() as AddressInfo).port;
    const sock = connect(port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    sock.pause();
    await new Promise((r) => setTimeout(r, 100));
    // More than loopback's socket buffers take (~450 bytes per event).
    const big = 20_000;
    const heapBefore = process.memoryUsage().heapUsed;
    for (let i = 0; i < 20; i++) {
      const released = Array.from({ length: big / 20 }, (_, j) => ({
        type: 'begin_released' as const,
        reason: 'expired' as const,
        txid: `${i}-${j}`.padEnd(64, '0'),
        released: ['0'.repeat(64) + ':0'],
        failed_batch_transfer_idx: null,
      }));
      const ev = log.append(released, 'begin_ttl');
      for (const st of streams) st.offer(ev);
    }
    // The node wrote what the socket took, then stopped: the stream's cursor is far behind the log.
    const s = streams[0]!;
    expect(s.cursor).toBeLessThan(big);
    // Nothing drains for stallMs: dropped.
    for (let i = 0; i < 50 && closed === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(1);
    expect(s.cursor).toBeLessThan(big);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    sock.destroy();
    // The client resumes from what it got; here from 0: every event, once.
    const ids = await readIds('0', (x) => x.length >= big);
    expect(ids.length).toBe(big);
    expect(new Set(ids).size).toBe(big);
    expect(ids[0]).toBe(1);
    expect(ids.at(-1)).toBe(big);
  });
});
