import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ErrorEnvelope } from './errors.ts';
import { runService } from './lifecycle.ts';
import { createLogger } from './logger.ts';
import { createServer } from './server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('runService (in process)', () => {
  it('listens on an ephemeral port, finishes in-flight requests on close, then runs onShutdown', async () => {
    const logger = createLogger({ name: 'lc', level: 'silent' });
    const app = createServer({ name: 'lc', version: '1', logger, envelope: ErrorEnvelope.factory });
    let handlerStarted!: () => void;
    const started = new Promise<void>((r) => {
      handlerStarted = r;
    });
    app.get('/slow', async () => {
      handlerStarted();
      await sleep(300);
      return { done: true };
    });
    const events: string[] = [];
    // Recorded on the server: the response was sent before onShutdown ran (a client-side record could lag).
    app.addHook('onResponse', async (req) => {
      if (req.url === '/slow') events.push('response');
    });
    const svc = await runService({
      app,
      host: '127.0.0.1',
      port: 0,
      logger,
      handleSignals: false,
      onShutdown: async () => {
        events.push('shutdown');
      },
    });
    expect(svc.address.port).toBeGreaterThan(0);
    expect(svc.address.url).toBe(`http://127.0.0.1:${svc.address.port}`);
    const inflight = fetch(`${svc.address.url}/slow`).then(async (r) => ({
      status: r.status,
      body: await r.json(),
    }));
    await started; // the request is in flight inside the handler (no timing guess on a loaded machine)
    await svc.close();
    expect(await inflight).toEqual({ status: 200, body: { done: true } });
    expect(events).toEqual(['response', 'shutdown']);
    await expect(fetch(`${svc.address.url}/slow`)).rejects.toThrow();
    await svc.close(); // idempotent
  });
});

// Signals are exercised on a child process running the built kit (`npx tsc -b` first).
const distIndex = fileURLToPath(new URL('../dist/index.js', import.meta.url));

function fixture(opts: { shutdownTimeoutMs: number; slowMs: number }): string {
  return `
import { createServer, createLogger, runService, ErrorEnvelope } from ${JSON.stringify(pathToFileURL(distIndex).href)};
const logger = createLogger({ name: 'fx', level: 'info', destination: 2 });
const app = createServer({ name: 'fx', version: '1', logger, envelope: ErrorEnvelope.factory });
app.get('/slow', async () => { await new Promise((r) => setTimeout(r, ${opts.slowMs})); return { done: true }; });
const svc = await runService({ app, host: '127.0.0.1', port: 0, logger, shutdownTimeoutMs: ${opts.shutdownTimeoutMs},
  onShutdown: async () => { process.stdout.write('cleanup\\n'); } });
process.stdout.write(JSON.stringify({ url: svc.address.url }) + '\\n');
`;
}

async function startFixture(opts: { shutdownTimeoutMs: number; slowMs: number }) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', fixture(opts)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 15_000;
  while (!out.includes('\n')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`fixture did not start: ${err}`);
    await sleep(20);
  }
  const url = JSON.parse(out.split('\n')[0]!).url as string;
  return { child, url, exited, output: () => out, errors: () => err };
}

function kill(child: ChildProcess, sig: NodeJS.Signals) {
  child.kill(sig);
}

describe('runService (signals, child process)', () => {
  it('has a build to run', () => {
    expect(existsSync(distIndex), 'run `npx tsc -b` before the tests').toBe(true);
  });

  it('SIGTERM lets an in-flight request finish, runs onShutdown and exits 0', async () => {
    const fx = await startFixture({ shutdownTimeoutMs: 5000, slowMs: 600 });
    const inflight = fetch(`${fx.url}/slow`).then(async (r) => ({ status: r.status, body: await r.json() }));
    await sleep(150);
    kill(fx.child, 'SIGTERM');
    expect(await inflight).toEqual({ status: 200, body: { done: true } });
    expect(await fx.exited).toBe(0);
    expect(fx.output()).toContain('cleanup');
    expect(fx.errors()).toContain('shutting down');
  });

  it('a second signal during shutdown exits 1 at once', async () => {
    const fx = await startFixture({ shutdownTimeoutMs: 20_000, slowMs: 10_000 });
    const inflight = fetch(`${fx.url}/slow`).catch(() => 'aborted');
    await sleep(150);
    const t0 = Date.now();
    kill(fx.child, 'SIGTERM');
    await sleep(100);
    kill(fx.child, 'SIGINT');
    expect(await fx.exited).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(fx.output()).not.toContain('cleanup');
    await inflight;
  });

  it('exits 1 when the graceful stop takes longer than the timeout', async () => {
    const fx = await startFixture({ shutdownTimeoutMs: 300, slowMs: 10_000 });
    const inflight = fetch(`${fx.url}/slow`).catch(() => 'aborted');
    await sleep(150);
    const t0 = Date.now();
    kill(fx.child, 'SIGTERM');
    expect(await fx.exited).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(fx.errors()).toContain('graceful shutdown timed out');
    await inflight;
  });
});
