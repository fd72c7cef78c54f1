/**
 * How the node reads indexer failures (indexer.ts): the messages rgb-lib 0.3 and our own Electrum client give (as
 * recorded on the devnet), the back-off, the background turns, the connection gate and the probe's diagnosis.
 * The 503s on real processes are `e2e/wallet-node.scale.test.ts`.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { ElectrumUnavailableError } from '@rgbx/chains/btc';
import { RgbLibError } from '@rgbx/rgb';
import type { Logger } from '@rgbx/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyIndexerError, IndexerDownError, IndexerHealth } from './indexer.ts';

const rgbLib = (message: string) =>
  new RgbLibError({ kind: 'rgb-lib', variant: /^RgbLib\((\w+)/.exec(message)![1]!, message });

/** Recorded on the devnet (Electrum server at max_connections, then stopped). */
const INVALID_INDEXER = 'RgbLib(InvalidIndexer { details: "not a valid electrum nor esplora server" })';
const STOPPED =
  'RgbLib(Indexer { details: "Electrum error: Made one or multiple attempts, all errored:\\n\\t- unexpected EOF\\n\\t- ' +
  'Made one or multiple attempts, all errored:\\n\\t- Connection refused (os error 111)\\n\\n" })';
const HUNG =
  'RgbLib(Indexer { details: "Electrum error: Made one or multiple attempts, all errored:\\n\\t- Resource temporarily unavailable (os error 11)" })';

function logger() {
  const lines: Array<{ level: string; msg: string }> = [];
  const at = (level: string) => (_o: object, msg: string) => lines.push({ level, msg });
  const log = {
    info: at('info'),
    warn: at('warn'),
    debug: at('debug'),
    error: at('error'),
  } as unknown as Logger;
  return { log, lines };
}

describe('classifyIndexerError', () => {
  it('reads rgb-lib refusals, outages and hangs, and our client errors; leaves everything else alone', () => {
    expect(classifyIndexerError(rgbLib(INVALID_INDEXER), 3)).toMatchObject({
      kind: 'refused',
      source: 'InvalidIndexer',
    });
    // goOnline against a server that accepts and never answers gives up after ~10 s with the same variant.
    expect(classifyIndexerError(rgbLib(INVALID_INDEXER), 10_200)?.kind).toBe('timeout');
    expect(classifyIndexerError(rgbLib(STOPPED))).toMatchObject({ kind: 'refused', source: 'Indexer' });
    expect(classifyIndexerError(rgbLib(HUNG))?.kind).toBe('timeout');
    expect(
      classifyIndexerError(rgbLib('RgbLib(Indexer { details: "Electrum error: connection reset by peer" })'))
        ?.kind,
    ).toBe('dropped');
    expect(
      classifyIndexerError(
        rgbLib(
          'RgbLib(Indexer { details: "Electrum server error: {\\"code\\":2,\\"message\\":\\"bitcoind unreachable\\"}" })',
        ),
      )?.kind,
    ).toBe('error');
    expect(classifyIndexerError(new ElectrumUnavailableError('tcp://x:1', 'ECONNREFUSED'))?.kind).toBe(
      'refused',
    );
    // Closed before server.version: a full server refusing us.
    expect(classifyIndexerError(new ElectrumUnavailableError('tcp://x:1', 'connection closed'))?.kind).toBe(
      'refused',
    );
    expect(
      classifyIndexerError(new ElectrumUnavailableError('tcp://x:1', 'no connection within 10 ms'))?.kind,
    ).toBe('timeout');
    const down = new IndexerDownError({ kind: 'refused', detail: 'ECONNREFUSED', source: 'probe' });
    expect(classifyIndexerError(down)).toBe(down.problem);
    expect(
      classifyIndexerError(rgbLib('RgbLib(InsufficientBitcoins { needed: 1, available: 0 })')),
    ).toBeNull();
    expect(classifyIndexerError(new Error('boom'))).toBeNull();
  });
});

describe('IndexerHealth', () => {
  let now = 1_000_000;
  const clock = () => now;
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });

  it('backs off 1 s doubling to 30 s, logs the outage once (not per failure), and clears on success', () => {
    const { log, lines } = logger();
    const h = new IndexerHealth('tcp://i:1', log, { now: clock, probe: async () => 'v' });
    const p = { kind: 'refused' as const, detail: 'x', source: 'InvalidIndexer' };
    expect(h.fail(p, false)).toBe(1);
    expect(h.fail(p, false)).toBe(2);
    expect(h.fail(p, false)).toBe(4);
    for (let i = 0; i < 20; i++) h.fail(p, false);
    expect(h.retryAfterSecs()).toBe(30);
    expect(h.state()).toMatchObject({ state: 'unavailable', consecutive_failures: 23, retry_after_secs: 30 });
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
    now += 61_000;
    h.fail(p, false); // a summary line at most once a minute
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      expect.stringMatching(/^indexer unavailable/),
      'indexer still unavailable',
    ]);
    h.ok();
    expect(h.state()).toMatchObject({ state: 'ok', consecutive_failures: 0 });
    expect(lines.at(-1)?.msg).toBe('indexer available again');
  });

  it('gives the background one turn per back-off period while unavailable, every turn while available', () => {
    const { log } = logger();
    const h = new IndexerHealth('tcp://i:1', log, { now: clock, probe: async () => 'v' });
    expect([h.backgroundTurn(), h.backgroundTurn()]).toEqual([true, true]);
    h.fail({ kind: 'dropped', detail: 'x', source: 'Indexer' }, false);
    expect(h.backgroundTurn()).toBe(false); // within the 1 s back-off
    now += 1_000;
    expect([h.backgroundTurn(), h.backgroundTurn()]).toEqual([true, false]);
    now += 2_000;
    expect(h.backgroundTurn()).toBe(true);
  });

  it('holds at most `reserve` connections of its own at once', async () => {
    const { log } = logger();
    const h = new IndexerHealth('tcp://i:1', log, { reserve: 2 });
    let active = 0;
    let max = 0;
    await Promise.all(
      Array.from({ length: 7 }, () =>
        h.withConnection(async () => {
          active++;
          max = Math.max(max, active);
          await new Promise((r) => setTimeout(r, 5));
          active--;
        }),
      ),
    );
    expect(max).toBe(2);
  });

  it('tells a down indexer (nothing listening) from a full one (closes new connections): only the first is knownDown', async () => {
    now = Date.now();
    // A port with nothing listening.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const { log } = logger();
    const dead = new IndexerHealth(`tcp://127.0.0.1:${deadPort}`, log, { now: () => now });
    dead.fail({ kind: 'refused', detail: 'x', source: 'InvalidIndexer' });
    await new Promise((r) => setTimeout(r, 100));
    expect(dead.knownDown()).toBe(true);
    expect(dead.state().last_probe).toMatchObject({ ok: false, detail: 'ECONNREFUSED' });
    now += 60_000; // back-off over: calls try for real again
    expect(dead.knownDown()).toBe(false);

    // A full server: accepts and closes at once.
    const full = createServer((s: Socket) => s.destroy());
    servers.push(full);
    await new Promise<void>((r) => full.listen(0, '127.0.0.1', r));
    const fullPort = (full.address() as { port: number }).port;
    const h = new IndexerHealth(`tcp://127.0.0.1:${fullPort}`, log, { now: () => now });
    h.fail({ kind: 'refused', detail: 'x', source: 'InvalidIndexer' });
    await new Promise((r) => setTimeout(r, 100));
    expect(h.state()).toMatchObject({ state: 'unavailable', last_probe: { ok: false } });
    expect(h.knownDown()).toBe(false);
  });
});
