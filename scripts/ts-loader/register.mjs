// Test-only: lets a worker thread or child process started from TypeScript sources run them on Node 20
// (which cannot strip types; 22.6+ can). A pool or host running from `src/` (the test runner) starts its
// worker module, a `.ts` file, with `--import <this file> --conditions source`: the worker then runs the
// current sources, its own and the workspace packages' alike, never a stale `dist/`. Built code never
// loads this (its workers are `.js`), and a production install has neither this folder nor `typescript`.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
