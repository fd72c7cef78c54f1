#!/usr/bin/env node
/**
 * Runs the EVM devnode as a process: `node packages/devnet/dist/evm-devnode/main.js [--port P] [--chain-id N]`.
 * Prints one JSON line `{"rpc_url","chain_id","accounts":[{"address","private_key"}]}` and serves until
 * SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { startEvmDevnode } from './node.ts';

const { values } = parseArgs({ options: { port: { type: 'string' }, 'chain-id': { type: 'string' } } });
const node = await startEvmDevnode({
  ...(values.port ? { port: Number(values.port) } : {}),
  ...(values['chain-id'] ? { chainId: BigInt(values['chain-id']) } : {}),
});
console.info(
  JSON.stringify({
    rpc_url: node.rpcUrl,
    chain_id: node.chainId.toString(),
    accounts: node.accounts.map((a) => ({ address: a.address, private_key: a.privateKey })),
  }),
);
const stop = () => {
  void node.stop().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
