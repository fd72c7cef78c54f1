/**
 * Shared test fixtures: a self-signed certificate made at test time (openssl CLI, never
 * committed), an HTTPS webhook receiver that records every request, configs, and polling helpers.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CloudConfig, loadConfig } from './config.ts';

export const FAKE_WALLET_NODE = fileURLToPath(new URL('../test/fake-wallet-node.mjs', import.meta.url));

export interface Tls {
  key: string;
  cert: string;
  certFile: string;
}

/** A throwaway self-signed certificate for 127.0.0.1 / localhost. */
export function selfSignedCert(dir: string): Tls {
  mkdirSync(dir, { recursive: true });
  const keyFile = join(dir, 'receiver.key');
  const certFile = join(dir, 'receiver.crt');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile };
}

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

type Responder = (r: Received) => {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
};

/** An HTTPS receiver on 127.0.0.1 that records requests; it can be taken down and brought back on its port. */
export class TestReceiver {
  readonly requests: Received[] = [];
  respond: Responder = () => ({ status: 200, body: '{"message":"ok"}' });
  private server: Server | undefined;
  port = 0;
  private readonly tls: Tls;

  constructor(tls: Tls) {
    this.tls = tls;
  }

  url(path = '/hook'): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  private handler = (req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const r: Received = {
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(parts),
        at: Date.now(),
      };
      this.requests.push(r);
      const a = this.respond(r);
      const send = () => {
        res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
        res.end(a.body ?? '');
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  };

  async start(port = this.port): Promise<this> {
    const server = createServer({ key: this.tls.key, cert: this.tls.cert }, this.handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Stops accepting (connections are refused) until `start()` again. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  /** Requests whose body parses to a status event for `nodeId`, in arrival order. */
  statuses(nodeId: string): string[] {
    return this.requests
      .map((r) => JSON.parse(r.body.toString('utf8')) as { nodeId: string; details: { status: string } })
      .filter((e) => e.nodeId === nodeId)
      .map((e) => e.details.status);
  }
}

/** The signing keys' encryption key of test configs (tests only). */
export const TEST_ENCRYPTION_KEY = '5a'.repeat(32);

export interface TestConfigOptions {
  dir: string;
  databaseUrl: string;
  caFile?: string;
  walletNodeMain?: string;
  /** Extra TOML appended (later keys must not repeat earlier ones). */
  nodes?: string;
  webhooks?: string;
  backend?: string;
  logLevel?: string;
  /** The `[signing_keys]` section's body; default `encryption_key = TEST_ENCRYPTION_KEY`. */
  signingKeys?: string;
}

export function testConfigText(o: TestConfigOptions): string {
  return [
    '[cloud]',
    `data_dir = ${JSON.stringify(o.dir)}`,
    `log_level = ${JSON.stringify(o.logLevel ?? 'silent')}`,
    '[api]',
    'port = 0',
    '[database]',
    `url = ${JSON.stringify(o.databaseUrl)}`,
    // Tests never take the default metrics port (9403): processes started from this config listen on any.
    '[metrics]',
    'port = 0',
    '[signing_keys]',
    o.signingKeys ?? `encryption_key = "${TEST_ENCRYPTION_KEY}"`,
    '[backend]',
    o.backend ??
      [
        'btc_rpc_address = "127.0.0.1:18443"',
        'btc_rpc_user = "user"',
        'btc_rpc_password = "test-password"',
        'indexer_address = "tcp://127.0.0.1:50001"',
        'proxy_address = ["rpc://127.0.0.1:3000/json-rpc"]',
      ].join('\n'),
    '[nodes]',
    `wallet_node_main = ${JSON.stringify(o.walletNodeMain ?? FAKE_WALLET_NODE)}`,
    o.nodes ??
      'health_interval_ms = 200\nstart_timeout_ms = 20000\nrestart_backoff_ms = [300]\nstop_grace_ms = 3000',
    '[webhooks]',
    'allow_cidrs = ["127.0.0.0/8"]',
    'poll_interval_ms = 50',
    ...(o.caFile ? [`extra_ca_file = ${JSON.stringify(o.caFile)}`] : []),
    o.webhooks ?? 'retry_schedule_ms = [200, 400, 800]\njitter = 0\nrequest_timeout_ms = 3000',
    '',
  ].join('\n');
}

export function testConfig(o: TestConfigOptions): CloudConfig {
  return loadConfig({ text: testConfigText(o) });
}

/** Polls `fn` until it returns a truthy value. */
export async function until<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
