import {
  type BitcoindRpc,
  BitcoindRpcError,
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
  #syncing: Promise<SyncResult> | null = null;
  #again = false;

  constructor(rpc: BitcoindRpc, opts: { batchSize?: number } = {}) {
    this.#rpc = rpc;
    this.#batchSize = opts.batchSize ?? 25;
  }

  /** The sync pass in flight, if any: readers wait for it so they never see blocks without their mempool. */
  get inFlight(): Promise<SyncResult> | null {
    return this.#syncing;
  }

  get height(): number {
    return this.headers.length - 1;
  }

  get tipHash(): string | undefined {
    return this.hashes[this.hashes.length - 1];
  }

  /**
   * Brings the index up to bitcoind's tip and mempool. Concurrent callers share one run; a call made
   * while a run is in flight schedules exactly one more run, so no update is missed.
   */
  sync(): Promise<SyncResult> {
    if (this.#syncing) {
      this.#again = true;
      return this.#syncing;
    }
    const run = async (): Promise<SyncResult> => {
      const total: SyncResult = { touched: new Set(), newTip: false, reorgDepth: 0 };
      try {
        do {
          this.#again = false;
          const r = await this.#syncOnce();
          for (const sh of r.touched) total.touched.add(sh);
          total.newTip ||= r.newTip;
          total.reorgDepth = Math.max(total.reorgDepth, r.reorgDepth);
        } while (this.#again);
      } finally {
        this.#syncing = null;
      }
      return total;
    };
    this.#syncing = run();
    return this.#syncing;
  }

  async #syncOnce(): Promise<SyncResult> {
    const touched = new Set<string>();
    let newTip = false;
    let reorgDepth = 0;
    for (let guard = 0; guard < 1000; guard++) {
      const best = await this.#rpc.call<string>('getbestblockhash');
      if (best === this.tipHash) break;
      newTip = true;
      const tipHeight = await this.#rpc.call<number>('getblockcount');
      // Find the fork point: walk back while our block at h is not bitcoind's block at h.
      let h = Math.min(this.height, tipHeight);
      while (h >= 0) {
        const from = Math.max(0, h - 9);
        const heights = Array.from({ length: h - from + 1 }, (_, i) => h - i);
        const got = await this.#rpc.batch(heights.map((x) => ({ method: 'getblockhash', params: [x] })));
        let matched = -2;
        for (let i = 0; i < heights.length; i++) {
          if (got[i] === this.hashes[heights[i]!]) {
            matched = heights[i]!;
            break;
          }
        }
        if (matched !== -2) {
          h = matched;
          break;
        }
        h = from - 1;
      }
      while (this.height > h) {
        reorgDepth++;
        for (const sh of this.#undoTip()) touched.add(sh);
      }
      if (this.height >= tipHeight) continue;
      const end = Math.min(tipHeight, this.height + this.#batchSize);
      const heights = Array.from({ length: end - this.height }, (_, i) => this.height + 1 + i);
      const hashes = await this.#rpc.batch(heights.map((x) => ({ method: 'getblockhash', params: [x] })));
      if (hashes.some((x) => x instanceof Error)) continue; // the chain moved under us; start over
      const blocks = await this.#rpc.batch(hashes.map((hash) => ({ method: 'getblock', params: [hash, 0] })));
      for (const hex of blocks) {
        if (typeof hex !== 'string') break;
        const block = parseBlock(Buffer.from(hex, 'hex'));
        if (this.height >= 0 && block.prevHash !== this.tipHash) break; // reorg mid-fetch: loop re-detects it
        for (const sh of this.#applyBlock(block.header, block.hash, block.txs)) touched.add(sh);
      }
    }
    for (const sh of await this.#syncMempool(newTip)) touched.add(sh);
    return { touched, newTip, reorgDepth };
  }

  #applyBlock(header: Buffer, hash: string, txs: ParsedTx[]): Set<string> {
    const height = this.headers.length;
    const undo: BlockUndo = { shs: [], created: [], spent: [] };
    const touched = new Set<string>();
    for (const tx of txs) {
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
        this.#outputs.set(k, { sh, value: o.value, height });
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
    }
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

  async #syncMempool(rebuild: boolean): Promise<Set<string>> {
    const touched = new Set<string>();
    const ids = new Set(await this.#rpc.call<string[]>('getrawmempool'));
    const keep: MempoolTx[] = [];
    for (const m of this.#mempool.values()) {
      if (ids.has(m.txid)) keep.push(m);
      else for (const sh of m.shs) touched.add(sh);
    }
    const missing = [...ids].filter((id) => !this.#mempool.has(id));
    const fetched: Array<{ txid: string; raw: Buffer }> = [];
    for (let i = 0; i < missing.length; i += 100) {
      const chunk = missing.slice(i, i + 100);
      const raws = await this.#rpc.batch(
        chunk.map((id) => ({ method: 'getrawtransaction', params: [id, false] })),
      );
      raws.forEach((hex, j) => {
        if (typeof hex === 'string') fetched.push({ txid: chunk[j]!, raw: Buffer.from(hex, 'hex') });
      });
    }
    if (!rebuild && fetched.length === 0 && keep.length === this.#mempool.size) return touched;
    // Rebuild the mempool view from the kept and new transactions, parents before children; cheap at
    // devnet sizes and it keeps fees, heights (0/-1) and spent flags consistent after blocks and evictions.
    const pending = new Map<string, { txid: string; raw: Buffer; tx: ParsedTx }>();
    for (const m of keep) pending.set(m.txid, { txid: m.txid, raw: m.raw, tx: m.tx });
    for (const f of fetched) {
      try {
        pending.set(f.txid, { ...f, tx: parseTx(f.raw) });
      } catch {
        // bitcoind never serves an unparsable transaction; skip rather than poison the index
      }
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
    return touched;
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
        this.#mempoolOutputs.set(key(txid, vout), { sh, value: o.value, height: 0 });
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

  /** Unspent outputs of a scripthash as the mempool sees them (confirmed ones spent in mempool are gone). */
  listUnspent(sh: string): Array<{ tx_hash: string; tx_pos: number; height: number; value: bigint }> {
    const out: Array<{ tx_hash: string; tx_pos: number; height: number; value: bigint }> = [];
    for (const k of this.#utxosBySh.get(sh) ?? []) {
      if (this.#mempoolSpent.has(k)) continue;
      const o = this.#outputs.get(k)!;
      const [txid, vout] = k.split(':') as [string, string];
      out.push({ tx_hash: txid, tx_pos: Number(vout), height: o.height, value: o.value });
    }
    for (const id of this.#mempoolBySh.get(sh) ?? []) {
      const m = this.#mempool.get(id)!;
      m.tx.outputs.forEach((o, vout) => {
        const k = key(id, vout);
        if (this.#mempoolOutputs.get(k)?.sh === sh && !this.#mempoolSpent.has(k)) {
          out.push({ tx_hash: id, tx_pos: vout, height: 0, value: o.value });
        }
      });
    }
    return out.sort((a, b) => (a.height || Infinity) - (b.height || Infinity) || a.tx_pos - b.tx_pos);
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
