/**
 * Where webhooks may go. Only HTTPS; no credentials in the URL; and no private, loopback,
 * link-local, CGNAT, multicast or otherwise non-public address: checked when the URL is set (the
 * host name is resolved then) and again on the address the socket actually connects to (inside the
 * socket's `lookup`, so DNS rebinding cannot slip past), on every attempt. IPv6 must be global
 * unicast (2000::/3) outside the special ranges; an IPv4-mapped address (`::ffff:a.b.c.d`, any
 * spelling) is judged as its IPv4 address, and every other IPv4 embedding (compatible `::a.b.c.d`,
 * translated `::ffff:0:a.b.c.d`, NAT64, 6to4, Teredo) is refused. A dev allowlist (`[webhooks] allow_cidrs`, e.g. loopback for the devnet) lifts the
 * address block for its ranges, and `allow_http` permits `http://` to allowlisted addresses only.
 */
import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

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

/** Parses dotted-decimal IPv4 (as `net.isIP` accepts it) into 4 bytes. */
function parseIPv4(text: string): Uint8Array | undefined {
  if (isIP(text) !== 4) return undefined;
  return Uint8Array.from(text.split('.').map(Number));
}

/**
 * Parses any textual IPv6 form into 16 bytes: compressed (`::`) or full, upper or lower case,
 * zero-padded groups, an embedded dotted IPv4 tail (`::ffff:1.2.3.4`, `::1.2.3.4`), brackets and a
 * zone id (`fe80::1%eth0`).
 */
export function parseIPv6(text: string): Uint8Array | undefined {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (isIP(s) !== 6) return undefined;
  const last = s.lastIndexOf(':');
  const tail = s.slice(last + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (!v4) return undefined;
    s = `${s.slice(0, last + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string | undefined) => (h ? h.split(':') : []);
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  const out = new Uint8Array(16);
  for (const [i, g] of all.entries()) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
    const v = Number.parseInt(g, 16);
    out[2 * i] = v >> 8;
    out[2 * i + 1] = v & 255;
  }
  return out;
}

/** An IPv4 (4 bytes) or IPv6 (16 bytes) address. */
export function parseIP(text: string): Uint8Array | undefined {
  return parseIPv4(text) ?? parseIPv6(text);
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:0:0/96`), else undefined. */
function mappedIPv4(a: Uint8Array): Uint8Array | undefined {
  if (a.length !== 16 || a[10] !== 0xff || a[11] !== 0xff) return undefined;
  for (let i = 0; i < 10; i++) if (a[i] !== 0) return undefined;
  return a.subarray(12);
}

interface Cidr {
  net: Uint8Array;
  bits: number;
  label: string;
}

function parseCidr(cidr: string, label = cidr): Cidr {
  const slash = cidr.indexOf('/');
  const net = parseIP(slash < 0 ? cidr : cidr.slice(0, slash));
  const bits = Number(slash < 0 ? Number.NaN : cidr.slice(slash + 1));
  if (!net || !/^\d+$/.test(cidr.slice(slash + 1)) || bits > net.length * 8) {
    throw new Error(`invalid CIDR ${JSON.stringify(cidr)}`);
  }
  return { net, bits, label };
}

function inCidr(a: Uint8Array, c: Cidr): boolean {
  if (a.length !== c.net.length) return false;
  const whole = c.bits >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== c.net[i]) return false;
  const rem = c.bits & 7;
  if (rem === 0) return true;
  const mask = (0xff << (8 - rem)) & 0xff;
  return (a[whole]! & mask) === (c.net[whole]! & mask);
}

/** Non-public IPv4 ranges (IANA special-purpose registry, plus multicast and reserved). */
const BLOCKED_V4: Cidr[] = [
  ['0.0.0.0/8', '"this" network'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'CGNAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local, cloud metadata'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved, broadcast'],
].map(([c, l]) => parseCidr(c!, l));

/**
 * Named IPv6 ranges, checked first for a precise message. Whatever else lies outside global
 * unicast (2000::/3) is refused too, so no embedding of IPv4 other than the mapped form (which is
 * judged by its IPv4 address) can reach a private host.
 */
const BLOCKED_V6: Cidr[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['::ffff:0:0:0/96', 'IPv4-translated'],
  ['64:ff9b::/96', 'NAT64, embeds IPv4'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard'],
  ['2001::/23', 'IETF protocol assignments (Teredo, …)'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', '6to4, embeds IPv4'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'unique local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
].map(([c, l]) => parseCidr(c!, l));
const GLOBAL_UNICAST_V6 = parseCidr('2000::/3');

/** `::ffff:1.2.3.4` (any textual form) → `1.2.3.4`; other addresses unchanged. */
export function unmapIPv4(address: string): string {
  const a = parseIPv6(address);
  const v4 = a && mappedIPv4(a);
  return v4 ? v4.join('.') : address;
}

/** Why an address is not public, or undefined when it is. IPv4-mapped IPv6 is judged as its IPv4. */
export function nonPublicReason(address: string): string | undefined {
  const parsed = parseIP(address);
  if (!parsed) return 'not an IP address';
  const a = mappedIPv4(parsed) ?? parsed;
  if (a.length === 4) return BLOCKED_V4.find((c) => inCidr(a, c))?.label;
  const named = BLOCKED_V6.find((c) => inCidr(a, c));
  if (named) return named.label;
  return inCidr(a, GLOBAL_UNICAST_V6) ? undefined : 'not global unicast';
}

export class AddressPolicy {
  private readonly allowed: Cidr[];
  readonly allowHttp: boolean;

  constructor(opts: { allowCidrs?: readonly string[]; allowHttp?: boolean } = {}) {
    this.allowed = (opts.allowCidrs ?? []).map((c) => parseCidr(c));
    this.allowHttp = opts.allowHttp ?? false;
  }

  /** In the dev allowlist (an IPv4-mapped address counts as its IPv4 address). */
  isAllowlisted(address: string): boolean {
    const parsed = parseIP(address);
    if (!parsed) return false;
    const a = mappedIPv4(parsed) ?? parsed;
    return this.allowed.some((c) => inCidr(a, c));
  }

  /** Why an address is refused, or undefined when a webhook may connect to it. */
  refusal(address: string, opts: { requireAllowlisted?: boolean } = {}): string | undefined {
    if (!parseIP(address)) return `${address} is not an IP address`;
    if (this.isAllowlisted(address)) return undefined;
    if (opts.requireAllowlisted) return `plain http is only allowed to allowlisted addresses, not ${address}`;
    const why = nonPublicReason(address);
    return why ? `requests to ${address} are blocked (non-public address: ${why})` : undefined;
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

/**
 * The check when a URL is set: `webhookUrlProblem`, then the host name is resolved with the same
 * resolver and policy as at delivery, and refused if it does not resolve or if ANY of its addresses
 * is refused. (Every attempt resolves and checks again, so a name that changes later is still
 * caught at delivery.)
 */
export async function checkWebhookUrl(
  raw: string,
  policy: AddressPolicy,
  resolver: Resolver,
  timeoutMs = 5_000,
): Promise<string | undefined> {
  const problem = webhookUrlProblem(raw, policy);
  if (problem) return problem;
  const url = new URL(raw);
  const host = bareHost(url.hostname);
  if (isIP(host) !== 0) return undefined; // an address literal: checked by webhookUrlProblem
  return hostRefusal(host, policy, resolver, { timeoutMs, requireAllowlisted: url.protocol === 'http:' });
}

/**
 * Why a connection to `host` (a name or an address literal) is refused: a name that does not resolve within
 * `timeoutMs`, or ANY address it resolves to that the policy refuses. Undefined when every address may be used.
 */
export async function hostRefusal(
  host: string,
  policy: AddressPolicy,
  resolver: Resolver,
  opts: { timeoutMs?: number; requireAllowlisted?: boolean } = {},
): Promise<string | undefined> {
  const check = { requireAllowlisted: opts.requireAllowlisted ?? false };
  if (isIP(host) !== 0) return policy.refusal(host, check);
  const timeoutMs = opts.timeoutMs ?? 5_000;
  let timer: NodeJS.Timeout | undefined;
  let addresses: ResolvedAddress[];
  try {
    addresses = await Promise.race([
      resolver(host),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error('timeout'), { code: `no answer within ${timeoutMs} ms` })),
          timeoutMs,
        );
      }),
    ]);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return `${host} does not resolve (${code})`;
  } finally {
    clearTimeout(timer);
  }
  if (addresses.length === 0) return `${host} does not resolve (no address)`;
  for (const a of addresses) {
    const why = policy.refusal(a.address, check);
    if (why) return `${host} resolves to a refused address: ${why}`;
  }
  return undefined;
}
