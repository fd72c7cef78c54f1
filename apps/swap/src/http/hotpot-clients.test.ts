/**
 * Surface B against the exact requests of the Hotpot clients in the field: the Go SDK
 * (BoostyLabs/hotpot-sdk-go) and the Hotpot swap widget (@hot-pot/hotpot-sdk-ts bundle). The
 * requests are fixtures recorded from the clients' own type definitions and request-building code
 * (test/fixtures/hotpot/*.json, provenance in its README): Go zero values (`null` slippage and
 * affiliate fees, `""` enums), the widget's `retail_user_id: null` and `user_source_public_key: null`,
 * numbers for amounts, `active=false` with repeated `wallet=`. Each is replayed as sent, only the
 * chain/token/address values swapped for this configuration's, and must be answered exactly 200
 * (the Go SDK treats anything else as an error) with every field the client decodes, typed as it
 * decodes it. On SQLite and PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import { affiliatePermit2TypedData } from '@rgbx/sdk';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, NET, startTestService, type TestService, testDatabases, USDC } from '../test-support.ts';

interface Fixture {
  method: 'GET' | 'POST';
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: unknown;
  variants?: { name: string; query?: string; body?: unknown }[];
  decodes?: string[];
  source: string;
}
type Client = Record<string, Fixture>;

const load = (name: string): Client =>
  JSON.parse(
    readFileSync(new URL(`../../test/fixtures/hotpot/${name}.json`, import.meta.url), 'utf8'),
  ) as Client;
const CLIENTS: [string, Client][] = [
  ['Go SDK', load('go-sdk')],
  ['widget', load('widget')],
];

const dbs = testDatabases();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DIGITS = /^(0|[1-9][0-9]*)$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const BTC_DEST = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

/** Values at `path` (`a.b`, `a.*.c` over an object's values, `data[].x` over an array). */
function at(value: unknown, path: string): unknown[] {
  let cur: unknown[] = [value];
  for (const part of path.split('.')) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (v === null || typeof v !== 'object') continue;
      if (part === '*') next.push(...Object.values(v));
      else if (part.endsWith('[]'))
        next.push(...(((v as Record<string, unknown>)[part.slice(0, -2)] as unknown[]) ?? []));
      else if (part in (v as object)) next.push((v as Record<string, unknown>)[part]);
    }
    cur = next;
  }
  return cur;
}

/** Fields a client decodes only when present (Go `omitempty`/pointers), or only for another mechanism. */
function optional(path: string, mechanism?: string): boolean {
  if (/intermediate_|domain\.version|domain\.salt/.test(path)) return true;
  if (mechanism === 'permit2' && /params_to_sign\.(psbt|inputs|transaction)$/.test(path)) return true;
  return false;
}

/** The decode type each client applies (Go: uuid.UUID, uint64/int64 numbers, types.Int digit strings, time.Time). */
function expectDecodable(path: string, values: unknown[]): void {
  const leaf = path.split('.').pop()!.replace('[]', '');
  for (const v of values) {
    if (leaf === 'id' || leaf === 'intent_id' || leaf === 'quote_id') expect(v, path).toMatch(UUID);
    else if (
      /_chain$|_decimals$|^expiry$|^deadline_secs$|^nonce$|^network_id$|^total$|^limit$|^offset$|^pages$/.test(
        leaf,
      )
    )
      expect(Number.isInteger(v), `${path} is a JSON integer: ${JSON.stringify(v)}`).toBe(true);
    else if (/_lots$|^slippage_bps$|^fee_bps$|^min_amount_out$|^minAmountOut$|^maxAmountOut$/.test(leaf))
      expect(String(v), path).toMatch(DIGITS);
    else if (/_at$/.test(leaf)) {
      if (v !== null) expect(v, path).toMatch(RFC3339);
    } else if (leaf === 'approval_mechanism') expect(['permit2', 'htlc', 'cosign']).toContain(v);
  }
}

describe.each(DIALECTS)('the Hotpot clients, replayed (%s)', (dialect) => {
  let s: TestService;
  beforeAll(async () => {
    s = await startTestService({ databaseUrl: dbs.url(dialect) });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function send(f: Fixture, path: string, query: string | undefined, body: unknown) {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(f.headers ?? {})) headers[k] = v === '{api_key}' ? s.apiKey : v;
    headers['x-api-key'] = s.apiKey;
    const res = await s.app.inject({
      method: f.method,
      url: `${path}${query ? `?${query}` : ''}`,
      headers,
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: res.statusCode,
      body: res.body === '' ? undefined : (res.json() as Record<string, unknown>),
    };
  }

  function checkDecodes(f: Fixture, body: unknown, mechanism?: string) {
    for (const path of f.decodes ?? []) {
      const values = at(body, path);
      if (values.length === 0 && (optional(path, mechanism) || path.includes('*') || path.includes('[]')))
        continue;
      expect(values.length, `${path} is decoded by the client (${f.source})`).toBeGreaterThan(0);
      expectDecodable(path, values);
    }
  }

  describe.each(CLIENTS)('%s', (_name, client) => {
    it('quote → intent → permit2 approval → status → intent → swap → history, each answered 200 with what the client decodes', async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      // Our chains and tokens in the client's exact body (key set, order, nulls, "" and number types kept).
      const ours = (b: unknown) => ({
        ...(b as Record<string, unknown>),
        source_chain: NET.evm,
        source_token: USDC,
        dest_chain: NET.btc,
        dest_token: 'BTC',
        ...((b as { retail_user_id?: unknown }).retail_user_id === '{retail_user_id}'
          ? { retail_user_id: 'user-7' }
          : {}),
        ...((b as { affiliate_fees?: unknown }).affiliate_fees ? { affiliate_fees: null } : {}),
      });
      const qf = client.quote!;
      const quotes = [qf.body, ...(qf.variants ?? []).map((v) => v.body)].filter((b) => b !== undefined);
      let quote: Record<string, unknown> | undefined;
      for (const b of quotes) {
        const r = await send(qf, qf.path, undefined, ours(b));
        expect(r.status, `${JSON.stringify(ours(b))} → ${JSON.stringify(r.body)}`).toBe(200);
        checkDecodes(qf, r.body);
        quote ??= r.body;
      }
      // Go zero values and the widget's defaults: slippage null → 50 bps, "" enums → defaults.
      expect(quote!.slippage_bps).toMatch(DIGITS);

      const inf = client.intent!;
      const intentBody = {
        ...(inf.body as Record<string, unknown>),
        quote_id: quote!.id,
        user_source_address: owner.address,
        user_destination_address: BTC_DEST,
        refund_address: owner.address,
      };
      const created = await send(inf, inf.path, undefined, intentBody);
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      expect(created.body!.approval_mechanism).toBe('permit2');
      checkDecodes(inf, created.body, 'permit2');
      const intentId = String(created.body!.intent_id);

      // The client builds the typed data from params_to_sign + quote + deadline (our SDK follows the same rules).
      const td = affiliatePermit2TypedData({
        params: created.body!.params_to_sign as never,
        sourceToken: String(quote!.source_token),
        sourceAmountLots: String(quote!.source_amount_lots),
        deadlineSecs: Number(created.body!.deadline_secs),
      });
      const signature = await owner.signTypedData(td as never);
      const af = client.approval_permit2!;
      const approved = await send(af, af.path.replace('{intent_id}', intentId), undefined, {
        ...(af.body as object),
        signed_data: signature,
      });
      expect([approved.status, approved.body], JSON.stringify(approved.body)).toEqual([
        200,
        { intent_id: intentId, status: 'ApprovalAdded' },
      ]);

      for (const key of ['status', 'intent_get', 'swap']) {
        const f = client[key];
        if (!f) continue;
        const r = await send(f, f.path.replace('{intent_id}', intentId), f.query, undefined);
        expect(r.status, `${key}: ${JSON.stringify(r.body)}`).toBe(200);
        checkDecodes(f, r.body, 'permit2');
        if (key === 'status') expect(r.body).toEqual({ status: 'ApprovalAdded' });
        if (key === 'intent_get') expect(r.body).toEqual(created.body); // the intent as created
      }

      const hf = client.history!;
      const histories = [hf.query, ...(hf.variants ?? []).map((v) => v.query)].filter((q) => q !== undefined);
      for (const q of histories) {
        // The first wallet of the client's query becomes our owner, so the page has data to decode.
        const query = q!.replace(/wallet=[^&]+/, `wallet=${owner.address}`);
        const r = await send(hf, hf.path, query, undefined);
        expect(r.status, `${query}: ${JSON.stringify(r.body)}`).toBe(200);
        checkDecodes(hf, r.body);
        if (/wallet=/.test(query) && !/active=true|retail_id=/.test(query))
          expect((r.body!.data as { intent_id: string }[]).map((d) => d.intent_id)).toContain(intentId);
      }
    });

    it('errors carry {code, message, entity} as the Go SDK decodes them', async () => {
      const qf = client.quote!;
      const r = await send(qf, qf.path, undefined, {
        ...(qf.body as object),
        source_chain: NET.evm,
        source_token: '0x0000000000000000000000000000000000000001',
        dest_chain: NET.btc,
        dest_token: 'BTC',
      });
      expect(r.status).not.toBe(200);
      expect(r.body).toMatchObject({
        code: expect.any(Number),
        message: expect.any(String),
        entity: 'Token',
      });
      const missing = await send(
        client.status!,
        '/affiliate/v1/intents/00000000-0000-4000-8000-000000000000/status',
        undefined,
        undefined,
      );
      expect([missing.status, missing.body!.entity]).toEqual([404, 'Intent']);
    });
  });
});
