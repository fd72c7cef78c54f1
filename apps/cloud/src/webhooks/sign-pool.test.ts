/**
 * The signing pool's worker module: under the test runner its threads run `sign-worker.ts` itself (the
 * current source, not a build of it); the built `dist/webhooks/sign-worker.js`, what the service runs,
 * signs the same. (`batch.test.ts` checks the pool's signatures against inline signing.)
 */
import { generateKeyPairSync } from 'node:crypto';
import { ThreadPool } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { SIGN_WORKER, SignPool, signInline } from './sign-pool.ts';
import type { SignReply, SignRequest } from './sign-worker.ts';

const signer = { keyId: 'k1', privateKey: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey };

describe('the signing worker module', () => {
  it("under the test runner, the pool's threads run the current source (sign-worker.ts, not dist)", async () => {
    expect(SIGN_WORKER.href).toBe(new URL('./sign-worker.ts', import.meta.url).href);
    const pool = new SignPool(1);
    try {
      expect(await pool.workerModule()).toBe(SIGN_WORKER.href);
      expect(await pool.sign(signer, 'x')).toBe(signInline(signer, Buffer.from('x')));
    } finally {
      await pool.close();
    }
  });

  it('the built worker (what the service runs) signs the same from dist/ (run `npx tsc -b` first)', async () => {
    const built = new URL('../../dist/webhooks/sign-worker.js', import.meta.url);
    const pool = new ThreadPool<undefined, SignReply>({
      threads: 1,
      module: built,
      name: 'webhook-signer-dist',
      state: () => undefined,
      settle: (m: SignReply) => ({ value: m }),
      lost: () => new Error('lost'),
    });
    try {
      const t = pool.pick()!;
      const { id, results } = pool.expect(t, 3);
      const asks: SignRequest[] = [
        { type: 'key', keyId: 'k1', key: signer.privateKey },
        { type: 'about', id },
        { type: 'sign', id: id + 1, keyId: 'k1', bodies: ['é€'] },
        { type: 'sign', id: id + 2, keyId: 'k2', bodies: ['y'] },
      ];
      for (const m of asks) t.worker.postMessage(m);
      expect(await Promise.all(results)).toEqual([
        { id, module: built.href },
        { id: id + 1, signature: signInline(signer, Buffer.from('é€', 'utf8')) },
        { id: id + 2, error: 'unknown signing key k2' },
      ]);
    } finally {
      await pool.close();
    }
  });
});
