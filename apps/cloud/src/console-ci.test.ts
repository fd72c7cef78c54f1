/**
 * The console test's contract about a missing browser, checked by running it in a nested Vitest
 * with `RGBX_CHROMIUM` pointing at nothing: with `CI` set it FAILS naming the install script; without
 * `CI` it is skipped with a warning (local runs without Chromium stay green).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const VITEST = join(REPO_ROOT, 'node_modules/vitest/vitest.mjs');

function runConsoleTest(ci: string | undefined) {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('VITEST')) env[k] = v;
  delete env.CI;
  if (ci !== undefined) env.CI = ci;
  env.RGBX_CHROMIUM = '/nonexistent/chromium';
  env.NO_COLOR = '1';
  return new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [VITEST, 'run', 'apps/cloud/src/console.test.ts'],
      { cwd: REPO_ROOT, env, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
}

describe('console test without Chromium', () => {
  it('fails when CI is set, naming the missing browser and the install script', async () => {
    const r = await runConsoleTest('true');
    expect(r.code).toBe(1);
    expect(r.output).toContain(
      'console test cannot run in CI: /nonexistent/chromium is missing. Install it with `bash apps/cloud/scripts/install-chromium.sh`',
    );
    expect(r.output).toMatch(/Test Files\s+1 failed/);
  }, 120_000);

  it('is skipped with a warning when CI is not set', async () => {
    const r = await runConsoleTest(undefined);
    expect(r.code).toBe(0);
    expect(r.output).toContain(
      '!!! console.test.ts SKIPPED (CI is not set): /nonexistent/chromium is missing.',
    );
    // Every test of the file skipped, none run (it has as many tests as the console covers).
    expect(r.output).toMatch(/Tests\s+(\d+) skipped \(\1\)/);
  }, 120_000);
});
