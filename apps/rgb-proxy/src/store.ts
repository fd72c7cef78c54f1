/**
 * Durable storage for consignments, media and ACKs.
 *
 * Layout of the data dir (same as rgb-proxy-server):
 *   app.db              SQLite (WAL, synchronous=FULL): consignments, media
 *   consignments/<sha>  consignment files, named by the sha256 of their content
 *   media/<sha>         media files
 *   tmp/                uploads being received
 *
 * An upload is streamed to tmp/ while hashing, fsync'd, renamed into place, the directory is
 * fsync'd, and only then is the row inserted. So a row always points at a complete, durable file.
 * A crash can leave a file in tmp/ (removed at the next start) or a file with no row (an orphan,
 * also removed at start), never a row without its file.
 *
 * Posts for one key (recipient_id, attachment_id) are serialized in this process: a post that
 * finds the key taken never moves its file out of tmp/, so a rejected upload leaves nothing behind,
 * however many race for the key.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export interface StagedFile {
  /** Path in tmp/. */
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
}

export interface ConsignmentEntry {
  recipientId: string;
  filename: string;
  txid: string;
  vout: number | null;
  ack: boolean | null;
}

export interface MediaEntry {
  attachmentId: string;
  filename: string;
}

/** `created`: new entry; `same`: identical file already stored; `conflict`: a different one is. */
export type PostOutcome = 'created' | 'same' | 'conflict';
export type AckOutcome = 'set' | 'same' | 'conflict' | 'not-found';

export class UploadTooLargeError extends Error {
  override readonly name = 'UploadTooLargeError';
  readonly limit: number;
  constructor(limit: number) {
    super(`upload exceeds ${limit} bytes`);
    this.limit = limit;
  }
}

interface ConsignmentRow {
  recipient_id: string;
  filename: string;
  txid: string;
  vout: number | null;
  ack: number | null;
}

interface MediaRow {
  attachment_id: string;
  filename: string;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const WRITE_BATCH_BYTES = 1024 * 1024;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS consignments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  recipient_id TEXT NOT NULL UNIQUE,
  filename TEXT NOT NULL,
  txid TEXT NOT NULL,
  vout INTEGER,
  ack INTEGER
);
CREATE TABLE IF NOT EXISTS media (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  attachment_id TEXT NOT NULL UNIQUE,
  filename TEXT NOT NULL
);
`;

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } catch (err) {
    // A few filesystems cannot fsync a directory; the rename is then as durable as they allow.
    if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
  } finally {
    await fh.close();
  }
}

export interface StoreOpenReport {
  removedTmp: number;
  removedOrphans: number;
}

export class ProxyStore {
  readonly dataDir: string;
  readonly tmpDir: string;
  readonly consignmentDir: string;
  readonly mediaDir: string;
  readonly openReport: StoreOpenReport;
  readonly #db: Database.Database;
  readonly #q;
  /** Tail of the queue of posts per key ("c:" recipient_id, "m:" attachment_id). */
  readonly #keyQueues = new Map<string, Promise<void>>();
  /** Content files renamed into place whose row is not written yet, by sha256 (with a count). */
  readonly #unindexed = new Map<string, number>();

  private constructor(dataDir: string) {
    this.dataDir = dataDir;
    this.tmpDir = join(dataDir, 'tmp');
    this.consignmentDir = join(dataDir, 'consignments');
    this.mediaDir = join(dataDir, 'media');
    for (const d of [dataDir, this.tmpDir, this.consignmentDir, this.mediaDir])
      mkdirSync(d, { recursive: true });

    // Uploads interrupted by a crash: never indexed, safe to drop.
    let removedTmp = 0;
    for (const name of readdirSync(this.tmpDir)) {
      rmSync(join(this.tmpDir, name), { recursive: true, force: true });
      removedTmp++;
    }

    this.#db = new Database(join(dataDir, 'app.db'));
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = FULL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(SCHEMA);
    this.#q = {
      getConsignment: this.#db.prepare<[string], ConsignmentRow>(
        'SELECT recipient_id, filename, txid, vout, ack FROM consignments WHERE recipient_id = ?',
      ),
      insertConsignment: this.#db.prepare<[string, string, string, number | null]>(
        'INSERT INTO consignments (recipient_id, filename, txid, vout, ack) VALUES (?, ?, ?, ?, NULL)',
      ),
      setAck: this.#db.prepare<[number, string]>('UPDATE consignments SET ack = ? WHERE recipient_id = ?'),
      getMedia: this.#db.prepare<[string], MediaRow>(
        'SELECT attachment_id, filename FROM media WHERE attachment_id = ?',
      ),
      insertMedia: this.#db.prepare<[string, string]>(
        'INSERT INTO media (attachment_id, filename) VALUES (?, ?)',
      ),
      consignmentFiles: this.#db.prepare<[], { filename: string }>(
        'SELECT DISTINCT filename FROM consignments',
      ),
      mediaFiles: this.#db.prepare<[], { filename: string }>('SELECT DISTINCT filename FROM media'),
      consignmentFileUsed: this.#db.prepare<[string], { one: number }>(
        'SELECT 1 AS one FROM consignments WHERE filename = ? LIMIT 1',
      ),
      mediaFileUsed: this.#db.prepare<[string], { one: number }>(
        'SELECT 1 AS one FROM media WHERE filename = ? LIMIT 1',
      ),
    };

    // Files renamed into place whose row was never written (crash in between): unreferenced.
    const removedOrphans =
      this.#removeOrphans(this.consignmentDir, this.#q.consignmentFiles) +
      this.#removeOrphans(this.mediaDir, this.#q.mediaFiles);
    this.openReport = { removedTmp, removedOrphans };
  }

  /** Opens (creating if needed) a data dir and cleans what a crash may have left. */
  static open(dataDir: string): ProxyStore {
    return new ProxyStore(dataDir);
  }

  #removeOrphans(dir: string, referenced: Database.Statement<[], { filename: string }>): number {
    const keep = new Set(referenced.all().map((r) => r.filename));
    let removed = 0;
    for (const name of readdirSync(dir)) {
      if (SHA256_HEX.test(name) && !keep.has(name)) {
        unlinkSync(join(dir, name));
        removed++;
      }
    }
    return removed;
  }

  /**
   * Streams an upload into tmp/, hashing as it goes, and fsyncs it. Over `maxBytes` (or when the
   * source reports truncation) the partial file is removed and `UploadTooLargeError` thrown.
   */
  async stage(
    source: AsyncIterable<Uint8Array>,
    maxBytes: number,
    isTruncated: () => boolean = () => false,
  ): Promise<StagedFile> {
    const path = join(this.tmpDir, `${Date.now()}-${randomUUID()}.part`);
    const hash = createHash('sha256');
    let size = 0;
    const fh = await open(path, 'wx', 0o600);
    let ok = false;
    try {
      // Chunks are gathered and written ~1 MiB at a time (one writev instead of one write per chunk).
      let pending: Uint8Array[] = [];
      let pendingBytes = 0;
      const flush = async () => {
        if (pendingBytes === 0) return;
        const batch = pending;
        const total = pendingBytes;
        pending = [];
        pendingBytes = 0;
        const written = (await fh.writev(batch)).bytesWritten;
        if (written < total) {
          // short write (rare): write the remainder until it is all out
          const rest = Buffer.concat(batch).subarray(written);
          let off = 0;
          while (off < rest.length) off += (await fh.write(rest, off, rest.length - off)).bytesWritten;
        }
      };
      for await (const chunk of source) {
        size += chunk.byteLength;
        if (size > maxBytes) throw new UploadTooLargeError(maxBytes);
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.byteLength;
        if (pendingBytes >= WRITE_BATCH_BYTES) await flush();
      }
      await flush();
      if (isTruncated()) throw new UploadTooLargeError(maxBytes);
      await fh.sync();
      ok = true;
    } finally {
      await fh.close();
      if (!ok) await rm(path, { force: true });
    }
    return { path, sha256: hash.digest('hex'), size };
  }

  /** Removes a staged file that was not committed (no-op if it was). */
  async discard(staged: StagedFile): Promise<void> {
    await rm(staged.path, { force: true });
  }

  getConsignment(recipientId: string): ConsignmentEntry | undefined {
    const row = this.#q.getConsignment.get(recipientId);
    if (!row) return undefined;
    return {
      recipientId: row.recipient_id,
      filename: row.filename,
      txid: row.txid,
      vout: row.vout,
      ack: row.ack === null ? null : row.ack !== 0,
    };
  }

  getMedia(attachmentId: string): MediaEntry | undefined {
    const row = this.#q.getMedia.get(attachmentId);
    return row ? { attachmentId: row.attachment_id, filename: row.filename } : undefined;
  }

  readConsignmentFile(entry: ConsignmentEntry): Promise<Buffer> {
    return readFile(join(this.consignmentDir, entry.filename));
  }

  readMediaFile(entry: MediaEntry): Promise<Buffer> {
    return readFile(join(this.mediaDir, entry.filename));
  }

  postConsignment(
    staged: StagedFile,
    entry: { recipientId: string; txid: string; vout: number | null },
  ): Promise<PostOutcome> {
    return this.#commit(
      `c:${entry.recipientId}`,
      staged,
      this.consignmentDir,
      () => this.#q.getConsignment.get(entry.recipientId)?.filename,
      () => this.#q.insertConsignment.run(entry.recipientId, staged.sha256, entry.txid, entry.vout),
      this.#q.consignmentFileUsed,
    );
  }

  postMedia(staged: StagedFile, attachmentId: string): Promise<PostOutcome> {
    return this.#commit(
      `m:${attachmentId}`,
      staged,
      this.mediaDir,
      () => this.#q.getMedia.get(attachmentId)?.filename,
      () => this.#q.insertMedia.run(attachmentId, staged.sha256),
      this.#q.mediaFileUsed,
    );
  }

  /** Runs `fn` after every earlier call for the same key has finished (a per-key FIFO lock). */
  async #serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#keyQueues.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const tail = before.then(() => mine);
    this.#keyQueues.set(key, tail);
    await before;
    try {
      return await fn();
    } finally {
      release();
      if (this.#keyQueues.get(key) === tail) this.#keyQueues.delete(key);
    }
  }

  #commit(
    key: string,
    staged: StagedFile,
    dir: string,
    existing: () => string | undefined,
    insert: () => void,
    fileUsed: Database.Statement<[string], { one: number }>,
  ): Promise<PostOutcome> {
    const compare = (filename: string): PostOutcome => (filename === staged.sha256 ? 'same' : 'conflict');
    return this.#serialized(key, async () => {
      const before = existing();
      if (before !== undefined) {
        await this.discard(staged);
        return compare(before);
      }
      const target = join(dir, staged.sha256);
      const sha = staged.sha256;
      this.#unindexed.set(sha, (this.#unindexed.get(sha) ?? 0) + 1);
      let outcome: PostOutcome | undefined;
      try {
        await rename(staged.path, target);
        await fsyncDir(dir);
        // The UNIQUE key backs the per-key lock up against a second process on the same data dir.
        outcome = this.#db
          .transaction((): PostOutcome => {
            const now = existing();
            if (now !== undefined) return compare(now);
            insert();
            return 'created';
          })
          .immediate();
        return outcome;
      } finally {
        const left = (this.#unindexed.get(sha) ?? 1) - 1;
        if (left === 0) this.#unindexed.delete(sha);
        else this.#unindexed.set(sha, left);
        // Renamed but never indexed (an I/O or database error): drop the file unless a row or another
        // upload in flight in this process uses the same content; synchronous, so nothing interleaves.
        // (A key won by a second process on the same data dir, which is unsupported, leaves the file
        // to the start-up cleanup: that process may be about to index the same content.)
        if (outcome === undefined && left === 0 && fileUsed.get(sha) === undefined) {
          rmSync(target, { force: true });
        }
      }
    });
  }

  /** Sets the ACK once: the same value again is `same`, a different one `conflict`. */
  setAck(recipientId: string, ack: boolean): AckOutcome {
    return this.#db
      .transaction((): AckOutcome => {
        const row = this.#q.getConsignment.get(recipientId);
        if (!row) return 'not-found';
        if (row.ack !== null) return (row.ack !== 0) === ack ? 'same' : 'conflict';
        this.#q.setAck.run(ack ? 1 : 0, recipientId);
        return 'set';
      })
      .immediate();
  }

  counts(): { consignments: number; media: number } {
    const c = this.#db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM consignments').get()?.n ?? 0;
    const m = this.#db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM media').get()?.n ?? 0;
    return { consignments: c, media: m };
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}
