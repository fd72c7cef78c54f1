/**
 * One webhook POST on the kit's HTTP client: SSRF-guarded lookup, literal-IP check, connect and total
 * timeouts, no redirects (a 3xx is just a failed attempt), and a bounded read of the response.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { HttpClient, HttpTimeoutError } from '../http-client.ts';
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
  private readonly client: HttpClient;
  private readonly policy: AddressPolicy;
  private readonly resolver: Resolver;

  constructor(policy: AddressPolicy, resolver: Resolver, extraCa?: string) {
    this.policy = policy;
    this.resolver = resolver;
    // Connections are kept alive and reused per destination.
    this.client = new HttpClient({ maxSockets: 64, ...(extraCa ? { extraCa } : {}) });
  }

  close(): void {
    this.client.close();
  }

  async post(
    rawUrl: string,
    body: Buffer,
    headers: Record<string, string>,
    opts: PostOptions,
  ): Promise<PostResult> {
    const url = new URL(rawUrl);
    const secure = url.protocol === 'https:';
    if (!secure && !(url.protocol === 'http:' && this.policy.allowHttp))
      throw new BlockedDestinationError(`scheme ${url.protocol} is not allowed`);
    const host = bareHost(url.hostname);
    const requireAllowlisted = !secure;
    if (isIP(host) !== 0) {
      // The socket does not call `lookup` for literal addresses: check them here.
      const why = this.policy.refusal(host, { requireAllowlisted });
      if (why) throw new BlockedDestinationError(why);
    }
    try {
      // The reply is read up to MAX_RESPONSE_READ (then the connection is dropped); only a snippet is kept.
      const reply = await this.client.request(url, {
        headers,
        body,
        timeoutMs: opts.requestTimeoutMs,
        connectTimeoutMs: opts.connectTimeoutMs,
        maxReplyBytes: MAX_RESPONSE_READ,
        overflow: 'truncate',
        lookup: guardedLookup(this.policy, this.resolver, { requireAllowlisted }),
      });
      return {
        statusCode: reply.status,
        headers: reply.headers,
        snippet: reply.body.subarray(0, opts.snippetBytes).toString('utf8'),
      };
    } catch (err) {
      if (err instanceof HttpTimeoutError) throw new DeliveryTimeoutError(err.message);
      throw err;
    }
  }
}
