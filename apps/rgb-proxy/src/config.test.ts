import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@rgbx/service-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'proxy-cfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseCli', () => {
  it('has defaults', () => {
    const r = parseCli([], { APP_DATA: '/data/x' });
    expect(r).toEqual({
      kind: 'run',
      config: {
        host: '127.0.0.1',
        port: 3000,
        dataDir: '/data/x',
        maxUploadBytes: 64 * 1024 * 1024,
        maxJsonBytes: 1024 * 1024,
        logLevel: 'info',
        shutdownTimeoutMs: 10_000,
        metrics: { enabled: true, listen_address: '127.0.0.1', port: 9405 },
      },
    });
    expect(parseCli(['--metrics-port', '0'], {})).toMatchObject({ config: { metrics: { port: 0 } } });
  });

  it('reads a TOML file and lets flags override it', () => {
    const file = join(dir, 'p.toml');
    writeFileSync(
      file,
      'host = "0.0.0.0"\nport = 4000\ndata_dir = "/srv/proxy"\nmax_upload_bytes = 1000\nlog_level = "warn"\n',
    );
    const fromFile = parseCli(['-c', file], {});
    expect(fromFile).toMatchObject({
      kind: 'run',
      config: { host: '0.0.0.0', port: 4000, dataDir: '/srv/proxy', maxUploadBytes: 1000, logLevel: 'warn' },
    });
    const flags = parseCli(
      ['-c', file, '--port', '0', '--host', '::1', '--data-dir', '/d', '--max-upload-bytes', '7'],
      {},
    );
    expect(flags).toMatchObject({
      config: { host: '::1', port: 0, dataDir: '/d', maxUploadBytes: 7, logLevel: 'warn' },
    });
  });

  it('rejects bad flags and bad files', () => {
    expect(() => parseCli(['--port', 'x'])).toThrow(
      new UsageError('--port must be an integer in 0..65535, got "x"'),
    );
    expect(() => parseCli(['--port', '70000'])).toThrow(UsageError);
    expect(() => parseCli(['--max-upload-bytes', '0'])).toThrow(UsageError);
    expect(() => parseCli(['--nope'])).toThrow(UsageError);
    expect(() => parseCli(['extra'])).toThrow(UsageError);
    expect(() => parseCli(['--log-level', 'loud'])).toThrow(UsageError);
    const file = join(dir, 'bad.toml');
    writeFileSync(file, 'prot = 1\n');
    expect(() => parseCli(['-c', file])).toThrow(ConfigError);
    expect(() => parseCli(['-c', file])).toThrow(/unknown key "prot"/);
  });

  it('recognises --help and --version', () => {
    expect(parseCli(['--help'])).toEqual({ kind: 'help' });
    expect(parseCli(['-v'])).toEqual({ kind: 'version' });
  });
});
