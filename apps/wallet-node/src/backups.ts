/**
 * Encrypted wallet backups kept for download: `<data_dir>/.backups/` (mode 0700) holds `<id>.backup` (rgb-lib's
 * own encrypted format, mode 0600) and `<id>.json` (who made it and until when, mode 0600).
 *
 * - ids are 32 random base64url characters (192 bits): unguessable, and never turned into a path unless the
 *   store issued them;
 * - a backup is served only to the wallet that made it (fingerprint and both xpubs must match); the
 *   wallet's xpub_van in place of an id means "this wallet's latest backup" (rgb-sdk's default);
 * - each wallet keeps at most one backup: a new one replaces the previous one;
 * - a backup is deleted `ttlMs` after its creation (default 24 h), downloaded or not; it can be downloaded
 *   any number of times until then.
 *
 * rgb-lib writes the backup itself and stages it (the wallet zipped in clear) in a temporary directory next to
 * the target file, i.e. inside the 0700 directory; `open()` deletes whatever a crash left there.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { WalletIdentity } from './identity.ts';

export const DEFAULT_BACKUP_TTL_MS = 24 * 60 * 60 * 1000;
const ID = /^[A-Za-z0-9_-]{32}$/;

export interface BackupRecord {
  id: string;
  fingerprint: string;
  xpubVanilla: string;
  xpubColored: string;
  /** ms since the epoch. */
  createdAt: number;
  /** ms since the epoch; the files are deleted at the first sweep or lookup after this. */
  expiresAt: number;
  /** Bytes of the backup file. */
  size: number;
}

export interface BackupStoreOptions {
  /** Lifetime of a backup (ms). Default 24 h. */
  ttlMs?: number;
  /** Clock (ms), for tests. */
  now?: () => number;
}

const sameWallet = (r: BackupRecord, id: WalletIdentity) =>
  r.fingerprint === id.fingerprint && r.xpubVanilla === id.xpubVanilla && r.xpubColored === id.xpubColored;

function isRecord(v: unknown): v is BackupRecord {
  const r = v as Partial<BackupRecord> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.id === 'string' &&
    ID.test(r.id) &&
    typeof r.fingerprint === 'string' &&
    typeof r.xpubVanilla === 'string' &&
    typeof r.xpubColored === 'string' &&
    Number.isFinite(r.createdAt) &&
    Number.isFinite(r.expiresAt) &&
    Number.isInteger(r.size)
  );
}

export class BackupStore {
  readonly dir: string;
  readonly ttlMs: number;
  readonly #now: () => number;
  readonly #records = new Map<string, BackupRecord>();
  #timer: NodeJS.Timeout | undefined;

  constructor(dataDir: string, opts: BackupStoreOptions = {}) {
    this.dir = join(dataDir, '.backups');
    this.ttlMs = opts.ttlMs ?? DEFAULT_BACKUP_TTL_MS;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * Loads the backups kept on disk and deletes everything else there: expired backups, files without a
   * valid record, rgb-lib staging directories of a backup interrupted by a crash. Call at start-up, before
   * any backup runs; `sweepEveryMs` > 0 also deletes expired backups periodically (until `close()`).
   */
  open(sweepEveryMs = 0): void {
    this.#records.clear();
    if (existsSync(this.dir)) {
      const names = new Set(readdirSync(this.dir));
      const keep = new Set<string>();
      for (const name of names) {
        const m = /^([A-Za-z0-9_-]{32})\.json$/.exec(name);
        if (!m || !names.has(`${m[1]}.backup`)) continue;
        let rec: unknown;
        try {
          rec = JSON.parse(readFileSync(join(this.dir, name), 'utf8'));
        } catch {
          continue;
        }
        if (!isRecord(rec) || rec.id !== m[1] || rec.expiresAt <= this.#now()) continue;
        this.#records.set(rec.id, rec);
        keep.add(name).add(`${rec.id}.backup`);
      }
      for (const name of names) {
        if (!keep.has(name)) rmSync(join(this.dir, name), { recursive: true, force: true });
      }
    }
    if (sweepEveryMs > 0 && !this.#timer) {
      this.#timer = setInterval(() => this.sweep(), sweepEveryMs);
      this.#timer.unref();
    }
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  get size(): number {
    return this.#records.size;
  }

  pathOf(rec: BackupRecord): string {
    return join(this.dir, `${rec.id}.backup`);
  }

  /**
   * Makes a backup of `wallet`: `write(path)` must create the file at `path` (rgb-lib's `backup`). On
   * success the file is made 0600, recorded, and the wallet's previous backups are deleted; on failure
   * nothing is kept.
   */
  async create(wallet: WalletIdentity, write: (path: string) => Promise<void>): Promise<BackupRecord> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
    const id = randomBytes(24).toString('base64url');
    const path = join(this.dir, `${id}.backup`);
    try {
      await write(path);
      chmodSync(path, 0o600);
      const now = this.#now();
      const rec: BackupRecord = {
        id,
        fingerprint: wallet.fingerprint,
        xpubVanilla: wallet.xpubVanilla,
        xpubColored: wallet.xpubColored,
        createdAt: now,
        expiresAt: now + this.ttlMs,
        size: statSync(path).size,
      };
      const meta = join(this.dir, `${id}.json`);
      writeFileSync(`${meta}.tmp`, JSON.stringify(rec), { mode: 0o600 });
      renameSync(`${meta}.tmp`, meta);
      for (const old of [...this.#records.values()]) {
        if (old.fingerprint === wallet.fingerprint) this.remove(old);
      }
      this.#records.set(id, rec);
      return rec;
    } catch (err) {
      rmSync(path, { force: true });
      rmSync(join(this.dir, `${id}.json.tmp`), { force: true });
      throw err;
    }
  }

  /**
   * The backup `idOrXpub` if it belongs to `wallet` and has not expired: an id this store issued, or the
   * wallet's own xpub_van for its latest backup. Anything else (unknown, expired, another wallet's) is
   * `undefined`, so callers cannot tell another wallet's backup from a missing one.
   */
  find(wallet: WalletIdentity, idOrXpub: string): BackupRecord | undefined {
    this.sweep();
    if (idOrXpub === wallet.xpubVanilla) {
      let latest: BackupRecord | undefined;
      for (const r of this.#records.values()) {
        if (sameWallet(r, wallet) && (!latest || r.createdAt > latest.createdAt)) latest = r;
      }
      return latest;
    }
    const rec = this.#records.get(idOrXpub);
    return rec && sameWallet(rec, wallet) ? rec : undefined;
  }

  /** Deletes expired backups; returns how many. */
  sweep(): number {
    const now = this.#now();
    let n = 0;
    for (const r of [...this.#records.values()]) {
      if (r.expiresAt <= now) {
        this.remove(r);
        n++;
      }
    }
    return n;
  }

  remove(rec: BackupRecord): void {
    this.#records.delete(rec.id);
    rmSync(join(this.dir, `${rec.id}.json`), { force: true });
    rmSync(this.pathOf(rec), { force: true });
  }
}
