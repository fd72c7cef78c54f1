import { describe, expect, it } from 'vitest';
import {
  AddressPolicy,
  checkWebhookUrl,
  guardedLookup,
  type Resolver,
  unmapIPv4,
  webhookUrlProblem,
} from './ssrf.ts';

describe('AddressPolicy', () => {
  const strict = new AddressPolicy();
  it('refuses non-public addresses and accepts public ones', () => {
    const refused = [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '192.0.2.1',
      '198.18.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '0:0:0:0:0:ffff:10.0.0.1',
      '64:ff9b::a00:1',
      '2002:a00:1::1',
      '2001:db8::1',
    ];
    for (const a of refused) expect(strict.refusal(a), a).toBeDefined();
    for (const a of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(strict.refusal(a), a).toBeUndefined();
    }
    expect(strict.refusal('example.com')).toMatch(/not an IP/);
  });

  it('lifts the block for the dev allowlist only, and plain http needs the allowlist', () => {
    const dev = new AddressPolicy({ allowCidrs: ['127.0.0.0/8', '::1/128'], allowHttp: true });
    expect(dev.refusal('127.0.0.1')).toBeUndefined();
    expect(dev.refusal('::ffff:127.0.0.2')).toBeUndefined();
    expect(dev.refusal('::1')).toBeUndefined();
    expect(dev.refusal('10.0.0.1')).toBeDefined();
    expect(dev.refusal('93.184.216.34', { requireAllowlisted: true })).toMatch(/plain http/);
    expect(() => new AddressPolicy({ allowCidrs: ['10.0.0.0/33'] })).toThrow(/invalid CIDR/);
  });

  it('unmaps IPv4-mapped IPv6', () => {
    expect(unmapIPv4('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(unmapIPv4('::FFFF:a9fe:a9fe')).toBe('169.254.169.254');
    expect(unmapIPv4('2001:db8::1')).toBe('2001:db8::1');
  });
});

describe('webhookUrlProblem', () => {
  const strict = new AddressPolicy();
  it('requires https, no credentials, and checks literal addresses', () => {
    expect(webhookUrlProblem('https://example.com/hook', strict)).toBeUndefined();
    expect(webhookUrlProblem('http://example.com/hook', strict)).toMatch(/https/);
    expect(webhookUrlProblem('ftp://example.com/', strict)).toMatch(/https/);
    expect(webhookUrlProblem('https://a:b@example.com/', strict)).toMatch(/credentials/);
    expect(webhookUrlProblem('https://127.0.0.1/', strict)).toMatch(/blocked/);
    expect(webhookUrlProblem('https://[::1]/', strict)).toMatch(/blocked/);
    expect(webhookUrlProblem('https://0x7f000001/', strict)).toMatch(/blocked/); // WHATWG URL normalizes to 127.0.0.1
    expect(webhookUrlProblem('https://2130706433/', strict)).toMatch(/blocked/);
    expect(webhookUrlProblem(`https://example.com/${'a'.repeat(2100)}`, strict)).toMatch(/2048/);
    expect(webhookUrlProblem('/relative', strict)).toMatch(/absolute/);
  });
});

describe('guardedLookup', () => {
  const policy = new AddressPolicy();
  const lookup = (addresses: string[], all: boolean) =>
    new Promise<unknown[]>((resolve) => {
      const fn = guardedLookup(policy, async () =>
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
      (fn as unknown as (h: string, o: object, cb: (...a: unknown[]) => void) => void)(
        'host.test',
        { all },
        (...args) => resolve(args),
      );
    });
  it('refuses when any resolved address is refused, and answers both callback forms', async () => {
    const [err] = await lookup(['93.184.216.34', '10.0.0.1'], true);
    expect((err as Error).message).toMatch(/host\.test: requests to 10\.0\.0\.1 are blocked/);
    expect((err as { code: string }).code).toBe('EBLOCKED');
    expect(await lookup(['93.184.216.34'], true)).toEqual([null, [{ address: '93.184.216.34', family: 4 }]]);
    expect(await lookup(['2606:4700::1'], false)).toEqual([null, '2606:4700::1', 6]);
    expect(((await lookup([], false))[0] as { code: string }).code).toBe('ENOTFOUND');
  });
});

describe('checkWebhookUrl (when a URL is set)', () => {
  const strict = new AddressPolicy();
  const dns: Record<string, string[]> = {
    'public.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'loop.test': ['127.0.0.1'],
    'half.test': ['93.184.216.34', '::ffff:0:a00:1'],
    'empty.test': [],
  };
  const resolver: Resolver = async (host) => {
    if (host === 'slow.test') return new Promise(() => {});
    const a = dns[host];
    if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  it('resolves the host and refuses it when any address is refused or it does not resolve', async () => {
    expect(await checkWebhookUrl('https://public.test/hook', strict, resolver)).toBeUndefined();
    expect(await checkWebhookUrl('https://loop.test/hook', strict, resolver)).toBe(
      'loop.test resolves to a refused address: requests to 127.0.0.1 are blocked (non-public address: loopback)',
    );
    expect(await checkWebhookUrl('https://half.test/hook', strict, resolver)).toBe(
      'half.test resolves to a refused address: requests to ::ffff:0:a00:1 are blocked (non-public address: IPv4-translated)',
    );
    expect(await checkWebhookUrl('https://empty.test/', strict, resolver)).toBe(
      'empty.test does not resolve (no address)',
    );
    expect(await checkWebhookUrl('https://nx.test/', strict, resolver)).toBe(
      'nx.test does not resolve (ENOTFOUND)',
    );
    const t0 = Date.now();
    expect(await checkWebhookUrl('https://slow.test/', strict, resolver, 200)).toBe(
      'slow.test does not resolve (no answer within 200 ms)',
    );
    expect(Date.now() - t0).toBeLessThan(2_000);
    // What is refused without DNS is refused before it.
    expect(await checkWebhookUrl('http://public.test/', strict, resolver)).toBe('the scheme must be https');
    // Plain http (dev) needs every resolved address in the allowlist.
    const dev = new AddressPolicy({ allowCidrs: ['127.0.0.0/8'], allowHttp: true });
    expect(await checkWebhookUrl('http://loop.test/', dev, resolver)).toBeUndefined();
    expect(await checkWebhookUrl('http://public.test/', dev, resolver)).toBe(
      'public.test resolves to a refused address: plain http is only allowed to allowlisted addresses, not 93.184.216.34',
    );
  });
});
