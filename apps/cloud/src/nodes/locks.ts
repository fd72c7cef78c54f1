/** One operation at a time per node (API calls and the supervisor share these locks). */
export class NodeLocks {
  private readonly tails = new Map<string, Promise<void>>();

  isHeld(nodeId: string): boolean {
    return this.tails.has(nodeId);
  }

  /**
   * Runs `fn` once the node's previous operations finished. With `waitMs`, gives up (returns
   * `{busy: true}`) if the lock is not free in time.
   */
  async run<T>(
    nodeId: string,
    fn: () => Promise<T>,
    waitMs?: number,
  ): Promise<{ busy: true } | { busy: false; value: T }> {
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
      if (this.tails.get(nodeId) === tail) this.tails.delete(nodeId);
    }
  }
}
