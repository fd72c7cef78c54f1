import {
  type BitcoindRpc,
  BitcoindRpcError,
  type ParsedBlock,
  type ParsedTx,
  parseBlock,
  parseTx,
  scriptHash,
} from '@rgbx/chains/btc';

/** A confirmed history entry of a scripthash. */
export interface HistoryEntry {
  txid: string;
  height: number;
}

interface Output {
  sh: string;
  value: bigint;
  height: number; // 0 for mempool outputs
  /** Position of the transaction in its block (0 for mempool outputs). */
  pos: number;
}

interface BlockUndo {
  /** One entry per history entry appended by this block, in order (popped on undo). */
  shs: string[];
  created: string[];
  spent: Array<[string, Output]>;
}

interface MempoolTx {
  txid: string;
  raw: Buffer;
  tx: ParsedTx;
  fee: bigint | null;
  vsize: number;
  /** -1 when it spends an output of another mempool transaction, else 0 (Electrum convention). */
  height: 0 | -1;
  shs: Set<string>;
  spends: string[];
}

export interface MempoolEntry {
  tx_hash: string;
  height: number;
  fee: number;
}

export interface SyncResult {
  /** Scripthashes whose history or mempool entries may have changed. */
  touched: Set<string>;
  newTip: boolean;
  reorgDepth: number;
}

interface ChainPlan {
  /** Height of our highest block that is still in bitcoind's chain (-1: none). */
  fork: number;
  /** The blocks after it, in order. */
  blocks: ParsedBlock[];
  /** The blocks stop short of bitcoind's tip (a long catch-up, applied in chunks). */
  partial: boolean;
}

interface FetchedTx {
  raw: Buffer;
  tx: ParsedTx;
}

/** Consecutive attempts at one snapshot before a sync gives up (requests then answer error 2). */
const MAX_SYNC_ATTEMPTS = 50;
/** Blocks fetched before they are applied; a longer catch-up is applied in chunks of this size. */
const CHUNK_BLOCKS = 500;
const GENESIS_PREV = '00'.repeat(32);

const key = (txid: string, vout: number): string => `${txid}:${vout}`;

function getOrInit<K, V>(map: Map<K, V>, k: K, make: () => V): V {
  let v = map.get(k);
  if (v === undefined) {
    v = make();
    map.set(k, v);
  }
  return v;
}
const isUnspendable = (script: Buffer): boolean => script.length > 0 && script[0] === 0x6a;

/**
 * In-memory Electrum index over bitcoind: headers, per-block txids, a scripthash → history map and the
 * UTXO set, maintained incrementally block by block (undo data kept per block for reorgs), plus a
 * mempool view. Built from raw blocks (`getblock h 0`) at start; no full rescan ever happens per request.
 */
export class ChainIndex {
  readonly headers: Buffer[] = [];
  readonly hashes: string[] = [];
  readonly blockTxids: string[][] = [];
  readonly #undo: BlockUndo[] = [];
  readonly #outputs = new Map<string, Output>();
  readonly #utxosBySh = new Map<string, Set<string>>();
  readonly #history = new Map<string, HistoryEntry[]>();
  readonly #mempool = new Map<string, MempoolTx>();
  readonly #mempoolBySh = new Map<string, Set<string>>();
  readonly #mempoolOutputs = new Map<string, Output>();
  readonly #mempoolSpent = new Map<string, string>();
  readonly #rpc: BitcoindRpc;
  readonly #batchSize: number;
  readonly #unparsable = new Set<string>();
  #syncing: Promise<SyncResult> | null = null;
  #again = false;
  #consistent = false;
  /** Changes applied since the last successful sync returned. */
  #changes: SyncResult = { touched: new Set(), newTip: false, reorgDepth: 0 };

  constructor(rpc: BitcoindRpc, opts: { batchSize?: number } = {}) {
    this.#rpc = rpc;
    this.#batchSize = opts.batchSize ?? 25;
  }

  /**
   * True when the chain and the mempool view are one snapshot of bitcoind (the last sync completed).
   * False before the first sync and while a long catch-up is being applied in chunks: readers wait.
   */
  get consistent(): boolean {
    return this.#consistent;
  }

  get height(): number {
    return this.headers.length - 1;
  }

  get tipHash(): string | undefined {
    return this.hashes[this.hashes.length - 1];
  }

  /**
   * Brings the index to one snapshot of bitcoind: the tip and the mempool as they both were at one
   * instant. Concurrent callers share one run; a call made while a run is in flight schedules exactly
   * one more run, so the returned promise always covers a pass that began after the call. The result
   * covers every change applied since the last successful sync (changes applied by a failed run are
   * reported by the next successful one).
   */
  sync(): Promise<SyncResult> {
    if (this.#syncing) {
      this.#again = true;
      return this.#syncing;
    }
    const run = async (): Promise<SyncResult> => {
      try {
        do {
          this.#again = false;
          await this.#syncOnce();
        } while (this.#again);
      } finally {
        this.#syncing = null;
      }
      const done = this.#changes;
      this.#changes = { touched: new Set(), newTip: false, reorgDepth: 0 };
      return done;
    };
    this.#syncing = run();
    return this.#syncing;
  }

  /**
   * One snapshot: read the tip, fetch the blocks up to it, read the mempool (and fetch the new
   * transactions), then read the tip again. Only if it did not move is everything applied, without
   * any await in between, so no request can observe blocks without their mempool or the reverse.
   * bitcoind connects a block and removes its transactions from the mempool under the mempool lock
   * that `getrawmempool` takes, so a mempool read between two equal tip reads belongs to that tip.
   */
  async #syncOnce(): Promise<void> {
    const blocks = new Map<string, ParsedBlock>();
    const txs = new Map<string, FetchedTx>();
    let attempts = 0;
    for (;;) {
      if (++attempts > MAX_SYNC_ATTEMPTS) {
        throw new Error(
          `bitcoind's tip or mempool changed during each of ${MAX_SYNC_ATTEMPTS} consecutive sync attempts`,
        );
      }
      const best = await this.#rpc.call<string>('getbestblockhash');
      let plan: ChainPlan = { fork: this.height, blocks: [], partial: false };
      if (best !== this.tipHash) {
        const p = await this.#planChain(best, blocks);
        if (!p) continue; // the chain moved while it was read: start over
        if (p.partial) {
          // A long catch-up: apply this chunk now (bounded memory); readers wait for the full snapshot.
          this.#applyChain(p);
          this.#consistent = false;
          blocks.clear();
          attempts = 0;
          continue;
        }
        plan = p;
      }
      const ids = await this.#fetchMempool(txs);
      if (!ids) continue; // a transaction left the mempool before it could be fetched
      if ((await this.#rpc.call<string>('getbestblockhash')) !== best) continue;
      const rebuild = !this.#consistent || plan.blocks.length > 0 || plan.fork < this.height;
      this.#applyChain(plan);
      this.#applyMempool(ids, txs, rebuild);
      this.#consistent = true;
      return;
    }
  }

  /**
   * The blocks from the fork point (our highest block still in bitcoind's chain) to `best`, at most
   * CHUNK_BLOCKS of them. Null when what was read is not one chain ending at `best` (it moved).
   */
  async #planChain(best: string, cache: Map<string, ParsedBlock>): Promise<ChainPlan | null> {
    const { height: tipHeight } = await this.#rpc.call<{ height: number }>('getblockheader', [best, true]);
    let fork = -1;
    for (let h = Math.min(this.height, tipHeight); h >= 0; ) {
      const from = Math.max(0, h - 9);
      const heights = Array.from({ length: h - from + 1 }, (_, i) => h - i);
      const got = await this.#rpc.batch(heights.map((x) => ({ method: 'getblockhash', params: [x] })));
      const i = heights.findIndex((x, j) => got[j] === this.hashes[x]);
      if (i >= 0) {
        fork = heights[i]!;
        break;
      }
      h = from - 1;
    }
    const end = Math.min(tipHeight, fork + CHUNK_BLOCKS);
    const out: ParsedBlock[] = [];
    for (let start = fork + 1; start <= end; start += this.#batchSize) {
      const heights = Array.from(
        { length: Math.min(end, start + this.#batchSize - 1) - start + 1 },
        (_, i) => start + i,
      );
      const hashes = await this.#rpc.batch(heights.map((x) => ({ method: 'getblockhash', params: [x] })));
      if (hashes.some((x) => typeof x !== 'string')) return null;
      const need = (hashes as string[]).filter((x) => !cache.has(x));
      const raws = await this.#rpc.batch(need.map((hash) => ({ method: 'getblock', params: [hash, 0] })));
      for (let i = 0; i < need.length; i++) {
        const raw = raws[i];
        if (typeof raw !== 'string') return null;
        cache.set(need[i]!, parseBlock(Buffer.from(raw, 'hex')));
      }
      for (const hash of hashes as string[]) out.push(cache.get(hash)!);
    }
    let prev = fork >= 0 ? this.hashes[fork]! : GENESIS_PREV;
    for (const b of out) {
      if (b.prevHash !== prev) return null;
      prev = b.hash;
    }
    const partial = end < tipHeight;
    if (!partial && prev !== best) return null;
    return { fork, blocks: out, partial };
  }

  /** `getrawmempool`, and every transaction in it we do not hold yet; null if one could not be fetched. */
  async #fetchMempool(cache: Map<string, FetchedTx>): Promise<string[] | null> {
    const ids = await this.#rpc.call<string[]>('getrawmempool');
    const missing = ids.filter((id) => !this.#mempool.has(id) && !cache.has(id) && !this.#unparsable.has(id));
    let complete = true;
    for (let i = 0; i < missing.length; i += 100) {
      const chunk = missing.slice(i, i + 100);
      const raws = await this.#rpc.batch(
        chunk.map((id) => ({ method: 'getrawtransaction', params: [id, false] })),
      );
      raws.forEach((hex, j) => {
        const txid = chunk[j]!;
        if (typeof hex !== 'string') {
          complete = false; // evicted or replaced meanwhile: the next attempt reads a newer mempool
          return;
        }
        const raw = Buffer.from(hex, 'hex');
        try {
          cache.set(txid, { raw, tx: parseTx(raw) });
        } catch {
          this.#unparsable.add(txid); // bitcoind never serves one; left out rather than poisoning the index
        }
      });
    }
    return complete ? ids : null;
  }

  /** Undoes our blocks above the fork point and applies the plan's blocks (synchronously). */
  #applyChain(plan: ChainPlan): void {
    const c = this.#changes;
    while (this.height > plan.fork) {
      c.reorgDepth++;
      c.newTip = true;
      for (const sh of this.#undoTip()) c.touched.add(sh);
    }
    for (const block of plan.blocks) {
      c.newTip = true;
      for (const sh of this.#applyBlock(block.header, block.hash, block.txs)) c.touched.add(sh);
    }
  }

  #applyBlock(header: Buffer, hash: string, txs: ParsedTx[]): Set<string> {
    const height = this.headers.length;
    const undo: BlockUndo = { shs: [], created: [], spent: [] };
    const touched = new Set<string>();
    txs.forEach((tx, pos) => {
      const txShs = new Set<string>();
      if (!tx.isCoinbase) {
        for (const input of tx.inputs) {
          const k = key(input.prevTxid, input.prevVout);
          const out = this.#outputs.get(k);
          if (!out) continue;
          this.#outputs.delete(k);
          this.#utxosBySh.get(out.sh)?.delete(k);
          undo.spent.push([k, out]);
          txShs.add(out.sh);
        }
      }
      tx.outputs.forEach((o, vout) => {
        const sh = scriptHash(o.script);
        txShs.add(sh);
        if (isUnspendable(o.script)) return;
        const k = key(tx.txid, vout);
        this.#outputs.set(k, { sh, value: o.value, height, pos });
        const set = getOrInit(this.#utxosBySh, sh, () => new Set());
        set.add(k);
        undo.created.push(k);
      });
      for (const sh of txShs) {
        const h = getOrInit(this.#history, sh, () => []);
        h.push({ txid: tx.txid, height });
        undo.shs.push(sh);
        touched.add(sh);
      }
    });
    this.headers.push(header);
    this.hashes.push(hash);
    this.blockTxids.push(txs.map((t) => t.txid));
    this.#undo.push(undo);
    return touched;
  }

  #undoTip(): Set<string> {
    const undo = this.#undo.pop()!;
    const touched = new Set<string>();
    for (let i = undo.shs.length - 1; i >= 0; i--) {
      const sh = undo.shs[i]!;
      const h = this.#history.get(sh)!;
      h.pop();
      if (h.length === 0) this.#history.delete(sh);
      touched.add(sh);
    }
    // Restore what the block spent first, then remove what it created: an output created and spent inside
    // the same block must end up absent (restoring after the removal would resurrect it as confirmed).
    for (const [k, out] of undo.spent) {
      this.#outputs.set(k, out);
      const set = getOrInit(this.#utxosBySh, out.sh, () => new Set());
      set.add(k);
    }
    for (const k of undo.created) {
      const out = this.#outputs.get(k);
      this.#outputs.delete(k);
      if (out) this.#utxosBySh.get(out.sh)?.delete(k);
    }
    this.headers.pop();
    this.hashes.pop();
    this.blockTxids.pop();
    return touched;
  }

  /**
   * Rebuilds the mempool view from exactly `ids` (parents before children), when it differs from the
   * current one or the chain changed (fees, heights 0/-1 and spent flags depend on the UTXO set).
   */
  #applyMempool(ids: string[], fetched: Map<string, FetchedTx>, rebuild: boolean): void {
    const touched = this.#changes.touched;
    const same = ids.length === this.#mempool.size && ids.every((id) => this.#mempool.has(id));
    if (!rebuild && same) return;
    const pending = new Map<string, { txid: string; raw: Buffer; tx: ParsedTx }>();
    for (const id of ids) {
      const m = this.#mempool.get(id) ?? fetched.get(id);
      if (m) pending.set(id, { txid: id, raw: m.raw, tx: m.tx });
    }
    for (const m of this.#mempool.values()) for (const sh of m.shs) touched.add(sh);
    this.#mempool.clear();
    this.#mempoolBySh.clear();
    this.#mempoolOutputs.clear();
    this.#mempoolSpent.clear();
    let progress = true;
    while (pending.size > 0 && progress) {
      progress = false;
      for (const [txid, p] of pending) {
        const waits = p.tx.inputs.some((i) => pending.has(i.prevTxid) && i.prevTxid !== txid);
        if (waits) continue;
        this.#addMempoolTx(p.txid, p.raw, p.tx, touched);
        pending.delete(txid);
        progress = true;
      }
    }
    for (const p of pending.values()) this.#addMempoolTx(p.txid, p.raw, p.tx, touched); // cycles cannot exist; defensive
  }

  #addMempoolTx(txid: string, raw: Buffer, tx: ParsedTx, touched: Set<string>): void {
    const shs = new Set<string>();
    const spends: string[] = [];
    let inSum = 0n;
    let known = true;
    let height: 0 | -1 = 0;
    for (const input of tx.inputs) {
      const k = key(input.prevTxid, input.prevVout);
      const conf = this.#outputs.get(k);
      const mem = conf ? undefined : this.#mempoolOutputs.get(k);
      const out = conf ?? mem;
      if (mem) height = -1;
      if (!out) {
        known = false;
        continue;
      }
      inSum += out.value;
      shs.add(out.sh);
      spends.push(k);
      this.#mempoolSpent.set(k, txid);
    }
    let outSum = 0n;
    tx.outputs.forEach((o, vout) => {
      outSum += o.value;
      const sh = scriptHash(o.script);
      shs.add(sh);
      if (!isUnspendable(o.script))
        this.#mempoolOutputs.set(key(txid, vout), { sh, value: o.value, height: 0, pos: 0 });
    });
    const m: MempoolTx = {
      txid,
      raw,
      tx,
      fee: known ? inSum - outSum : null,
      vsize: Math.ceil(tx.weight / 4),
      height,
      shs,
      spends,
    };
    this.#mempool.set(txid, m);
    for (const sh of shs) {
      const set = getOrInit(this.#mempoolBySh, sh, () => new Set());
      set.add(txid);
      touched.add(sh);
    }
  }

  /** Confirmed history in blockchain order. */
  confirmedHistory(sh: string): readonly HistoryEntry[] {
    return this.#history.get(sh) ?? [];
  }

  /** Mempool entries: height 0 (all inputs confirmed) before -1, then by tx_hash. */
  mempoolEntries(sh: string): MempoolEntry[] {
    const ids = this.#mempoolBySh.get(sh);
    if (!ids) return [];
    return [...ids]
      .map((id) => this.#mempool.get(id)!)
      .sort((a, b) => b.height - a.height || (a.txid < b.txid ? -1 : a.txid > b.txid ? 1 : 0))
      .map((m) => ({ tx_hash: m.txid, height: m.height, fee: m.fee === null ? 0 : Number(m.fee) }));
  }

  balance(sh: string): { confirmed: bigint; unconfirmed: bigint } {
    let confirmed = 0n;
    for (const k of this.#utxosBySh.get(sh) ?? []) confirmed += this.#outputs.get(k)!.value;
    let unconfirmed = 0n;
    for (const id of this.#mempoolBySh.get(sh) ?? []) {
      const m = this.#mempool.get(id)!;
      m.tx.outputs.forEach((o, vout) => {
        if (this.#mempoolOutputs.get(key(id, vout))?.sh === sh) unconfirmed += o.value;
      });
      for (const k of m.spends) {
        const out = this.#outputs.get(k) ?? this.#mempoolOutputs.get(k);
        if (out?.sh === sh) unconfirmed -= out.value;
      }
    }
    return { confirmed, unconfirmed };
  }

  /**
   * Unspent outputs of a scripthash as the mempool sees them (confirmed ones spent in mempool are gone):
   * confirmed ones in blockchain order (height, position in the block, output index), then mempool
   * ones at height 0 in the order of {@link mempoolEntries}, by output index.
   */
  listUnspent(sh: string): Array<{ tx_hash: string; tx_pos: number; height: number; value: bigint }> {
    const confirmed: Array<{ tx_hash: string; tx_pos: number; height: number; value: bigint; pos: number }> =
      [];
    for (const k of this.#utxosBySh.get(sh) ?? []) {
      if (this.#mempoolSpent.has(k)) continue;
      const o = this.#outputs.get(k)!;
      const [txid, vout] = k.split(':') as [string, string];
      confirmed.push({ tx_hash: txid, tx_pos: Number(vout), height: o.height, value: o.value, pos: o.pos });
    }
    confirmed.sort((a, b) => a.height - b.height || a.pos - b.pos || a.tx_pos - b.tx_pos);
    const out = confirmed.map(({ pos: _, ...u }) => u);
    for (const e of this.mempoolEntries(sh)) {
      this.#mempool.get(e.tx_hash)!.tx.outputs.forEach((o, vout) => {
        const k = key(e.tx_hash, vout);
        if (this.#mempoolOutputs.get(k)?.sh === sh && !this.#mempoolSpent.has(k)) {
          out.push({ tx_hash: e.tx_hash, tx_pos: vout, height: 0, value: o.value });
        }
      });
    }
    return out;
  }

  /** Block height of a confirmed transaction, if we know it from the block at `height`. */
  positionAt(txid: string, height: number): number {
    return this.blockTxids[height]?.indexOf(txid) ?? -1;
  }

  /** [fee rate sat/vB, vsize] pairs, highest rate first, binned like electrs (bins of ≥100,000 vB). */
  feeHistogram(): Array<[number, number]> {
    const entries = [...this.#mempool.values()]
      .filter((m) => m.fee !== null)
      .map((m) => ({ rate: Number(m.fee!) / m.vsize, vsize: m.vsize }))
      .sort((a, b) => b.rate - a.rate);
    const bins: Array<[number, number]> = [];
    let acc = 0;
    entries.forEach((e, i) => {
      acc += e.vsize;
      if (acc >= 100_000 || i === entries.length - 1) {
        bins.push([Math.floor(e.rate * 100) / 100, acc]);
        acc = 0;
      }
    });
    return bins;
  }

  mempoolSize(): number {
    return this.#mempool.size;
  }

  /** True when bitcoind says the transaction is unknown (used to keep error texts exact). */
  static isNotFound(err: unknown): boolean {
    return err instanceof BitcoindRpcError && err.code === -5;
  }
}
