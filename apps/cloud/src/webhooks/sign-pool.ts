/**
 * RSA signing off the event loop: a small pool of worker threads (`sign-worker.ts`; `[webhooks]
 * sign_threads`, 1 by default) each holding the signing keys it was given (a `KeyObject` is cloned into
 * the thread by `postMessage`, never serialized to text). A delivery's signature (~2 ms for RSA-3072) then
 * runs in parallel with the database commits, TLS and HTTP work on the main thread. With 0 threads, or
 * if a worker fails, signing happens inline, as before. Errors carry no key material.
 */
import type { Worker } from 'node:worker_threads';
import { siblingModule, ThreadPool } from '@rgbx/service-kit';
import { signWebhookBodySync } from '@rgbx/service-kit/webhooks';
import type { Signer } from './keys.ts';
import type { SignReply, SignRequest } from './sign-worker.ts';

/** Keys kept per worker; older ones are dropped (a rotation needs at most two at once). */
const KEYS_PER_WORKER = 4;

/** The threads' module: `sign-worker.js` next to this file, or `sign-worker.ts` from the sources. */
export const SIGN_WORKER = siblingModule(import.meta.url, 'sign-worker');

export class SignPoolError extends Error {
  override readonly name = 'SignPoolError';
}

/** Base64 RSA-SHA256 (PKCS#1 v1.5) signature of `body`, on the calling thread. */
export function signInline(signer: Signer, body: Uint8Array): string {
  return signWebhookBodySync(body, signer.privateKey);
}

const post = (worker: Worker, m: SignRequest) => worker.postMessage(m);

export class SignPool {
  // Per thread: the key ids it was given, oldest first.
  private readonly pool: ThreadPool<string[], string>;
  readonly threads: number;

  constructor(threads: number) {
    this.threads = threads;
    this.pool = new ThreadPool<string[], string>({
      threads,
      module: SIGN_WORKER,
      name: 'webhook-signer',
      state: () => [],
      settle: (m: SignReply) => {
        const value = m.signature ?? m.module;
        return value !== undefined ? { value } : { error: new SignPoolError(m.error ?? 'signing failed') };
      },
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
      post(thread.worker, { type: 'key', keyId: signer.keyId, key: signer.privateKey });
      keys.push(signer.keyId);
      // Messages are handled in order: signatures asked for before this still find their key.
      while (keys.length > KEYS_PER_WORKER) post(thread.worker, { type: 'forget', keyId: keys.shift()! });
    }
    const { id, results } = this.pool.expect(thread, bodies.length);
    post(thread.worker, { type: 'sign', id, keyId: signer.keyId, bodies: [...bodies] });
    return results;
  }

  /** The URL of the module a thread runs (diagnostics: `…/dist/webhooks/sign-worker.js` in the service). */
  async workerModule(): Promise<string | undefined> {
    const thread = this.pool.pick();
    if (!thread) return undefined;
    const { id, results } = this.pool.expect(thread, 1);
    post(thread.worker, { type: 'about', id });
    return results[0]!;
  }

  sign(signer: Signer, body: string): Promise<string> {
    return this.signMany(signer, [body])[0]!;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
