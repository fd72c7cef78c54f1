/**
 * Remote resolvers over the signed RFQ, end to end: the swap service in-process (SQLite), resolvers as
 * real HTTP servers on 127.0.0.1 served with the SDK's `rfqHandler` (and one raw server that
 * misbehaves on demand).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rfq } from '@rgbx/contracts/swap';
import { rfqHandler } from '@rgbx/sdk';
import { ConfigError, sha256 } from '@rgbx/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { NET, randomEvmAddress, startTestService, type TestService, USDC } from '../test-support.ts';
import { rfqStatsOf } from './resolvers.ts';
import { RemoteResolver } from './rfq-client.ts';

const dir = mkdtempSync(join(tmpdir(), 'swap-rfq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SECRETS = {
  alpha: 'alpha-secret-for-the-rfq-tests-0123456789',
  beta: 'beta-secret-for-the-rfq-tests-01234567890',
  odd: 'odd-secret-for-the-rfq-tests-012345678901',
};
const KEYS = {
  alpha: `rgbx_resolver_${'a'.repeat(43)}`,
  beta: `rgbx_resolver_${'b'.repeat(43)}`,
  odd: `rgbx_resolver_${'o'.repeat(43)}`,
};

interface Listening {
  url: string;
  close(): Promise<void>;
}

async function listen(handler: RequestListener): Promise<Listening> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/rfq`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A resolver served with the SDK, quoting a fixed amount for USDC → BTC; records every request it got. */
function sdkResolver(secret: string, amount: string) {
  const state = {
    calls: 0,
    captured: [] as { headers: IncomingHttpHeaders; body: Buffer }[],
  };
  const handler = rfqHandler({
    secret,
    quote: async (req) => {
      state.calls++;
      return req.source_token.address === USDC && req.dest_token.address === 'BTC'
        ? { dest_amount_lots: amount }
        : null;
    },
  });
  const listener: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => state.captured.push({ headers: req.headers, body: Buffer.concat(chunks) }));
    handler(req, res);
  };
  return { state, listener };
}

type OddMode = 'null' | 'hang' | 'malformed' | 'wrong_id' | 'bad_signature' | 'http500' | 'huge';

/** A resolver that answers as `mode` says (all but `null` tempt with a huge amount). */
function oddResolver() {
  const state = { mode: 'null' as OddMode, hanging: [] as (() => void)[], abortedByClient: 0 };
  const listener: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { request_id } = JSON.parse(Buffer.concat(chunks).toString()) as Rfq.RfqRequest;
      const send = (status: number, body: string, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(body);
      };
      const tempting = { request_id, dest_amount_lots: '99999999999' };
      switch (state.mode) {
        case 'null': {
          const a = Rfq.signRfqAnswer(SECRETS.odd, { request_id, dest_amount_lots: null });
          return send(200, a.body, a.headers);
        }
        case 'hang':
          res.once('close', () => {
            if (!res.writableEnded) state.abortedByClient++;
          });
          state.hanging.push(() => res.destroy());
          return;
        case 'malformed': {
          const body = `{"request_id":"${request_id}","dest_amount_lots":`;
          return send(200, body, {
            [Rfq.RFQ_HEADERS.signature]: Rfq.rfqSignature(SECRETS.odd, `${request_id}.${body}`),
          });
        }
        case 'wrong_id': {
          const a = Rfq.signRfqAnswer(SECRETS.odd, {
            ...tempting,
            request_id: '00000000-0000-4000-8000-000000000000',
          });
          return send(200, a.body, a.headers);
        }
        case 'bad_signature': {
          const a = Rfq.signRfqAnswer('not-the-shared-secret-but-32-bytes-long', tempting);
          return send(200, a.body, a.headers);
        }
        case 'http500':
          return send(500, '{"error":"boom"}');
        case 'huge': {
          const body = JSON.stringify({ ...tempting, pad: 'x'.repeat(20_000) });
          return send(200, body, {
            [Rfq.RFQ_HEADERS.signature]: Rfq.rfqSignature(SECRETS.odd, `${request_id}.${body}`),
          });
        }
      }
    });
  };
  return { state, listener };
}

function resolverToml(id: keyof typeof SECRETS, url: string, secretLine: string): string {
  return `
[[resolvers]]
id = "${id}"
name = "${id}"
api_key_sha256 = "${sha256(KEYS[id]).toString('hex')}"
evm_address = "${randomEvmAddress()}"
quote_url = "${url}"
${secretLine}
`;
}

describe('remote resolvers over RFQ', () => {
  const alpha = sdkResolver(SECRETS.alpha, '420000');
  const beta = sdkResolver(SECRETS.beta, '430000');
  const odd = oddResolver();
  const servers: Listening[] = [];
  let s: TestService;

  beforeAll(async () => {
    const [a, b, o] = await Promise.all([
      listen(alpha.listener),
      listen(beta.listener),
      listen(odd.listener),
    ]);
    servers.push(a!, b!, o!);
    writeFileSync(join(dir, 'beta.secret'), `${SECRETS.beta}\n`, { mode: 0o600 });
    s = await startTestService({
      databaseUrl: `sqlite:${join(dir, 'swap.db')}`,
      extra: [
        resolverToml('alpha', a!.url, `rfq_secret = "\${ALPHA_SECRET:-${SECRETS.alpha}}"`),
        resolverToml('beta', b!.url, `rfq_secret_file = "${join(dir, 'beta.secret')}"`),
        resolverToml('odd', o!.url, `rfq_secret = "${SECRETS.odd}"`),
      ].join('\n'),
    });
  });
  afterAll(async () => {
    for (const release of odd.state.hanging) release();
    await s?.close();
    await Promise.all(servers.map((x) => x.close()));
  });

  const stats = () => rfqStatsOf(s.ctx.resolvers);

  async function call(method: 'GET' | 'POST', url: string, key: string, payload?: object) {
    const res = await s.app.inject({
      method,
      url,
      headers: { 'x-api-key': key },
      ...(payload ? { payload } : {}),
    });
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
  }

  async function quote(): Promise<{ quoteId: string; maxDestAmountLots: string }> {
    const r = await call('POST', '/quote', s.apiKey, {
      sourceChain: NET.evm,
      sourceToken: USDC,
      destChain: NET.btc,
      destToken: 'BTC',
      amountLots: '250000000', // the reference resolver: 250 USDC × 0.0000166 = 415000 sats
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  }

  it('builds remote resolvers for entries with quote_url (secret from an environment default or a file)', () => {
    const remote = s.ctx.resolvers.filter((r) => r instanceof RemoteResolver).map((r) => r.id);
    expect(remote).toEqual(['alpha', 'beta', 'odd']);
    expect(s.ctx.config.resolvers.find((r) => r.id === 'beta')?.rfq_secret).toBe(SECRETS.beta);
  });

  it('the better remote quote wins and records its resolver; only that resolver sees the intent', async () => {
    const before = { alpha: alpha.state.calls, beta: beta.state.calls };
    const q = await quote();
    expect(q.maxDestAmountLots).toBe('430000');
    const row = await s.ctx.db
      .selectFrom('quotes')
      .select('resolver_id')
      .where('id', '=', q.quoteId)
      .executeTakeFirstOrThrow();
    expect(row.resolver_id).toBe('beta');
    expect(alpha.state.calls).toBe(before.alpha + 1);
    expect(beta.state.calls).toBe(before.beta + 1);
    expect(stats().of('alpha').quoted).toBeGreaterThanOrEqual(1);
    expect(stats().of('beta').quoted).toBeGreaterThanOrEqual(1);
    expect(stats().of('odd').no_quote).toBeGreaterThanOrEqual(1);

    const id = await intentFor(q.quoteId);

    const ids = async (key: string) =>
      (
        (await call('GET', '/resolver/v1/intents?limit=100', key)).body.data as {
          intent: { intent_id: string };
        }[]
      ).map((d) => d.intent.intent_id);
    expect(await ids(KEYS.beta)).toContain(id);
    expect(await ids(KEYS.alpha)).not.toContain(id);
    expect(await ids(KEYS.odd)).not.toContain(id);
    expect((await call('GET', `/resolver/v1/intents/${id}`, KEYS.beta)).status).toBe(200);
    expect((await call('GET', `/resolver/v1/intents/${id}`, KEYS.alpha)).status).toBe(404);
    expect((await call('GET', `/resolver/v1/intents/${id}`, KEYS.odd)).status).toBe(404);
  });

  /** An EVM → Bitcoin intent on `quoteId` for a fresh owner; its id. */
  async function intentFor(quoteId: string): Promise<string> {
    const owner = randomEvmAddress();
    const created = await call('POST', '/intents', s.apiKey, {
      quoteId,
      sourceAddress: owner,
      refundAddress: owner,
      destinationAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return created.body.intentId as string;
  }

  it('the resolvers that lost the quote act on the winner’s intent: accept, decline, deposit, fulfil, claim, refund and secret → 404 RESOLVER_NOT_ASSIGNED, the status unchanged', async () => {
    odd.state.mode = 'null';
    const q = await quote();
    const id = await intentFor(q.quoteId);
    const winner = await call('GET', `/resolver/v1/intents/${id}`, KEYS.beta);
    expect([winner.status, winner.body.intent.status]).toEqual([200, 'Initiated']);

    // Well-formed requests (source EVM, destination Bitcoin): only the assignment refuses them.
    const evmTx = `0x${'11'.repeat(32)}`;
    const attempts: [string, 'GET' | 'POST', object | undefined][] = [
      ['', 'GET', undefined],
      ['/accept', 'POST', {}],
      ['/decline', 'POST', { reason: 'not mine to decline' }],
      ['/deposit', 'POST', { tx_hash: evmTx }],
      ['/fulfil', 'POST', { tx_hash: '22'.repeat(32) }],
      ['/claim', 'POST', { tx_hash: evmTx }],
      ['/refund', 'POST', { tx_hash: evmTx }],
      ['/secret', 'GET', undefined],
    ];
    for (const loser of [KEYS.alpha, KEYS.odd])
      for (const [action, method, payload] of attempts) {
        const r = await call(method, `/resolver/v1/intents/${id}${action}`, loser, payload);
        expect([r.status, r.body.type], `${action || 'GET'}: ${JSON.stringify(r.body)}`).toEqual([
          404,
          'RESOLVER_NOT_ASSIGNED',
        ]);
      }
    expect((await call('GET', `/intents/${id}/status`, s.apiKey)).body).toEqual({ status: 'Initiated' });
    const events = await s.ctx.db
      .selectFrom('intent_events')
      .select('trigger')
      .where('intent_id', '=', id)
      .execute();
    expect(events.map((e) => e.trigger)).toEqual(['create']);
  });

  it('a resolver that does not answer within resolver_timeout_ms is skipped, counted and aborted', async () => {
    odd.state.mode = 'hang';
    const before = stats().of('odd').timeout;
    const started = Date.now();
    const q = await quote();
    const took = Date.now() - started;
    expect(q.maxDestAmountLots).toBe('430000');
    expect(took).toBeGreaterThanOrEqual(s.ctx.config.swap.resolver_timeout_ms - 50);
    expect(took).toBeLessThan(s.ctx.config.swap.resolver_timeout_ms + 1500);
    await expect.poll(() => stats().of('odd').timeout).toBe(before + 1);
    // The service dropped the request (the connection closed before any answer).
    await expect.poll(() => odd.state.abortedByClient).toBe(1);
  });

  it.each([
    ['malformed', 'malformed'],
    ['huge', 'malformed'],
    ['wrong_id', 'bad_signature'],
    ['bad_signature', 'bad_signature'],
    ['http500', 'error'],
  ] as const)('an answer that is %s is skipped and counted as %s', async (mode, outcome) => {
    odd.state.mode = mode;
    const before = stats().of('odd')[outcome];
    const q = await quote();
    expect(q.maxDestAmountLots).toBe('430000');
    expect(stats().of('odd')[outcome]).toBe(before + 1);
  });

  it('a resolver that is down is skipped and counted as error', async () => {
    const down = await listen(() => {});
    await down.close();
    const r = new RemoteResolver(
      {
        id: 'down',
        name: 'down',
        enabled: true,
        api_key_sha256: '00'.repeat(32),
        evm_address: randomEvmAddress(),
        quote_url: down.url,
        rfq_secret: SECRETS.alpha,
        rates: [],
      },
      { http: new (await import('@rgbx/service-kit/http-client')).HttpClient(), stats: stats() },
    );
    const req = {
      sourceNetwork: s.ctx.catalog.network(NET.evm),
      sourceToken: s.ctx.catalog.token(NET.evm, USDC),
      destNetwork: s.ctx.catalog.network(NET.btc),
      destToken: s.ctx.catalog.token(NET.btc, 'BTC'),
      amountLots: 1000n,
    };
    await expect(r.quote(req)).rejects.toMatchObject({ name: 'RfqSkip', outcome: 'error' });
    expect(stats().of('down').error).toBe(1);
  });

  describe('rfqHandler refuses forged, stale and replayed requests before quoting', () => {
    async function post(headers: Record<string, string | string[] | undefined>, body: string | Buffer) {
      const url = servers[1]!.url;
      const clean = Object.fromEntries(
        Object.entries(headers).filter(
          ([k, v]) => typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k),
        ),
      ) as Record<string, string>;
      const res = await fetch(url, { method: 'POST', headers: clean, body });
      return { status: res.status, body: (await res.json()) as { error: string; code: string } };
    }
    const request = (timestamp: number): Rfq.RfqRequest => ({
      request_id: crypto.randomUUID(),
      resolver_id: 'beta',
      timestamp,
      source_network: { id: NET.evm, type: 'EVM', chain_id: '31337' },
      source_token: { address: USDC, symbol: 'USDC', decimals: 6 },
      dest_network: { id: NET.btc, type: 'BITCOIN', chain_id: 'regtest' },
      dest_token: { address: 'BTC', symbol: 'BTC', decimals: 8 },
      amount_lots: '1000000',
    });
    const nowSecs = () => Math.floor(Date.now() / 1000);

    it('a replay of a captured request from the service: 401 replayed', async () => {
      await quote();
      const captured = beta.state.captured.at(-1)!;
      const calls = beta.state.calls;
      const r = await post(captured.headers, captured.body);
      expect(r).toEqual({ status: 401, body: { code: 'replayed', error: expect.any(String) } });
      expect(beta.state.calls).toBe(calls);
    });

    it('a forged signature: 401 bad_signature; a stale timestamp: 401 stale; the quote function is not called', async () => {
      const calls = beta.state.calls;
      const forged = Rfq.signRfqRequest('a-forger-does-not-know-the-secret-!!', request(nowSecs()));
      expect(await post(forged.headers, forged.body)).toMatchObject({
        status: 401,
        body: { code: 'bad_signature' },
      });
      const stale = Rfq.signRfqRequest(SECRETS.beta, request(nowSecs() - 120));
      expect(await post(stale.headers, stale.body)).toMatchObject({ status: 401, body: { code: 'stale' } });
      const tampered = Rfq.signRfqRequest(SECRETS.beta, request(nowSecs()));
      expect(await post(tampered.headers, tampered.body.replace('"1000000"', '"9000000"'))).toMatchObject({
        status: 401,
        body: { code: 'bad_signature' },
      });
      expect(beta.state.calls).toBe(calls);

      const fresh = Rfq.signRfqRequest(SECRETS.beta, request(nowSecs()));
      expect((await post(fresh.headers, fresh.body)).status).toBe(200);
      expect(beta.state.calls).toBe(calls + 1);
      expect(await post(fresh.headers, fresh.body)).toMatchObject({
        status: 401,
        body: { code: 'replayed' },
      });
      expect(beta.state.calls).toBe(calls + 1);
    });
  });
});

describe('remote resolver configuration', () => {
  const base = (devnet: boolean, resolver: string) =>
    `devnet = ${devnet}\npreimage_key = "${'ab'.repeat(32)}"\n\n[[resolvers]]\nid = "r"\nname = "r"\napi_key_sha256 = "${'00'.repeat(32)}"\n${resolver}\n`;
  const secret = `rfq_secret = "${'s'.repeat(32)}"`;

  function issues(text: string, env: Record<string, string> = {}): string[] {
    try {
      loadConfig({ text }, env);
    } catch (err) {
      if (err instanceof ConfigError) return err.issues.map((i) => i.message);
      throw err;
    }
    return [];
  }

  it('quote_url: https://, http:// only on a devnet, named in the message', () => {
    expect(issues(base(false, `quote_url = "https://resolver.example/rfq"\n${secret}`))).toEqual([]);
    expect(issues(base(true, `quote_url = "http://127.0.0.1:9/rfq"\n${secret}`))).toEqual([]);
    const http = issues(base(false, `quote_url = "http://resolver.example/rfq"\n${secret}`));
    expect(http).toHaveLength(1);
    expect(http[0]).toMatch(
      /"resolvers\[0\]\.quote_url" must be an https:\/\/ URL \(http:\/\/ only with devnet = true\)/,
    );
    expect(issues(base(false, `quote_url = "ftp://x/"\n${secret}`))[0]).toMatch(/resolvers\[0\]\.quote_url/);
    expect(issues(base(false, `quote_url = "not a url"\n${secret}`))[0]).toMatch(
      /"resolvers\[0\]\.quote_url" is not a URL/,
    );
  });

  it('a secret: exactly one of rfq_secret and rfq_secret_file, at least 32 bytes, never printed', () => {
    const url = 'quote_url = "https://resolver.example/rfq"';
    expect(issues(base(false, url))).toEqual([
      '"resolvers[0].quote_url" needs exactly one of "resolvers[0].rfq_secret" and "resolvers[0].rfq_secret_file"',
    ]);
    const file = join(dir, 'rfq.secret');
    writeFileSync(file, `  ${'k'.repeat(40)}\n`);
    expect(issues(base(false, `${url}\n${secret}\nrfq_secret_file = "${file}"`))[0]).toMatch(/exactly one/);
    const c = loadConfig({ text: base(false, `${url}\nrfq_secret_file = "${file}"`) }, {});
    expect(c.resolvers[0]!.rfq_secret).toBe('k'.repeat(40));
    const short = issues(base(false, `${url}\nrfq_secret = "short-secret-1234"`));
    expect(short[0]).toMatch(/"resolvers\[0\]\.rfq_secret": the RFQ secret must be at least 32 bytes/);
    expect(short[0]).not.toContain('short-secret-1234');
    writeFileSync(join(dir, 'short.secret'), 'x'.repeat(31));
    expect(issues(base(false, `${url}\nrfq_secret_file = "${join(dir, 'short.secret')}"`))[0]).toMatch(
      /rfq_secret_file.*at least 32 bytes/,
    );
    expect(issues(base(false, `${url}\nrfq_secret_file = "${join(dir, 'missing')}"`))[0]).toMatch(/ENOENT/);
    // ${ENV} substitution.
    expect(
      issues(base(false, `${url}\nrfq_secret = "\${RFQ_SECRET}"`), { RFQ_SECRET: 'e'.repeat(32) }),
    ).toEqual([]);
    // Without quote_url the secret keys mean nothing; a remote resolver has no rates.
    expect(issues(base(false, secret))[0]).toMatch(
      /"resolvers\[0\]\.rfq_secret" is only for a resolver with quote_url/,
    );
  });
});
