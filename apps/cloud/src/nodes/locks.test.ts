import { describe, expect, it } from 'vitest';
import { NodeLocks } from './locks.ts';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('NodeLocks', () => {
  it('runs one operation per node at a time, in order', async () => {
    const locks = new NodeLocks();
    const order: string[] = [];
    const op = (name: string, ms: number) => async () => {
      order.push(`${name}+`);
      await tick(ms);
      order.push(`${name}-`);
      return name;
    };
    const [a, b, c] = await Promise.all([
      locks.run('n', op('a', 30)),
      locks.run('n', op('b', 5)),
      locks.run('other', op('c', 5)),
    ]);
    expect([a, b, c]).toEqual([
      { busy: false, value: 'a' },
      { busy: false, value: 'b' },
      { busy: false, value: 'c' },
    ]);
    expect(order.filter((x) => !x.startsWith('c'))).toEqual(['a+', 'a-', 'b+', 'b-']);
    expect(locks.isHeld('n')).toBe(false);
  });

  it('a waiter that gives up does not let the next caller run beside the holder', async () => {
    const locks = new NodeLocks();
    let holderDone = false;
    let overlapped = false;
    const holder = locks.run('n', async () => {
      await tick(80);
      holderDone = true;
    });
    const gaveUp = await locks.run('n', async () => 'never', 10);
    expect(gaveUp).toEqual({ busy: true });
    // The holder still runs: the node is held, and a new operation waits for it.
    expect(locks.isHeld('n')).toBe(true);
    const next = await locks.run('n', async () => {
      overlapped = !holderDone;
      return 'next';
    });
    await holder;
    expect(next).toEqual({ busy: false, value: 'next' });
    expect(overlapped).toBe(false);
    await tick(0);
    expect(locks.isHeld('n')).toBe(false);
  });
});
