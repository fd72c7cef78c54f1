/**
 * The thread of the signing pool (`sign-pool.ts`): keeps the keys it is given (a `KeyObject` arrives
 * cloned by `postMessage`, never as text) and signs batches of bodies with them, one reply per
 * signature as soon as it is done. Errors name a code, never key material. Started by URL:
 * `dist/webhooks/sign-worker.js` in the service, this file itself under the test runner.
 */
import type { KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { signWebhookBodySync } from '@rgbx/service-kit/webhooks';

export type SignRequest =
  | { type: 'key'; keyId: string; key: KeyObject }
  | { type: 'forget'; keyId: string }
  /** `bodies` are strings, signed as their UTF-8 bytes; replies carry ids `id` … `id + bodies.length − 1`. */
  | { type: 'sign'; id: number; keyId: string; bodies: string[] }
  /** Which module this thread runs (diagnostics; the tests check it is the current source). */
  | { type: 'about'; id: number };

export type SignReply = { id: number; signature?: string; error?: string; module?: string };

if (!parentPort) throw new Error('sign-worker runs in a worker thread of the signing pool');
const port = parentPort;
const keys = new Map<string, KeyObject>();
const reply = (r: SignReply) => port.postMessage(r);

port.on('message', (m: SignRequest) => {
  switch (m.type) {
    case 'key':
      keys.set(m.keyId, m.key);
      return;
    case 'forget':
      keys.delete(m.keyId);
      return;
    case 'about':
      reply({ id: m.id, module: import.meta.url });
      return;
    case 'sign': {
      const key = keys.get(m.keyId);
      for (let i = 0; i < m.bodies.length; i++) {
        const id = m.id + i;
        if (key === undefined) {
          reply({ id, error: `unknown signing key ${m.keyId}` });
          continue;
        }
        try {
          reply({ id, signature: signWebhookBodySync(Buffer.from(m.bodies[i]!, 'utf8'), key) });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException | undefined)?.code;
          reply({ id, error: code ? String(code) : 'signing failed' });
        }
      }
    }
  }
});
