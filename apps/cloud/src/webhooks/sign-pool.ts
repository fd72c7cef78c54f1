/**
 * RSA signing off the event loop: a small pool of worker threads (`[webhooks] sign_threads`, 1 by
 * default) each holding the signing keys it was given (a `KeyObject` is cloned into the thread by
 * `postMessage`, never serialized to text). A delivery's signature (~2 ms for RSA-3072) then runs
 * in parallel with the database commits, TLS and HTTP work on the main thread. With 0 threads, or
 * if a worker fails, signing happens inline, as before. Errors carry no key material.
 */
import { sign } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Signer } from './keys.ts';

/** Keys kept per worker; older ones are dropped (a rotation needs at most two at once). */
const KEYS_PER_WORKER = 4;

// Plain CommonJS evaluated in the thread, so the same code runs from `src` (tests) and `dist`.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { sign } = require('node:crypto');
const keys = new Map();
parentPort.on('message', (m) => {
  if (m.type === 'key') { keys.set(m.keyId, m.key); return; }
  if (m.type === 'forget') { keys.delete(m.keyId); return; }
  // m.bodies: strings, signed as their UTF-8 bytes; one reply per signature, as soon as it is done.
  const key = keys.get(m.keyId);
  for (let i = 0; i < m.bodies.length; i++) {
    const id = m.id + i;
    if (key === undefined) { parentPort.postMessage({ id, error: 'unknown signing key ' + m.keyId }); continue; }
    try {
      parentPort.postMessage({ id, signature: sign('sha256', Buffer.from(m.bodies[i], 'utf8'), key).toString('base64') });
    } catch (err) {
      parentPort.postMessage({ id, error: err && err.code ? String(err.code) : 'signing failed' });
    }
  }
});
`;

export class SignPoolError extends Error {
  override readonly name = 'SignPoolError';
}

interface Slot {
  worker: Worker;
  keys: string[];
  pending: Map<number, { resolve: (s: string) => void; reject: (e: Error) => void }>;
}

type Reply = { id: number; signature?: string; error?: string };

/** Base64 RSA-SHA256 (PKCS#1 v1.5) signature of `body`, on the calling thread. */
export function signInline(signer: Signer, body: Uint8Array): string {
  return sign('sha256', body, signer.privateKey).toString('base64');
}

export class SignPool {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private closed = false;
  readonly threads: number;

  constructor(threads: number) {
    this.threads = threads;
    for (let i = 0; i < threads; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_SOURCE, { eval: true, name: 'webhook-signer' });
    // Stopping the dispatcher closes the pool; an idle pool alone never keeps the process alive.
    worker.unref();
    const slot: Slot = { worker, keys: [], pending: new Map() };
    worker.on('message', (m: Reply) => {
      const p = slot.pending.get(m.id);
      if (!p) return;
      slot.pending.delete(m.id);
      if (m.signature !== undefined) p.resolve(m.signature);
      else p.reject(new SignPoolError(m.error ?? 'signing failed'));
    });
    const fail = (why: string) => {
      for (const p of slot.pending.values()) p.reject(new SignPoolError(why));
      slot.pending.clear();
      const i = this.slots.indexOf(slot);
      if (i >= 0 && !this.closed) this.slots[i] = this.spawn();
    };
    worker.on('error', (err) => fail(`signing thread failed: ${err.name}`));
    worker.on('exit', (code) => fail(`signing thread exited (${code})`));
    return slot;
  }

  /**
   * Base64 signatures of the UTF-8 bytes of `bodies`, in one message to the least busy thread
   * (one wake-up of the thread per batch; each signature resolves as soon as it is computed).
   */
  signMany(signer: Signer, bodies: readonly string[]): Promise<string>[] {
    if (this.closed || this.slots.length === 0)
      return bodies.map((b) => Promise.resolve(signInline(signer, Buffer.from(b, 'utf8'))));
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.pending.size < slot.pending.size) slot = s;
    if (!slot.keys.includes(signer.keyId)) {
      slot.worker.postMessage({ type: 'key', keyId: signer.keyId, key: signer.privateKey });
      slot.keys.push(signer.keyId);
      // Messages are handled in order: signatures asked for before this still find their key.
      while (slot.keys.length > KEYS_PER_WORKER)
        slot.worker.postMessage({ type: 'forget', keyId: slot.keys.shift() });
    }
    const id = this.nextId;
    this.nextId += bodies.length;
    const out = bodies.map(
      (_, i) =>
        new Promise<string>((resolve, reject) => {
          slot.pending.set(id + i, { resolve, reject });
        }),
    );
    slot.worker.postMessage({ type: 'sign', id, keyId: signer.keyId, bodies });
    return out;
  }

  sign(signer: Signer, body: string): Promise<string> {
    return this.signMany(signer, [body])[0]!;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.slots.map((s) => s.worker.terminate()));
  }
}
