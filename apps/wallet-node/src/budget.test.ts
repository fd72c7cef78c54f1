/**
 * The budget of open/online wallets (budget.ts): the bookkeeping only, with fake wallets whose "close" and calls are
 * timers. The node on the devnet, with real children and an Electrum server counting connections, is
 * `e2e/wallet-node.scale.test.ts`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BudgetWaitTimeout, WalletBudget } from './budget.ts';

/** A fake wallet: what it really has open in its "child", and its calls queued or running. */
interface W {
  name: string;
  busy: number;
  open: boolean;
  online: boolean;
  pinned: boolean;
}
const wallet = (name: string): W => ({ name, busy: 0, open: false, online: false, pinned: false });
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** A budget over fake wallets, checking on every change that the real open/online counts stay within it. */
function harness(
  maxOpen: number,
  maxOnline: number,
  opts: { closeMs?: number; waitMs?: number; agingMs?: number } = {},
) {
  const all = new Set<W>();
  const closed: string[] = [];
  const violations: string[] = [];
  const check = (when: string) => {
    const open = [...all].filter((w) => w.open).length;
    const online = [...all].filter((w) => w.online).length;
    if (open > maxOpen || online > maxOnline) violations.push(`${when}: ${open} open, ${online} online`);
  };
  const budget = new WalletBudget<W>({
    maxOpen,
    maxOnline,
    waitTimeoutMs: opts.waitMs,
    backgroundAgingMs: opts.agingMs,
    evictable: (w) => w.busy === 0 && !w.pinned,
    close: async (w) => {
      if (w.busy !== 0) violations.push(`closed ${w.name} while busy`);
      closed.push(w.name);
      await tick(opts.closeMs ?? 1);
      w.open = false;
      w.online = false;
      check(`after closing ${w.name}`);
    },
  });
  /** One call of `w`: seats first, then "open"/"go online" in its child, work, done. */
  async function call(
    w: W,
    online: boolean,
    workMs = 1,
    priority: 'foreground' | 'background' = 'foreground',
  ) {
    all.add(w);
    w.busy++;
    try {
      await budget.acquire(w, online, priority);
      const held = budget.holds(w);
      if (!held.open || (online && !held.online)) violations.push(`${w.name} ran without its seats`);
      w.open = true;
      if (online) w.online = true;
      check(`${w.name} running`);
      await tick(workMs);
    } finally {
      w.busy--;
      if (w.busy === 0) {
        budget.settle(w, { open: w.open, online: w.online });
        budget.kick();
      }
    }
  }
  return { budget, call, closed, violations, check };
}

describe('WalletBudget', () => {
  it('closes the least recently used idle wallet when a wallet must come online and the budget is full', async () => {
    const h = harness(10, 2);
    const [a, b, c] = [wallet('a'), wallet('b'), wallet('c')];
    await h.call(a, true);
    await h.call(b, true);
    h.budget.touch(a); // a used again by a client: b is now the least recently used
    await h.call(c, true);
    expect(h.closed).toEqual(['b']);
    expect([a.online, b.online, c.online]).toEqual([true, false, true]);
    expect(h.budget.stats()).toMatchObject({ online: 2, open: 2, closed_for_room: 1, closing: 0 });
    // An offline call needs no online seat: nothing more is closed.
    await h.call(b, false);
    expect(h.closed).toEqual(['b']);
    expect(h.budget.holds(b)).toEqual({ open: true, online: false });
    expect(h.violations).toEqual([]);
  });

  it('never closes a wallet with a call in flight or pinned (a background refresh): the caller waits for one to end', async () => {
    const h = harness(10, 2);
    const [a, b, c] = [wallet('a'), wallet('b'), wallet('c')];
    const long = h.call(a, true, 40); // a busy for 40 ms
    await tick(5);
    await h.call(b, true);
    b.pinned = true;
    const t0 = Date.now();
    const cDone = h.call(c, true);
    await tick(10);
    expect(h.closed).toEqual([]); // a is busy, b is pinned: c waits
    expect(h.budget.stats().waiting).toBe(1);
    await long; // a idle now: it is closed for c
    await cDone;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(30);
    expect(h.closed).toEqual(['a']);
    expect(h.violations).toEqual([]);
  });

  it('counts a close in progress as used until it is done, and serves waiters in order, clients before background', async () => {
    const h = harness(3, 1, { closeMs: 20 });
    const ws = ['a', 'b', 'c', 'd'].map(wallet);
    await h.call(ws[0]!, true);
    const order: string[] = [];
    const bg = h.call(ws[1]!, true, 1, 'background').then(() => order.push('b (background)'));
    const fg1 = h.call(ws[2]!, true).then(() => order.push('c'));
    const fg2 = h.call(ws[3]!, true).then(() => order.push('d'));
    await tick(5);
    // One online seat: a is being closed (20 ms) and still counts.
    expect(h.budget.stats()).toMatchObject({ online: 1, closing: 1, waiting: 2, waiting_background: 1 });
    await Promise.all([bg, fg1, fg2]);
    expect(order).toEqual(['c', 'd', 'b (background)']);
    expect(h.violations).toEqual([]);
  });

  it('serves background work that waited too long with the client calls (a busy node still refreshes)', async () => {
    const h = harness(2, 1, { agingMs: 40 });
    const clients = [wallet('a'), wallet('b')];
    const bg = wallet('refresh');
    let stop = false;
    let bgDoneWhileBusy = false;
    // Clients keep the only online seat wanted all the time (a waiter is always queued before the background).
    const load = Promise.all(
      clients.map(async (w) => {
        while (!stop) await h.call(w, true, 2);
      }),
    );
    await tick(3);
    const t0 = Date.now();
    const refreshed = h.call(bg, true, 1, 'background').then(() => {
      bgDoneWhileBusy = !stop;
      return Date.now() - t0;
    });
    await tick(200);
    stop = true;
    await load;
    const waited = await refreshed;
    expect(bgDoneWhileBusy).toBe(true);
    expect(waited).toBeGreaterThanOrEqual(30);
    expect(h.violations).toEqual([]);
  });

  it('makes a client call that gets no seat in time fail with BudgetWaitTimeout; a later one still gets served', async () => {
    const h = harness(2, 1, { waitMs: 30 });
    const [a, b] = [wallet('a'), wallet('b')];
    const long = h.call(a, true, 80);
    await tick(2);
    await expect(h.call(b, true)).rejects.toBeInstanceOf(BudgetWaitTimeout);
    expect(h.budget.stats().waiting).toBe(0);
    await long;
    await h.call(b, true);
    expect(h.closed).toEqual(['a']);
    expect(h.violations).toEqual([]);
  });

  it('bounds open wallets too (offline calls), and counts handles abandoned in a busy child until it exits', async () => {
    const h = harness(2, 1);
    const [a, b, c] = [wallet('a'), wallet('b'), wallet('c')];
    await h.call(a, false);
    await h.call(b, false);
    await h.call(c, false); // a (LRU) closed for c
    expect(h.closed).toEqual(['a']);
    // Full: no handle may be abandoned (isolation keeps the wallet where it is), online or not.
    expect(h.budget.canAbandon(false)).toBe(false);
    expect(h.budget.canAbandon(true)).toBe(false);
    expect(h.violations).toEqual([]);

    // With room: the abandoned handle's seats count until its child exits, and nothing else fits meanwhile.
    const r = harness(3, 2);
    await r.call(wallet('a'), false);
    await r.call(wallet('b'), true);
    expect(r.budget.canAbandon(true)).toBe(true);
    r.budget.abandon(7, true);
    expect(r.budget.stats()).toMatchObject({ open: 3, online: 2 });
    expect(r.budget.canAbandon(false)).toBe(false);
    expect(r.budget.tryTake(wallet('c'), false)).toBe(false);
    r.budget.childExited(7);
    expect(r.budget.stats()).toMatchObject({ open: 2, online: 1 });
    expect(r.budget.tryTake(wallet('c'), false)).toBe(true);
    expect(r.violations).toEqual([]);
  });

  it('hands the seats of a dropped context to its successor', () => {
    const b = new WalletBudget<string>({
      maxOpen: 1,
      maxOnline: 1,
      close: async () => {},
      evictable: () => true,
    });
    expect(b.tryTake('old', true)).toBe(true);
    b.transfer('old', 'new');
    expect(b.holds('old')).toEqual({ open: false, online: false });
    expect(b.holds('new')).toEqual({ open: true, online: true });
    expect(b.tryTake('other', false)).toBe(false);
  });

  it('holds its limits and serves every call under random concurrent load (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(
          fc.record({
            wallet: fc.integer({ min: 0, max: 9 }),
            online: fc.boolean(),
            workMs: fc.integer({ min: 0, max: 3 }),
            background: fc.boolean(),
            gapMs: fc.integer({ min: 0, max: 2 }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (maxOnline, extraOpen, calls) => {
          const h = harness(maxOnline + extraOpen, maxOnline, { waitMs: 60_000 });
          const ws = Array.from({ length: 10 }, (_, i) => wallet(`w${i}`));
          const runs: Promise<void>[] = [];
          for (const c of calls) {
            runs.push(h.call(ws[c.wallet]!, c.online, c.workMs, c.background ? 'background' : 'foreground'));
            if (c.gapMs > 0) await tick(c.gapMs);
          }
          await Promise.all(runs); // every call served (a deadlock would time the test out)
          expect(h.violations).toEqual([]);
          const s = h.budget.stats();
          expect(s.open).toBeLessThanOrEqual(maxOnline + extraOpen);
          expect(s.online).toBeLessThanOrEqual(maxOnline);
          expect(s.waiting + s.waiting_background + s.closing).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});
