export type LockResult<T> = { busy: true } | { busy: false; value: T };

/**
 * One operation at a time per node: API calls and the supervisor share these locks. `NodeLocks`
 * serializes the operations of this process (enough for SQLite, which runs one instance);
 * `PgNodeLocks` (pg-locks.ts) adds a PostgreSQL advisory lock so that it holds across instances.
 */
export interface NodeLockService {
  /** Held by an operation of this process. */
  isHeld(nodeId: string): boolean;
  /**
   * Runs `fn` once the node's previous operations finished. With `waitMs`, gives up (returns
   * `{busy: true}`) if the lock is not free in time.
   */
  run<T>(nodeId: string, fn: () => Promise<T>, waitMs?: number): Promise<LockResult<T>>;
  /** Releases what the service holds (its database connection). */
  close?(): Promise<void>;
}

/** The in-process locks. */
export class NodeLocks implements NodeLockService {
  private readonly tails = new Map<string, Promise<void>>();

  isHeld(nodeId: string): boolean {
    return this.tails.has(nodeId);
  }

  /**
   * Runs `fn` once the node's previous operations finished. With `waitMs`, gives up (returns
   * `{busy: true}`) if the lock is not free in time.
   */
  async run<T>(nodeId: string, fn: () => Promise<T>, waitMs?: number): Promise<LockResult<T>> {
    const prev = this.tails.get(nodeId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const tail = prev.then(() => mine);
    this.tails.set(nodeId, tail);
    try {
      if (waitMs !== undefined) {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = await Promise.race([
          prev.then(() => false),
          new Promise<boolean>((r) => {
            timer = setTimeout(() => r(true), waitMs);
          }),
        ]);
        clearTimeout(timer);
        if (timedOut) return { busy: true };
      } else {
        await prev;
      }
      return { busy: false, value: await fn() };
    } finally {
      release();
      // Forget the node only once everything queued before us is done too: a waiter that timed out
      // while an earlier operation still runs must not drop that operation's place (the next caller
      // would then find no queue and run beside it; CI saw two reconciles of one node at once).
      void tail.then(() => {
        if (this.tails.get(nodeId) === tail) this.tails.delete(nodeId);
      });
    }
  }
}
