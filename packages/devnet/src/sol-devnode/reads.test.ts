/**
 * `@rgbx/chains/sol` reads (the kit's RPC client) against the litesvm devnode: what settlement sees of a
 * real transaction, and each failure as a typed RpcReadError.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  decodeSolanaTransaction,
  solanaLatestBlockhash,
  solanaSlot,
  solanaTransaction,
  systemTransfers,
} from '@rgbx/chains/sol';
import { generateKeyPairSigner, getBase58Decoder, type KeyPairSigner } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectReadError } from '../test-reads.ts';
import { type SolanaDevnode, startSolanaDevnode } from './index.ts';
import { signedTransfer } from './test-transfer.ts';

let node: SolanaDevnode;
let payer: KeyPairSigner;
let payee: KeyPairSigner;
const servers: Server[] = [];

beforeAll(async () => {
  node = await startSolanaDevnode();
  [payer, payee] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()]);
  await node.airdrop(payer.address, 1_000_000_000n);
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await node?.stop();
});

async function send(wire: Uint8Array, skipPreflight = false): Promise<string> {
  const res = await fetch(node.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'sendTransaction',
      params: [Buffer.from(wire).toString('base64'), { encoding: 'base64', skipPreflight }],
    }),
  });
  const body = (await res.json()) as { result?: string; error?: unknown };
  if (!body.result) throw new Error(`sendTransaction: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function stub(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

describe('Solana reads through @solana/kit against the devnode', () => {
  it('slot and latest blockhash are the node’s, as bigint', async () => {
    const slot = await solanaSlot(node.rpcUrl);
    expect(slot).toBe(node.slot());
    const bh = await solanaLatestBlockhash(node.rpcUrl);
    expect(bh.blockhash).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(typeof bh.lastValidBlockHeight).toBe('bigint');
  });

  it('a landed transfer: the exact wire bytes, its slot, no error, and its transfer decodes', async () => {
    const { blockhash } = await solanaLatestBlockhash(node.rpcUrl);
    const wire = await signedTransfer(payer, payee.address, 1_234_567n, blockhash);
    const sig = await send(wire);
    const t = await solanaTransaction(node.rpcUrl, sig);
    expect(t).not.toBeNull();
    expect(Buffer.from(t!.wire).equals(Buffer.from(wire))).toBe(true);
    expect(t!.err).toBeNull();
    expect(t!.slot).toBe(node.slot());
    expect(t!.confirmationStatus === 'finalized' || t!.confirmations !== 0).toBe(true);
    const tx = decodeSolanaTransaction(t!.wire);
    expect(tx.signatures[0]).toBe(sig);
    expect(systemTransfers(tx)).toEqual([
      { index: 0, from: payer.address, to: payee.address, lamports: 1_234_567n },
    ]);
  });

  it('a transaction that failed on chain carries its error as plain JSON (numbers, not bigint)', async () => {
    const { blockhash } = await solanaLatestBlockhash(node.rpcUrl);
    const wire = await signedTransfer(payer, payee.address, 10n ** 15n, blockhash);
    const sig = await send(wire, true);
    const t = await solanaTransaction(node.rpcUrl, sig);
    expect(t!.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(JSON.stringify(t!.err)).toBe('{"InstructionError":[0,{"Custom":1}]}');
  });

  it('an unknown signature is null', async () => {
    const unknown = getBase58Decoder().decode(new Uint8Array(64).fill(3));
    expect(await solanaTransaction(node.rpcUrl, unknown)).toBeNull();
  });

  it('failures are typed: node error, unreachable, HTTP status, timeout, not JSON', async () => {
    const bad = await expectReadError(solanaTransaction(node.rpcUrl, 'xyz'), 'rpc');
    expect(bad.rpcCode).toBe(-32602);
    expect(bad.method).toBe('getTransaction');
    await expectReadError(solanaSlot('http://127.0.0.1:9'), 'unreachable');
    const http = await expectReadError(
      solanaSlot(
        await stub((_q, res) => {
          res.writeHead(502);
          res.end('bad gateway');
        }),
      ),
      'http',
    );
    expect(http.message).toMatch(/HTTP 502/);
    const silent = await stub(() => {
      // never answers
    });
    const t0 = Date.now();
    const slow = await expectReadError(solanaSlot(silent, { timeoutMs: 200 }), 'timeout');
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(slow.message).toMatch(/within 200 ms/);
    await expectReadError(
      solanaSlot(
        await stub((_q, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('<html>');
        }),
      ),
      'bad_response',
    );
  });
});
