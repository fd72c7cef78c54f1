/**
 * Permit2 signature checks off the event loop. Recovering the signer of an EIP-712 / TIP-712 permit is
 * hashing plus a secp256k1 public-key recovery: 2–3 ms of CPU per approval, which on the event loop
 * would serialise with everything else the service does (the allowance RPC's client work, database
 * commits, HTTP). A small pool of worker threads (`[swap] verify_threads`, 1 by default; 0 = inline)
 * runs `@rgbx/chains`' own verifiers (`verify-worker.ts`), so the result is exactly what an inline call
 * gives: the same canonical signature, the same `VerificationError` code, message, expected and received.
 * If a worker fails, its pending checks reject and a new worker replaces it.
 */
import {
  ChainInputError,
  type Permit2Signable,
  VerificationError,
  verifyPermit2Signature,
} from '@rgbx/chains/evm';
import { verifyTronPermit2Signature } from '@rgbx/chains/tron';
import { siblingModule, ThreadPool } from '@rgbx/service-kit';
import type { Failure, VerifyReply, VerifyRequest } from './verify-worker.ts';

export type Permit2Kind = 'evm' | 'tron';

export interface SignatureVerifier {
  /** The canonical signature (65 bytes, low-s, v 27/28) when `signature` is `owner`'s over `td`. */
  permit2(kind: Permit2Kind, td: Permit2Signable, signature: string, owner: string): Promise<string>;
  close(): Promise<void>;
}

async function verifyInline(kind: Permit2Kind, td: Permit2Signable, signature: string, owner: string) {
  const r =
    kind === 'tron'
      ? await verifyTronPermit2Signature(td, signature, owner)
      : await verifyPermit2Signature(td, signature, owner);
  return r.canonicalSignature;
}

/** Checks on the calling thread (`verify_threads = 0`, and unit tests of logic around it). */
export const inlineVerifier: SignatureVerifier = { permit2: verifyInline, close: async () => {} };

/** The threads' module: `verify-worker.js` next to this file, or `verify-worker.ts` from the sources. */
export const VERIFY_WORKER = siblingModule(import.meta.url, 'verify-worker');

/** The error the chains module threw in the worker, as the same class with the same fields. */
function rebuild(f: Failure): Error {
  const set = <E extends Error>(e: E): E => Object.defineProperty(e, 'message', { value: f.message });
  if (f.name === 'VerificationError')
    return set(
      new VerificationError(f.code ?? 'unknown', '', {
        ...(f.expected === undefined ? {} : { expected: f.expected }),
        ...(f.received === undefined ? {} : { received: f.received }),
      }),
    );
  if (f.name === 'ChainInputError') return set(new ChainInputError(f.field ?? '', ''));
  return new Error(`signature check failed in its worker: ${f.message}`);
}

export class VerifyPool implements SignatureVerifier {
  readonly threads: number;
  readonly pool: ThreadPool<undefined, string>;

  constructor(threads: number) {
    this.threads = threads;
    this.pool = new ThreadPool<undefined, string>({
      threads,
      module: VERIFY_WORKER,
      name: 'permit2-verify',
      state: () => undefined,
      settle: (m: VerifyReply) => {
        const value = m.canonical ?? m.module;
        return value !== undefined ? { value } : { error: rebuild(m.failure ?? { message: 'no result' }) };
      },
      lost: (why) =>
        new Error(
          'err' in why
            ? `signature worker failed: ${why.err.message}`
            : `signature worker exited (${why.code})`,
        ),
    });
  }

  permit2(kind: Permit2Kind, td: Permit2Signable, signature: string, owner: string): Promise<string> {
    const thread = this.pool.pick();
    if (!thread) return verifyInline(kind, td, signature, owner);
    const { id, results } = this.pool.expect(thread, 1);
    thread.worker.postMessage({ id, kind, td, signature, owner } satisfies VerifyRequest);
    return results[0]!;
  }

  /** The URL of the module a thread runs (diagnostics: `…/dist/…/verify-worker.js` in a service). */
  async workerModule(): Promise<string | undefined> {
    const thread = this.pool.pick();
    if (!thread) return undefined;
    const { id, results } = this.pool.expect(thread, 1);
    thread.worker.postMessage({ id, kind: 'about' } satisfies VerifyRequest);
    return results[0]!;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** `threads` workers, or the inline verifier for 0. */
export function createVerifier(threads: number): SignatureVerifier {
  return threads > 0 ? new VerifyPool(threads) : inlineVerifier;
}
