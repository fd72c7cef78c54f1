/**
 * Property tests of the SSRF address rules over address FORMS: every spelling of an address
 * (full, zero-padded or not, `::` at any zero run, upper/lower case, dotted IPv4 tail, brackets in
 * a URL) gets the verdict of an independent oracle computed on the address's number: IPv4 ranges
 * from the special-purpose registry, IPv6 only in global unicast 2000::/3 outside its special
 * ranges, and an IPv4-mapped address judged as its IPv4. So the IPv4-compatible (`::127.0.0.1`),
 * IPv4-translated (`::ffff:0:7f00:1`), NAT64 (`64:ff9b::7f00:1`) and 6to4 forms of a private or
 * loopback address, and site-local fec0::/10, are refused however they are written.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressPolicy, guardedLookup, parseIPv6, webhookUrlProblem } from './ssrf.ts';

// ---- the oracle: numbers and prefixes only, no parsing of the code under test ----

const v4 = (s: string) => s.split('.').reduce((n, o) => n * 256 + Number(o), 0);
const V4_BLOCKED: [number, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
].map(([a, b]) => [v4(a as string), b as number]);
const inV4 = (n: number, [base, bits]: [number, number]) =>
  bits === 0 || Math.floor(n / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits));
const v4Blocked = (n: number) => V4_BLOCKED.some((c) => inV4(n, c));

const V6_BLOCKED: [bigint, number][] = [
  [0n, 96], // ::/96: unspecified, loopback, IPv4-compatible
  [0xffff00000000n << 32n, 96], // ::ffff:0:0:0/96 IPv4-translated
  [0x0064ff9bn << 96n, 96], // 64:ff9b::/96 NAT64
  [0x0064ff9b0001n << 80n, 48], // 64:ff9b:1::/48
  [0x0100n << 112n, 64], // 100::/64 discard
  [0x2001n << 112n, 23], // 2001::/23
  [0x20010db8n << 96n, 32], // 2001:db8::/32
  [0x2002n << 112n, 16], // 2002::/16 6to4
  [0x3fffn << 112n, 20], // 3fff::/20
  [0xfc00n << 112n, 7], // fc00::/7
  [0xfe80n << 112n, 10], // fe80::/10
  [0xfec0n << 112n, 10], // fec0::/10 site-local
  [0xff00n << 112n, 8], // ff00::/8
];
const inV6 = (x: bigint, [base, bits]: [bigint, number]) =>
  x >> BigInt(128 - bits) === base >> BigInt(128 - bits);
const MAPPED = 0xffffn << 32n;
/** true when a webhook must not go there. */
function v6Blocked(x: bigint): boolean {
  if (x >> 32n === 0xffffn) return v4Blocked(Number(x & 0xffffffffn));
  if (V6_BLOCKED.some((c) => inV6(x, c))) return true;
  return !inV6(x, [0x2000n << 112n, 3]);
}

// ---- renderings of one address ----

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
interface Form {
  pad: boolean;
  upper: boolean;
  dottedTail: boolean;
  /** Which run of zero groups `::` replaces (modulo the runs there are), or none. */
  run: number | null;
}
function render(x: bigint, f: Form): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((x >> BigInt(112 - 16 * i)) & 0xffffn));
  const count = f.dottedTail ? 6 : 8;
  let parts = groups.slice(0, count).map((g) => (f.pad ? g.toString(16).padStart(4, '0') : g.toString(16)));
  const tail = f.dottedTail ? [dotted(Number(x & 0xffffffffn))] : [];
  const runs: [number, number][] = [];
  for (let i = 0; i < count; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < count && groups[j] === 0) j++;
    runs.push([i, j]);
    i = j;
  }
  let text: string;
  if (f.run !== null && runs.length > 0) {
    const [a, b] = runs[f.run % runs.length]!;
    const head = parts.slice(0, a).join(':');
    const rest = [...parts.slice(b), ...tail].join(':');
    text = `${head}::${rest}`;
  } else {
    parts = [...parts, ...tail];
    text = parts.join(':');
  }
  return f.upper ? text.toUpperCase() : text;
}
const form = fc.record({
  pad: fc.boolean(),
  upper: fc.boolean(),
  dottedTail: fc.boolean(),
  run: fc.option(fc.nat(4), { nil: null }),
});

// ---- generators biased to the interesting places ----

const anyV4 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const blockedV4 = fc
  .tuple(fc.constantFrom(...V4_BLOCKED), anyV4)
  .map(([[base, bits], r]) => base + (bits === 32 ? 0 : r % 2 ** (32 - bits)));
const publicV4 = anyV4.filter((n) => !v4Blocked(n));
const EMBEDDINGS: [string, (n: number) => bigint][] = [
  ['mapped ::ffff:a.b.c.d', (n) => MAPPED | BigInt(n)],
  ['compatible ::a.b.c.d', (n) => BigInt(n)],
  ['translated ::ffff:0:a.b.c.d', (n) => (0xffff00000000n << 32n) | BigInt(n)],
  ['NAT64 64:ff9b::a.b.c.d', (n) => (0x0064ff9bn << 96n) | BigInt(n)],
  ['6to4 2002:aabb:ccdd::', (n) => (0x2002n << 112n) | (BigInt(n) << 80n)],
];
const anyV6 = fc.oneof(
  fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
  // inside a blocked prefix, random below it
  fc
    .tuple(fc.constantFrom(...V6_BLOCKED), fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }))
    .map(([[base, bits], r]) => base | (r & ((1n << BigInt(128 - bits)) - 1n))),
  // global unicast
  fc.bigInt({ min: 0x2000n << 112n, max: (0x4000n << 112n) - 1n }),
  // an IPv4 address embedded every way
  fc.tuple(fc.constantFrom(...EMBEDDINGS), fc.oneof(blockedV4, anyV4)).map(([[, embed], n]) => embed(n)),
);

const bytesOf = (x: bigint) =>
  Uint8Array.from({ length: 16 }, (_, i) => Number((x >> BigInt(120 - 8 * i)) & 0xffn));
const strict = new AddressPolicy();

describe('SSRF rules over address forms (property tests)', () => {
  it('every spelling of an IPv6 address parses to its 16 bytes and gets the oracle’s verdict', () => {
    fc.assert(
      fc.property(anyV6, form, (x, f) => {
        const text = render(x, f);
        expect(parseIPv6(text), text).toEqual(bytesOf(x));
        expect(strict.refusal(text) !== undefined, text).toBe(v6Blocked(x));
      }),
      { numRuns: 5000 },
    );
  });

  it('the same verdict for the literal in a webhook URL (normalized by the URL parser)', () => {
    fc.assert(
      fc.property(anyV6, form, (x, f) => {
        const url = `https://[${render(x, f)}]:8443/hook`;
        expect(webhookUrlProblem(url, strict) !== undefined, url).toBe(v6Blocked(x));
      }),
      { numRuns: 2000 },
    );
  });

  it('a non-public IPv4 address is refused in every IPv4 and IPv6 form', () => {
    fc.assert(
      fc.property(blockedV4, fc.constantFrom(...EMBEDDINGS), form, (n, [name, embed], f) => {
        expect(strict.refusal(dotted(n)), dotted(n)).toMatch(/are blocked \(non-public address: /);
        const text = render(embed(n), f);
        expect(strict.refusal(text), `${name}: ${text}`).toMatch(/are blocked \(non-public address: /);
      }),
      { numRuns: 3000 },
    );
  });

  it('a public IPv4 address is allowed as such and IPv4-mapped, refused in the other embeddings', () => {
    fc.assert(
      fc.property(publicV4, form, (n, f) => {
        expect(strict.refusal(dotted(n))).toBeUndefined();
        expect(strict.refusal(render(MAPPED | BigInt(n), f))).toBeUndefined();
        for (const [name, embed] of EMBEDDINGS.slice(1)) {
          const text = render(embed(n), f);
          expect(strict.refusal(text), `${name}: ${text}`).toBeDefined();
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('the dev allowlist covers IPv4-mapped spellings of its IPv4 ranges, never the other embeddings', () => {
    const dev = new AddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
    const loopback = fc.integer({ min: v4('127.0.0.0'), max: v4('127.255.255.255') });
    fc.assert(
      fc.property(loopback, form, (n, f) => {
        expect(dev.refusal(dotted(n))).toBeUndefined();
        expect(dev.refusal(render(MAPPED | BigInt(n), f))).toBeUndefined();
        for (const [name, embed] of EMBEDDINGS.slice(1)) {
          const text = render(embed(n), f);
          expect(dev.refusal(text), `${name}: ${text}`).toMatch(/are blocked/);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('a name is refused when any address it resolves to is refused, in any form', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(anyV6, form), { minLength: 1, maxLength: 4 }), async (addrs) => {
        const resolved = addrs.map(([x, f]) => ({ address: render(x, f), family: 6 as const }));
        const lookup = guardedLookup(strict, async () => resolved) as unknown as (
          h: string,
          o: object,
          cb: (...a: unknown[]) => void,
        ) => void;
        const [err] = await new Promise<unknown[]>((r) => lookup('h.test', { all: true }, (...a) => r(a)));
        expect(err !== null, JSON.stringify(resolved)).toBe(addrs.some(([x]) => v6Blocked(x)));
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses the forms named in issue 12, as addresses and as URL literals', () => {
    const cases: [string, string][] = [
      ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
      ['::7f00:1', 'IPv4-compatible (deprecated)'],
      ['::ffff:0:7f00:1', 'IPv4-translated'],
      ['::ffff:0:127.0.0.1', 'IPv4-translated'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['0:0:0:0:0:FFFF:7F00:0001', 'loopback'],
      ['0000::ffff:7f00:1', 'loopback'],
      ['64:ff9b::7f00:1', 'NAT64, embeds IPv4'],
      ['64:ff9b::127.0.0.1', 'NAT64, embeds IPv4'],
      ['2002:7f00:1::', '6to4, embeds IPv4'],
      ['fec0::1', 'site-local (deprecated)'],
      ['FEFF:ffff::1', 'site-local (deprecated)'],
      ['fe80::1%eth0', 'link-local'],
      ['4000::1', 'not global unicast'],
    ];
    for (const [address, label] of cases) {
      expect(strict.refusal(address), address).toBe(
        `requests to ${address} are blocked (non-public address: ${label})`,
      );
      if (!address.includes('%'))
        expect(webhookUrlProblem(`https://[${address}]/hook`, strict), address).toMatch(
          new RegExp(`are blocked \\(non-public address: ${label.replace(/[()]/g, '\\$&')}\\)$`),
        );
    }
  });
});
