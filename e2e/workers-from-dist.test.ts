/**
 * Built code runs built workers: a plain `node` process (none of the test runner's flags: no `source`
 * condition, no TypeScript loader) importing `dist/` starts the swap's verify pool, the cloud's signing
 * pool and an rgb-lib host, and each thread or child reports the module it runs: the `.js` next to its
 * caller in `dist/`. (Under the test runner the same pools run their `.ts` sources: their own tests.)
 * Needs `npx tsc -b` first.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const built = {
  verifyPool: new URL('../apps/swap/dist/chains/verify-pool.js', import.meta.url).href,
  signPool: new URL('../apps/cloud/dist/webhooks/sign-pool.js', import.meta.url).href,
  rgb: new URL('../packages/rgb/dist/index.js', import.meta.url).href,
};

const SCRIPT = `
import { generateKeyPairSync } from 'node:crypto';
const { VerifyPool } = await import(${JSON.stringify(built.verifyPool)});
const { SignPool, signInline } = await import(${JSON.stringify(built.signPool)});
const { RgbHost } = await import(${JSON.stringify(built.rgb)});
const verify = new VerifyPool(1);
const sign = new SignPool(1);
const host = new RgbHost();
const signer = { keyId: 'k', privateKey: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey };
await host.start();
let rgb = await host.request('modules');
for (let i = 0; rgb.watchdog === null && i < 200; i++) {
  await new Promise((r) => setTimeout(r, 50));
  rgb = await host.request('modules');
}
console.log(JSON.stringify({
  flags: process.execArgv.filter((a) => /^(--conditions|-C|--import|--loader)/.test(a)),
  verify: await verify.workerModule(),
  sign: await sign.workerModule(),
  signs: (await sign.sign(signer, 'x')) === signInline(signer, Buffer.from('x')),
  rgb,
}));
await Promise.all([verify.close(), sign.close(), host.close()]);
`;

describe('workers of built code', () => {
  it('the verify pool, the signing pool and the rgb-lib child (and its watchdog) run dist/ modules', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      timeout: 60_000,
    });
    expect(JSON.parse(stdout)).toEqual({
      flags: [],
      verify: new URL('../apps/swap/dist/chains/verify-worker.js', import.meta.url).href,
      sign: new URL('../apps/cloud/dist/webhooks/sign-worker.js', import.meta.url).href,
      signs: true,
      rgb: {
        child: new URL('../packages/rgb/dist/child.js', import.meta.url).href,
        watchdog: new URL('../packages/rgb/dist/watchdog-worker.js', import.meta.url).href,
      },
    });
  });
});
