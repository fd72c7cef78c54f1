import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it('writes JSON lines with the service name and level', () => {
    const { lines, stream } = capture();
    const log = createLogger({ name: 'svc', level: 'warn', destination: stream });
    log.info('hidden');
    log.warn({ a: 1 }, 'shown');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ name: 'svc', level: 40, a: 1, msg: 'shown' });
  });

  it('redacts credentials in headers and secret-looking fields', () => {
    const { lines, stream } = capture();
    const log = createLogger({ name: 'svc', destination: stream });
    log.info(
      {
        req: { headers: { authorization: 'Bearer abc', 'x-api-key': 'k-123', host: 'h' } },
        user: { password: 'p4ss', name: 'n' },
        cfg: { secret: 's3', token: 't0k' },
        token: 'top',
        keys: { mnemonic: 'abandon ability able', xpub: 'tpubX' },
        mnemonic: 'about above absent',
      },
      'x',
    );
    const text = JSON.stringify(lines[0]);
    for (const s of ['Bearer abc', 'k-123', 'p4ss', 's3', 't0k', 'top', 'abandon ability', 'about above'])
      expect(text).not.toContain(s);
    expect(lines[0]).toMatchObject({ keys: { xpub: 'tpubX' } });
    expect(lines[0]).toMatchObject({ req: { headers: { host: 'h' } }, user: { name: 'n' } });
  });
});
