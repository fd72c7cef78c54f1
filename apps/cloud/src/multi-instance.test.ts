/**
 * Two cloud instances — the built service, two real processes — on one PostgreSQL database and one
 * data dir, with the stand-in wallet node (a real process per node that, like the wallet node, holds
 * a pid lock on its wallet data dir and logs every start, refusal and exit):
 *
 * 1. nodes created on both at once are shared between them (every node has one owner);
 * 2. the same operations sent to both at once (settings, restart, stop, delete, a name race) are
 *    applied once: the other instance answers 409 or finds nothing to do;
 * 3. `kill -9` of one instance while operations run (slow node stops keep them in progress): the
 *    survivor takes its nodes over within the lease, re-adopts their processes and finishes the
 *    operations.
 *
 * Throughout: no node ever runs two processes (sampled from /proc every 25 ms, and no start was
 * refused by a node's pid lock), every status change is one event and a valid transition, every
 * node's processes match its STARTING events one to one, and the receivers got every event, in
 * order, duplicates only as retries of the same event id with the same bytes.
 * SQLite stays single-instance: a second service on one SQLite file stops with exit 2.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bigintNumber, createTestPgDatabase, openDatabase } from '@rgbx/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudDatabase } from './db/schema.ts';
import { type CloudProcess, cloudCli, killGroups, startCloudProcess } from './process-helpers.ts';
import { selfSignedCert, TestReceiver, testConfigText, until } from './test-support.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-multi-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_multi');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

const LEASE_MS = 2000;

/** Live (non-zombie) pids per command-line argument, from one pass over /proc. */
function processesByArg(needles: Set<string>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if ('ZX'.includes(stat.charAt(stat.lastIndexOf(')') + 2))) continue;
      for (const a of readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0'))
        if (needles.has(a)) out.set(a, [...(out.get(a) ?? []), Number(d)]);
    } catch {}
  }
  return out;
}

/** Every status a node may go to from another (README "Node status and restart policy"). */
const ALLOWED = new Set([
  'STARTING>RUNNING',
  'STARTING>IN_PROGRESS',
  'STARTING>FAILED',
  'RUNNING>IN_PROGRESS',
  'RUNNING>FAILED',
  'IN_PROGRESS>STARTING',
  'IN_PROGRESS>RUNNING',
  'IN_PROGRESS>PAUSED',
  'PAUSED>STARTING',
  'PAUSED>IN_PROGRESS',
  'FAILED>STARTING',
  'FAILED>IN_PROGRESS',
]);

describe('two cloud instances on one PostgreSQL', () => {
  let dir: string;
  let conf: string;
  let receiver: TestReceiver;
  let a: CloudProcess | undefined;
  let b: CloudProcess | undefined;
  let token: string;
  let sampler: NodeJS.Timeout | undefined;
  const seenPids = new Set<number>();
  const doubles: string[] = [];
  const configs = new Map<string, string>(); // node.toml path → node name

  beforeAll(async () => {
    dir = mkdtempSync(join(root, 'c-'));
    conf = join(dir, 'cloud.toml');
    receiver = await new TestReceiver(tls).start();
    writeFileSync(
      conf,
      `${testConfigText({
        dir,
        databaseUrl: pg.url,
        caFile: tls.certFile,
        logLevel: 'info',
        nodes:
          'health_interval_ms = 200\nstart_timeout_ms = 20000\nrestart_backoff_ms = [300]\nstop_grace_ms = 8000',
        webhooks:
          'retry_schedule_ms = [200]\njitter = 0\nrequest_timeout_ms = 2000\nconnect_timeout_ms = 1000',
      })}[cluster]\nlease_ms = ${LEASE_MS}\n`,
    );
    token = JSON.parse(await cloudCli(conf, 'tokens', 'create', '--account', 'acme')).token;
    sampler = setInterval(() => {
      for (const [conf, pids] of processesByArg(new Set(configs.keys()))) {
        for (const p of pids) seenPids.add(p);
        if (pids.length > 1) doubles.push(`${configs.get(conf)}: ${pids.join(',')} at ${Date.now()}`);
      }
    }, 25);
  });
  afterAll(async () => {
    clearInterval(sampler);
    a?.child.kill('SIGKILL');
    b?.child.kill('SIGKILL');
    killGroups([...seenPids]);
    await receiver?.stop();
  });

  it('shares the nodes, applies each operation once, and takes over after kill -9 without running a node twice', async () => {
    a = await startCloudProcess(conf);
    b = await startCloudProcess(conf);
    const { db } = openDatabase<CloudDatabase>(pg.url, { poolSize: 2 });
    try {
      const call = async (p: CloudProcess, method: string, path: string, body?: unknown) => {
        const r = await fetch(`${p.url}/api${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        const text = await r.text();
        return { status: r.status, body: text ? JSON.parse(text) : undefined };
      };
      const ids = new Map<string, string>(); // name → nodeId
      const nodeRow = (name: string) =>
        db.selectFrom('nodes').selectAll().where('id', '=', ids.get(name)!).executeTakeFirstOrThrow();
      const register = (name: string, id: string) => {
        ids.set(name, id);
        configs.set(join(dir, 'nodes', id, 'node.toml'), name);
      };

      // 1. Creation on both at once; one name created on both at the same moment.
      const names = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'];
      const created = await Promise.all([
        ...names.map((name, i) =>
          call(i % 2 === 0 ? a! : b!, 'POST', '/nodes', {
            name,
            network: 'regtest',
            settings: { webhookUrl: receiver.url(`/${name}`) },
          }),
        ),
        ...[a, b].map((p) =>
          call(p!, 'POST', '/nodes', {
            name: 'dup',
            network: 'regtest',
            settings: { webhookUrl: receiver.url('/dup') },
          }),
        ),
      ]);
      for (const [i, name] of names.entries()) {
        expect(created[i]!.status, name).toBe(201);
        register(name, created[i]!.body.data.nodeId);
      }
      const dups = created.slice(names.length);
      expect(dups.map((d) => d.status).sort()).toEqual([201, 409]);
      expect(dups.find((d) => d.status === 409)!.body.error.code).toBe('NODE_NAME_TAKEN');
      register('dup', dups.find((d) => d.status === 201)!.body.data.nodeId);

      const statusOf = async (name: string) => (await nodeRow(name)).status;
      const settled = (want: Record<string, string | 'gone'>) =>
        until(
          `statuses ${JSON.stringify(want)}`,
          async () => {
            for (const [name, s] of Object.entries(want)) {
              const r = await nodeRow(name);
              if (s === 'gone' ? r.deleted_at === null : r.deleted_at !== null || r.status !== s)
                return false;
            }
            return true;
          },
          40_000,
        );
      await settled(Object.fromEntries([...ids.keys()].map((n) => [n, 'RUNNING'])));

      const instances = await db.selectFrom('cloud_instances').selectAll().execute();
      const idOf = (p: CloudProcess) => instances.find((i) => i.pid === p.child.pid)!.id;
      const [aId, bId] = [idOf(a), idOf(b)];
      const owners = await Promise.all([...ids.keys()].map(async (n) => (await nodeRow(n)).owner_id));
      // Every node has one owner, and both instances own some.
      expect(owners.every((o) => o === aId || o === bId)).toBe(true);
      expect(owners.filter((o) => o === aId).length).toBeGreaterThan(0);
      expect(owners.filter((o) => o === bId).length).toBeGreaterThan(0);

      // 2. The same operation sent to both instances at once.
      const both = (method: string, path: string, body?: unknown) =>
        Promise.all([call(a!, method, path, body), call(b!, method, path, body)]);
      const [settings, restart, stop, del] = await Promise.all([
        both('PATCH', `/nodes/${ids.get('n0')}/settings`, { webhookUrl: receiver.url('/n0-new') }),
        both('POST', `/nodes/${ids.get('n1')}/restart`),
        both('POST', `/nodes/${ids.get('n2')}/stop`),
        both('DELETE', `/nodes/${ids.get('n4')}`),
      ]);
      const codes = (pair: { status: number; body: { error?: { code: string } } }[]) =>
        pair.map((r) => (r.status < 300 ? 'ok' : r.body.error?.code)).sort();
      // The second settings call either finds the URL already set (200, no change) or the node busy.
      expect([
        ['ok', 'ok'],
        ['NODE_BUSY', 'ok'],
      ]).toContainEqual(codes(settings));
      // The second restart finds the first one in progress (busy), or finished (then it is a second restart).
      expect([
        ['ok', 'ok'],
        ['NODE_BUSY', 'ok'],
      ]).toContainEqual(codes(restart));
      // A pause while paused (or still pausing) is 202 with nothing more to do, or busy.
      expect([
        ['ok', 'ok'],
        ['NODE_BUSY', 'ok'],
      ]).toContainEqual(codes(stop));
      // A second delete finds it being deleted (202, nothing more), busy, or already gone.
      expect([
        ['ok', 'ok'],
        ['NODE_BUSY', 'ok'],
        ['NODE_NOT_FOUND', 'ok'],
      ]).toContainEqual(codes(del));
      await settled({ n0: 'RUNNING', n1: 'RUNNING', n2: 'PAUSED', n4: 'gone' });
      expect((await nodeRow('n0')).webhook_url).toBe(receiver.url('/n0-new'));
      for (const p of [a, b]) expect((await call(p, 'GET', `/nodes/${ids.get('n4')}`)).status).toBe(404);

      // 3. Slow stops keep operations in progress; kill -9 of one instance meanwhile.
      for (const name of ids.keys())
        if (name !== 'n4') writeFileSync(join(dir, 'nodes', ids.get(name)!, 'slow-stop'), '1500');
      const victim = a;
      const survivor = b;
      const victimId = aId;
      const ownedByVictim = (
        await db
          .selectFrom('nodes')
          .select('id')
          .where('owner_id', '=', victimId)
          .where('deleted_at', 'is', null)
          .execute()
      ).length;
      expect(ownedByVictim).toBeGreaterThan(0);
      const ops = await Promise.all([
        call(survivor, 'POST', `/nodes/${ids.get('n6')}/restart`),
        call(victim, 'POST', `/nodes/${ids.get('n7')}/stop`),
        call(victim, 'DELETE', `/nodes/${ids.get('n0')}`),
        call(survivor, 'POST', `/nodes/${ids.get('n2')}/start`),
        call(victim, 'PATCH', `/nodes/${ids.get('n3')}/settings`, { webhookUrl: receiver.url('/n3-new') }),
        call(victim, 'POST', `/nodes/${ids.get('n1')}/restart`),
        call(survivor, 'POST', `/nodes/${ids.get('dup')}/stop`),
      ]);
      for (const r of ops) expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
      // One more operation whose answer never comes: applied whole or not at all.
      const unanswered = call(victim, 'POST', `/nodes/${ids.get('n5')}/stop`).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 300));
      const inProgress = await db
        .selectFrom('nodes')
        .select('name')
        .where('status', '=', 'IN_PROGRESS')
        .where('deleted_at', 'is', null)
        .execute();
      expect(inProgress.length).toBeGreaterThan(0);
      const killedAt = Date.now();
      const victimLog = victim.stderr;
      victim.child.kill('SIGKILL');
      await new Promise((r) => victim.child.once('exit', r));
      a = undefined;
      await unanswered;

      // Taken over within the lease (plus one renewal period of the survivor).
      await until(
        'the victim’s nodes owned by the survivor',
        async () =>
          (
            await db
              .selectFrom('nodes')
              .select('id')
              .where('owner_id', '=', victimId)
              .where('deleted_at', 'is', null)
              .execute()
          ).length === 0,
        LEASE_MS * 3,
        20,
      );
      const takeoverMs = Date.now() - killedAt;
      expect(takeoverMs).toBeLessThan(LEASE_MS + LEASE_MS / 3 + 1000);
      const n5 = await statusOf('n5');
      await settled({
        n0: 'gone',
        n1: 'RUNNING',
        n2: 'RUNNING',
        n3: 'RUNNING',
        n6: 'RUNNING',
        n7: 'PAUSED',
        dup: 'PAUSED',
        n5: n5 === 'RUNNING' ? 'RUNNING' : 'PAUSED',
      });
      expect((await nodeRow('n3')).webhook_url).toBe(receiver.url('/n3-new'));
      const live = await db.selectFrom('nodes').selectAll().where('deleted_at', 'is', null).execute();
      expect(live.every((n) => n.owner_id === bId)).toBe(true);

      // Every event delivered (the victim's in-flight deliveries are retried after their lease).
      await until(
        'every event delivered',
        async () =>
          (await db.selectFrom('webhook_events').select('seq').where('state', '!=', 'delivered').execute())
            .length === 0,
        40_000,
      );
      clearInterval(sampler);

      // Never two processes of one node.
      expect(doubles).toEqual([]);
      const all = await db.selectFrom('nodes').selectAll().execute();
      const procs = processesByArg(new Set(configs.keys()));
      // The launch lines are read from both instances' logs (below): they must be there to be read.
      const launchLines = `${victimLog()}${survivor.stderr()}`.split('"node process started"').length - 1;
      expect(launchLines).toBeGreaterThanOrEqual(configs.size);
      for (const n of all) {
        const name = n.name;
        // A deleted node's log went with its data dir: its starts are counted from the sampler's pids.
        const logFile = join(dir, 'nodes', n.id, 'lifecycle.log');
        const lifecycle = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
        expect(lifecycle, name).not.toContain('refused');
        const events = await db
          .selectFrom('webhook_events')
          .selectAll()
          .where('node_id', '=', n.id)
          .orderBy('seq')
          .execute();
        const trail = events.map((e) => e.node_status);
        // Every event is a status change, and a valid one; nothing failed.
        expect(trail[0], name).toBe('STARTING');
        for (let i = 1; i < trail.length; i++)
          expect(ALLOWED.has(`${trail[i - 1]}>${trail[i]}`), `${name}: ${trail.join(' → ')}`).toBe(true);
        expect(trail, name).not.toContain('FAILED');
        if (n.deleted_at === null) expect(trail.at(-1), name).toBe(n.status);
        // One process per STARTING event: a takeover re-adopts, it never launches a second one.
        // Launches are counted from both sides: the node's own log misses a process stopped before
        // it wrote its first line (a restart right after a launch), a cloud's log misses a launch
        // whose instance was killed before it logged it.
        if (n.deleted_at === null) {
          const launched = new Set(
            lifecycle
              .split('\n')
              .filter((l) => l.startsWith('start '))
              .map((l) => Number(l.split(' ')[1])),
          );
          const cloudLines: string[] = [];
          for (const [who, text] of [
            ['victim', victimLog()],
            ['survivor', survivor.stderr()],
          ] as const)
            for (const line of text.split('\n')) {
              if (!line.startsWith('{') || !line.includes(n.id)) continue;
              const l = JSON.parse(line) as { nodeId: string; nodePid?: number; msg: string; time: number };
              cloudLines.push(`${who} ${l.msg} ${l.nodePid ?? ''} ${l.time}`);
              if (l.msg === 'node process started') launched.add(l.nodePid!);
            }
          const starts = launched.size;
          const timed = events.map((e) => `${e.node_status}@${bigintNumber(e.created_at)}`).join(' → ');
          expect(
            starts,
            `${name}: ${timed}\nkilled at ${killedAt}\n${cloudLines.join('\n')}\n${lifecycle}`,
          ).toBe(trail.filter((s) => s === 'STARTING').length);
        }
        const running = procs.get(join(dir, 'nodes', n.id, 'node.toml')) ?? [];
        if (n.deleted_at !== null) {
          expect(running, name).toEqual([]);
          expect(existsSync(join(dir, 'nodes', n.id)), name).toBe(false);
        } else if (n.status === 'PAUSED') expect(running, name).toEqual([]);
        else expect(running, name).toEqual([n.pid]);
        // Receivers: every event, first arrivals in sequence order, duplicates only as retries.
        const arrivals = receiver.requests.filter((r) =>
          events.some((e) => e.event_id === r.headers['x-service-event-id']),
        );
        const firstSeen = [...new Set(arrivals.map((r) => r.headers['x-service-event-id']))];
        expect(firstSeen, name).toEqual(events.map((e) => e.event_id));
        for (const r of arrivals) {
          const e = events.find((x) => x.event_id === r.headers['x-service-event-id'])!;
          expect(r.body.toString('utf8')).toBe(e.body);
          expect(r.headers['x-service-sequence']).toBe(String(bigintNumber(e.seq)));
        }
      }
      process.stdout.write(
        `${JSON.stringify({ takeoverMs, ownedByVictim, events: receiver.requests.length, leaseMs: LEASE_MS })}\n`,
      );
    } catch (err) {
      // What the instances said, for the failure report.
      for (const [n, p] of [
        ['a', a],
        ['b', b],
      ] as const)
        if (p) writeFileSync(`/tmp/multi-${n}.log`, p.stderr());
      for (const [n, p] of [
        ['a', a],
        ['b', b],
      ] as const)
        if (p)
          process.stderr.write(
            `--- instance ${n}\n${p
              .stderr()
              .split('\n')
              .filter((l) => /"level":(40|50)|cluster|claimed/.test(l))
              .slice(-40)
              .join('\n')}\n`,
          );
      throw err;
    } finally {
      await db.destroy();
    }
  }, 180_000);
});

describe('a frozen instance (SIGSTOP) on one PostgreSQL', () => {
  it('loses its nodes when its lease runs out (not before), and once resumed is fenced: it touches none of them', async () => {
    const pgdb = await createTestPgDatabase('cloud_frozen');
    const dir = mkdtempSync(join(root, 'f-'));
    const conf = join(dir, 'cloud.toml');
    writeFileSync(
      conf,
      `${testConfigText({
        dir,
        databaseUrl: pgdb.url,
        nodes:
          'health_interval_ms = 200\nstart_timeout_ms = 20000\nrestart_backoff_ms = [300]\nstop_grace_ms = 3000',
      })}[cluster]\nlease_ms = ${LEASE_MS}\n`,
    );
    const token = JSON.parse(await cloudCli(conf, 'tokens', 'create', '--account', 'acme')).token as string;
    const { db } = openDatabase<CloudDatabase>(pgdb.url, { poolSize: 2 });
    let frozen: CloudProcess | undefined;
    let other: CloudProcess | undefined;
    const nodePids: number[] = [];
    try {
      frozen = await startCloudProcess(conf);
      other = await startCloudProcess(conf);
      const create = (p: CloudProcess, name: string) =>
        fetch(`${p.url}/api/nodes`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name, network: 'regtest' }),
        }).then((r) => r.json() as Promise<{ data: { nodeId: string } }>);
      for (const [i, name] of ['f0', 'f1', 'f2', 'f3'].entries()) await create(i % 2 ? other : frozen, name);
      await until(
        'all RUNNING',
        async () =>
          (await db.selectFrom('nodes').select('status').execute()).every((n) => n.status === 'RUNNING'),
        30_000,
      );
      const instances = await db.selectFrom('cloud_instances').selectAll().execute();
      const frozenId = instances.find((i) => i.pid === frozen!.child.pid)!.id;
      const otherId = instances.find((i) => i.pid === other!.child.pid)!.id;
      const owned = async (id: string) =>
        (await db.selectFrom('nodes').select('id').where('owner_id', '=', id).execute()).map((n) => n.id);
      const mine = await owned(frozenId);
      expect(mine.length).toBeGreaterThan(0);
      const before = await db.selectFrom('nodes').select(['id', 'pid']).execute();
      nodePids.push(...before.map((n) => n.pid!));
      const logOf = (id: string) => readFileSync(join(dir, 'nodes', id, 'lifecycle.log'), 'utf8');
      const logs = new Map(before.map((n) => [n.id, logOf(n.id)]));
      const events = async () => (await db.selectFrom('webhook_events').select('seq').execute()).length;
      const eventsBefore = await events();

      // Frozen: alive (its pid and its database sessions too), but it renews nothing.
      const frozenAt = Date.now();
      frozen.child.kill('SIGSTOP');
      await until('its nodes taken over', async () => (await owned(frozenId)).length === 0, LEASE_MS * 4, 20);
      const takeoverMs = Date.now() - frozenAt;
      // Not before its lease ran out (no shortcut for a live process; the lease counts from its last
      // renewal, at most lease/3 before the freeze), and within lease + one renewal of the other.
      expect(takeoverMs).toBeGreaterThanOrEqual((LEASE_MS * 2) / 3 - 100);
      expect(takeoverMs).toBeLessThan(LEASE_MS + LEASE_MS / 3 + 1500);
      expect((await owned(otherId)).sort()).toEqual(before.map((n) => n.id).sort());

      // Resumed: fenced until it renews, then it owns nothing and must not act on the nodes.
      frozen.child.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, LEASE_MS));
      const after = await db.selectFrom('nodes').selectAll().execute();
      // Same processes, re-adopted by the other instance; no start, no stop, no status change.
      expect(after.map((n) => [n.id, n.pid, n.status]).sort()).toEqual(
        before.map((n) => [n.id, n.pid, 'RUNNING']).sort(),
      );
      for (const n of after) expect(logOf(n.id), n.name).toBe(logs.get(n.id));
      expect(await events()).toBe(eventsBefore);
      expect(await owned(frozenId)).toEqual([]);
      // It is live again: a new node goes to it (the least loaded instance), and it runs it.
      const { data } = await create(other, 'f4');
      await until(
        'the new node RUNNING',
        async () =>
          (await db.selectFrom('nodes').select('status').where('id', '=', data.nodeId).executeTakeFirst())
            ?.status === 'RUNNING',
        20_000,
      );
      expect(await owned(frozenId)).toEqual([data.nodeId]);
      process.stdout.write(`${JSON.stringify({ frozenTakeoverMs: takeoverMs, leaseMs: LEASE_MS })}\n`);
    } finally {
      frozen?.child.kill('SIGCONT');
      frozen?.child.kill('SIGKILL');
      other?.child.kill('SIGKILL');
      const live = await db
        .selectFrom('nodes')
        .select('pid')
        .execute()
        .catch(() => []);
      killGroups([...nodePids, ...live.map((n) => n.pid ?? 0)].filter((p) => p > 0));
      await db.destroy();
      await pgdb.drop();
    }
  }, 120_000);
});

describe('one SQLite file', () => {
  it('refuses a second instance (exit 2, naming the first), and takes over from a killed one at once', async () => {
    const dir = mkdtempSync(join(root, 's-'));
    const conf = join(dir, 'cloud.toml');
    writeFileSync(conf, testConfigText({ dir, databaseUrl: `sqlite:${join(dir, 'cloud.db')}` }));
    const first = await startCloudProcess(conf);
    try {
      const err = await startCloudProcess(conf).then(
        (p) => {
          p.child.kill('SIGKILL');
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(/cloud exited with 2/);
      expect(err?.message).toContain('runs on this SQLite database: SQLite deployments run one instance');
    } finally {
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));
    }
    // Its lease has not run out, but its process is gone: a new start goes ahead.
    const again = await startCloudProcess(conf);
    again.child.kill('SIGTERM');
    expect(await new Promise((r) => again.child.once('exit', r))).toBe(0);
  });
});
