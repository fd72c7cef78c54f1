import { describe, expect, it } from 'vitest';
import { fixture } from './client-requests.ts';
import { btcpaySchema, literalType, readAsDotnet, typeCheckRgbSdk, vendoredModel } from './client-types.ts';

const transfer = {
  idx: 1,
  batch_transfer_idx: 1,
  created_at: 1,
  updated_at: 2,
  status: 2,
  amount: 100,
  kind: 1,
  txid: null,
  recipient_id: 'bcrt:utxob:x',
  receive_utxo: { txid: 'ab', vout: 0 },
  change_utxo: null,
  expiration: 0,
  transport_endpoints: [{ endpoint: 'rpc://x', transport_type: 0, used: true }],
  assignments: [{ Fungible: 100 }],
};

describe('the vendored rgb-sdk model', () => {
  it('is byte for byte the file at the recorded commit (its git blob id)', () => {
    const { blob, recorded } = vendoredModel();
    expect(recorded).toMatch(/^[0-9a-f]{40}$/);
    expect(blob).toBe(recorded);
  });
});

describe('typeCheckRgbSdk (the TypeScript interfaces compiled as-is)', () => {
  it('accepts a record in the declared shape, extra fields included, and refuses names, nulls and gaps', () => {
    const { problems } = typeCheckRgbSdk([
      { fixtureId: 'ok', declared: 'Promise<RgbTransfer[]>', json: [transfer] },
      { fixtureId: 'name', declared: 'Promise<RgbTransfer[]>', json: [{ ...transfer, status: 'Settled' }] },
      { fixtureId: 'range', declared: 'Promise<RgbTransfer[]>', json: [{ ...transfer, status: 6 }] },
      { fixtureId: 'null', declared: 'Promise<RgbTransfer[]>', json: [{ ...transfer, recipient_id: null }] },
      {
        fixtureId: 'gap',
        declared: 'Promise<RgbTransfer[]>',
        json: [{ ...transfer, amount: 0 }].map(({ amount: _, ...t }) => t),
      },
      { fixtureId: 'bare', declared: 'Promise<string>', json: { txid: 'ab' } },
      { fixtureId: 'fee', declared: 'Promise<GetFeeEstimationResponse> = Record<…> | number', json: 2.004 },
    ]);
    expect(problems[0]).toEqual([]);
    expect(problems[1]!.join()).toMatch(/"Settled"' is not assignable to type 'TransferStatus'/);
    expect(problems[2]!.join()).toMatch(/'6' is not assignable to type 'TransferStatus'/);
    expect(problems[3]!.join()).toMatch(/'null' is not assignable to type 'string'/);
    expect(problems[4]!.join()).toMatch(/Property 'amount' is missing/);
    expect(problems[5]!.join()).toMatch(/not assignable to type 'string'/);
    expect(problems[6]).toEqual([]);
  });
  it('writes the exact JSON as a type', () => {
    expect(literalType({ a: [1, -2, 'x'], b: null, c: true, d: {} })).toBe(
      '{ "a": [1, (-2), "x"]; "b": null; "c": true; "d": {} }',
    );
  });
});

describe("readAsDotnet (the plugin's models under System.Text.Json web defaults)", () => {
  it('maps every recorded JSON answer of the plugin to a model class of the schema', () => {
    const { 'x-responses': responses, $defs } = btcpaySchema();
    for (const [id, type] of Object.entries(responses)) {
      expect(fixture('btcpay', id).responseShape.read).toBe('json');
      expect($defs[/^List<(\w+)>$/.exec(type)?.[1] ?? type]).toBeDefined();
    }
  });
  it('reads integers (also numeric strings), and refuses enum names, null into long, gaps and overflow', () => {
    expect(readAsDotnet('List<RgbTransfer>', [transfer])).toEqual({ problems: [], fields: 11 });
    // Nullable properties may be absent (read as null); a missing long is the plugin's silent 0.
    expect(readAsDotnet('DecodedInvoice', { recipient_id: 'r', network: '3' }).problems).toEqual([]);
    const { amount: _, ...noAmount } = transfer;
    expect(readAsDotnet('RgbTransfer', noAmount).problems).toEqual([
      '$.amount: missing (declared long; .NET would read its default)',
    ]);
    expect(readAsDotnet('List<RgbTransfer>', [{ ...transfer, status: 'Settled' }]).problems).toEqual([
      '$[0].status: expected an integer, got string "Settled" (declared int)',
    ]);
    expect(readAsDotnet('RgbTransfer', { ...transfer, amount: null }).problems).toEqual([
      '$.amount: null into a value type throws (declared long)',
    ]);
    expect(readAsDotnet('RgbTransfer', { ...transfer, idx: 2 ** 31 }).problems).toEqual([
      '$.idx: 2147483648 is outside the int range (declared int)',
    ]);
    expect(
      readAsDotnet('DecodedInvoice', { RECIPIENT_ID: 'r', assignment: 'Any', network: 3 }).problems,
    ).toContain('$.assignment: expected a JSON object, got string "Any" (declared InvoiceAssignment?)');
  });
});
