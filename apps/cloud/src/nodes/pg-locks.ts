/**
 * Per-node locks that hold across cloud instances on one PostgreSQL: the in-process lock first
 * (session advisory locks are re-entrant within one session, so two operations of this process
 * would otherwise both "hold" it), then `pg_try_advisory_lock(CLASS, hashtext(node_id))` on one
 * dedicated connection of this instance, released with `pg_advisory_unlock` when the operation ends.
 *
 * Why a session lock on a dedicated connection rather than `pg_advisory_xact_lock` in a pooled
 * transaction: an operation lasts as long as a node takes to stop (up to `stop_grace_ms`) and does
 * its own database work meanwhile; holding a pooled connection per operation could exhaust the
 * pool while every holder waits for another connection. One connection holds all of this
 * instance's node locks instead; polling `try` keeps it free for the others.
 *
 * If that connection is lost, PostgreSQL has released every lock it held: operations then running
 * finish their current step, and the supervisor's writes are still fenced by node ownership
 * (`changeNode`'s `ifOwner`). New operations wait until the connection is back.
 *
 * The same connection LISTENs on `rgbx_cloud_node`: an instance that changed a node (an API call)
 * notifies its id, and the node's owner looks at it at once instead of at its next tick.
 * A hash collision of two node ids only makes them share a lock (never a correctness problem).
 */
import type { Logger } from '@rgbx/service-kit';
import pg from 'pg';
import { type LockResult, type NodeLockService, NodeLocks } from './locks.ts';

/** First key of the advisory lock pair: "RGBx", so other users of advisory locks are not confused. */
export const ADVISORY_CLASS = 0x52474278;
export const NOTIFY_CHANNEL = 'rgbx_cloud_node';
const POLL_MS = 25;

export class PgNodeLocks implements NodeLockService {
  private readonly local = new NodeLocks();
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private closed = false;
  private readonly url: string;
  private readonly logger: Logger;
  private readonly onNotify: ((nodeId: string) => void) | undefined;

  constructor(url: string, logger: Logger, onNotify?: (nodeId: string) => void) {
    this.url = url;
    this.logger = logger;
    this.onNotify = onNotify;
  }

  /** Connects now (and LISTENs), so a database that cannot be reached stops the start. */
  async connect(): Promise<void> {
    await this.conn();
  }

  private conn(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    if (this.closed) return Promise.reject(new Error('node locks closed'));
    this.connecting ??= (async () => {
      const c = new pg.Client({ connectionString: this.url, application_name: 'rgbx-cloud-locks' });
      const lost = (why: string) => (err?: Error) => {
        if (this.client !== c) return;
        this.client = undefined;
        if (!this.closed)
          this.logger.error(
            { err: err ? { message: err.message } : undefined },
            `node lock connection ${why}: every node lock of this instance was released`,
          );
      };
      c.on('error', lost('failed'));
      c.on('end', lost('ended'));
      c.on('notification', (m) => {
        if (m.channel === NOTIFY_CHANNEL && m.payload) this.onNotify?.(m.payload);
      });
      try {
        await c.connect();
        await c.query(`listen ${NOTIFY_CHANNEL}`);
      } catch (err) {
        await c.end().catch(() => undefined);
        throw err;
      }
      this.client = c;
      return c;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  isHeld(nodeId: string): boolean {
    return this.local.isHeld(nodeId);
  }

  private async tryLock(nodeId: string): Promise<pg.Client | undefined> {
    const c = await this.conn();
    const r = await c.query<{ ok: boolean }>('select pg_try_advisory_lock($1::int, hashtext($2)) as ok', [
      ADVISORY_CLASS,
      nodeId,
    ]);
    return r.rows[0]?.ok ? c : undefined;
  }

  async run<T>(nodeId: string, fn: () => Promise<T>, waitMs?: number): Promise<LockResult<T>> {
    const deadline = waitMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + waitMs;
    const r = await this.local.run(
      nodeId,
      async (): Promise<LockResult<T>> => {
        let holder: pg.Client | undefined;
        for (;;) {
          try {
            holder = await this.tryLock(nodeId);
          } catch (err) {
            this.logger.warn(
              { err: { message: (err as Error).message }, nodeId },
              'node lock: no connection',
            );
          }
          if (holder) break;
          if (Date.now() >= deadline || this.closed) return { busy: true };
          await new Promise((res) => setTimeout(res, POLL_MS));
        }
        try {
          return { busy: false, value: await fn() };
        } finally {
          // On the connection that took it: a lost connection has released it already.
          if (holder === this.client)
            await holder
              .query('select pg_advisory_unlock($1::int, hashtext($2))', [ADVISORY_CLASS, nodeId])
              .catch((err: unknown) =>
                this.logger.warn({ err: { message: (err as Error).message }, nodeId }, 'node unlock failed'),
              );
        }
      },
      waitMs,
    );
    return r.busy ? r : r.value;
  }

  async close(): Promise<void> {
    this.closed = true;
    const c = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}
