/**
 * kill -9 of the wallet node in the middle of an RGB transfer, on the devnet (real bitcoind, our Electrum
 * server and proxy, the built node). The node is killed right after a client sent `sendbegin`, then right after
 * it sent `sendend`, and restarted on the same data dir each time; the client recovers with the documented
 * calls (`listpendingbegins`/`abortbegin` for a begin whose answer was lost, the same signed PSBT again for
 * `sendend`). Proves: the transfer completes (Settled on both sides, balances exact), no call ever answers 500
 * (no "database is locked": the killed node's rgb-lib child is gone before the new one opens the wallet), and
 * no process of a killed node is left behind.
 *
 * Needs the build output (`npx tsc -b`).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Devnet, startDevnet } from '@rgbx/devnet';
import { generateKeys, type Keys } from '@rgbx/rgb';
import { signPsbt } from '@rgbx/sdk';
import { pidAlive, waitFor } from '@rgbx/service-kit';
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
let devnet: Devnet;
let root: string;
let cfgFile: string;
let node: NodeProcess;
let A: Keys;
let B: Keys;
const killed: number[] = [];
const stderrs: string[] = [];

const client = (k: Keys) => walletClient(node.url, k);

/** Live rgb-lib children recorded for this node's data dir (their command line names it). */
function childrenOf(dataDir: string): number[] {
  const marker = `--rgbx-rgb-child=${join(dataDir, '.children')}`;
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${e}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmd.includes(marker) && state !== 'Z') out.push(Number(e));
    } catch {}
  }
  return out;
}

/** Sends the request, then kills the node with SIGKILL `afterMs` later, whatever the call is doing. */
async function killDuring(path: string, k: Keys, body: unknown, afterMs: number): Promise<void> {
  const before = childrenOf(join(root, 'node', 'data'));
  const req = fetch(`${node.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'xpub-van': k.accountXpubVanilla,
      'xpub-col': k.accountXpubColored,
      'master-fingerprint': k.masterFingerprint,
    },
    body: JSON.stringify(body),
  }).catch(() => undefined);
  await new Promise((r) => setTimeout(r, afterMs));
  stderrs.push(node.stderr());
  killed.push(node.proc.pid!, ...before);
  node.proc.kill('SIGKILL');
  await req;
  node = await startNode(cfgFile);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'wallet-node-kill9-'));
  devnet = await startDevnet({ dir: join(root, 'devnet') });
  mkdirSync(join(root, 'node'));
  cfgFile = writeNodeConfig(join(root, 'node'), devnet.info, { workers: 1, refresh_interval_secs: 0 });
  node = await startNode(cfgFile);
  A = await generateKeys('Regtest', 'Taproot');
  B = await generateKeys('Regtest', 'Taproot');
}, T);

afterAll(() => stopWalletNodeSuite({ nodes: [node], devnet, root }));

it(
  'a transfer survives kill -9 of the node after sendbegin and during sendend: completed, no 500, nothing left behind',
  async () => {
    const a = client(A);
    await a.register();
    await client(B).register();
    await devnet.fund(await a.address(), '0.01', { confirm: true });
    expect(
      await a.createUtxosEnd(signPsbt(await a.createUtxosBegin({ num: 2, fee_rate: 2 }), A.mnemonic)),
    ).toBe(2);
    await mineAndSync(devnet);
    const asset = await a.issueAssetNia({ ticker: 'KILL', name: 'kill nine', precision: 0, amounts: [1000] });
    const inv = await client(B).witnessReceive({ amount: 300 });
    const send = {
      recipient_map: {
        [asset.asset_id]: [
          {
            recipient_id: inv.recipient_id,
            witness_data: { amount_sat: 1000 },
            amount: 300,
            transport_endpoints: [devnet.info.proxy],
          },
        ],
      },
      fee_rate: 2,
    };

    // 1. Killed right after the client sent sendbegin: its answer is lost. The client looks for a begin of its
    //    own that the node still holds and releases it, then begins again.
    await killDuring('/wallet/sendbegin', A, send, 150);
    for (const p of await client(A).listPendingBegins()) await client(A).abortBegin({ txid: p.txid });
    expect(await client(A).listPendingBegins()).toEqual([]);
    const psbt = await client(A).sendBegin(send);
    const signed = signPsbt(psbt, A.mnemonic);

    // 2. Killed during sendend (it posts the consignment to the proxy): the client sends the same PSBT again.
    await killDuring('/wallet/sendend', A, { signed_psbt: signed }, 60);
    const retried = await fetch(`${node.url}/wallet/sendend`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'xpub-van': A.accountXpubVanilla,
        'xpub-col': A.accountXpubColored,
        'master-fingerprint': A.masterFingerprint,
      },
      body: JSON.stringify({ signed_psbt: signed }),
    });
    const retriedText = await retried.text();
    // Whether the killed node had finished it or not, the retry is answered by rgb-lib, never a 500.
    expect(retried.status, retriedText).toBeLessThan(500);

    // No process of a killed node survives (its orphaned children end themselves: their watchdog polls every
    // 150 ms). A zombie counts as gone: it runs nothing, and whether PID 1 reaps it is the machine's business.
    await waitFor('the killed nodes’ processes to end', async () => killed.every((pid) => !pidAlive(pid)), {
      timeoutMs: 10_000,
    });
    for (const pid of killed) expect(pidAlive(pid), `pid ${pid}`).toBe(false);

    // The transfer completes: both sides refresh (as clients do) while blocks are mined.
    const a2 = client(A);
    const b2 = client(B);
    let last = '';
    for (let i = 0; i < 20; i++) {
      await b2.refresh();
      await a2.refresh();
      const s = (await a2.listTransfers(asset.asset_id)).filter(
        (t) => t.kind === 'Send' && t.status !== 'Failed',
      );
      const r = (await b2.listTransfers()).filter((t) => t.kind === 'ReceiveWitness');
      last = `send ${s.map((t) => t.status)}, receive ${r.map((t) => t.status)}`;
      if (s.length === 1 && s[0]!.status === 'Settled' && r[0]?.status === 'Settled') break;
      await mineAndSync(devnet);
    }
    expect(last).toBe('send Settled, receive Settled');
    expect((await a2.assetBalance(asset.asset_id)).settled).toBe(700n);
    expect((await b2.assetBalance(asset.asset_id)).settled).toBe(300n);
    for (const log of [...stderrs, node.stderr()]) expect(log).not.toMatch(/database is locked/);
  },
  T,
);
