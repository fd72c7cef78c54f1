/**
 * The `rgbx-swap` command line, run as a process from the build output (`npx tsc -b` first, as
 * `npm test` does): key management against a real SQLite file, config errors, and a real start.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from './cli.ts';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const run = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [MAIN, ...args]);
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('command line', () => {
  it('parses commands and refuses bad ones', () => {
    expect(parseCli(['-c', 'f.toml'])).toEqual({ kind: 'run', config: 'f.toml' });
    expect(parseCli(['keys', 'create', '--name', 'acme', '-c', 'f'])).toEqual({
      kind: 'keys-create',
      config: 'f',
      name: 'acme',
    });
    expect(parseCli(['keys', 'revoke', '0123456789ab', '-c', 'f'])).toEqual({
      kind: 'keys-revoke',
      config: 'f',
      id: '0123456789ab',
    });
    for (const bad of [
      [],
      ['keys'],
      ['keys', 'create', '-c', 'f'],
      ['keys', 'revoke', 'zz', '-c', 'f'],
      ['nope', '-c', 'f'],
      ['--bogus'],
    ]) {
      expect(() => parseCli(bad), bad.join(' ')).toThrow(UsageError);
    }
  });

  it('creates, lists and revokes keys; only the hash is stored; the service starts and answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'swap-cli-'));
    const cfg = join(dir, 'swap.toml');
    writeFileSync(
      cfg,
      `data_dir = "data"\npreimage_key = "${'cd'.repeat(32)}"\nport = 0\nlog_level = "silent"\n[metrics]\nport = 0\n`,
    );
    const created = await cli(['keys', 'create', '--name', 'acme', '-c', cfg]);
    expect(created.code, created.stderr).toBe(0);
    const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
    const listed = await cli(['keys', 'list', '--json', '-c', cfg]);
    expect(JSON.parse(listed.stdout)).toEqual([
      { id, name: 'acme', createdAt: expect.any(Number), revokedAt: null },
    ]);
    expect(listed.stdout).not.toContain(key);

    const child: ChildProcess = spawn(process.execPath, [MAIN, '-c', cfg], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const { url, metrics_url } = await new Promise<{ url: string; metrics_url: string }>(
        (resolve, reject) => {
          let out = '';
          child.stdout!.on('data', (d: Buffer) => {
            out += d.toString();
            const line = out.split('\n').find((l) => l.includes('"event":"listening"'));
            if (line) resolve(JSON.parse(line));
          });
          child.once('exit', (c) => reject(new Error(`exited ${c}`)));
        },
      );
      const ok = await fetch(`${url}/healthcheck`, { headers: { 'x-api-key': key } });
      expect(ok.status).toBe(200);
      // Metrics on their own listener (announced), never on the public API.
      expect(metrics_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(new URL(metrics_url).port).not.toBe(new URL(url).port);
      const scraped = await fetch(metrics_url);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(
        /^rgbx_swap_http_requests_total\{method="GET",route="\/healthcheck",status_code="200"\} 1$/m,
      );
      expect((await fetch(`${url}/metrics`, { headers: { 'x-api-key': key } })).status).toBe(404);
      expect((await cli(['keys', 'revoke', id, '-c', cfg])).code).toBe(0);
      const denied = await fetch(`${url}/healthcheck`, { headers: { 'x-api-key': key } });
      expect([denied.status, ((await denied.json()) as { code: number }).code]).toEqual([401, 1]);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    expect((await cli(['keys', 'revoke', 'ffffffffffff', '-c', cfg])).code).toBe(1);
  });

  it('exits 2 naming the key of an invalid configuration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'swap-cli-'));
    const cfg = join(dir, 'bad.toml');
    writeFileSync(cfg, `preimage_key = "${'cd'.repeat(32)}"\nprot = 1\n`);
    const r = await cli(['-c', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown key "prot"/);
  });
});
