import { base58 } from '@scure/base';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createTransactionMessage,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import { describe, expect, it } from 'vitest';
import {
  decodeSolanaMessage,
  decodeSolanaTransaction,
  decodeSolanaWire,
  SolanaCodecError,
  solanaBase58,
  solanaWireFromHex,
} from './solana.ts';
import { decodeTronAddress, encodeTronAddress, TronAddressError } from './tron.ts';

/** A 32-byte key (messages do not need it on the curve). */
const key = (seed: number) => base58.encode(new Uint8Array(32).fill(seed)) as Address;
const SYSTEM = '11111111111111111111111111111111' as Address;
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address;

/** A v0 transaction like the co-sign one: fee payer, a writable and a read-only signer; a transfer and a memo. */
function build() {
  const data = new Uint8Array(12);
  new DataView(data.buffer).setUint32(0, 2, true);
  new DataView(data.buffer).setBigUint64(4, 1_000_000n, true);
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(key(1), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: key(4) as string as Blockhash, lastValidBlockHeight: 100n },
        m,
      ),
    (m) =>
      appendTransactionMessageInstructions(
        [
          {
            programAddress: SYSTEM,
            accounts: [
              { address: key(2), role: AccountRole.WRITABLE_SIGNER },
              { address: key(5), role: AccountRole.WRITABLE },
            ],
            data,
          },
          {
            programAddress: MEMO,
            accounts: [{ address: key(3), role: AccountRole.READONLY_SIGNER }],
            data: new TextEncoder().encode('rgbx:intent:x'),
          },
        ],
        m,
      ),
  );
  const tx = compileTransaction(message);
  return {
    transactionHex: Buffer.from(getTransactionEncoder().encode(tx)).toString('hex'),
    messageHex: Buffer.from(tx.messageBytes).toString('hex'),
    signers: Object.keys(tx.signatures),
  };
}
const built = build();
const wire = solanaWireFromHex(built.transactionHex);

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('Solana codec', () => {
  it('decodes the co-sign transaction the chains module builds: slots, message bytes, keys, instructions', () => {
    const tx = decodeSolanaTransaction(wire);
    expect(tx.signatures.map((s) => s.length)).toEqual([64, 64, 64]);
    expect(Buffer.from(tx.messageBytes).toString('hex')).toBe(built.messageHex);
    expect(tx.message.version).toBe(0);
    expect(tx.message.header).toEqual({
      numRequiredSignatures: 3,
      numReadonlySignedAccounts: 1,
      numReadonlyUnsignedAccounts: 2,
    });
    expect(tx.message.accountKeys.slice(0, 3)).toEqual(built.signers);
    expect(tx.message.recentBlockhash).toBe(key(4));
    expect(tx.message.instructions).toHaveLength(2);
    expect(tx.message.addressTableLookups).toEqual([]);
    const transfer = tx.message.instructions[0]!;
    expect(tx.message.accountKeys[transfer.programIdIndex]).toBe('11111111111111111111111111111111');
    expect(new DataView(transfer.data.buffer, transfer.data.byteOffset).getBigUint64(4, true)).toBe(
      1_000_000n,
    );
    expect(solanaBase58(tx.signatures[0]!)).toBe('1'.repeat(64));
  });

  it('signature slots and message are views of the given bytes', () => {
    const w = decodeSolanaWire(wire);
    expect(w.signatures[1]!.buffer).toBe(wire.buffer);
    expect(w.signatures[1]!.byteOffset).toBe(1 + 64);
    expect(w.messageBytes.byteOffset).toBe(1 + 3 * 64);
  });

  it('refuses, naming why: cut short anywhere, no slot, trailing bytes, another version, slot count', () => {
    for (let n = 0; n < wire.length; n++) {
      const e = thrown(() => decodeSolanaTransaction(wire.subarray(0, n)));
      expect(e, `cut at ${n}`).toBeInstanceOf(SolanaCodecError);
      expect(e.message, `cut at ${n}`).toMatch(/truncated|trailing/);
    }
    expect(thrown(() => decodeSolanaWire(Uint8Array.from([0, 1, 2]))).message).toMatch(
      /at least one signature slot/,
    );
    const longer = Uint8Array.from([...wire, 0, 0]);
    expect(thrown(() => decodeSolanaTransaction(longer)).message).toBe('2 trailing bytes after the message');
    const v1 = Uint8Array.from(wire);
    v1[1 + 3 * 64] = 0x81;
    expect(thrown(() => decodeSolanaTransaction(v1)).message).toBe('unsupported message version 1');
    const twoSlots = Uint8Array.from([2, ...wire.subarray(1 + 64)]);
    expect(thrown(() => decodeSolanaTransaction(twoSlots)).message).toBe(
      '2 signature slots for 3 required signers',
    );
    expect(thrown(() => decodeSolanaMessage(Uint8Array.from([0x80, 2, 0, 1, 3, 7, 7, 7]))).message).toMatch(
      /^truncated message/,
    );
    expect(() => solanaWireFromHex('0x0')).toThrow(SolanaCodecError);
    expect(solanaWireFromHex('0xAB01')).toEqual(Uint8Array.from([0xab, 1]));
  });
});

describe('Tron address codec', () => {
  it('round-trips the 21-byte payload and the 20-byte hash', () => {
    const payload = decodeTronAddress('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
    expect(Buffer.from(payload).toString('hex')).toBe('41a614f803b6fd780986a42c78ec9c7f77e6ded13c');
    expect(encodeTronAddress(payload)).toBe('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
    expect(encodeTronAddress(payload.subarray(1))).toBe('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
  });

  it('names the problem: shape, checksum, payload', () => {
    const problem = (a: string) => (thrown(() => decodeTronAddress(a)) as TronAddressError).problem;
    expect(problem('0x12')).toBe('format');
    expect(problem('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u')).toBe('checksum');
    expect(() => encodeTronAddress(new Uint8Array(21))).toThrow(TronAddressError);
  });
});
