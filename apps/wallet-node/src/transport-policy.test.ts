import { describe, expect, it } from 'vitest';
import { TransportPolicy } from './transport-policy.ts';

/** A stand-in resolver: names from a table. */
const names: Record<string, string[]> = {
  'proxy.example.com': ['93.184.216.34'],
  'inside.example.com': ['93.184.216.34', '10.0.0.7'],
  'metadata.example.com': ['169.254.169.254'],
};
const resolver = async (host: string) => {
  const a = names[host];
  if (!a) throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
  return a.map((address) => ({ address, family: 4 as const }));
};

describe('TransportPolicy', () => {
  const p = new TransportPolicy({
    proxies: ['rpc://127.0.0.1:3000/json-rpc'],
    allowCidrs: ['192.168.50.0/24'],
    resolver,
  });

  it("allows the node's own proxies, public hosts and the allowlist", async () => {
    expect(await p.refusal('rpc://127.0.0.1:3000/json-rpc')).toBeUndefined();
    expect(await p.refusal('rpc://127.0.0.1:3000/other-path')).toBeUndefined();
    expect(await p.refusal('rpcs://proxy.example.com/json-rpc')).toBeUndefined();
    expect(await p.refusal('rpc://93.184.216.34:3000/json-rpc')).toBeUndefined();
    expect(await p.refusal('rpc://192.168.50.9:3000/json-rpc')).toBeUndefined();
  });

  it('refuses loopback (another port than a proxy), private, link-local, a name with one private address, and non-transports', async () => {
    expect(await p.refusal('rpc://127.0.0.1:3001/json-rpc')).toMatch(/non-public address: loopback/);
    expect(await p.refusal('rpc://10.1.2.3/json-rpc')).toMatch(/non-public address/);
    expect(await p.refusal('rpc://169.254.169.254/json-rpc')).toMatch(/non-public address/);
    expect(await p.refusal('rpc://[::1]:3000/json-rpc')).toMatch(/non-public address/);
    expect(await p.refusal('rpc://inside.example.com/json-rpc')).toMatch(/resolves to a refused address/);
    expect(await p.refusal('rpc://metadata.example.com/json-rpc')).toMatch(/resolves to a refused address/);
    expect(await p.refusal('rpc://nowhere.example.com/json-rpc')).toMatch(/does not resolve \(ENOTFOUND\)/);
    expect(await p.refusal('http://proxy.example.com/json-rpc')).toMatch(/not an RGB transport endpoint/);
    expect(await p.refusal('not a url')).toMatch(/not an RGB transport endpoint/);
    expect(
      await p.firstRefused(['rpc://127.0.0.1:3000/json-rpc', 'rpc://10.1.2.3/x', 'rpc://10.1.2.3/x']),
    ).toEqual({ endpoint: 'rpc://10.1.2.3/x', why: expect.stringMatching(/non-public/) });
  });
});
