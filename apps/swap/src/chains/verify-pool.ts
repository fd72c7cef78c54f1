/**
 * Permit2 signature checks off the event loop. Recovering the signer of an EIP-712 / TIP-712 permit is
 * hashing plus a secp256k1 public-key recovery: 2–3 ms of CPU per approval, which on the event loop
 * would serialise with everything else the service does (the allowance RPC's client work, database
 * commits, HTTP). A small pool of worker threads (`[swap] verify_threads`, 1 by default; 0 = inline)
 * runs `@rgbx/chains`' own verifiers, so the result is exactly what an inline call gives: the same
 * canonical signature, the same `VerificationError` code, message, expected and received. If a worker
 * fails, its pending checks reject and a new worker replaces it.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  ChainInputError,
  type Permit2TypedData,
  VerificationError,
  verifyPermit2Signature,
} from '@rgbx/chains/evm';
import { verifyTronPermit2Signature } from '@rgbx/chains/tron';

export type Permit2Kind = 'evm' | 'tron';

export interface SignatureVerifier {
  /** The canonical signature (65 bytes, low-s, v 27/28) when `signature` is `owner`'s over `td`. */
  permit2(kind: Permit2Kind, td: Permit2TypedData, signature: string, owner: string): Promise<string>;
  close(): Promise<void>;
}

async function verifyInline(kind: Permit2Kind, td: Permit2TypedData, signature: string, owner: string) {
  const r =
    kind === 'tron'
      ? await verifyTronPermit2Signature(td, signature, owner)
      : await verifyPermit2Signature(td, signature, owner);
  return r.canonicalSignature;
}

/** Checks on the calling thread (`verify_threads = 0`, and unit tests of logic around it). */
export const inlineVerifier: SignatureVerifier = { permit2: verifyInline, close: async () => {} };

// The built modules of the chains package: a worker thread runs plain JavaScript, so when the caller
// resolves the TypeScript sources (tests run them through the `source` export condition) the
// thread takes the file `tsc -b` emits for it (`src/x.ts` → `dist/x.js`).
const require = createRequire(import.meta.url);
const built = (spec: string) =>
  pathToFileURL(require.resolve(spec).replace(/\/src\/(.+)\.ts$/, '/dist/$1.js')).href;
const MODULES = { evm: built('@rgbx/chains/evm'), tron: built('@rgbx/chains/tron') };

// CommonJS evaluated in the thread; it imports the chains modules by absolute URL.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const loaded = Promise.all([import(workerData.evm), import(workerData.tron)]);
parentPort.on('message', async (m) => {
  try {
    const [evm, tron] = await loaded;
    const r = m.kind === 'tron'
      ? await tron.verifyTronPermit2Signature(m.td, m.signature, m.owner)
      : await evm.verifyPermit2Signature(m.td, m.signature, m.owner);
    parentPort.postMessage({ id: m.id, canonical: r.canonicalSignature });
  } catch (err) {
    const e = err || {};
    parentPort.postMessage({
      id: m.id,
      failure: { name: e.name, message: String(e.message), code: e.code, expected: e.expected, received: e.received, field: e.field },
    });
  }
});
`;

interface Failure {
  name?: string;
  message: string;
  code?: string;
  expected?: string;
  received?: string;
  field?: string;
}

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

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve: (s: string) => void; reject: (e: Error) => void }>;
}

export class VerifyPool implements SignatureVerifier {
  readonly threads: number;
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private closed = false;

  constructor(threads: number) {
    this.threads = threads;
    for (let i = 0; i < threads; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true, name: 'permit2-verify', workerData: MODULES });
    worker.unref(); // an idle pool never keeps the process alive
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (m: { id: number; canonical?: string; failure?: Failure }) => {
      const p = slot.pending.get(m.id);
      if (!p) return;
      slot.pending.delete(m.id);
      if (m.canonical !== undefined) p.resolve(m.canonical);
      else p.reject(rebuild(m.failure ?? { message: 'no result' }));
    });
    const fail = (why: string) => {
      for (const p of slot.pending.values()) p.reject(new Error(why));
      slot.pending.clear();
      const i = this.slots.indexOf(slot);
      if (i >= 0 && !this.closed) this.slots[i] = this.spawn();
    };
    worker.on('error', (err) => fail(`signature worker failed: ${err.message}`));
    worker.on('exit', (code) => fail(`signature worker exited (${code})`));
    return slot;
  }

  permit2(kind: Permit2Kind, td: Permit2TypedData, signature: string, owner: string): Promise<string> {
    if (this.closed || this.slots.length === 0) return verifyInline(kind, td, signature, owner);
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.pending.size < slot.pending.size) slot = s;
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, kind, td, signature, owner });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.slots.map((s) => s.worker.terminate()));
  }
}

/** `threads` workers, or the inline verifier for 0. */
export function createVerifier(threads: number): SignatureVerifier {
  return threads > 0 ? new VerifyPool(threads) : inlineVerifier;
}
