/**
 * Where webhooks may go. Only HTTPS; no credentials in the URL; and no private, loopback,
 * link-local, CGNAT, multicast or otherwise non-public address, checked on the address the socket
 * actually connects to (inside the socket's `lookup`, so DNS rebinding cannot slip past), on every
 * attempt. A dev allowlist (`[webhooks] allow_cidrs`, e.g. loopback for the devnet) lifts the
 * address block for its ranges, and `allow_http` permits `http://` to allowlisted addresses only.
 */
import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Resolves a host name to every address (tests inject their own). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

const BLOCKED_V4 = [
  '0.0.0.0/8', // "this" network
  '10.0.0.0/8', // private
  '100.64.0.0/10', // CGNAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local (cloud metadata)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
];
const BLOCKED_V6 = [
  '::/128', // unspecified
  '::1/128', // loopback
  '64:ff9b::/96', // NAT64 (embeds IPv4)
  '64:ff9b:1::/48', // local-use NAT64
  '100::/64', // discard
  '2001::/23', // IETF protocol assignments (Teredo, …)
  '2001:db8::/32', // documentation
  '2002::/16', // 6to4 (embeds IPv4)
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'ff00::/8', // multicast
];

function addCidr(list: BlockList, cidr: string): void {
  const [net, bits] = cidr.split('/');
  const family = isIP(net ?? '');
  const prefix = Number(bits);
  if (!family || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
    throw new Error(`invalid CIDR ${JSON.stringify(cidr)}`);
  }
  list.addSubnet(net!, prefix, family === 4 ? 'ipv4' : 'ipv6');
}

/** `::ffff:1.2.3.4` (and the hex form) → `1.2.3.4`; other addresses unchanged. */
export function unmapIPv4(address: string): string {
  const m = /^(?:(?:0{1,4}:){5}|::)ffff:(.+)$/i.exec(address);
  if (!m) return address;
  const rest = m[1]!;
  if (isIP(rest) === 4) return rest;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(rest);
  if (!hex) return address;
  const hi = Number.parseInt(hex[1]!, 16);
  const lo = Number.parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export class AddressPolicy {
  private readonly blocked = new BlockList();
  private readonly allowed = new BlockList();
  readonly allowHttp: boolean;

  constructor(opts: { allowCidrs?: readonly string[]; allowHttp?: boolean } = {}) {
    for (const c of BLOCKED_V4) addCidr(this.blocked, c);
    for (const c of BLOCKED_V6) addCidr(this.blocked, c);
    for (const c of opts.allowCidrs ?? []) addCidr(this.allowed, c);
    this.allowHttp = opts.allowHttp ?? false;
  }

  private test(list: BlockList, address: string): boolean {
    const a = unmapIPv4(address);
    const family = isIP(a);
    if (family === 0) return false;
    return list.check(a, family === 4 ? 'ipv4' : 'ipv6');
  }

  isAllowlisted(address: string): boolean {
    return this.test(this.allowed, address);
  }

  /** Why an address is refused, or undefined when a webhook may connect to it. */
  refusal(address: string, opts: { requireAllowlisted?: boolean } = {}): string | undefined {
    if (isIP(unmapIPv4(address)) === 0) return `${address} is not an IP address`;
    if (this.isAllowlisted(address)) return undefined;
    if (opts.requireAllowlisted) return `plain http is only allowed to allowlisted addresses, not ${address}`;
    if (this.test(this.blocked, address)) return `requests to ${address} are blocked (non-public address)`;
    return undefined;
  }
}

export class BlockedDestinationError extends Error {
  override readonly name = 'BlockedDestinationError';
  readonly code = 'EBLOCKED';
}

/** Strips IPv6 brackets from `URL.hostname`. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Checks what can be checked without DNS: scheme, credentials, length, literal IP addresses.
 * Returns the reason it is refused, or undefined.
 */
export function webhookUrlProblem(raw: string, policy: AddressPolicy): string | undefined {
  if (raw.length > 2048) return 'longer than 2048 characters';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not an absolute URL';
  }
  const http = url.protocol === 'http:';
  if (url.protocol !== 'https:' && !(http && policy.allowHttp)) return 'the scheme must be https';
  if (url.username !== '' || url.password !== '') return 'credentials in the URL are not allowed';
  const host = bareHost(url.hostname);
  if (host === '') return 'no host';
  if (isIP(host) !== 0) {
    const why = policy.refusal(host, { requireAllowlisted: http });
    if (why) return why;
  }
  return undefined;
}

/**
 * A `lookup` for `http(s).request`: resolves with `resolver`, refuses the connection if ANY
 * resolved address is refused by the policy, otherwise hands the addresses to the socket.
 */
export function guardedLookup(
  policy: AddressPolicy,
  resolver: Resolver,
  opts: { requireAllowlisted?: boolean } = {},
): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolver(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
          return;
        }
        for (const a of addresses) {
          const why = policy.refusal(a.address, opts);
          if (why) {
            callback(new BlockedDestinationError(`${hostname}: ${why}`));
            return;
          }
        }
        if (options?.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: unknown) => callback(err),
    );
  }) as unknown as LookupFunction;
}
