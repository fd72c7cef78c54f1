/**
 * `changeNode` is the one writer of `nodes.status`: a new node (insert) and every later change write
 * the row and its `NODE_STATUS_UPDATED` event in one transaction. A scan of the cloud's sources
 * keeps the claim true; the behaviour is checked on SQLite and PostgreSQL.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestPgDatabase, isUniqueViolation } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCloudDatabase } from '../db/open.ts';
import type { NodeStatus } from '../db/schema.ts';
import { type ChangeOptions, changeNode, type StatusDeps } from './status.ts';

const src = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && e.name !== 'test-support.ts' ? [p] : [];
  });
}

describe('only changeNode writes nodes.status', () => {
  it('no other source inserts a node or updates its status', () => {
    const files = sources(src);
    expect(files.map((f) => relative(src, f))).toContain('nodes/status.ts');
    const offenders: string[] = [];
    for (const f of files) {
      const name = relative(src, f);
      if (name === 'nodes/status.ts') continue;
      const text = readFileSync(f, 'utf8');
      if (/insertInto\(\s*['"]nodes['"]\s*\)/.test(text)) offenders.push(`${name}: insertInto('nodes')`);
      if (/sql`[^`]*\b(insert\s+into|update)\s+"?nodes"?\b/i.test(text))
        offenders.push(`${name}: raw SQL on nodes`);
      for (const m of text.matchAll(/updateTable\(\s*['"]nodes['"]\s*\)/g)) {
        // The statement: up to its execute call.
        const stmt = text.slice(m.index, text.indexOf('.execute', m.index));
        if (/\bstatus\b/.test(stmt)) offenders.push(`${name}: updateTable('nodes') setting status`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

const tmp = mkdtempSync(join(tmpdir(), 'cloud-status-'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_status');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

const newNode = (id: string, name: string, webhookUrl: string | null): ChangeOptions['insert'] => ({
  id,
  account_id: 'acct',
  name,
  network: 'regtest',
  webhook_url: webhookUrl,
  desired: 'running',
  pending_op: null,
  port: null,
  pid: null,
  started_at: null,
  data_dir: join(tmp, id),
  restart_count: 0,
  restart_window_start: null,
  next_restart_at: null,
  last_error: null,
  webhook_failing_since: null,
  created_at: 1_000,
  deleted_at: null,
  owner_id: null,
});

describe.each([
  ['sqlite', () => `sqlite:${join(tmp, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('changeNode on %s', (_dialect, url) => {
  it('a new node and each status change commit their event; a taken name leaves nothing behind', async () => {
    const opened = await openCloudDatabase(url(), join(tmp, 'data'));
    const { db } = opened;
    let events = 0;
    const changes: [string, NodeStatus][] = [];
    const deps: StatusDeps = {
      db,
      dialect: opened.dialect,
      maxPayloadBytes: 16_384,
      onEvent: () => events++,
      onChange: (id, s) => changes.push([id, s]),
    };
    const statuses = async (nodeId: string) =>
      (
        await db
          .selectFrom('webhook_events')
          .select('node_status')
          .where('node_id', '=', nodeId)
          .orderBy('seq')
          .execute()
      ).map((e) => e.node_status);
    try {
      await db.insertInto('accounts').values({ id: 'acct', name: 'acct', created_at: 1_000 }).execute();
      const hooked = await changeNode(
        deps,
        'n1',
        'STARTING',
        {},
        { insert: newNode('n1', 'one', 'https://hooks.example/a') },
        2_000,
      );
      expect(hooked).toMatchObject({ id: 'n1', status: 'STARTING', updated_at: 2_000 });
      expect(await db.selectFrom('nodes').select('status').where('id', '=', 'n1').executeTakeFirst()).toEqual(
        {
          status: 'STARTING',
        },
      );
      expect(await statuses('n1')).toEqual(['STARTING']);
      expect([events, changes]).toEqual([1, [['n1', 'STARTING']]]);

      // Without a webhook URL: the change is announced to live views, no event is written.
      await changeNode(deps, 'n2', 'STARTING', {}, { insert: newNode('n2', 'two', null) });
      expect(await statuses('n2')).toEqual([]);
      expect([events, changes.length]).toEqual([1, 2]);

      // The same name in the account: the insert's unique violation, and no event for the loser.
      const dup = await changeNode(
        deps,
        'n3',
        'STARTING',
        {},
        { insert: newNode('n3', 'one', 'https://hooks.example/b') },
      ).catch((e: unknown) => e);
      expect(isUniqueViolation(dup)).toBe(true);
      expect(await db.selectFrom('nodes').select('id').where('id', '=', 'n3').execute()).toEqual([]);
      expect(await statuses('n3')).toEqual([]);
      expect([events, changes.length]).toEqual([1, 2]);

      // Later changes of the created node go the same way; an unchanged status writes no event.
      await changeNode(deps, 'n1', 'RUNNING', { port: 1234 });
      await changeNode(deps, 'n1', 'RUNNING', { port: 1235 });
      expect(await statuses('n1')).toEqual(['STARTING', 'RUNNING']);
      expect(events).toBe(2);

      await expect(
        changeNode(deps, 'n4', undefined, {}, { insert: newNode('n4', 'four', null) }),
      ).rejects.toThrow(/takes its status/);
      await expect(
        changeNode(deps, 'n5', 'STARTING', {}, { insert: newNode('n6', 'six', null) }),
      ).rejects.toThrow(/its own id/);
    } finally {
      await opened.close();
    }
  });
});
