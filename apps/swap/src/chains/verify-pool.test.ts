/**
 * The worker-thread verifier against the inline one: same canonical signatures, same error classes,
 * codes, messages and details, for valid, mutated and malformed signatures (property test), on EVM and
 * Tron; and the pool keeps working after its thread dies. Its threads run `verify-worker.ts` itself here
 * (the current source, not a build of it), and `dist/chains/verify-worker.js` in a service.
 */
import {
  buildPermit2TypedData,
  buildSwapIntentWitness,
  ChainInputError,
  type Permit2TypedData,
  VerificationError,
} from '@rgbx/chains/evm';
import { buildTronPermit2TypedData, tronAddressFromHex, tronAddressFromPublicKey } from '@rgbx/chains/tron';
import { ThreadPool } from '@rgbx/service-kit';
import fc from 'fast-check';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { inlineVerifier, type Permit2Kind, VERIFY_WORKER, VerifyPool } from './verify-pool.ts';
import type { VerifyReply, VerifyRequest } from './verify-worker.ts';

const owner = privateKeyToAccount(`0x${'42'.repeat(32)}`);
const stranger = privateKeyToAccount(`0x${'43'.repeat(32)}`);
const ownerTron = tronAddressFromPublicKey(Buffer.from(owner.publicKey.slice(2), 'hex'));
const witness = buildSwapIntentWitness({
  intentId: '6f1c2a9e-8d4b-4c3a-9e7f-1a2b3c4d5e6f',
  resolver: `0x${'33'.repeat(20)}`,
  secretHash: `0x${'5a'.repeat(32)}`,
  destChainId: 1n,
  destToken: 'btc',
  destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
  minAmountOut: 10_000n,
  maxAmountOut: 10_200n,
  deadline: 1_900_000_000n,
});
const common = { amount: 5n * 10n ** 18n, nonce: 77n, deadline: 1_900_000_000n, witness };
const evmTd = buildPermit2TypedData({
  chainId: 31337n,
  token: `0x${'aa'.repeat(20)}`,
  spender: `0x${'11'.repeat(20)}`,
  ...common,
});
const tronTd = buildTronPermit2TypedData({
  chainId: 728126428n,
  permit2Address: tronAddressFromHex(`41${'22'.repeat(20)}`),
  token: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
  spender: tronAddressFromHex(`41${'11'.repeat(20)}`),
  amount: 5_000_000n,
  nonce: 9n,
  deadline: 1_900_000_000n,
  witness: {
    intentId: '00000000-0000-4000-8000-000000000001',
    resolver: tronAddressFromHex(`41${'33'.repeat(20)}`),
    secretHash: `0x${'cd'.repeat(32)}`,
    destChainId: 3n,
    destToken: 'btc',
    destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    minAmountOut: 4_900n,
    maxAmountOut: 5_000n,
    deadline: 1_900_000_000n,
  },
});
const sign = (who: typeof owner, td: Permit2TypedData) =>
  who.signTypedData({ domain: td.domain, types: td.types, primaryType: td.primaryType, message: td.message });

const pool = new VerifyPool(1);
afterAll(() => pool.close());

/** What a check ends in, comparable across the two verifiers. */
async function outcome(p: Promise<string>) {
  try {
    return { ok: await p };
  } catch (e) {
    const err = e as Error & Partial<VerificationError> & { field?: string };
    return {
      class:
        e instanceof VerificationError
          ? 'VerificationError'
          : e instanceof ChainInputError
            ? 'ChainInputError'
            : 'other',
      message: err.message,
      code: err.code,
      expected: err.expected,
      received: err.received,
      field: err.field,
    };
  }
}
const both = async (kind: Permit2Kind, td: Permit2TypedData, sig: string, who: string) => {
  const [a, b] = await Promise.all([
    outcome(pool.permit2(kind, td, sig, who)),
    outcome(inlineVerifier.permit2(kind, td, sig, who)),
  ]);
  expect(a).toEqual(b);
  return a;
};

describe('Permit2 verify pool (worker threads) agrees with the inline check', () => {
  it('a valid EVM and a valid Tron signature: the same canonical signature', async () => {
    const evmSig = await sign(owner, evmTd);
    expect((await both('evm', evmTd, evmSig, owner.address)).ok).toBe(evmSig);
    const tronSig = await sign(owner, tronTd);
    expect((await both('tron', tronTd, tronSig, ownerTron)).ok).toBe(tronSig);
  });

  it('another signer, a malformed signature, a bad owner address: same class, code, message, details', async () => {
    const bySomeoneElse = await sign(stranger, evmTd);
    expect(await both('evm', evmTd, bySomeoneElse, owner.address)).toMatchObject({
      class: 'VerificationError',
      code: 'signer_mismatch',
    });
    expect(await both('evm', evmTd, `0x${'00'.repeat(65)}`, owner.address)).toMatchObject({
      class: 'VerificationError',
      code: 'malformed_signature',
    });
    expect(await both('evm', evmTd, await sign(owner, evmTd), 'not-an-address')).toMatchObject({
      class: 'ChainInputError',
    });
  });

  it('property: any byte flipped in a valid signature ends the same way in both', async () => {
    const sig = await sign(owner, evmTd);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 131 }),
        fc.constantFrom(...'0123456789abcdef'),
        async (i, c) => {
          const mutated = `${sig.slice(0, i)}${c}${sig.slice(i + 1)}`;
          await both('evm', evmTd, mutated, owner.address);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a dead worker rejects its pending checks, and the next check runs on a new one', async () => {
    const p = new VerifyPool(1);
    try {
      const sig = await sign(owner, evmTd);
      const pending = p.permit2('evm', evmTd, sig, owner.address);
      await p.pool.pick()!.worker.terminate();
      await expect(pending).rejects.toThrow(/signature worker exited/);
      expect(await p.permit2('evm', evmTd, sig, owner.address)).toBe(sig);
    } finally {
      await p.close();
    }
  });
});

describe('the verify worker module', () => {
  it("under the test runner, the pool's threads run the current source (verify-worker.ts, not dist)", async () => {
    expect(VERIFY_WORKER.href).toBe(new URL('./verify-worker.ts', import.meta.url).href);
    expect(await pool.workerModule()).toBe(VERIFY_WORKER.href);
  });

  it('the built worker (what a service runs) answers the same from dist/ (run `npx tsc -b` first)', async () => {
    const built = new URL('../../dist/chains/verify-worker.js', import.meta.url);
    const p = new ThreadPool<undefined, VerifyReply>({
      threads: 1,
      module: built,
      name: 'permit2-verify-dist',
      state: () => undefined,
      settle: (m: VerifyReply) => ({ value: m }),
      lost: () => new Error('lost'),
    });
    try {
      const t = p.pick()!;
      const { id, results } = p.expect(t, 2);
      const sig = await sign(owner, evmTd);
      const asks: VerifyRequest[] = [
        { id, kind: 'about' },
        { id: id + 1, kind: 'evm', td: evmTd, signature: sig, owner: owner.address },
      ];
      for (const m of asks) t.worker.postMessage(m);
      expect(await results[0]).toEqual({ id, module: built.href });
      expect(await results[1]).toEqual({ id: id + 1, canonical: sig });
    } finally {
      await p.close();
    }
  });
});
