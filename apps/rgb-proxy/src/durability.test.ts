/**
 * Durability against the real process: data survives restarts, and `kill -9` in the middle of a
 * streamed upload leaves no entry and no leftovers.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call, type ProxyProcess, startProxy, tempDataDir, upload } from './test-util.ts';

const TXID = 'c'.repeat(64);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cleanup: string[] = [];
const running: ProxyProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  for (const d of cleanup.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(dataDir: string, args: string[] = []): Promise<ProxyProcess> {
  const p = await startProxy({ dataDir, args });
  running.push(p);
  return p;
}

/**
 * A multipart upload written by hand, slowly: fields first, then the file part in chunks.
 * Returns once `sentBytes` of file data were written; the request stays open.
 */
function slowUpload(rpcUrl: string, params: unknown) {
  const boundary = `----rgbx${randomBytes(8).toString('hex')}`;
  const u = new URL(rpcUrl);
  const req = request({
    host: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
  });
  req.on('error', () => {}); // the server is going to die under it
  const field = (name: string, value: string) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  req.write(
    field('method', 'consignment.post') +
      field('jsonrpc', '2.0') +
      field('id', 'null') +
      field('params', JSON.stringify(params)) +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="consignment_out"\r\n` +
      'content-type: application/octet-stream\r\n\r\n',
  );
  let sent = 0;
  let stopped = false;
  const pump = async () => {
    while (!stopped && !req.destroyed) {
      const chunk = randomBytes(64 * 1024);
      if (!req.write(chunk)) {
        await new Promise<void>((r) => {
          req.once('drain', r);
          req.once('close', r);
        });
      }
      sent += chunk.length;
      await sleep(10);
    }
  };
  const pumping = pump().catch(() => {});
  return {
    sent: () => sent,
    stop: async () => {
      stopped = true;
      req.destroy();
      await pumping;
    },
  };
}

function tmpFiles(dataDir: string): { name: string; size: number }[] {
  const dir = join(dataDir, 'tmp');
  return readdirSync(dir).map((name) => ({ name, size: statSync(join(dir, name)).size }));
}

describe('durability', () => {
  it('keeps consignments, media and acks across a restart (SIGTERM exits 0)', async () => {
    const dataDir = tempDataDir();
    cleanup.push(dataDir);
    const a = await start(dataDir);
    const file = randomBytes(200_000);
    const media = randomBytes(10_000);
    expect(
      (await upload(a.rpcUrl, 'consignment.post', { recipient_id: 'r1', txid: TXID, vout: 4 }, file)).json
        .result,
    ).toBe(true);
    expect((await upload(a.rpcUrl, 'media.post', { attachment_id: 'm1' }, media)).json.result).toBe(true);
    expect((await call(a.rpcUrl, 'ack.post', { recipient_id: 'r1', ack: true })).json.result).toBe(true);
    expect(await a.stop()).toEqual({ code: 0, signal: null });

    const b = await start(dataDir);
    expect(b.url).not.toBe('');
    const got = await call(b.rpcUrl, 'consignment.get', { recipient_id: 'r1' });
    expect(Buffer.from(got.json.result.consignment, 'base64').equals(file)).toBe(true);
    expect(got.json.result).toMatchObject({ txid: TXID, vout: 4 });
    expect((await call(b.rpcUrl, 'media.get', { attachment_id: 'm1' })).json.result).toBe(
      media.toString('base64'),
    );
    expect((await call(b.rpcUrl, 'ack.get', { recipient_id: 'r1' })).json.result).toBe(true);
    // write-once still holds after the restart
    expect(
      (await upload(b.rpcUrl, 'consignment.post', { recipient_id: 'r1', txid: TXID }, file)).json.result,
    ).toBe(false);
    expect(
      (await upload(b.rpcUrl, 'consignment.post', { recipient_id: 'r1', txid: TXID }, randomBytes(5))).json
        .error.code,
    ).toBe(-101);
    expect((await b.stop()).code).toBe(0);
  });

  it('kill -9 during a slow streamed upload: after restart no entry, no tmp leftovers, a new upload works', async () => {
    const dataDir = tempDataDir();
    cleanup.push(dataDir);
    const a = await start(dataDir);
    const slow = slowUpload(a.rpcUrl, { recipient_id: 'victim', txid: TXID, vout: 0 });
    // wait until the server is visibly streaming the file into tmp/
    const deadline = Date.now() + 20_000;
    while (!(tmpFiles(dataDir).some((f) => f.size > 256 * 1024) && slow.sent() > 512 * 1024)) {
      if (Date.now() > deadline) throw new Error('upload never reached tmp/');
      await sleep(20);
    }
    // meanwhile, nothing is indexed yet
    expect((await call(a.rpcUrl, 'consignment.get', { recipient_id: 'victim' })).json.error.code).toBe(-400);
    a.child.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');
    await slow.stop();
    expect(tmpFiles(dataDir).length).toBeGreaterThan(0); // the half-written file is still there...

    const b = await start(dataDir);
    expect(tmpFiles(dataDir)).toEqual([]); // ...and gone after the restart
    const lost = await call(b.rpcUrl, 'consignment.get', { recipient_id: 'victim' });
    expect(lost.json.error).toMatchObject({ code: -400 });
    expect(readdirSync(join(dataDir, 'consignments'))).toEqual([]);
    const file = randomBytes(100_000);
    expect(
      (await upload(b.rpcUrl, 'consignment.post', { recipient_id: 'victim', txid: TXID, vout: 0 }, file)).json
        .result,
    ).toBe(true);
    const got = await call(b.rpcUrl, 'consignment.get', { recipient_id: 'victim' });
    expect(Buffer.from(got.json.result.consignment, 'base64').equals(file)).toBe(true);
    expect((await b.stop()).code).toBe(0);
  });

  it('removes, at start, files that were renamed in but never indexed', async () => {
    const dataDir = tempDataDir();
    cleanup.push(dataDir);
    const a = await start(dataDir);
    const file = randomBytes(1000);
    expect(
      (await upload(a.rpcUrl, 'consignment.post', { recipient_id: 'kept', txid: TXID }, file)).json.result,
    ).toBe(true);
    await a.stop();
    const orphan = join(dataDir, 'consignments', 'e'.repeat(64));
    const unrelated = join(dataDir, 'consignments', 'README');
    writeFileSync(orphan, 'crash between rename and insert');
    writeFileSync(unrelated, 'not ours to delete');
    writeFileSync(join(dataDir, 'tmp', 'x.part'), 'half');
    const b = await start(dataDir);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(unrelated)).toBe(true);
    expect(tmpFiles(dataDir)).toEqual([]);
    const got = await call(b.rpcUrl, 'consignment.get', { recipient_id: 'kept' });
    expect(Buffer.from(got.json.result.consignment, 'base64').equals(file)).toBe(true);
  });

  it('SIGTERM during an upload lets it finish before exiting 0', async () => {
    const dataDir = tempDataDir();
    cleanup.push(dataDir);
    const a = await start(dataDir);
    const file = randomBytes(8 * 1024 * 1024);
    const pending = upload(a.rpcUrl, 'consignment.post', { recipient_id: 'late', txid: TXID }, file);
    const deadline = Date.now() + 20_000;
    while (tmpFiles(dataDir).length === 0) {
      if (Date.now() > deadline) throw new Error('upload never reached tmp/');
      await sleep(2);
    }
    a.child.kill('SIGTERM');
    const r = await pending;
    expect(r.json.result).toBe(true);
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const b = await start(dataDir);
    const got = await call(b.rpcUrl, 'consignment.get', { recipient_id: 'late' });
    expect(Buffer.from(got.json.result.consignment, 'base64').equals(file)).toBe(true);
  });

  it('refuses a bad config with a clear message and exit code 2', async () => {
    const dataDir = tempDataDir();
    cleanup.push(dataDir);
    const cfg = join(dataDir, 'proxy.toml');
    writeFileSync(cfg, 'port = "x"\nmax_upload = 5\n');
    const err: Error = await start(dataDir, ['-c', cfg]).then(
      () => new Error('started'),
      (e: Error) => e,
    );
    expect(err.message).toMatch(/exited \(2\)/);
    expect(err.message).toContain(`invalid configuration in ${cfg}:`);
    expect(err.message).toContain('"port" must be integer in 0..65535, got string "x"');
    expect(err.message).toContain('unknown key "max_upload" (allowed: host, port, data_dir,');
  });
});
