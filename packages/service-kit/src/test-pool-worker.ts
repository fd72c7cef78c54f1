/**
 * The worker module of `thread-pool.test.ts`: doubles `n` after `ms` (so requests can be pending), answers
 * an error for `boom`, and for `about` says which module it is and where a workspace package resolves.
 */
import { parentPort } from 'node:worker_threads';

export type TestRequest = { id: number; n?: number; ms?: number; boom?: boolean; about?: boolean };
export type TestReply = { id: number; value?: unknown; error?: string };

/** Changes with this file: the test compares it with what the thread reports. */
export const MARKER = 'test-pool-worker, revision 1';

// Imported by the test for MARKER (on the main thread): serves only in a thread.
const port = parentPort;
port?.on('message', (m: TestRequest) => {
  if (m.about) {
    const value = { module: import.meta.url, marker: MARKER, store: import.meta.resolve('@rgbx/store') };
    port.postMessage({ id: m.id, value } satisfies TestReply);
    return;
  }
  setTimeout(
    () =>
      port.postMessage(
        (m.boom ? { id: m.id, error: 'boom' } : { id: m.id, value: m.n! * 2 }) satisfies TestReply,
      ),
    m.ms ?? 0,
  );
});
