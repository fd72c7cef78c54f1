import { RgbHost } from '@rgbx/rgb';
import { describe, expect, it } from 'vitest';
import { ChildPool, Slot } from './pool.ts';

describe('Slot', () => {
  // The host is never started: Slot.run only schedules the given functions.
  const slot = () => new Slot(0, new RgbHost());

  it('runs one task at a time and puts foreground work before queued background work', async () => {
    const s = slot();
    const order: string[] = [];
    let active = 0;
    let maxActive = 0;
    const task = (name: string, ms: number) => async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, ms));
      order.push(name);
      active--;
      return name;
    };
    const running = s.run('background', task('bg-running', 30));
    const bg1 = s.run('background', task('bg-1', 1));
    const bg2 = s.run('background', task('bg-2', 1));
    const fg1 = s.run('foreground', task('fg-1', 1));
    const fg2 = s.run('foreground', task('fg-2', 1));
    expect(s.queued).toBe(5);
    expect(await Promise.all([running, bg1, bg2, fg1, fg2])).toEqual([
      'bg-running',
      'bg-1',
      'bg-2',
      'fg-1',
      'fg-2',
    ]);
    expect(order).toEqual(['bg-running', 'fg-1', 'fg-2', 'bg-1', 'bg-2']);
    expect(maxActive).toBe(1);
    expect(s.queued).toBe(0);
  });

  it('runs an urgent task (a close another call waits for) before every queued task, after the running one', async () => {
    const s = slot();
    const order: string[] = [];
    const task =
      (name: string, ms = 1) =>
      async () => {
        await new Promise((r) => setTimeout(r, ms));
        order.push(name);
      };
    const all = [
      s.run('foreground', task('running', 20)),
      s.run('foreground', task('fg-1')),
      s.run('background', task('bg-1')),
      s.run('urgent', task('close')),
    ];
    await Promise.all(all);
    expect(order).toEqual(['running', 'close', 'fg-1', 'bg-1']);
  });

  it('keeps going after a task fails, and the failure reaches only its caller', async () => {
    const s = slot();
    const bad = s.run('foreground', async () => {
      throw new Error('boom');
    });
    const good = s.run('foreground', async () => 42);
    await expect(bad).rejects.toThrow('boom');
    expect(await good).toBe(42);
  });
});

describe('isolation bookkeeping (hosts never started: the scheduling logic only)', () => {
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => (open = r));
    return { p, open };
  };

  it('reports the running owner; hands over the queued tasks of one wallet, in order, leaving the rest', async () => {
    const s = new Slot(0, new RgbHost());
    const g = gate();
    const long = s.run('foreground', () => g.p, 'aaaa0001');
    const mine = s.run('foreground', async () => 'a2', 'aaaa0001');
    const order: string[] = [];
    const b1 = s.run('background', async () => order.push('b1'), 'bbbb0002');
    const b2 = s.run('foreground', async () => order.push('b2'), 'bbbb0002');
    expect(s.running()?.owner).toBe('aaaa0001');
    expect([...s.queuedOwners()].sort()).toEqual(['aaaa0001', 'bbbb0002']);
    const taken = s.takeQueuedOf('bbbb0002');
    expect(taken.map((t) => [t.priority, t.task.owner])).toEqual([
      ['foreground', 'bbbb0002'],
      ['background', 'bbbb0002'],
    ]);
    expect(s.queued).toBe(2); // the running call and the same wallet's next one stay
    const to = new Slot(1, new RgbHost());
    to.adopt(taken);
    await Promise.all([b1, b2]); // ran on the other slot while the first is still blocked
    expect(order).toEqual(['b2', 'b1']);
    expect(s.running()?.owner).toBe('aaaa0001');
    g.open();
    await long;
    expect(await mine).toBe('a2');
  });

  it('a pool grows while a slot is stuck past its budget, prefers idle children, and stops at maxSize', async () => {
    const pool = new ChildPool(1, { callTimeoutMs: 1000, budgetMs: 20, maxSize: 2 });
    const [first] = pool.slots;
    const g = gate();
    const long = first!.run('foreground', () => g.p, 'aaaa0001', true); // talks to RGB proxies: 20 ms budget
    expect(pool.isStuck(first!)).toBe(false);
    await new Promise((r) => setTimeout(r, 40));
    expect(pool.isStuck(first!)).toBe(true);
    const added: number[] = [];
    pool.onSlot((s) => added.push(s.index));
    const spare = pool.spareFor(first!);
    expect(spare?.index).toBe(1);
    expect(added).toEqual([0, 1]); // existing slot reported at once, the new one when created
    expect(pool.spareFor(first!)).toBe(spare); // idle: reused, no third child
    expect(pool.leastLoaded()).toBe(spare); // new wallets avoid the stuck child
    const busy = gate();
    const b = spare!.run('foreground', () => busy.p, 'bbbb0002');
    expect(pool.spareFor(first!)).toBe(spare); // full: the least busy child that is not stuck
    g.open();
    busy.open();
    await Promise.all([long, b]);
    expect(pool.slots).toHaveLength(2);
  });

  it('other calls (an indexer sync is slow for every wallet alike) get a budget ten times longer', async () => {
    const pool = new ChildPool(1, { callTimeoutMs: 1000, budgetMs: 20 });
    const [first] = pool.slots;
    const g = gate();
    const long = first!.run('foreground', () => g.p, 'aaaa0001');
    await new Promise((r) => setTimeout(r, 60));
    expect(pool.isStuck(first!)).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(pool.isStuck(first!)).toBe(true);
    g.open();
    await long;
  });
});
