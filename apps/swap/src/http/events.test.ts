/**
 * The event feeds over real sockets (SSE needs a listening server; inject does not stream), on
 * SQLite and PostgreSQL: each status change once and in order on Surface A, Surface B and the
 * resolver API; resume with Last-Event-ID; scopes; retention reset; limits; heartbeats; a clean
 * stop; two instances on one PostgreSQL; the SDK iterator reconnecting by itself. Transitions need
 * no chain: an EVM permit2 intent (allowance not checked), its approval, the resolver's decline, expiry.
 */
import { type A, TRIGGERS } from '@rgbx/contracts/swap';
import { ResolverClient, SwapClient, type SwapQuote, signPermit2Approval } from '@rgbx/sdk';
import { sha256 } from '@rgbx/service-kit';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSwapApp, type SwapApp } from '../app.ts';
import { loadConfig, type SwapConfig } from '../config.ts';
import { TRANSITIONS } from '../domain/lifecycle.ts';
import { createApiKey } from '../store/api-keys.ts';
import { openSwapDatabase } from '../store/database.ts';
import {
  DIALECTS,
  ESCROW,
  NET,
  PERMIT2,
  RESOLVER_KEY,
  testClock,
  testConfigToml,
  testDatabases,
  USDC,
} from '../test-support.ts';

const dbs = testDatabases();
const OTHER_RESOLVER_KEY = `rgbx_resolver_${'o'.repeat(43)}`;
const EXTRA = `
[[resolvers]]
id = "other"
name = "Other resolver"
api_key_sha256 = "${sha256(OTHER_RESOLVER_KEY).toString('hex')}"
`;
const POLL_MS = 50;

interface Instance extends SwapApp {
  url: string;
  close(): Promise<void>;
}

async function startInstance(
  databaseUrl: string,
  now: () => number,
  swap: Partial<SwapConfig['swap']> = {},
): Promise<Instance> {
  const config = loadConfig({ text: testConfigToml({ databaseUrl, intentTtlSecs: 600, extra: EXTRA }) }, {});
  Object.assign(config.swap, { event_poll_ms: POLL_MS, event_heartbeat_secs: 1, ...swap });
  const opened = await openSwapDatabase(config.databaseUrl);
  const built = buildSwapApp({ config, db: opened.db, dialect: opened.dialect, now });
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = built.app.server.address() as { port: number };
  return {
    ...built,
    url: `http://127.0.0.1:${addr.port}`,
    async close() {
      await built.app.close();
      await opened.close();
    },
  };
}

interface Frame {
  id: string | undefined;
  event: string | undefined;
  data: unknown;
  comment: boolean;
}

/** A raw SSE reader: every frame (events, heartbeats, the opening `id:`) as it arrives. */
async function openStream(base: string, path: string, key: string, lastEventId?: string) {
  const ac = new AbortController();
  const res = await fetch(base + path, {
    headers: { 'x-api-key': key, ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
    signal: ac.signal,
  });
  const frames: Frame[] = [];
  const arrivals: number[] = [];
  let ended = false;
  const done = (async () => {
    if (!res.ok || !res.body) return;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i = buf.indexOf('\n\n');
        while (i !== -1) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f: Frame = { id: undefined, event: undefined, data: undefined, comment: false };
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) f.comment = true;
            else if (line.startsWith('id: ')) f.id = line.slice(4);
            else if (line.startsWith('event: ')) f.event = line.slice(7);
            else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
          }
          frames.push(f);
          arrivals.push(performance.now());
          i = buf.indexOf('\n\n');
        }
      }
    } catch {
      // aborted by close()
    }
    ended = true;
  })();
  return {
    res,
    frames,
    arrivals,
    events: () => frames.filter((f) => f.event !== undefined),
    ended: () => ended,
    done,
    close: async () => {
      ac.abort();
      await done;
    },
  };
}

async function until(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function call(inst: Instance, method: 'GET' | 'POST', url: string, key: string, payload?: object) {
  const res = await inst.app.inject({
    method,
    url,
    headers: { 'x-api-key': key },
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
}

/** A permit2 intent (Initiated); `approve` and `decline` move it. */
async function makeIntent(inst: Instance, key: string) {
  const owner = privateKeyToAccount(generatePrivateKey());
  const q = await call(inst, 'POST', '/quote', key, {
    sourceChain: NET.evm,
    sourceToken: USDC,
    destChain: NET.btc,
    destToken: 'BTC',
    amountLots: '250000000',
  });
  expect(q.status, JSON.stringify(q.body)).toBe(200);
  const r = await call(inst, 'POST', '/intents', key, {
    quoteId: (q.body as SwapQuote).quoteId,
    sourceAddress: owner.address,
    refundAddress: owner.address,
    destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const created = r.body as { intentId: string; permit2: never };
  return {
    id: created.intentId,
    approve: async () => {
      const body = await signPermit2Approval(
        created.permit2,
        { signTypedData: (td) => owner.signTypedData(td as never) },
        { chainId: 31337, permit2Address: PERMIT2, escrowAddress: ESCROW, token: USDC, amount: 250_000_000n },
      );
      const a = await call(inst, 'POST', `/intents/${created.intentId}/approvals`, key, body);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
    },
    decline: async () => {
      const d = await call(
        inst,
        'POST',
        `/resolver/v1/intents/${created.intentId}/decline`,
        RESOLVER_KEY,
        {},
      );
      expect(d.status, JSON.stringify(d.body)).toBe(200);
    },
  };
}

async function makeIntentDecline(inst: Instance, id: string) {
  const d = await call(inst, 'POST', `/resolver/v1/intents/${id}/decline`, RESOLVER_KEY, {});
  expect(d.status, JSON.stringify(d.body)).toBe(200);
}

describe.each(DIALECTS)('event feeds on %s', (dialect) => {
  let s: Instance;
  const clock = testClock();
  let keyA: string;
  let keyB: string;

  let url: string;

  beforeAll(async () => {
    url = dbs.url(dialect);
    s = await startInstance(url, clock.now);
  });
  afterAll(async () => {
    await s?.close();
  });

  async function freshKeys() {
    keyA = (await createApiKey(s.ctx.db, `a-${crypto.randomUUID()}`)).key;
    keyB = (await createApiKey(s.ctx.db, `b-${crypto.randomUUID()}`)).key;
  }

  const intent = (key: string) => makeIntent(s, key);

  const moves = (frames: Frame[]) =>
    frames.map((f) => {
      const d = f.data as Record<string, unknown>;
      return `${d.intentId ?? d.intent_id}:${d.from}>${d.to}`;
    });

  it('streams each status change once, in order, on Surface A, Surface B and the resolver API; scopes hold', async () => {
    await freshKeys();
    const a = await openStream(s.url, '/events', keyA);
    const b = await openStream(s.url, '/affiliate/v1/events', keyA);
    const r = await openStream(s.url, '/resolver/v1/events', RESOLVER_KEY);
    const other = await openStream(s.url, '/resolver/v1/events', OTHER_RESOLVER_KEY);
    const tenantB = await openStream(s.url, '/events', keyB);
    expect(a.res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await until(() => a.frames.length > 0 && tenantB.frames.length > 0, 5000, 'opening ids');

    const latencies: number[] = [];
    const x = await intent(keyA);
    let t = performance.now();
    await until(() => a.events().length === 1, 5000, 'create');
    latencies.push(a.arrivals.at(-1)! - t);
    await x.approve();
    t = performance.now();
    await until(() => a.events().length === 2, 5000, 'approve');
    latencies.push(a.arrivals.at(-1)! - t);
    await x.decline();
    t = performance.now();
    await until(() => a.events().length === 3, 5000, 'decline');
    latencies.push(a.arrivals.at(-1)! - t);
    const y = await intent(keyB); // tenant B's: A never sees it
    await until(() => tenantB.events().length === 1 && r.events().length === 4, 5000, 'tenant B');
    await until(() => b.events().length === 3, 5000, 'surface B');
    await new Promise((res) => setTimeout(res, POLL_MS * 4));

    const expected = [
      `${x.id}:null>Initiated`,
      `${x.id}:Initiated>ApprovalAdded`,
      `${x.id}:ApprovalAdded>Declined`,
    ];
    expect(moves(a.events())).toEqual(expected);
    expect(moves(b.events())).toEqual(expected);
    expect(moves(r.events())).toEqual([...expected, `${y.id}:null>Initiated`]);
    expect(moves(tenantB.events())).toEqual([`${y.id}:null>Initiated`]);
    expect(other.events()).toEqual([]);

    const ids = a.events().map((f) => Number(f.id));
    expect([...ids].sort((p, q) => p - q)).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
    expect(b.events().map((f) => f.id)).toEqual(a.events().map((f) => f.id));
    const first = a.events()[0]!.data as A.IntentEvent;
    expect(first).toEqual({
      intentId: x.id,
      from: null,
      to: 'Initiated',
      trigger: 'create',
      at: new Date(clock.now()).toISOString(),
    });
    expect(b.events()[2]!.data).toEqual({
      intent_id: x.id,
      from: 'ApprovalAdded',
      to: 'Declined',
      trigger: 'decline',
      at: expect.any(String),
    });
    expect(r.events()[1]!.data).toMatchObject({
      intent_id: x.id,
      to: 'ApprovalAdded',
      deadline_secs: expect.any(Number),
    });
    console.info(
      `[${dialect}] transition → event latency (poll ${POLL_MS} ms): ${latencies.map((l) => l.toFixed(0)).join(', ')} ms`,
    );
    for (const st of [a, b, r, other, tenantB]) await st.close();
  });

  it('a subscriber that disconnects mid-way and resumes with Last-Event-ID misses nothing and sees nothing twice', async () => {
    await freshKeys();
    const first = await openStream(s.url, '/events', keyA);
    const x = await intent(keyA);
    await until(() => first.events().length === 1, 5000, 'create');
    await first.close();
    const last = first.events()[0]!.id!;
    await x.approve();
    await x.decline();
    const y = await intent(keyA);
    const again = await openStream(s.url, '/events', keyA, last);
    await until(() => again.events().length === 3, 5000, 'catch-up');
    await y.approve();
    await until(() => again.events().length === 4, 5000, 'live after catch-up');
    await new Promise((res) => setTimeout(res, POLL_MS * 4));
    expect(moves([...first.events(), ...again.events()])).toEqual([
      `${x.id}:null>Initiated`,
      `${x.id}:Initiated>ApprovalAdded`,
      `${x.id}:ApprovalAdded>Declined`,
      `${y.id}:null>Initiated`,
      `${y.id}:Initiated>ApprovalAdded`,
    ]);
    // A client that saw no event resumes from the position the stream opened at.
    const quiet = await openStream(s.url, '/events', keyA);
    await until(() => quiet.frames.length > 0, 5000, 'opening id');
    const pos = quiet.frames[0]!.id!;
    await quiet.close();
    const z = await intent(keyA);
    const resumed = await openStream(s.url, '/events', keyA, pos);
    await until(() => resumed.events().length === 1, 5000, 'missed creation');
    expect(moves(resumed.events())).toEqual([`${z.id}:null>Initiated`]);
    await resumed.close();
    await again.close();
  });

  it('heartbeats carry the position; a Last-Event-ID beyond retention or unknown answers event: reset', async () => {
    await freshKeys();
    const st = await openStream(s.url, '/events', keyA);
    await new Promise((res) => setTimeout(res, 2300));
    const beats = st.frames.filter((f) => f.comment);
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(beats.every((f) => f.id !== undefined)).toBe(true);
    await st.close();

    const unknown = await openStream(s.url, '/events', keyA, '999999999');
    await until(() => unknown.events().length === 1, 5000, 'reset');
    expect(unknown.events()[0]).toMatchObject({ event: 'reset', data: { reason: 'unknown' } });
    await unknown.close();

    clock.advance(8 * 86_400_000); // the first event is now older than the 7-day retention
    try {
      const old = await openStream(s.url, '/events', keyA, '0');
      await until(() => old.events().length === 1, 5000, 'reset');
      expect(old.events()[0]).toMatchObject({ event: 'reset', data: { reason: 'expired' } });
      // The stream goes on from now.
      const x = await intent(keyA);
      await until(() => old.events().length === 2, 5000, 'live after reset');
      expect(moves(old.events().slice(1))).toEqual([`${x.id}:null>Initiated`]);
      await old.close();
    } finally {
      clock.advance(-8 * 86_400_000);
    }

    const bad = await fetch(`${s.url}/events`, { headers: { 'x-api-key': keyA, 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { type: string }).type).toBe('VALIDATION_ERROR');
    const noKey = await fetch(`${s.url}/resolver/v1/events`, { headers: { 'x-api-key': keyA } });
    expect(noKey.status).toBe(401);
  });

  it('refuses streams beyond the per-key limit (429) and ends every stream on close', async () => {
    await freshKeys();
    const open = [];
    for (let i = 0; i < 4; i++) open.push(await openStream(s.url, '/events', keyA));
    const over = await fetch(`${s.url}/affiliate/v1/events`, { headers: { 'x-api-key': keyA } });
    expect(over.status).toBe(429);
    expect(((await over.json()) as { type: string }).type).toBe('TOO_MANY_STREAMS');
    await open[0]!.close();
    await until(() => s.events.streams <= 3, 5000, 'slot freed');
    open[0] = await openStream(s.url, '/events', keyA);
    expect(open[0].res.status).toBe(200);

    // A separate instance, stopped with streams open: the close ends them at once.
    const t = await startInstance(url, clock.now);
    const st = await openStream(t.url, '/events', keyA);
    expect(st.res.status).toBe(200);
    await until(() => st.frames.length > 0, 5000, 'opening id');
    const t0 = Date.now();
    await t.close();
    await st.done;
    expect(st.ended()).toBe(true);
    expect(Date.now() - t0).toBeLessThan(2000);
    for (const o of open) await o.close();
  });

  it('a slow client: nothing is written while its buffer is full; after the drain it gets the rest in order', async () => {
    const k = await createApiKey(s.ctx.db, `slow-${crypto.randomUUID()}`);
    const xs = [];
    for (let i = 0; i < 3; i++) xs.push(await intent(k.key));
    const written: number[] = [];
    let full = false;
    let release: (ok: boolean) => void = () => {};
    const pending = await s.events.open({ apiKeyId: k.id }, 0);
    const sub = pending.attach({
      event: (e) => {
        written.push(e.id);
        full = true; // every write fills the buffer
        return false;
      },
      reset: () => {},
      heartbeat: () => {},
      blocked: () => full,
      drained: () =>
        new Promise<boolean>((r) => {
          release = (ok) => {
            full = false;
            r(ok);
          };
        }),
      end: () => {},
    });
    await until(() => written.length === 1, 5000, 'first write');
    await xs[0]!.approve();
    await new Promise((r) => setTimeout(r, POLL_MS * 6));
    expect(written.length).toBe(1); // blocked: neither the catch-up nor the live events were written
    for (let i = 0; i < 10 && written.length < 4; i++) {
      release(true);
      await new Promise((r) => setTimeout(r, POLL_MS * 2));
    }
    expect(written.length).toBe(4);
    expect([...written].sort((p, q) => p - q)).toEqual(written);
    sub.close();
  });

  it('the SDK iterator resumes by itself after the server drops the connection', async () => {
    await freshKeys();
    const client = new SwapClient({ baseUrl: s.url, apiKey: keyA });
    const resolver = new ResolverClient({ baseUrl: s.url, apiKey: RESOLVER_KEY });
    const ac = new AbortController();
    const seen: string[] = [];
    const rseen: string[] = [];
    const consume = (async () => {
      for await (const ev of client.events({ signal: ac.signal })) {
        if (ev.type === 'status') seen.push(`${ev.data.intentId}:${ev.data.from}>${ev.data.to}`);
      }
    })();
    const rconsume = (async () => {
      for await (const ev of resolver.events({ signal: ac.signal })) {
        if (ev.type === 'status') rseen.push(`${ev.data.intent_id}:${ev.data.from}>${ev.data.to}`);
      }
    })();
    await until(() => s.events.streams >= 2, 5000, 'connected');
    await new Promise((res) => setTimeout(res, 100));
    const x = await intent(keyA);
    await until(() => seen.length === 1 && rseen.length === 1, 5000, 'first event');
    s.app.server.closeAllConnections(); // the server drops every connection
    await x.approve();
    await x.decline();
    await until(() => seen.length === 3 && rseen.length === 3, 10_000, 'events after the drop');
    await new Promise((res) => setTimeout(res, 300));
    const expected = [
      `${x.id}:null>Initiated`,
      `${x.id}:Initiated>ApprovalAdded`,
      `${x.id}:ApprovalAdded>Declined`,
    ];
    expect(seen).toEqual(expected);
    expect(rseen).toEqual(expected);
    ac.abort();
    await consume;
    await rconsume;
  });
});

describe('event schemas', () => {
  it('name every trigger of the lifecycle table, and no other', () => {
    expect([...TRIGGERS].sort()).toEqual([...new Set(TRANSITIONS.map((t) => t.trigger))].sort());
  });
});

describe('event feeds across two instances on one PostgreSQL', () => {
  let one: Instance;
  let two: Instance;
  const clock = testClock();
  beforeAll(async () => {
    const url = dbs.url('postgres');
    one = await startInstance(url, clock.now);
    two = await startInstance(url, clock.now);
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
  });

  it('an event written through instance A reaches a subscriber of instance B', async () => {
    const key = (await createApiKey(one.ctx.db, `x-${crypto.randomUUID()}`)).key;
    const onTwo = await openStream(two.url, '/events', key);
    const resolverOnTwo = await openStream(two.url, '/resolver/v1/events', RESOLVER_KEY);
    await until(() => onTwo.frames.length > 0 && resolverOnTwo.frames.length > 0, 5000, 'opening ids');
    const x = await makeIntent(one, key);
    const id = x.id;
    const t = performance.now();
    await until(() => onTwo.events().length === 1, 5000, 'event on instance B');
    const latency = onTwo.arrivals.at(-1)! - t;
    // And the other way: a decline through instance B, seen by a subscriber of A.
    const onOne = await openStream(one.url, '/resolver/v1/events', RESOLVER_KEY, onTwo.events()[0]!.id);
    await x.approve();
    await makeIntentDecline(two, id);
    await until(() => onOne.events().length === 2 && onTwo.events().length === 3, 5000, 'decline everywhere');
    expect((onTwo.events()[0]!.data as A.IntentEvent).intentId).toBe(id);
    expect(onOne.events()[1]!.data).toMatchObject({ intent_id: id, from: 'ApprovalAdded', to: 'Declined' });
    expect(resolverOnTwo.events().map((f) => (f.data as { to: string }).to)).toEqual([
      'Initiated',
      'ApprovalAdded',
      'Declined',
    ]);
    console.info(
      `[postgres, two instances] transition → event latency (poll ${POLL_MS} ms): ${latency.toFixed(0)} ms`,
    );
    for (const st of [onTwo, resolverOnTwo, onOne]) await st.close();
  });
});
