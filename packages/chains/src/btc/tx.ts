import { reversedHex, sha256d } from './hash.ts';

/** One input as seen on the wire; the coinbase input has an all-zero prevout txid. */
export interface TxInput {
  prevTxid: string;
  prevVout: number;
}

export interface TxOutput {
  value: bigint;
  script: Buffer;
}

export interface ParsedTx {
  txid: string;
  inputs: TxInput[];
  outputs: TxOutput[];
  /** Serialized size in bytes, witness included. */
  size: number;
  /** BIP-141 weight: base size × 3 + total size. */
  weight: number;
  isCoinbase: boolean;
}

export interface ParsedBlock {
  header: Buffer;
  hash: string;
  prevHash: string;
  txs: ParsedTx[];
}

const COINBASE_TXID = '0'.repeat(64);

/** A bounds-checked cursor: malformed input throws instead of reading past the buffer. */
class Reader {
  pos: number;
  readonly buf: Buffer;
  constructor(buf: Buffer, pos = 0) {
    this.buf = buf;
    this.pos = pos;
  }
  need(n: number): void {
    if (this.pos + n > this.buf.length) {
      throw new RangeError(
        `tx: truncated data, need ${n} bytes at offset ${this.pos}, have ${this.buf.length - this.pos}`,
      );
    }
  }
  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  u64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  varint(): number {
    const first = this.u8();
    if (first < 0xfd) return first;
    if (first === 0xfd) {
      this.need(2);
      const v = this.buf.readUInt16LE(this.pos);
      this.pos += 2;
      return v;
    }
    if (first === 0xfe) return this.u32();
    const v = this.u64();
    if (v > BigInt(this.buf.length)) throw new RangeError(`tx: varint ${v} exceeds the data length`);
    return Number(v);
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }
}

function readTx(r: Reader): ParsedTx {
  const start = r.pos;
  r.skip(4); // version
  let segwit = false;
  if (r.buf[r.pos] === 0x00 && r.buf[r.pos + 1] === 0x01) {
    segwit = true;
    r.skip(2);
  }
  const bodyStart = r.pos;
  const nIn = r.varint();
  const inputs: TxInput[] = [];
  for (let i = 0; i < nIn; i++) {
    const prevTxid = reversedHex(r.bytes(32));
    const prevVout = r.u32();
    r.skip(r.varint()); // scriptSig
    r.skip(4); // sequence
    inputs.push({ prevTxid, prevVout });
  }
  const nOut = r.varint();
  const outputs: TxOutput[] = [];
  for (let i = 0; i < nOut; i++) {
    const value = r.u64();
    const script = r.bytes(r.varint());
    outputs.push({ value, script });
  }
  const bodyEnd = r.pos;
  if (segwit) {
    for (let i = 0; i < nIn; i++) {
      const items = r.varint();
      for (let j = 0; j < items; j++) r.skip(r.varint());
    }
  }
  r.skip(4); // locktime
  const end = r.pos;
  // The txid commits to the legacy serialization: version, inputs, outputs, locktime (no marker, no witness).
  const legacy = segwit
    ? Buffer.concat([
        r.buf.subarray(start, start + 4),
        r.buf.subarray(bodyStart, bodyEnd),
        r.buf.subarray(end - 4, end),
      ])
    : r.buf.subarray(start, end);
  const size = end - start;
  const isCoinbase = nIn === 1 && inputs[0]!.prevTxid === COINBASE_TXID && inputs[0]!.prevVout === 0xffffffff;
  return {
    txid: reversedHex(sha256d(legacy)),
    inputs,
    outputs,
    size,
    weight: legacy.length * 3 + size,
    isCoinbase,
  };
}

/**
 * Parses one serialized transaction (BIP-144 witness serialization or legacy).
 * @example parseTx(Buffer.from(rawHex, 'hex')).txid
 */
export function parseTx(raw: Buffer): ParsedTx {
  const r = new Reader(raw);
  const tx = readTx(r);
  if (r.pos !== raw.length)
    throw new RangeError(`tx: ${raw.length - r.pos} trailing bytes after the transaction`);
  return tx;
}

/** Parses a serialized block (`getblock <hash> 0`): header, hash and every transaction. */
export function parseBlock(raw: Buffer): ParsedBlock {
  const r = new Reader(raw);
  const header = r.bytes(80);
  const n = r.varint();
  const txs: ParsedTx[] = [];
  for (let i = 0; i < n; i++) txs.push(readTx(r));
  if (r.pos !== raw.length)
    throw new RangeError(`block: ${raw.length - r.pos} trailing bytes after ${n} transactions`);
  return {
    header: Buffer.from(header),
    hash: reversedHex(sha256d(header)),
    prevHash: reversedHex(header.subarray(4, 36)),
    txs,
  };
}

/** The merkle root field of an 80-byte header, in RPC byte order. */
export function headerMerkleRoot(header: Uint8Array): string {
  return reversedHex(header.subarray(36, 68));
}
