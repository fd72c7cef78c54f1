import { RgbHost } from '@rgbx/rgb';
import { describe, expect, it } from 'vitest';
import { Slot } from './pool.ts';

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
