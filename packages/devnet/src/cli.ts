#!/usr/bin/env node
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { produceBlocks } from './blocks.ts';
import { devnetStatus, openDevnet, startDevnet, stopDevnet } from './devnet.ts';

const USAGE = `usage: devnet <command> [options]

commands:
  up [--dir D] [--rpc-port P] [--electrum-port P] [--proxy-port P]
                      start bitcoind, the Electrum server and the RGB proxy in the background (idempotent)
  down [--dir D] [--purge]
                      stop every process the devnet started; --purge also deletes its directory
  status [--dir D] [--json]
                      print the endpoints {"bitcoind":{…},"electrum":"tcp://…","proxy":"rpc://…"}
  mine N [--dir D]    mine N blocks to the miner wallet
  fund ADDRESS BTC [--dir D] [--no-mine] [--data HEX]
                      send BTC (decimal) from the miner wallet, then mine 1 block unless --no-mine;
                      --data adds an OP_RETURN output (e.g. a swap fulfilment's commitment)
  start [--dir D] [--block-interval SECS]
                      like up, in the foreground: prints the endpoints and stops everything on Ctrl-C;
                      --block-interval mines a block every SECS seconds (default: only on demand)

The directory defaults to $RGBX_DEVNET_DIR or <repo>/.devnet.`;

const defaultDir =
  process.env.RGBX_DEVNET_DIR ?? resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../.devnet');

function fail(msg: string): never {
  console.error(`devnet: ${msg}\n\n${USAGE}`);
  process.exit(2);
}

function port(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    fail(`--${name} must be a port in 1..65535, got ${JSON.stringify(v)}`);
  return n;
}

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        dir: { type: 'string' },
        json: { type: 'boolean', default: false },
        purge: { type: 'boolean', default: false },
        'no-mine': { type: 'boolean', default: false },
        data: { type: 'string' },
        'block-interval': { type: 'string' },
        'rpc-port': { type: 'string' },
        'electrum-port': { type: 'string' },
        'proxy-port': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  }
  try {
    parsed = parse();
  } catch (err) {
    fail((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  const [cmd, ...rest] = positionals;
  if (v.help || !cmd) {
    console.info(USAGE);
    return;
  }
  const dir = resolve(v.dir ?? defaultDir);
  const ports = {
    ...(v['rpc-port'] ? { rpc: port(v['rpc-port'], 'rpc-port')! } : {}),
    ...(v['electrum-port'] ? { electrum: port(v['electrum-port'], 'electrum-port')! } : {}),
    ...(v['proxy-port'] ? { proxy: port(v['proxy-port'], 'proxy-port')! } : {}),
  };
  switch (cmd) {
    case 'up': {
      const d = await startDevnet({ dir, ports, detached: true });
      console.info(JSON.stringify(d.info));
      return;
    }
    case 'start': {
      const every = v['block-interval'] === undefined ? 0 : Number(v['block-interval']);
      if (!(every >= 0)) fail(`start: --block-interval must be seconds ≥ 0, got ${v['block-interval']}`);
      const d = await startDevnet({ dir, ports, detached: false });
      // Blocks only on demand (`mine`), unless asked for one every N seconds.
      const blocks =
        every > 0
          ? produceBlocks({
              devnet: d,
              intervalMs: every * 1000,
              onError: (err) => console.error(`devnet: block production: ${err.message}`),
            })
          : undefined;
      console.info(`devnet is up (state in ${dir}); Ctrl-C stops it\n${JSON.stringify(d.info, null, 2)}`);
      await new Promise<void>((res) => {
        process.once('SIGINT', res);
        process.once('SIGTERM', res);
      });
      console.info('stopping devnet…');
      await blocks?.stop();
      await d.stop();
      return;
    }
    case 'down':
      await stopDevnet(dir);
      if (v.purge) rmSync(dir, { recursive: true, force: true });
      console.info(v.purge ? `devnet stopped and ${dir} deleted` : 'devnet stopped');
      return;
    case 'status': {
      const s = devnetStatus(dir);
      if (v.json) {
        if (!s.running || !s.info) {
          console.error(`devnet: not running in ${dir} (${JSON.stringify(s.processes)})`);
          process.exit(1);
        }
        console.info(JSON.stringify(s.info));
      } else {
        console.info(`${s.running ? 'running' : 'not running'} in ${dir}: ${JSON.stringify(s.processes)}`);
        if (s.info) console.info(JSON.stringify(s.info, null, 2));
      }
      return;
    }
    case 'mine': {
      const n = Number(rest[0]);
      if (!Number.isInteger(n) || n < 1 || n > 10_000)
        fail(`mine: N must be an integer in 1..10000, got ${JSON.stringify(rest[0])}`);
      const d = openDevnet(dir) ?? fail(`not running in ${dir}; run "devnet up" first`);
      const hashes = await d.mine(n);
      console.info(
        JSON.stringify({
          blocks: hashes.length,
          height: await d.rpc<number>('getblockcount'),
          tip: hashes.at(-1),
        }),
      );
      return;
    }
    case 'fund': {
      const [address, btc] = rest;
      if (!address || !btc) fail('fund: expected ADDRESS and BTC');
      const d = openDevnet(dir) ?? fail(`not running in ${dir}; run "devnet up" first`);
      const data = v.data as string | undefined;
      const txid = await d.fund(address, btc, {
        confirm: !v['no-mine'],
        // The resolver API's fulfil_commitment is the whole script: bitcoind adds OP_RETURN and the push.
        ...(data === undefined ? {} : { data: /^6a20[0-9a-f]{64}$/i.test(data) ? data.slice(4) : data }),
      });
      console.info(JSON.stringify({ txid, confirmed: !v['no-mine'] }));
      return;
    }
    default:
      fail(`unknown command ${JSON.stringify(cmd)}`);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(`devnet: ${err.message}`);
  process.exit(1);
});
