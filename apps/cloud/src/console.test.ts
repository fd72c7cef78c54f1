/**
 * The web console in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core):
 * sign in with a token, create a node, watch its status go live, pause, resume, read its webhook
 * deliveries with their attempts, read the signing key's PEM, edit and turn off the node's webhook
 * URL, and delete it only through the confirmation dialog; a screenshot is saved to a temp dir.
 * The hosted node is the stand-in wallet node (test/fake-wallet-node.mjs): this is about the page.
 * Chromium comes from `apps/cloud/scripts/install-chromium.sh` (run by CI before the tests). When
 * it is missing the file is skipped locally with a warning, but FAILS when `CI` is set.
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
import { selfSignedCert, TestReceiver, testConfig, until } from './test-support.ts';

const CHROMIUM = process.env.RGBX_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
/** CI systems set `CI` (to `true` or `1`); there a missing browser is a failure, not a skip. */
const IN_CI = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI.toLowerCase());
const MISSING = `${CHROMIUM} is missing. Install it with \`bash apps/cloud/scripts/install-chromium.sh\` (apt-get install chromium)`;
if (!HAVE_CHROMIUM && !IN_CI) {
  console.warn(`\n!!! console.test.ts SKIPPED (CI is not set): ${MISSING} to run the browser test.\n`);
}
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('web console (headless Chromium, stand-in wallet node)', () => {
  const root = mkdtempSync(join(tmpdir(), 'cloud-console-'));
  let cloud: Cloud;
  let receiver: TestReceiver;
  let browser: Browser;
  let base = '';
  let token = '';
  const logLines: string[] = [];

  beforeAll(async () => {
    if (!HAVE_CHROMIUM) throw new Error(`console test cannot run in CI: ${MISSING}`);
    const tls = selfSignedCert(join(root, 'tls'));
    receiver = await new TestReceiver(tls).start();
    cloud = await buildCloud(
      testConfig({ dir: root, databaseUrl: `sqlite:${join(root, 'cloud.db')}`, caFile: tls.certFile }),
      {
        // Kept in memory: the redelivery's audit line is checked.
        logger: createLogger({
          name: 'console',
          level: 'info',
          destination: { write: (l: string) => void logLines.push(l) },
        }),
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

  it('creates, watches, pauses, resumes a node, shows deliveries and the key PEM, edits the webhook URL, deletes only after confirmation', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // HTTP errors the test provokes (401, 400) are logged by Chromium as resource errors; script errors are not expected.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    const api = async (method: 'GET' | 'DELETE', url: string) =>
      cloud.app.inject({ method, url, headers: { authorization: `Bearer ${token}` } });
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
    const nodeId = (await row.getAttribute('data-node-id'))!;
    const node = async () => (await api('GET', `/api/nodes/${nodeId}`)).json().data;

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
    const sentStatuses = () =>
      page
        .locator('#events tbody tr')
        .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.sentStatus));
    expect(await sentStatuses()).toEqual([
      'RUNNING',
      'STARTING',
      'PAUSED',
      'IN_PROGRESS',
      'RUNNING',
      'STARTING',
    ]);
    expect(await page.locator('#events .attempts li').first().textContent()).toMatch(/#1 success 200/);

    // The signing key: its PEM (what receivers verify with) and its id, as the API publishes them.
    const published = (await api('GET', '/api/webhook-public-key')).json();
    expect(await page.locator('#key-pem').textContent()).toBe(published.data);
    expect(published.data).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
    expect(await page.locator('#key-id').textContent()).toBe(published.keyId);
    expect(await page.locator('#other-keys .key').count()).toBe(0);

    // The webhook URL, prefilled; an empty field is refused with the API's message and changes nothing.
    expect(await page.inputValue('#settings-webhook')).toBe(receiver.url('/console'));
    await page.fill('#settings-webhook', '');
    await page.click('#settings-save');
    await page.waitForSelector(
      '#settings-error:has-text("invalid webhookUrl: empty (send null to turn webhooks off)")',
    );
    await page.fill('#settings-webhook', 'http://example.com/hook');
    await page.click('#settings-save');
    await page.waitForSelector('#settings-error:has-text("invalid webhookUrl: the scheme must be https")');
    expect((await node()).settings.webhookUrl).toBe(receiver.url('/console'));

    const shot = join(root, 'console.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(existsSync(shot)).toBe(true);
    if (process.env.RGBX_UPDATE_CONSOLE_PNG)
      copyFileSync(shot, fileURLToPath(new URL('../docs/console.png', import.meta.url)));

    // A new URL: saved, shown in the table, and the change itself is announced there.
    await page.fill('#settings-webhook', receiver.url('/console-2'));
    await page.click('#settings-save');
    await page.waitForSelector(
      `#settings-saved:has-text("Saved: webhooks go to ${receiver.url('/console-2')}")`,
    );
    expect(await page.locator('#settings-error').textContent()).toBe('');
    await row.locator(`code:has-text("${receiver.url('/console-2')}")`).waitFor();
    expect((await node()).settings.webhookUrl).toBe(receiver.url('/console-2'));
    await row.locator('[data-status="RUNNING"]').waitFor({ timeout: 20_000 });
    await page.waitForFunction(
      () =>
        document.querySelectorAll('#events tbody tr').length === 8 &&
        !document.querySelector('#events .state.pending'),
      null,
      { timeout: 20_000 },
    );
    expect((await sentStatuses()).slice(0, 2)).toEqual(['RUNNING', 'IN_PROGRESS']);
    expect(
      receiver.requests
        .filter((r) => r.path === '/console-2')
        .map((r) => JSON.parse(r.body.toString()).details.status),
    ).toEqual(['IN_PROGRESS', 'RUNNING']);

    // Turned off explicitly (null).
    await page.click('#settings-off');
    await page.waitForSelector('#settings-saved:has-text("Saved: webhooks are off")');
    expect(await page.inputValue('#settings-webhook')).toBe('');
    expect((await node()).settings.webhookUrl).toBeNull();
    await row.locator('td:nth-child(4) .muted:has-text("none")').waitFor();

    // Delete asks first: the node and its wallet data stay until its name is typed and confirmed.
    expect(await page.locator('#action-error').textContent()).toBe('');
    const dialog = page.locator('#confirm-delete');
    await row.locator('button[data-op="delete"]').click();
    await page.waitForSelector('#confirm-delete[open]');
    expect(await dialog.locator('#confirm-name').textContent()).toBe('console-node');
    expect(await dialog.textContent()).toContain('every wallet in it, is deleted');
    expect(await page.locator('#confirm-ok').isDisabled()).toBe(true);
    await page.fill('#confirm-input', 'console-nod');
    expect(await page.locator('#confirm-ok').isDisabled()).toBe(true);
    await page.click('#confirm-cancel');
    await page.waitForSelector('#confirm-delete:not([open])', { state: 'attached' });
    await page.waitForTimeout(1500); // more than one refresh cycle
    expect(await row.count()).toBe(1);
    expect((await node()).status).toBe('RUNNING');
    expect(existsSync(join(root, 'nodes', nodeId, 'wallet'))).toBe(true);
    // Escape closes it too, without deleting.
    await row.locator('button[data-op="delete"]').click();
    await page.waitForSelector('#confirm-delete[open]');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#confirm-delete:not([open])', { state: 'attached' });
    expect((await node()).status).toBe('RUNNING');

    await row.locator('button[data-op="delete"]').click();
    await page.waitForSelector('#confirm-delete[open]');
    await page.fill('#confirm-input', 'console-node');
    expect(await page.locator('#confirm-ok').isDisabled()).toBe(false);
    await page.click('#confirm-ok');
    await page.locator('tr[data-name="console-node"]').waitFor({ state: 'detached', timeout: 20_000 });
    expect((await api('GET', `/api/nodes/${nodeId}`)).statusCode).toBe(404);
    expect(existsSync(join(root, 'nodes', nodeId))).toBe(false);
    expect(await page.locator('#details').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });

  it("a node's page shows its deliveries (every attempt), latency and status charts, and redelivers an attempt's event with the same event id", async () => {
    // The first request to /flaky fails (500), every later one succeeds.
    let flaky = 0;
    receiver.respond = (r) =>
      r.path === '/flaky' && flaky++ === 0
        ? { status: 500, body: 'boom' }
        : { status: 200, body: '{"message":"ok"}' };
    const api = async (method: 'GET' | 'POST', url: string, body?: unknown, t = token) =>
      cloud.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${t}` },
        ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
      });
    const created = await api('POST', '/api/nodes', {
      name: 'deliveries-node',
      network: 'regtest',
      settings: { webhookUrl: receiver.url('/flaky') },
    });
    expect(created.statusCode).toBe(201);
    const nodeId = created.json().data.nodeId as string;
    const node = async () => (await api('GET', `/api/nodes/${nodeId}`)).json().data;
    const settled = (events: number) =>
      until(`${events} events delivered`, async () => {
        const n = await node();
        return n.webhook.pending === 0 && n.webhook.delivered === events;
      });
    await until('RUNNING', async () => (await node()).status === 'RUNNING');
    await settled(2);
    expect((await api('POST', `/api/nodes/${nodeId}/stop`)).statusCode).toBe(202);
    await until('PAUSED', async () => (await node()).status === 'PAUSED');
    expect((await api('POST', `/api/nodes/${nodeId}/start`)).statusCode).toBe(202);
    await until('RUNNING again', async () => (await node()).status === 'RUNNING');
    await settled(6);

    // The API: 7 attempts (the first one failed), newest first, paged by nextBefore.
    const all = (await api('GET', `/api/nodes/${nodeId}/deliveries?limit=100`)).json();
    expect(all.nextBefore).toBeNull();
    expect(all.data).toHaveLength(7);
    const failedAttempt = all.data.at(-1);
    expect(failedAttempt).toMatchObject({
      attempt: 1,
      outcome: 'http_error',
      statusCode: 500,
      eventStatus: 'STARTING',
    });
    expect(all.data.filter((d: { outcome: string }) => d.outcome === 'success')).toHaveLength(6);
    const ids = all.data.map((d: { deliveryId: string }) => Number(d.deliveryId));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const pages: string[] = [];
    let before: string | null = null;
    do {
      const r: { data: { deliveryId: string }[]; nextBefore: string | null } = (
        await api('GET', `/api/nodes/${nodeId}/deliveries?limit=3${before ? `&before=${before}` : ''}`)
      ).json();
      pages.push(...r.data.map((d) => d.deliveryId));
      before = r.nextBefore;
    } while (before !== null);
    expect(pages).toEqual(all.data.map((d: { deliveryId: string }) => d.deliveryId));
    const history = (await api('GET', `/api/nodes/${nodeId}/status-history`)).json().data;
    expect(history.map((h: { status: string }) => h.status)).toEqual([
      'STARTING',
      'RUNNING',
      'IN_PROGRESS',
      'PAUSED',
      'STARTING',
      'RUNNING',
    ]);
    // Documented errors: unknown delivery, a malformed id, another account's node, no token.
    const missing = await api('POST', `/api/nodes/${nodeId}/deliveries/999999999/redeliver`);
    expect([missing.statusCode, missing.json().error.code]).toEqual([404, 'DELIVERY_NOT_FOUND']);
    expect((await api('POST', `/api/nodes/${nodeId}/deliveries/nope/redeliver`)).json().error.code).toBe(
      'VALIDATION_ERROR',
    );
    const other = (await createToken(cloud.db, 'someone-else', 'x')).token;
    const foreign = await api('GET', `/api/nodes/${nodeId}/deliveries`, undefined, other);
    expect([foreign.statusCode, foreign.json().error.code]).toEqual([404, 'NODE_NOT_FOUND']);
    expect(
      (
        await api(
          'POST',
          `/api/nodes/${nodeId}/deliveries/${failedAttempt.deliveryId}/redeliver`,
          undefined,
          other,
        )
      ).statusCode,
    ).toBe(404);
    expect(
      (await cloud.app.inject({ method: 'GET', url: `/api/nodes/${nodeId}/status-history` })).statusCode,
    ).toBe(401);

    // The page.
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/console/`);
    await page.fill('#token', token);
    await page.click('#login-form button');
    await page.waitForSelector('#app:not([hidden])');
    const row = page.locator('tr[data-name="deliveries-node"]');
    await row.locator('button[data-op="show"]').click();
    await page.waitForFunction(() => document.querySelectorAll('#deliveries tbody tr').length === 7, null, {
      timeout: 20_000,
    });
    const outcomes = () =>
      page
        .locator('#deliveries tbody tr')
        .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.outcome));
    expect(await outcomes()).toEqual([...Array(6).fill('success'), 'http_error']);
    const failedRow = page.locator(`#deliveries tr[data-delivery-id="${failedAttempt.deliveryId}"]`);
    expect(await failedRow.locator('td').nth(4).textContent()).toBe('500');
    expect(await failedRow.locator('td').nth(2).textContent()).toBe('#1');
    expect(await failedRow.locator('td').nth(3).locator('code').getAttribute('title')).toBe(
      failedAttempt.keyId,
    );
    expect(await failedRow.locator('td').nth(5).textContent()).toBe(`${failedAttempt.durationMs} ms`);
    // Charts: inline SVG, one point per finished attempt (the failure in red) and per status change.
    expect(await page.locator('#latency-chart').getAttribute('data-points')).toBe('7');
    expect(await page.locator('#latency-chart circle.pt').count()).toBe(7);
    expect(await page.locator('#latency-chart circle.pt.fail').count()).toBe(1);
    expect(await page.locator('#status-chart circle.pt').count()).toBe(6);
    expect(
      await page
        .locator('#status-chart circle.pt')
        .evaluateAll((cs) => cs.map((c) => c.getAttribute('data-status'))),
    ).toEqual(['STARTING', 'RUNNING', 'IN_PROGRESS', 'PAUSED', 'STARTING', 'RUNNING']);

    // Redeliver the failed attempt's event: the receiver gets it again with the same event id, and a new attempt shows.
    const before8 = receiver.requests.filter((r) => r.path === '/flaky').length;
    await failedRow.locator('button[data-op="redeliver"]').click();
    await page.waitForSelector('#deliveries-msg:has-text("queued again with the same event id")');
    await until(
      'redelivered',
      () => receiver.requests.filter((r) => r.path === '/flaky').length === before8 + 1,
    );
    const again = receiver.requests.filter((r) => r.path === '/flaky').at(-1)!;
    expect(again.headers['x-service-event-id']).toBe(failedAttempt.eventId);
    expect(again.headers['x-service-attempt']).toBe('3');
    expect(JSON.parse(again.body.toString()).details.status).toBe('STARTING');
    await page.waitForFunction(
      () =>
        document.querySelectorAll('#deliveries tbody tr').length === 8 &&
        document.querySelector('#deliveries tbody tr')?.getAttribute('data-outcome') === 'success',
      null,
      { timeout: 20_000 },
    );
    const newest = page.locator('#deliveries tbody tr').first();
    expect(await newest.getAttribute('data-event-id')).toBe(failedAttempt.eventId);
    expect(await newest.locator('td').nth(2).textContent()).toBe('#3');
    await page.waitForFunction(
      () => document.querySelector('#latency-chart')?.getAttribute('data-points') === '8',
    );
    // Audit-logged: who (account), which node, event and attempt.
    const audits = logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.audit === 'webhook.redeliver');
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({
      msg: 'webhook event queued for redelivery',
      nodeId,
      eventId: failedAttempt.eventId,
      deliveryId: failedAttempt.deliveryId,
      account: expect.any(String),
      reqId: expect.anything(),
    });

    const shot = join(root, 'console-deliveries.png');
    await page.locator('#details').screenshot({ path: shot });
    expect(existsSync(shot)).toBe(true);
    if (process.env.RGBX_UPDATE_CONSOLE_PNG)
      copyFileSync(shot, fileURLToPath(new URL('../docs/console-deliveries.png', import.meta.url)));
    expect(errors).toEqual([]);
    await page.close();
  });
});
