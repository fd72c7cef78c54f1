import { RawTx } from '@scure/btc-signer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { btcToSats, satsToBtc } from './amount.ts';
import { reversedHex, sha256d } from './hash.ts';
import { merkleBranch, merkleRoot, merkleRootFromBranch } from './merkle.ts';
import { parseBlock, parseTx } from './tx.ts';

const bytes = (min: number, max: number) => fc.uint8Array({ minLength: min, maxLength: max });

/** Random transactions encoded by an independent implementation (@scure/btc-signer's RawTx). */
const arbTx = fc
  .record({
    version: fc.integer({ min: 1, max: 3 }),
    segwit: fc.boolean(),
    inputs: fc.array(
      fc.record({
        txid: bytes(32, 32),
        index: fc.integer({ min: 0, max: 0xffffffff }),
        finalScriptSig: bytes(0, 80),
        sequence: fc.integer({ min: 0, max: 0xffffffff }),
        witness: fc.array(bytes(0, 80), { minLength: 1, maxLength: 3 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    outputs: fc.array(
      fc.record({ amount: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), script: bytes(0, 60) }),
      {
        minLength: 1,
        maxLength: 4,
      },
    ),
    lockTime: fc.integer({ min: 0, max: 0xffffffff }),
  })
  .map((t) => {
    const raw = RawTx.encode({
      version: t.version,
      segwitFlag: t.segwit,
      inputs: t.inputs.map(({ witness: _w, ...i }) => i),
      outputs: t.outputs,
      witnesses: t.segwit ? t.inputs.map((i) => i.witness) : undefined,
      lockTime: t.lockTime,
    });
    const legacy = RawTx.encode({
      version: t.version,
      segwitFlag: false,
      inputs: t.inputs.map(({ witness: _w, ...i }) => i),
      outputs: t.outputs,
      lockTime: t.lockTime,
    });
    return { t, raw: Buffer.from(raw), txid: reversedHex(sha256d(legacy)), legacyLen: legacy.length };
  });

describe('parseTx', () => {
  it('agrees with an independent encoder on txid, inputs, outputs and weight', () => {
    fc.assert(
      fc.property(arbTx, ({ t, raw, txid, legacyLen }) => {
        const p = parseTx(raw);
        expect(p.txid).toBe(txid);
        expect(p.inputs).toEqual(
          // RawTx takes txids in display order and reverses them on the wire.
          t.inputs.map((i) => ({ prevTxid: Buffer.from(i.txid).toString('hex'), prevVout: i.index })),
        );
        expect(p.outputs.map((o) => o.value)).toEqual(t.outputs.map((o) => o.amount));
        expect(p.outputs.map((o) => Buffer.from(o.script).toString('hex'))).toEqual(
          t.outputs.map((o) => Buffer.from(o.script).toString('hex')),
        );
        expect(p.size).toBe(raw.length);
        expect(p.weight).toBe(legacyLen * 3 + raw.length);
      }),
    );
  });

  it('parses a real regtest coinbase (bitcoind block 1 of a fresh chain)', () => {
    // Genesis block of regtest (header + 1 tx), from Bitcoin Core's chainparams.
    const genesis = Buffer.from(
      '0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f20020000000101000000010000000000000000000000000000000000000000000000000000000000000000ffffffff4d04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000',
      'hex',
    );
    const b = parseBlock(genesis);
    expect(b.hash).toBe('0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206');
    expect(b.txs).toHaveLength(1);
    expect(b.txs[0]!.txid).toBe('4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b');
    expect(b.txs[0]!.isCoinbase).toBe(true);
    expect(b.txs[0]!.outputs[0]!.value).toBe(5_000_000_000n);
  });

  it('rejects truncated, padded and random bytes with a RangeError, never anything else', () => {
    fc.assert(
      fc.property(arbTx, fc.nat(), ({ raw }, cut) => {
        const n = cut % raw.length;
        expect(() => parseTx(raw.subarray(0, n))).toThrow(RangeError);
        expect(() => parseTx(Buffer.concat([raw, Buffer.from([0])]))).toThrow(RangeError);
      }),
    );
    fc.assert(
      fc.property(bytes(0, 300), (b) => {
        try {
          parseTx(Buffer.from(b));
        } catch (err) {
          expect(err).toBeInstanceOf(RangeError);
        }
      }),
    );
  });
});

describe('merkle', () => {
  const arbTxids = fc.array(
    bytes(32, 32).map((b) => Buffer.from(b).toString('hex')),
    { minLength: 1, maxLength: 40 },
  );

  /** Straightforward level-by-level root, written independently of merkleBranch. */
  function naiveRoot(txids: string[]): string {
    let level: Buffer[] = txids.map((t) => Buffer.from(t, 'hex').reverse());
    while (level.length > 1) {
      const next: Buffer[] = [];
      for (let i = 0; i < level.length; i += 2) {
        const r = level[i + 1] ?? level[i]!;
        next.push(sha256d(Buffer.concat([level[i]!, r])));
      }
      level = next;
    }
    return Buffer.from(level[0]!).reverse().toString('hex');
  }

  it('every branch folds back to the naive root', () => {
    fc.assert(
      fc.property(arbTxids, fc.nat(), (txids, p) => {
        const pos = p % txids.length;
        const root = naiveRoot(txids);
        expect(merkleRoot(txids)).toBe(root);
        expect(merkleRootFromBranch(txids[pos]!, merkleBranch(txids, pos), pos)).toBe(root);
        expect(merkleBranch(txids, pos)).toHaveLength(Math.ceil(Math.log2(txids.length)));
      }),
    );
  });

  it('refuses positions outside the block', () => {
    expect(() => merkleBranch(['00'.repeat(32)], 1)).toThrow(/position 1 not in 0..0/);
  });
});

describe('amounts', () => {
  it('round-trips every satoshi amount exactly', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(21n * 10n ** 14n), max: 21n * 10n ** 14n }), (sats) => {
        expect(btcToSats(satsToBtc(sats))).toBe(sats);
      }),
    );
  });

  it('parses bitcoind decimals and rejects anything else', () => {
    expect(btcToSats('0.00001000')).toBe(1000n);
    expect(btcToSats('21000000')).toBe(2_100_000_000_000_000n);
    expect(btcToSats('0.1')).toBe(10_000_000n);
    expect(satsToBtc(1n)).toBe('0.00000001');
    for (const bad of ['1e-8', '0.000000001', 'abc', '', '1.', '.5']) {
      expect(() => btcToSats(bad)).toThrow(/expected a decimal/);
    }
  });
});
