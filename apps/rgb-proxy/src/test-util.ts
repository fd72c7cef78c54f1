/**
 * Test helpers: run the built proxy (`dist/main.js`) as a real process and talk to it over HTTP.
 * Build first: `npx tsc -b`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAIN_JS = fileURLToPath(new URL('../dist/main.js', import.meta.url));

export interface ProxyProcess {
  url: string;
  /** `GET /metrics` on its own listener, as announced. */
  metricsUrl: string | undefined;
  rpcUrl: string;
  child: ChildProcess;
  dataDir: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function tempDataDir(prefix = 'rgb-proxy-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function startProxy(opts: { dataDir?: string; args?: string[] } = {}): Promise<ProxyProcess> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run \`npx tsc -b\` first`);
  const dataDir = opts.dataDir ?? tempDataDir();
  const child = spawn(
    process.execPath,
    [
      MAIN_JS,
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
      ...(opts.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let metricsUrl: string | undefined;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`proxy did not start in time: ${err}`)), 20_000);
    const check = () => {
      for (const line of out.split('\n')) {
        if (!line.trim()) continue;
        const msg = JSON.parse(line) as { event?: string; url?: string; metrics_url?: string };
        if (msg.event === 'listening' && msg.url) {
          clearTimeout(timer);
          child.stdout!.off('data', check);
          metricsUrl = msg.metrics_url;
          resolve(msg.url);
          return;
        }
      }
    };
    child.stdout!.on('data', check);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`proxy exited (${code}) before listening: ${err}`));
    });
  });
  return {
    url,
    metricsUrl,
    rpcUrl: `${url}/json-rpc`,
    child,
    dataDir,
    exited,
    stdout: () => out,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface RpcReply {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected loosely
  json: any;
}

async function toReply(res: Response): Promise<RpcReply> {
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

/** POSTs a raw body (string or object, JSON-encoded). */
export async function postJson(
  url: string,
  body: unknown,
  contentType = 'application/json',
): Promise<RpcReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  return toReply(res);
}

/** A JSON-RPC call the way rgb-lib sends it (id null unless given). */
export function call(url: string, method: string, params?: unknown, id: unknown = null): Promise<RpcReply> {
  const req: Record<string, unknown> = { jsonrpc: '2.0', id, method };
  if (params !== undefined) req.params = params;
  return postJson(url, req);
}

/** A multipart upload the way rgb-lib sends it: text fields plus a `file` part. */
export async function upload(
  url: string,
  method: string,
  params: unknown,
  file?: Uint8Array,
  opts: { id?: string | null; fileField?: string } = {},
): Promise<RpcReply> {
  const fd = new FormData();
  fd.set('method', method);
  fd.set('jsonrpc', '2.0');
  if (opts.id !== null) fd.set('id', opts.id ?? 'null');
  if (params !== undefined) fd.set('params', typeof params === 'string' ? params : JSON.stringify(params));
  if (file) fd.set(opts.fileField ?? 'file', new Blob([file]), 'consignment_out');
  const res = await fetch(url, { method: 'POST', body: fd });
  return toReply(res);
}

/**
 * A multipart upload with text fields exactly as given (in order, repeats allowed), e.g. the reference's
 * own form: `params[recipient_id]`, `params[txid]` as separate fields, plus a `file` part.
 */
export async function uploadFields(
  url: string,
  fields: Array<[string, string]>,
  file?: Uint8Array,
): Promise<RpcReply> {
  const fd = new FormData();
  for (const [k, v] of fields) fd.append(k, v);
  if (file) fd.set('file', new Blob([file]), 'consignment_out');
  const res = await fetch(url, { method: 'POST', body: fd });
  return toReply(res);
}
