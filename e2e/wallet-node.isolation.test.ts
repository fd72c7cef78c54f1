/**
 * No wallet can stall another, on the devnet (real bitcoind, our Electrum server and proxy, the built wallet
 * node with 2 rgb-lib children). Wallet H's `sendbegin` names a transport endpoint that accepts TCP and never
 * answers (any recipient's invoice can name one): rgb-lib blocks H's child inside `send_begin`. Proves: six
 * other wallets (more than the children, three of them on H's child) keep answering `btcbalance` (an indexer
 * sync) and `listassets` well under a second meanwhile (they move to another child once H's call outlives
 * the isolation budget); H's call ends with the 504/1016 envelope at its transport deadline; afterwards every
 * wallet, H included, answers normally.
 *
 * Needs the build output (`npx tsc -b`).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mineAndSync } from './helpers/rgb.ts';
import {
  type NodeProcess,
  startNode,
  stopWalletNodeSuite,
  walletClient,
  writeNodeConfig,
} from './helpers/wallet-node.ts';

const T = 300_000;
const DEADLINE_S = 15;
let devnet: Devnet;
let root: string;
let node: NodeProcess;
let H: Keys;
let others: Keys[];

// The black hole: accepts, reads, never answers.
const sockets = new Set<Socket>();
let connections = 0;
const blackHole = createServer((s) => {
  connections++;
  sockets.add(s);
  s.on('error', () => {});
  s.on('close', () => sockets.delete(s));
});

const client = (k: Keys) => walletClient(node.url, k);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-node-isolation-'));
  devnet = await startDevnet({ dir: join(root, 'devnet') });
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  mkdirSync(join(root, 'node'));
  node = await startNode(
    writeNodeConfig(join(root, 'node'), devnet.info, {
      workers: 2,
      transport_call_timeout_secs: DEADLINE_S,
      transport_allow_cidrs: ['127.0.0.0/8'], // the black-hole endpoint is on loopback
      refresh_interval_secs: 0,
    }),
  );
  H = await generateKeys('Regtest', 'Taproot');
  others = await Promise.all(Array.from({ length: 6 }, () => generateKeys('Regtest', 'Taproot')));
}, T);

afterAll(() =>
  stopWalletNodeSuite({
    nodes: [node],
    devnet,
    root,
    also: () => {
      for (const s of sockets) s.destroy();
      blackHole.close();
    },
  }),
);

it(
  'six wallets keep answering well under a second while one hangs on a black-hole transport endpoint; the hung call ends at its deadline',
  async () => {
    const h = client(H);
    await h.register();
    await devnet.fund(await h.address(), '0.01', { confirm: true });
    const psbt = await h.createUtxosBegin({ num: 2, size: 1000, fee_rate: 2 });
    expect(await h.createUtxosEnd(signPsbt(psbt, H.mnemonic))).toBe(2);
    await mineAndSync(devnet);
    const asset = await h.issueAssetNia({ ticker: 'HANG', name: 'hang', precision: 0, amounts: [100] });
    const o = others.map(client);
    for (const c of o) await c.register(); // 7 wallets over 2 children: three share H's child
    const inv = await o[0]!.witnessReceive({ amount: 10 });

    const port = (blackHole.address() as { port: number }).port;
    const t0 = Date.now();
    const hung = h
      .sendBegin({
        recipient_map: {
          [asset.asset_id]: [
            {
              recipient_id: inv.recipient_id,
              witness_data: { amount_sat: 1000 },
              amount: 10,
              transport_endpoints: [`rpc://127.0.0.1:${port}/json-rpc`],
            },
          ],
        },
        fee_rate: 2,
      })
      .then(
        () => ({ ok: true as const, ms: Date.now() - t0 }),
        (err: { httpStatus?: number; code?: number }) => ({ ok: false as const, err, ms: Date.now() - t0 }),
      );
    // H's child is inside rgb-lib, talking to the black hole.
    while (connections === 0) {
      expect(Date.now() - t0).toBeLessThan(30_000);
      await new Promise((r) => setTimeout(r, 50));
    }

    const latencies: number[] = [];
    const timed = async (f: () => Promise<unknown>) => {
      const s = performance.now();
      await f();
      latencies.push(performance.now() - s);
    };
    // Three rounds while H hangs: each of the six clients calls in turn (one call at a time, so a latency is the
    // call's own and not the six competing for 2 cores among themselves).
    for (let round = 0; round < 3; round++) {
      for (const c of o) await timed(() => c.btcBalance());
      for (const c of o) await timed(() => c.listAssets());
    }
    const stillHanging = Date.now() - t0 < DEADLINE_S * 1000;
    expect(stillHanging).toBe(true); // the rounds above all ran while H's call was blocked
    expect(latencies).toHaveLength(36);
    expect(Math.max(...latencies), `latencies ${latencies.map(Math.round).join(' ')}`).toBeLessThan(1000);

    const r = await hung;
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.err).toMatchObject({ httpStatus: 504, code: 1016, details: { kind: 'CallTimeout' } });
    expect(r.ms).toBeGreaterThanOrEqual(DEADLINE_S * 1000);
    expect(r.ms).toBeLessThan(DEADLINE_S * 1000 + 5000);

    // Everyone, H included, answers normally afterwards; H's asset was never moved.
    expect(await h.assetBalance(asset.asset_id)).toEqual({ settled: 100n, future: 100n, spendable: 100n });
    for (const c of [h, ...o]) expect((await c.btcBalance()).vanilla).toBeDefined();
    expect(await h.listPendingBegins()).toEqual([]);
  },
  T,
);
