/**
 * The RGB transport endpoints a send names — the client's `recipient_map`, or whoever wrote the invoice — are
 * where rgb-lib connects during `sendbegin`, `sendend` and `refresh` (it posts and polls consignments there).
 * Unchecked, an invoice could make the node connect to its own network: loopback, a private range, a cloud
 * metadata address. The node's own proxies (`wallet.proxy_address`) are always allowed; any other endpoint must
 * be `rpc://`/`rpcs://` and resolve only to public addresses or to `wallet.transport_allow_cidrs`.
 *
 * rgb-lib resolves the name again itself when it connects, so a name that changes between the check and the
 * connection (DNS rebinding) is not stopped here: restrict the node's outbound traffic for that.
 */
import { AddressPolicy, bareHost, hostRefusal, type Resolver } from '@rgbx/service-kit/webhooks';

export class TransportPolicy {
  readonly #own: Set<string>;
  readonly #policy: AddressPolicy;
  readonly #resolver: Resolver;

  constructor(o: { proxies: readonly string[]; allowCidrs: readonly string[]; resolver: Resolver }) {
    this.#own = new Set(o.proxies.map(originOf).filter((x): x is string => x !== undefined));
    this.#policy = new AddressPolicy({ allowCidrs: o.allowCidrs });
    this.#resolver = o.resolver;
  }

  /** Why rgb-lib may not be sent to `endpoint`, or undefined. */
  async refusal(endpoint: string): Promise<string | undefined> {
    const origin = originOf(endpoint);
    if (origin === undefined) return 'not an RGB transport endpoint (rpc://host[:port]/path or rpcs://…)';
    if (this.#own.has(origin)) return undefined;
    const host = bareHost(new URL(endpoint).hostname);
    return hostRefusal(host, this.#policy, this.#resolver);
  }

  /** The first refused endpoint among `endpoints` and why, checked in order (each once). */
  async firstRefused(endpoints: Iterable<string>): Promise<{ endpoint: string; why: string } | undefined> {
    for (const endpoint of new Set(endpoints)) {
      const why = await this.refusal(endpoint);
      if (why) return { endpoint, why };
    }
    return undefined;
  }
}

/** `scheme://host:port` of an `rpc://`/`rpcs://` endpoint (default ports filled in), or undefined. */
function originOf(endpoint: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'rpc:' && url.protocol !== 'rpcs:') || url.hostname === '') return undefined;
  const port = url.port || (url.protocol === 'rpcs:' ? '443' : '80');
  return `${url.protocol}//${url.hostname.toLowerCase()}:${port}`;
}
