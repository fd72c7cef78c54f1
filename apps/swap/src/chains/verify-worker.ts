/**
 * The thread of the verify pool (`verify-pool.ts`): runs `@rgbx/chains`' own Permit2 verifiers and
 * answers each `{id, kind, td, signature, owner}` with the canonical signature, or with the thrown
 * error's fields, which the pool turns back into the same error class. Started by URL: `dist/…/
 * verify-worker.js` in the service, this file itself under the test runner (see the kit's ThreadPool).
 */
import { parentPort } from 'node:worker_threads';
import { type Permit2Signable, verifyPermit2Signature } from '@rgbx/chains/evm';
import { verifyTronPermit2Signature } from '@rgbx/chains/tron';

export type VerifyRequest =
  | { id: number; kind: 'evm' | 'tron'; td: Permit2Signable; signature: string; owner: string }
  /** Which module this thread runs (diagnostics; the tests check it is the current source). */
  | { id: number; kind: 'about' };

/** An error thrown by a verifier, as fields (a class does not survive `postMessage`). */
export interface Failure {
  name?: string;
  message: string;
  code?: string;
  expected?: string;
  received?: string;
  field?: string;
}

export type VerifyReply = { id: number; canonical?: string; failure?: Failure; module?: string };

function failureOf(err: unknown): Failure {
  const e = (err ?? {}) as { [k in keyof Failure]?: unknown };
  const text = (v: unknown) => (v === undefined ? undefined : String(v));
  return {
    name: text(e.name),
    message: String(e.message),
    code: text(e.code),
    expected: text(e.expected),
    received: text(e.received),
    field: text(e.field),
  };
}

async function answer(m: VerifyRequest): Promise<VerifyReply> {
  if (m.kind === 'about') return { id: m.id, module: import.meta.url };
  try {
    const r =
      m.kind === 'tron'
        ? await verifyTronPermit2Signature(m.td, m.signature, m.owner)
        : await verifyPermit2Signature(m.td, m.signature, m.owner);
    return { id: m.id, canonical: r.canonicalSignature };
  } catch (err) {
    return { id: m.id, failure: failureOf(err) };
  }
}

if (!parentPort) throw new Error('verify-worker runs in a worker thread of the verify pool');
const port = parentPort;
port.on('message', (m: VerifyRequest) => {
  void answer(m).then((r) => port.postMessage(r));
});
