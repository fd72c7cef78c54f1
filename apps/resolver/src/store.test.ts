/**
 * The resolver's store on SQLite (a temp file) and PostgreSQL (a throwaway database): transactions
 * (one per intent, role and attempt: the primary key is the "never two transactions for one payment
 * attempt" guarantee), fills and the key-value table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestPgDatabase, type Dialect, isUniqueViolation } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  activeFills,
  getKv,
  latestTx,
  loadFill,
  openResolverStore,
  openTxs,
  type ResolverStore,
  setKv,
  setTxState,
  storeTx,
  upsertFill,
} from './store.ts';

const dir = mkdtempSync(join(tmpdir(), 'resolver-store-'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>> | undefined;
const stores: ResolverStore[] = [];

beforeAll(async () => {
  pg = await createTestPgDatabase('rgbx_resolver');
});
afterAll(async () => {
  for (const s of stores) await s.close();
  await pg?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function open(dialect: Dialect): Promise<ResolverStore> {
  const url = dialect === 'sqlite' ? `sqlite:${join(dir, 'resolver.db')}` : pg!.url;
  const s = await openResolverStore(url);
  stores.push(s);
  return s;
}

const tx = (n: number) => ({ txid: `tx${n}`, raw: `00aa${n}`, meta: { nonce: n, inputs: `prev:${n}` } });

describe.each(['sqlite', 'postgres'] as Dialect[])('resolver store on %s', (dialect) => {
  let s: ResolverStore;
  beforeAll(async () => {
    s = await open(dialect);
  });

  it('opens with the right dialect, and opens again (migrations are idempotent)', async () => {
    expect(s.dialect).toBe(dialect);
    const again = await open(dialect);
    expect(again.dialect).toBe(dialect);
  });

  it('stores a signed transaction and returns it as the latest of its role', async () => {
    expect(await latestTx(s.db, 'i1', 'payment')).toBeUndefined();
    const stored = await storeTx(
      s.db,
      { intentId: 'i1', role: 'payment', attempt: 0, networkId: 2, tx: tx(1) },
      1_700_000_000_000,
    );
    const expected = {
      intentId: 'i1',
      role: 'payment',
      attempt: 0,
      networkId: 2,
      txid: 'tx1',
      raw: '00aa1',
      meta: { nonce: 1, inputs: 'prev:1' },
      state: 'signed',
    };
    expect(stored).toEqual(expected);
    expect(await latestTx(s.db, 'i1', 'payment')).toEqual(expected);
    expect(await latestTx(s.db, 'i1', 'claim')).toBeUndefined();
    expect(await latestTx(s.db, 'other', 'payment')).toBeUndefined();
  });

  it('refuses a second transaction for the same intent, role and attempt (unique violation)', async () => {
    await storeTx(s.db, { intentId: 'i2', role: 'payment', attempt: 0, networkId: 2, tx: tx(2) }, 1);
    const second = await storeTx(
      s.db,
      { intentId: 'i2', role: 'payment', attempt: 0, networkId: 2, tx: tx(3) },
      2,
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(second).toBeDefined();
    expect(isUniqueViolation(second)).toBe(true);
    // the first one stays
    expect((await latestTx(s.db, 'i2', 'payment'))?.txid).toBe('tx2');
    // another role or the next attempt is a different row
    await storeTx(s.db, { intentId: 'i2', role: 'claim', attempt: 0, networkId: 1, tx: tx(4) }, 3);
    await storeTx(s.db, { intentId: 'i2', role: 'payment', attempt: 1, networkId: 2, tx: tx(5) }, 4);
    expect(await latestTx(s.db, 'i2', 'payment')).toMatchObject({ attempt: 1, txid: 'tx5' });
    expect(await latestTx(s.db, 'i2', 'claim')).toMatchObject({ attempt: 0, txid: 'tx4', networkId: 1 });
  });

  it('orders attempts numerically (attempt 10 after attempt 9)', async () => {
    for (const attempt of [9, 10, 2])
      await storeTx(
        s.db,
        { intentId: 'i3', role: 'refund', attempt, networkId: 4, tx: tx(100 + attempt) },
        1,
      );
    expect(await latestTx(s.db, 'i3', 'refund')).toMatchObject({ attempt: 10, txid: 'tx110' });
  });

  it('changes one transaction state; openTxs lists signed and sent ones only', async () => {
    const base = { role: 'deposit' as const, networkId: 3 };
    const a = await storeTx(s.db, { ...base, intentId: 'o1', attempt: 0, tx: tx(11) }, 1);
    const b = await storeTx(s.db, { ...base, intentId: 'o2', attempt: 0, tx: tx(12) }, 1);
    const c = await storeTx(s.db, { ...base, intentId: 'o3', attempt: 0, tx: tx(13) }, 1);
    const d = await storeTx(s.db, { ...base, intentId: 'o4', attempt: 0, tx: tx(14) }, 1);
    const d1 = await storeTx(s.db, { ...base, intentId: 'o4', attempt: 1, tx: tx(15) }, 1);
    await setTxState(s.db, b, 'sent');
    await setTxState(s.db, c, 'confirmed');
    await setTxState(s.db, d, 'dead');
    expect(await latestTx(s.db, 'o2', 'deposit')).toMatchObject({ state: 'sent' });
    expect(await latestTx(s.db, 'o3', 'deposit')).toMatchObject({ state: 'confirmed' });
    // only attempt 0 of o4 changed
    expect(await latestTx(s.db, 'o4', 'deposit')).toMatchObject({ attempt: 1, state: 'signed' });
    const open = (await openTxs(s.db)).filter((t) => t.intentId.startsWith('o'));
    expect(open.map((t) => `${t.txid}:${t.state}`).sort()).toEqual([
      `${a.txid}:signed`,
      `${b.txid}:sent`,
      `${d1.txid}:signed`,
    ]);
    expect(open.find((t) => t.txid === a.txid)).toEqual(a);
  });

  it('upserts, loads and lists active fills', async () => {
    expect(await loadFill(s.db, 'f1')).toBeUndefined();
    await upsertFill(s.db, { intentId: 'f1', sourceNetwork: 1, destNetwork: 2, state: 'active' }, 1000);
    await upsertFill(s.db, { intentId: 'f2', sourceNetwork: 2, destNetwork: 1, state: 'active' }, 1000);
    await upsertFill(
      s.db,
      { intentId: 'f3', sourceNetwork: 1, destNetwork: 4, state: 'declined', note: 'inventory' },
      1000,
    );
    const f1 = await loadFill(s.db, 'f1');
    expect(f1).toMatchObject({
      intent_id: 'f1',
      source_network: 1,
      dest_network: 2,
      state: 'active',
      note: null,
    });
    expect(Number(f1!.created_at)).toBe(1000);
    expect((await activeFills(s.db)).sort()).toEqual(['f1', 'f2']);

    await upsertFill(
      s.db,
      { intentId: 'f1', sourceNetwork: 9, destNetwork: 9, state: 'active', note: 'retrying' },
      2000,
    );
    expect(await loadFill(s.db, 'f1')).toMatchObject({
      state: 'active',
      note: 'retrying',
      source_network: 1,
    });
    await upsertFill(s.db, { intentId: 'f1', sourceNetwork: 1, destNetwork: 2, state: 'done' }, 3000);
    const done = await loadFill(s.db, 'f1');
    expect(done).toMatchObject({ state: 'done', note: null });
    expect(Number(done!.created_at)).toBe(1000);
    expect(Number(done!.updated_at)).toBe(3000);
    expect(await activeFills(s.db)).toEqual(['f2']);
  });

  it('gets and sets key-value pairs', async () => {
    expect(await getKv(s.db, 'feed_last_event_id')).toBeUndefined();
    await setKv(s.db, 'feed_last_event_id', '41');
    await setKv(s.db, 'other', 'x');
    expect(await getKv(s.db, 'feed_last_event_id')).toBe('41');
    await setKv(s.db, 'feed_last_event_id', '42');
    expect(await getKv(s.db, 'feed_last_event_id')).toBe('42');
    expect(await getKv(s.db, 'other')).toBe('x');
  });
});
