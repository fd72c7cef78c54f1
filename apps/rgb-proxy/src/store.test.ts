import { createHash } from 'node:crypto';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ProxyStore, UploadTooLargeError } from './store.ts';
import { tempDataDir } from './test-util.ts';

const dirs: string[] = [];
const stores: ProxyStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dir?: string): ProxyStore {
  const d = dir ?? tempDataDir('proxy-store-');
  if (!dir) dirs.push(d);
  const s = ProxyStore.open(d);
  stores.push(s);
  return s;
}

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield Buffer.from(p);
}

describe('ProxyStore', () => {
  it('creates the reference layout and schema, in WAL mode with synchronous=FULL', () => {
    const s = open();
    expect(readdirSync(s.dataDir).sort()).toEqual(
      expect.arrayContaining(['app.db', 'consignments', 'media', 'tmp']),
    );
    const db = new Database(join(s.dataDir, 'app.db'), { readonly: true });
    const cols = (t: string) =>
      (db.prepare(`PRAGMA table_info(${t})`).all() as { name: string }[]).map((c) => c.name);
    expect(cols('consignments')).toEqual(['id', 'recipient_id', 'filename', 'txid', 'vout', 'ack']);
    expect(cols('media')).toEqual(['id', 'attachment_id', 'filename']);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('stages with a sha256 name, commits once, and compares by content', async () => {
    const s = open();
    const staged = await s.stage(chunks('hello ', 'world'), 100);
    expect(staged.sha256).toBe(createHash('sha256').update('hello world').digest('hex'));
    expect(staged.size).toBe(11);
    expect(await s.postConsignment(staged, { recipientId: 'r', txid: 't', vout: 1 })).toBe('created');
    expect(readdirSync(s.tmpDir)).toEqual([]);
    expect(readdirSync(s.consignmentDir)).toEqual([staged.sha256]);
    const again = await s.stage(chunks('hello world'), 100);
    expect(await s.postConsignment(again, { recipientId: 'r', txid: 't', vout: 1 })).toBe('same');
    const other = await s.stage(chunks('bye'), 100);
    expect(await s.postConsignment(other, { recipientId: 'r', txid: 't', vout: 1 })).toBe('conflict');
    expect(readdirSync(s.tmpDir)).toEqual([]);
    expect(s.getConsignment('r')).toEqual({
      recipientId: 'r',
      filename: staged.sha256,
      txid: 't',
      vout: 1,
      ack: null,
    });
  });

  it('throws UploadTooLargeError and removes the partial file', async () => {
    const s = open();
    await expect(s.stage(chunks('12345', '67890'), 9)).rejects.toBeInstanceOf(UploadTooLargeError);
    await expect(s.stage(chunks('123'), 9, () => true)).rejects.toBeInstanceOf(UploadTooLargeError);
    expect(readdirSync(s.tmpDir)).toEqual([]);
  });

  it('racing commits for one recipient: exactly one wins', async () => {
    const s = open();
    const staged = await Promise.all(['a', 'b', 'c', 'a', 'b'].map((x) => s.stage(chunks(x), 10)));
    const outcomes = await Promise.all(
      staged.map((f) => s.postConsignment(f, { recipientId: 'x', txid: 't', vout: null })),
    );
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    const winner = s.getConsignment('x')!.filename;
    outcomes.forEach((o, i) => {
      if (o !== 'created') expect(o).toBe(staged[i]!.sha256 === winner ? 'same' : 'conflict');
    });
  });

  it('sets an ACK once', async () => {
    const s = open();
    expect(s.setAck('nobody', true)).toBe('not-found');
    await s.postConsignment(await s.stage(chunks('c'), 10), { recipientId: 'r', txid: 't', vout: null });
    expect(s.setAck('r', false)).toBe('set');
    expect(s.setAck('r', false)).toBe('same');
    expect(s.setAck('r', true)).toBe('conflict');
    expect(s.getConsignment('r')?.ack).toBe(false);
  });

  it('at open, removes tmp leftovers and unreferenced content files only', async () => {
    const d = tempDataDir('proxy-store-');
    dirs.push(d);
    const s1 = open(d);
    const kept = await s1.stage(chunks('kept'), 10);
    await s1.postMedia(kept, 'm');
    s1.close();
    writeFileSync(join(d, 'tmp', 'a.part'), 'x');
    writeFileSync(join(d, 'media', '0'.repeat(64)), 'orphan');
    writeFileSync(join(d, 'media', 'notes.txt'), 'not ours');
    const s2 = open(d);
    expect(s2.openReport).toEqual({ removedTmp: 1, removedOrphans: 1 });
    expect(readdirSync(join(d, 'media')).sort()).toEqual([kept.sha256, 'notes.txt'].sort());
    expect((await s2.readMediaFile(s2.getMedia('m')!)).toString()).toBe('kept');
  });
});
