#!/usr/bin/env node
/**
 * Runs the Solana devnode as a process: `node packages/devnet/dist/sol-devnode/main.js [--port P]`.
 * Prints one JSON line `{"event":"listening","url":"http://127.0.0.1:P"}` and serves until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { startSolanaDevnode } from './node.ts';

const { values } = parseArgs({ options: { port: { type: 'string' } } });
const node = await startSolanaDevnode(values.port ? { port: Number(values.port) } : {});
console.info(JSON.stringify({ event: 'listening', url: node.rpcUrl }));
const stop = () => {
  void node.stop().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
