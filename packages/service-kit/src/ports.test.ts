import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ephemeralRange, freePort } from './ports.ts';

describe('freePort', () => {
  it('picks distinct bindable ports below the ephemeral range, never one a listener holds', async () => {
    const [low] = ephemeralRange();
    const ports: number[] = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(50);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(10_000);
      expect(p).toBeLessThan(low);
    }
    // Each one binds (what the service that gets it does next).
    for (const p of ports.slice(0, 10)) {
      const s = createServer();
      await new Promise<void>((r, j) => s.once('error', j).listen(p, '127.0.0.1', r));
      await new Promise((r) => s.close(r));
    }
  });
});
