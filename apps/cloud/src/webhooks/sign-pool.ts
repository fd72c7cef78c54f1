/**
 * RSA signing off the event loop: a small pool of worker threads (`[webhooks] sign_threads`, 1 by
 * default) each holding the signing keys it was given (a `KeyObject` is cloned into the thread by
 * `postMessage`, never serialized to text). A delivery's signature (~2 ms for RSA-3072) then runs
 * in parallel with the database commits, TLS and HTTP work on the main thread. With 0 threads, or
 * if a worker fails, signing happens inline, as before. Errors carry no key material.
 */
import { sign } from 'node:crypto';
import { ThreadPool } from '@rgbx/service-kit';
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

type Reply = { id: number; signature?: string; error?: string };

/** Base64 RSA-SHA256 (PKCS#1 v1.5) signature of `body`, on the calling thread. */
export function signInline(signer: Signer, body: Uint8Array): string {
  return sign('sha256', body, signer.privateKey).toString('base64');
}

export class SignPool {
  // Per thread: the key ids it was given, oldest first.
  private readonly pool: ThreadPool<string[], string>;
  readonly threads: number;

  constructor(threads: number) {
    this.threads = threads;
    this.pool = new ThreadPool<string[], string>({
      threads,
      source: WORKER_SOURCE,
      name: 'webhook-signer',
      state: () => [],
      settle: (m: Reply) =>
        m.signature !== undefined
          ? { value: m.signature }
          : { error: new SignPoolError(m.error ?? 'signing failed') },
      // The thread's error name only: a message could quote what it was signing with.
      lost: (why) =>
        new SignPoolError(
          'err' in why ? `signing thread failed: ${why.err.name}` : `signing thread exited (${why.code})`,
        ),
    });
  }

  /**
   * Base64 signatures of the UTF-8 bytes of `bodies`, in one message to the least busy thread
   * (one wake-up of the thread per batch; each signature resolves as soon as it is computed).
   */
  signMany(signer: Signer, bodies: readonly string[]): Promise<string>[] {
    const thread = this.pool.pick();
    if (!thread) return bodies.map((b) => Promise.resolve(signInline(signer, Buffer.from(b, 'utf8'))));
    const keys = thread.state;
    if (!keys.includes(signer.keyId)) {
      thread.worker.postMessage({ type: 'key', keyId: signer.keyId, key: signer.privateKey });
      keys.push(signer.keyId);
      // Messages are handled in order: signatures asked for before this still find their key.
      while (keys.length > KEYS_PER_WORKER)
        thread.worker.postMessage({ type: 'forget', keyId: keys.shift() });
    }
    const { id, results } = this.pool.expect(thread, bodies.length);
    thread.worker.postMessage({ type: 'sign', id, keyId: signer.keyId, bodies });
    return results;
  }

  sign(signer: Signer, body: string): Promise<string> {
    return this.signMany(signer, [body])[0]!;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
