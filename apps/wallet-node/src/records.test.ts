import {
  TRANSACTION_TYPE_CODES,
  TRANSFER_KIND_CODES,
  TRANSFER_STATUS_CODES,
} from '@rgbx/contracts/wallet-node';
import { describe, expect, it } from 'vitest';
import {
  assignmentObject,
  assignmentUnits,
  fieldInvoiceData,
  fieldTransaction,
  fieldTransfer,
  fieldUnspent,
  rgbLibTransfer,
} from './records.ts';

/** A transfer as rgb-lib 0.3 reports it, snake_cased (the shape `snakeKeys` hands the mapper). */
const transfer = (over: Record<string, unknown> = {}) => ({
  idx: 4,
  batch_transfer_idx: 3,
  created_at: 1_700_000_000,
  updated_at: 1_700_000_100,
  status: 'Settled',
  requested_assignment: { Fungible: 100n },
  assignments: [{ Fungible: 100n }],
  kind: 'ReceiveWitness',
  txid: 'ab'.repeat(32),
  recipient_id: 'bcrt:wvout:xyz',
  receive_utxo: { txid: 'ab'.repeat(32), vout: 0 },
  change_utxo: null,
  expiration_timestamp: 1_700_003_600,
  transport_endpoints: [{ endpoint: 'rpc://127.0.0.1:3000/json-rpc', transport_type: 'JsonRpc', used: true }],
  invoice_string: 'rgb:…',
  consignment_path: '/srv/data/abcd1234/transfers/xyz/consignment_out',
  ...over,
});

describe('integer tables', () => {
  it("keep both clients' values 0-3 (status) and 0-4 (kind); rgb-lib 0.3's extras come after", () => {
    expect(TRANSFER_STATUS_CODES).toMatchObject({
      WaitingCounterparty: 0,
      WaitingConfirmations: 1,
      Settled: 2,
      Failed: 3,
    });
    const extras = [
      TRANSFER_STATUS_CODES.Initiated,
      TRANSFER_STATUS_CODES.WaitingSafeHeight,
      TRANSFER_STATUS_CODES.WaitingBroadcast,
    ];
    expect(new Set(Object.values(TRANSFER_STATUS_CODES)).size).toBe(7);
    for (const c of extras) expect(c).toBeGreaterThan(3);
    expect(TRANSFER_KIND_CODES).toMatchObject({
      Issuance: 0,
      ReceiveBlind: 1,
      ReceiveWitness: 2,
      Send: 3,
      Inflation: 4,
    });
    expect(TRANSACTION_TYPE_CODES).toEqual({ RgbSend: 0, Drain: 1, CreateUtxos: 2, User: 3, Incoming: 3 });
  });
});

describe('assignments', () => {
  it('count Fungible units, one per NonFungible, nothing for rights or Any', () => {
    expect(assignmentUnits({ Fungible: 18446744073709551615n })).toBe(18446744073709551615n);
    expect(assignmentUnits('NonFungible')).toBe(1n);
    expect(assignmentUnits({ InflationRight: 5n })).toBe(0n);
    expect(assignmentUnits('ReplaceRight')).toBe(0n);
    expect(assignmentUnits('Any')).toBe(0n);
    expect(assignmentUnits(null)).toBe(0n);
  });
  it("read as the plugin's {amount}: absent for Any", () => {
    expect(assignmentObject({ Fungible: 100n })).toEqual({ type: 'Fungible', amount: 100n });
    expect(assignmentObject('Any')).toEqual({ type: 'Any' });
    expect(assignmentObject({ InflationRight: 7n })).toEqual({ type: 'InflationRight', amount: 7n });
  });
});

describe('fieldTransfer', () => {
  it('answers integers, a flat amount and expiration; keeps rgb-lib extras; drops the server path', () => {
    const t = fieldTransfer(transfer());
    expect(t).toMatchObject({
      status: 2,
      kind: 2,
      amount: 100n,
      expiration: 1_700_003_600,
      expiration_timestamp: 1_700_003_600,
      recipient_id: 'bcrt:wvout:xyz',
      requested_assignment: { Fungible: 100n },
      assignments: [{ Fungible: 100n }],
      invoice_string: 'rgb:…',
      transport_endpoints: [{ endpoint: 'rpc://127.0.0.1:3000/json-rpc', transport_type: 0, used: true }],
    });
    expect(t).not.toHaveProperty('consignment_path');
    expect(JSON.stringify(t, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('/srv/');
  });
  it('sums several assignments; before any, the requested amount; any-amount and none give 0', () => {
    expect(fieldTransfer(transfer({ assignments: [{ Fungible: 60n }, { Fungible: 40n }] })).amount).toBe(
      100n,
    );
    expect(
      fieldTransfer(
        transfer({ status: 'WaitingCounterparty', assignments: [], requested_assignment: { Fungible: 9n } }),
      ).amount,
    ).toBe(9n);
    expect(fieldTransfer(transfer({ assignments: ['Any'], requested_assignment: 'Any' })).amount).toBe(0n);
    // A send: rgb-lib's assignments are the change the sender keeps; the amount is what it sends.
    expect(
      fieldTransfer(
        transfer({
          kind: 'Send',
          assignments: [{ Fungible: 743n }],
          requested_assignment: { Fungible: 100n },
        }),
      ).amount,
    ).toBe(100n);
    expect(fieldTransfer(transfer({ assignments: [], requested_assignment: null })).amount).toBe(0n);
  });
  it("fills what rgb-lib leaves null where the clients declare a value: recipient_id '', expiration 0", () => {
    const t = fieldTransfer(transfer({ kind: 'Issuance', recipient_id: null, expiration_timestamp: null }));
    expect(t).toMatchObject({ kind: 0, recipient_id: '', expiration: 0, expiration_timestamp: null });
  });
  it('gives every rgb-lib 0.3 status and kind its integer, and refuses one it does not know', () => {
    for (const [name, c] of Object.entries(TRANSFER_STATUS_CODES)) {
      expect(fieldTransfer(transfer({ status: name })).status).toBe(c);
    }
    for (const [name, c] of Object.entries(TRANSFER_KIND_CODES)) {
      expect(fieldTransfer(transfer({ kind: name })).kind).toBe(c);
    }
    expect(() => fieldTransfer(transfer({ status: 'Exploded' }))).toThrow(/no integer for transfer status/);
  });
  it('rgb-lib format keeps the names and drops only the server paths', () => {
    const t = rgbLibTransfer(transfer({ psbt_path: '/srv/x.psbt' }));
    expect(t).toMatchObject({ status: 'Settled', kind: 'ReceiveWitness' });
    expect(t).not.toHaveProperty('consignment_path');
    expect(t).not.toHaveProperty('psbt_path');
  });
});

describe('fieldUnspent / fieldTransaction / fieldInvoiceData', () => {
  it('puts a flat amount next to each allocation assignment', () => {
    const u = fieldUnspent({
      utxo: {
        outpoint: { txid: 'cd'.repeat(32), vout: 1 },
        btc_amount: 1000n,
        colorable: true,
        exists: true,
      },
      rgb_allocations: [
        { asset_id: 'rgb:x', assignment: { Fungible: 743n }, settled: true },
        { asset_id: null, assignment: 'Any', settled: false },
      ],
      pending_blinded: 0,
    });
    expect(u.rgb_allocations).toEqual([
      { asset_id: 'rgb:x', assignment: { Fungible: 743n }, amount: 743n, settled: true },
      { asset_id: '', assignment: 'Any', amount: 0n, settled: false },
    ]);
  });
  it('answers transaction_type as an integer and leaves confirmation_time out while unconfirmed', () => {
    const base = { txid: 'ef'.repeat(32), received: 1n, sent: 0n, fee: 0n };
    expect(fieldTransaction({ ...base, transaction_type: 'Incoming', confirmation_time: null })).toEqual({
      ...base,
      transaction_type: 3,
    });
    expect(
      fieldTransaction({
        ...base,
        transaction_type: 'CreateUtxos',
        confirmation_time: { height: 5, timestamp: 9 },
      }),
    ).toEqual({ ...base, transaction_type: 2, confirmation_time: { height: 5, timestamp: 9 } });
  });
  it("decodes an invoice the way the plugin's model reads it (network a numeric string, assignment {amount})", () => {
    const d = fieldInvoiceData({
      recipient_id: 'bcrt:utxob:abc',
      asset_schema: null,
      asset_id: null,
      assignment: { Fungible: 100n },
      assignment_name: null,
      network: 'Regtest',
      expiration_timestamp: 1_700_003_600,
      transport_endpoints: ['rpc://127.0.0.1:3000/json-rpc'],
    });
    expect(d).toEqual({
      recipient_id: 'bcrt:utxob:abc',
      assignment: { type: 'Fungible', amount: 100n },
      network: '3',
      expiration_timestamp: 1_700_003_600,
      transport_endpoints: ['rpc://127.0.0.1:3000/json-rpc'],
    });
    expect(
      fieldInvoiceData({ recipient_id: 'r', assignment: 'Any', network: 'Mainnet', transport_endpoints: [] }),
    ).toMatchObject({ assignment: { type: 'Any' }, network: '0' });
  });
});
