/**
 * Which wallets may have transfers in flight, kept on disk so a restarted node resumes refreshing them with no
 * client call: one empty file per wallet, `<data_dir>/.in-flight/<fingerprint>`.
 *
 * Why markers of our own and not a read of rgb-lib's database: they depend on nothing private to rgb-lib (its
 * tables and status encoding may change with any version), cost one `readdir` at start however many wallets
 * the node holds, and are written by the node at the only places a transfer can start or change: a marker is
 * created (synchronously, before the call is queued) when a call that can start or move a transfer is accepted,
 * and a restored wallet is marked too. It is removed only by the background refresh, once rgb-lib lists no
 * transfer of the wallet outside Settled/Failed and no such call is accepted or running for it. A marker too many
 * costs one background refresh; one too few is impossible except by deleting files by hand. A data dir from before
 * the index (no `.in-flight/`) gets every wallet marked once, atomically (built in `.in-flight.new/`, then
 * renamed): each is looked at once in the background, and the idle ones are unmarked.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const FINGERPRINT = /^[0-9a-f]{8}$/;
const MANIFEST = 'wallet_manifest.json';

export class InFlightIndex {
  readonly dir: string;
  readonly #dataDir: string;
  readonly #marked = new Set<string>();
  /** Wallets marked at start because the data dir had no index yet (0 when it had one). */
  readonly migrated: number;

  private constructor(dataDir: string, migrated: number) {
    this.#dataDir = dataDir;
    this.dir = join(dataDir, '.in-flight');
    this.migrated = migrated;
  }

  /** Loads `<dataDir>/.in-flight/` (creating it, with every wallet marked, if the data dir has none yet). */
  static open(dataDir: string): InFlightIndex {
    const dir = join(dataDir, '.in-flight');
    let migrated = 0;
    if (!existsSync(dir)) {
      const fresh = `${dir}.new`;
      rmSync(fresh, { recursive: true, force: true });
      mkdirSync(fresh, { recursive: true, mode: 0o700 });
      for (const fp of InFlightIndex.#walletsOnDisk(dataDir)) {
        writeFileSync(join(fresh, fp), '', { mode: 0o600 });
        migrated++;
      }
      renameSync(fresh, dir);
    }
    const index = new InFlightIndex(dataDir, migrated);
    for (const name of readdirSync(dir)) {
      if (!FINGERPRINT.test(name)) continue;
      // A wallet that is gone (deleted by hand) has nothing to refresh.
      if (existsSync(join(dataDir, name, MANIFEST))) index.#marked.add(name);
      else rmSync(join(dir, name), { force: true });
    }
    return index;
  }

  static #walletsOnDisk(dataDir: string): string[] {
    if (!existsSync(dataDir)) return [];
    return readdirSync(dataDir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && FINGERPRINT.test(e.name))
      .filter((e) => existsSync(join(dataDir, e.name, MANIFEST)))
      .map((e) => e.name);
  }

  has(fingerprint: string): boolean {
    return this.#marked.has(fingerprint);
  }

  /** The marked wallets, in no particular order. */
  list(): string[] {
    return [...this.#marked];
  }

  get size(): number {
    return this.#marked.size;
  }

  /** Marks the wallet (a no-op when it is marked already: one small file write per transition). */
  mark(fingerprint: string): void {
    if (this.#marked.has(fingerprint) || !FINGERPRINT.test(fingerprint)) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(this.dir, fingerprint), '', { mode: 0o600 });
    this.#marked.add(fingerprint);
  }

  /** Unmarks the wallet; true if it was marked. */
  clear(fingerprint: string): boolean {
    if (!this.#marked.delete(fingerprint)) return false;
    rmSync(join(this.dir, fingerprint), { force: true });
    return true;
  }

  /** The wallet directory of a marked fingerprint (its manifest names the xpubs). */
  walletDir(fingerprint: string): string {
    return join(this.#dataDir, fingerprint);
  }
}
