import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pidAlive, takePidLock } from './pid-lock.ts';

const dir = mkdtempSync(join(tmpdir(), 'pid-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A live process that is not us, and a way to end it. */
async function otherProcess() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  return {
    pid: child.pid!,
    stop: () =>
      new Promise<void>((r) => {
        child.once('exit', () => r());
        child.kill('SIGKILL');
      }),
  };
}

describe('pidAlive', () => {
  it('is true for us, false for nothing, a non-pid or a process that has exited', async () => {
    expect(pidAlive(process.pid)).toBe(true);
    for (const p of [undefined, 0, -1, 1.5, Number.NaN]) expect(pidAlive(p)).toBe(false);
    const other = await otherProcess();
    expect(pidAlive(other.pid)).toBe(true);
    await other.stop();
    expect(pidAlive(other.pid)).toBe(false);
  });
});

describe('takePidLock', () => {
  it('writes our pid (0600), refuses while another live process holds it, takes over when it is gone', async () => {
    const path = join(dir, 'a.lock');
    const other = await otherProcess();
    writeFileSync(path, String(other.pid));
    expect(takePidLock(path)).toEqual({ taken: false, holder: other.pid });
    expect(readFileSync(path, 'utf8')).toBe(String(other.pid)); // untouched
    await other.stop();
    const lock = takePidLock(path);
    expect(lock.taken).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe(String(process.pid));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    if (lock.taken) lock.release();
    expect(() => statSync(path)).toThrow(/ENOENT/);
  });

  it('release() leaves a lock that another process has taken since', () => {
    const path = join(dir, 'b.lock');
    const lock = takePidLock(path);
    writeFileSync(path, '999999999'); // someone else's now
    if (lock.taken) lock.release();
    expect(readFileSync(path, 'utf8')).toBe('999999999');
  });

  it('a file without a pid is not ours to remove: held, holder NaN', () => {
    const path = join(dir, 'c.lock');
    writeFileSync(path, 'garbage');
    expect(takePidLock(path)).toEqual({ taken: false, holder: Number.NaN });
    expect(readFileSync(path, 'utf8')).toBe('garbage');
  });
});
