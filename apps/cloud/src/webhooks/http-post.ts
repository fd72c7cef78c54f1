/**
 * One webhook POST over node:http(s): SSRF-guarded lookup, literal-IP check, connect and total
 * timeouts, no redirects (a 3xx is just a failed attempt), and a bounded read of the response.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import {
  type AddressPolicy,
  BlockedDestinationError,
  bareHost,
  guardedLookup,
  type Resolver,
} from './ssrf.ts';

export interface PostOptions {
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  snippetBytes: number;
}

export interface PostResult {
  statusCode: number;
  headers: IncomingHttpHeaders;
  snippet: string;
}

export class DeliveryTimeoutError extends Error {
  override readonly name = 'DeliveryTimeoutError';
  readonly code = 'ETIMEDOUT_WEBHOOK';
}

/** Most response bytes read before the connection is dropped. */
const MAX_RESPONSE_READ = 64 * 1024;

export class WebhookHttpClient {
  private readonly https: HttpsAgent;
  private readonly http: HttpAgent;

  private readonly policy: AddressPolicy;
  private readonly resolver: Resolver;

  constructor(policy: AddressPolicy, resolver: Resolver, extraCa?: string) {
    this.policy = policy;
    this.resolver = resolver;
    // Connections are kept alive and reused per destination. An extra CA goes in through one
    // secure context built here: given as `ca`, the agent would concatenate every root
    // certificate into its connection-pool key on each request and build a context per connection.
    this.https = new HttpsAgent({
      keepAlive: true,
      maxSockets: 64,
      ...(extraCa ? { secureContext: createSecureContext({ ca: [...rootCertificates, extraCa] }) } : {}),
    });
    this.http = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  }

  close(): void {
    this.https.destroy();
    this.http.destroy();
  }

  post(
    rawUrl: string,
    body: Buffer,
    headers: Record<string, string>,
    opts: PostOptions,
  ): Promise<PostResult> {
    return new Promise<PostResult>((resolve, reject) => {
      const url = new URL(rawUrl);
      const secure = url.protocol === 'https:';
      if (!secure && !(url.protocol === 'http:' && this.policy.allowHttp)) {
        reject(new BlockedDestinationError(`scheme ${url.protocol} is not allowed`));
        return;
      }
      const host = bareHost(url.hostname);
      const requireAllowlisted = !secure;
      if (isIP(host) !== 0) {
        // The socket does not call `lookup` for literal addresses: check them here.
        const why = this.policy.refusal(host, { requireAllowlisted });
        if (why) {
          reject(new BlockedDestinationError(why));
          return;
        }
      }
      const request = secure ? httpsRequest : httpRequest;
      let settled = false;
      const finish = (err: Error | null, result?: PostResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(total);
        if (err) reject(err);
        else resolve(result!);
      };
      const req = request({
        protocol: url.protocol,
        hostname: host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        agent: secure ? this.https : this.http,
        lookup: guardedLookup(this.policy, this.resolver, { requireAllowlisted }),
        ...(secure && isIP(host) === 0 ? { servername: host } : {}),
      });
      const total = setTimeout(
        () => req.destroy(new DeliveryTimeoutError(`no response within ${opts.requestTimeoutMs} ms`)),
        opts.requestTimeoutMs,
      );
      req.once('socket', (socket) => {
        if (!socket.connecting) return;
        const t = setTimeout(
          () => req.destroy(new DeliveryTimeoutError(`connect timed out after ${opts.connectTimeoutMs} ms`)),
          opts.connectTimeoutMs,
        );
        socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(t));
        socket.once('close', () => clearTimeout(t));
      });
      req.once('error', (err) => finish(err));
      req.once('response', (res) => {
        const parts: Buffer[] = [];
        let kept = 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (kept < opts.snippetBytes) {
            const piece = chunk.subarray(0, opts.snippetBytes - kept);
            parts.push(piece);
            kept += piece.length;
          }
          if (read > MAX_RESPONSE_READ) {
            res.destroy();
            finish(null, {
              statusCode: res.statusCode ?? 0,
              headers: res.headers,
              snippet: Buffer.concat(parts).toString('utf8'),
            });
          }
        });
        res.once('end', () =>
          finish(null, {
            statusCode: res.statusCode ?? 0,
            headers: res.headers,
            snippet: Buffer.concat(parts).toString('utf8'),
          }),
        );
        res.once('error', (err) => finish(err));
      });
      req.end(body);
    });
  }
}
