/**
 * The web console in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core):
 * sign in with a token, create a node, watch its status go live, pause, resume, read its webhook
 * deliveries with their attempts, delete it; a screenshot is saved to a temp dir.
 * Chromium comes from `apps/cloud/scripts/install-chromium.sh` (run by CI before the tests).
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '@rgbx/service-kit';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud, type Cloud } from './cloud.ts';
import { selfSignedCert, TestReceiver, testConfig } from './test-support.ts';

const CHROMIUM = process.env.RGBX_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM) {
  console.warn(
    `\n!!! console.test.ts SKIPPED: ${CHROMIUM} is missing. Install it with ` +
      '`bash apps/cloud/scripts/install-chromium.sh` (apt-get install chromium) to run the browser test.\n',
  );
}
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

describe.skipIf(!HAVE_CHROMIUM)('web console (headless Chromium)', () => {
  const root = mkdtempSync(join(tmpdir(), 'cloud-console-'));
  let cloud: Cloud;
  let receiver: TestReceiver;
  let browser: Browser;
  let base = '';
  let token = '';

  beforeAll(async () => {
    const tls = selfSignedCert(join(root, 'tls'));
    receiver = await new TestReceiver(tls).start();
    cloud = await buildCloud(
      testConfig({ dir: root, databaseUrl: `sqlite:${join(root, 'cloud.db')}`, caFile: tls.certFile }),
      {
        logger: createLogger({ name: 'console', level: 'silent' }),
      },
    );
    await cloud.app.listen({ host: '127.0.0.1', port: 0 });
    cloud.startWorkers();
    base = `http://127.0.0.1:${(cloud.app.server.address() as AddressInfo).port}`;
    token = (await createToken(cloud.db, 'console', 'browser')).token;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await cloud?.close({ stopNodes: true });
    await receiver?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('creates, watches, pauses, resumes and deletes a node, and shows its deliveries', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // HTTP errors the test provokes (401, 400) are logged by Chromium as resource errors; script errors are not expected.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    const res = await page.goto(`${base}/console/`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");

    // A wrong token is refused.
    await page.fill('#token', 'rgbxc_0000000000000000_wrongwrongwrongwrongwrongwrongwrongwrongwro');
    await page.click('#login-form button');
    await page.waitForSelector('#login-error:has-text("refused")');
    await page.fill('#token', token);
    await page.click('#login-form button');
    await page.waitForSelector('#app:not([hidden])');

    await page.fill('#create-name', 'console-node');
    await page.fill('#create-webhook', receiver.url('/console'));
    await page.click('#create-submit');
    const row = page.locator('tr[data-name="console-node"]');
    await row.locator('[data-status="RUNNING"]').waitFor({ timeout: 20_000 });

    // An invalid webhook URL is explained, not created.
    await page.fill('#create-name', 'bad');
    await page.fill('#create-webhook', 'http://example.com/hook');
    await page.click('#create-submit');
    await page.waitForSelector('#create-error:has-text("scheme must be https")');
    expect(await page.locator('tr[data-name="bad"]').count()).toBe(0);
    await page.fill('#create-name', '');
    await page.fill('#create-webhook', '');

    await row.locator('button[data-op="stop"]').click();
    await row.locator('[data-status="PAUSED"]').waitFor({ timeout: 20_000 });
    await row.locator('button[data-op="start"]').click();
    await row.locator('[data-status="RUNNING"]').waitFor({ timeout: 20_000 });

    await row.locator('button[data-op="show"]').click();
    await page.waitForSelector('#details:not([hidden])');
    await page.waitForFunction(
      () =>
        document.querySelectorAll('#events tbody tr').length >= 6 &&
        !document.querySelector('#events .state.pending'),
      null,
      {
        timeout: 20_000,
      },
    );
    const sent = await page
      .locator('#events tbody tr')
      .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.sentStatus));
    expect(sent).toEqual(['RUNNING', 'STARTING', 'PAUSED', 'IN_PROGRESS', 'RUNNING', 'STARTING']);
    expect(await page.locator('#events .attempts li').first().textContent()).toMatch(/#1 success 200/);
    expect(await page.locator('#key-id').textContent()).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const shot = join(root, 'console.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(existsSync(shot)).toBe(true);
    if (process.env.RGBX_UPDATE_CONSOLE_PNG)
      copyFileSync(shot, fileURLToPath(new URL('../docs/console.png', import.meta.url)));

    expect(await page.locator('#action-error').textContent()).toBe('');
    await row.locator('button[data-op="delete"]').click();
    await page.locator('tr[data-name="console-node"]').waitFor({ state: 'detached', timeout: 20_000 });
    expect(errors).toEqual([]);
  });
});
