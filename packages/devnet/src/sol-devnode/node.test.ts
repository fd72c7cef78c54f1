import { readFileSync } from 'node:fs';
import { buildCosignTransaction, MEMO_PROGRAM_ADDRESS, SYSTEM_PROGRAM_ADDRESS } from '@rgbx/chains/sol';
import {
  createKeyPairSignerFromPrivateKeyBytes,
  getBase58Decoder,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
} from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SolanaDevnode, startSolanaDevnode } from './index.ts';
import { signedTransfer } from './test-transfer.ts';

const vectors: { seeds: { name: string; seedHex: string }[] } = JSON.parse(
  readFileSync(new URL('../../../chains/test/vectors/solana-keys.json', import.meta.url), 'utf8'),
);
const seed = (name: string) =>
  Uint8Array.from(Buffer.from(vectors.seeds.find((s) => s.name === name)!.seedHex, 'hex'));
const [resolver, user, destination] = await Promise.all(
  ['resolver', 'user', 'stranger'].map((n) => createKeyPairSignerFromPrivateKeyBytes(seed(n))),
);
const SOL = 1_000_000_000n;
const FEE_PER_SIGNATURE = 5_000n;

let node: SolanaDevnode;

interface RpcReply {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
  id?: unknown;
}

async function post(body: string): Promise<{ status: number; json: unknown }> {
  const res = await fetch(node.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, json: await res.json() };
}

async function call(method: string, params: unknown[] = []): Promise<RpcReply> {
  return (await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).json as RpcReply;
}

async function rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
  const r = await call(method, params);
  if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result as T;
}

const balance = async (a: string) =>
  BigInt((await rpc<{ value: number }>('getBalance', [a, { commitment: 'finalized' }])).value);

async function latestBlockhash(): Promise<{ blockhash: string; lastValidBlockHeight: number }> {
  return (
    await rpc<{ value: { blockhash: string; lastValidBlockHeight: number } }>('getLatestBlockhash', [
      { commitment: 'finalized' },
    ])
  ).value;
}

/** The cosign flow: the service builds, the user signs position 1, the resolver position 0. */
async function cosigned(lamports: bigint, memo: string): Promise<Uint8Array> {
  const { blockhash, lastValidBlockHeight } = await latestBlockhash();
  const built = buildCosignTransaction({
    resolver: resolver!.address,
    user: user!.address,
    recentBlockhash: blockhash,
    lastValidBlockHeight: BigInt(lastValidBlockHeight),
    lamports,
    destination: destination!.address,
    memo,
  });
  const tx = getTransactionDecoder().decode(Buffer.from(built.transactionHex, 'hex'));
  const byUser = await partiallySignTransaction([user!.keyPair], tx);
  const both = await partiallySignTransaction([resolver!.keyPair], byUser);
  return Uint8Array.from(getTransactionEncoder().encode(both));
}

/** A plain System transfer signed by its sender alone (legacy message). */
async function transfer(from: typeof resolver, to: string, lamports: bigint, blockhash?: string) {
  return signedTransfer(from!, to, lamports, blockhash ?? (await latestBlockhash()).blockhash);
}

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
const sig0 = (wire: Uint8Array) => getBase58Decoder().decode(wire.subarray(1, 65));

beforeAll(async () => {
  node = await startSolanaDevnode();
});
afterAll(async () => {
  await node.stop();
});

describe('Solana devnode: JSON-RPC surface', () => {
  it('answers the node-info methods in the validator shapes', async () => {
    expect(await rpc('getHealth')).toBe('ok');
    expect(await rpc('getVersion')).toMatchObject({ 'solana-core': expect.any(String) });
    const slot = await rpc<number>('getSlot');
    expect(BigInt(slot)).toBe(node.slot());
    expect(await rpc<number>('getBlockHeight')).toBe(slot);
    const lb = await rpc<{
      context: { slot: number };
      value: { blockhash: string; lastValidBlockHeight: number };
    }>('getLatestBlockhash');
    expect(lb.context.slot).toBe(slot);
    expect(lb.value.lastValidBlockHeight).toBe(slot + 150);
    expect(getBase58Decoder().decode(new Uint8Array(32))).not.toBe(lb.value.blockhash);
    expect(await rpc('isBlockhashValid', [lb.value.blockhash])).toMatchObject({ value: true });
    expect(await rpc('getMinimumBalanceForRentExemption', [0])).toBe(890_880);
  });

  it('has the SPL Memo v2 program loaded (an executable BPF program)', async () => {
    const info = await rpc<{ value: { executable: boolean; owner: string; data: [string, string] } }>(
      'getAccountInfo',
      [MEMO_PROGRAM_ADDRESS, { encoding: 'base64' }],
    );
    expect(info.value.executable).toBe(true);
    expect(info.value.owner).toBe('BPFLoader2111111111111111111111111111111111');
    expect(info.value.data[1]).toBe('base64');
    expect(Buffer.from(info.value.data[0], 'base64').subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(await rpc('getAccountInfo', [destination!.address, { encoding: 'base64' }])).toMatchObject({
      value: null,
    });
  });

  it('answers JSON-RPC errors: unknown method, malformed JSON, bad params, batches, oversized bodies', async () => {
    expect((await call('eth_chainId')).error?.code).toBe(-32601);
    const bad = await post('{"jsonrpc":"2.0","id":1,"method":');
    expect((bad.json as RpcReply).error?.code).toBe(-32700);
    expect((await call('getBalance', ['not-an-address'])).error?.code).toBe(-32602);
    expect((await call('requestAirdrop', [user!.address, -1])).error?.code).toBe(-32602);
    expect((await call('getTransaction', ['xyz'])).error?.code).toBe(-32602);
    expect((await call('sendTransaction', ['AAAA', { encoding: 'base64' }])).error?.code).toBe(-32602);
    const batch = await post(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'getHealth' },
        { jsonrpc: '2.0', id: 2, method: 'nope' },
      ]),
    );
    expect(batch.json).toEqual([
      { jsonrpc: '2.0', result: 'ok', id: 1 },
      { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 2 },
    ]);
    const big = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth', pad: 'x'.repeat(60_000) }),
    );
    expect(big.status).toBe(413);
  });
});

describe('Solana devnode: executing transactions', () => {
  it('airdrops from its faucet as real System transfers', async () => {
    const sig = await rpc<string>('requestAirdrop', [resolver!.address, Number(10n * SOL)]);
    await node.airdrop(user!.address, 5n * SOL);
    expect(await balance(resolver!.address)).toBe(10n * SOL);
    expect(await balance(user!.address)).toBe(5n * SOL);
    // a legacy transaction: readable without maxSupportedTransactionVersion, no `version` field
    const tx = await rpc<{ version?: unknown; meta: { err: unknown; fee: number } }>('getTransaction', [
      sig,
      { encoding: 'json' },
    ]);
    expect(tx.meta.err).toBeNull();
    expect(tx.meta.fee).toBe(5_000);
    expect(tx).not.toHaveProperty('version');
  });

  it('executes a cosign transaction (transfer + memo) signed by user then resolver', async () => {
    const lamports = 1_500_000_000n;
    const memo = 'rgbx:intent:00000000-0000-4000-8000-000000000001';
    const wire = await cosigned(lamports, memo);
    const before = {
      resolver: await balance(resolver!.address),
      user: await balance(user!.address),
      destination: await balance(destination!.address),
    };
    const slotBefore = node.slot();
    const sig = await rpc<string>('sendTransaction', [
      b64(wire),
      { encoding: 'base64', preflightCommitment: 'confirmed' },
    ]);
    expect(sig).toBe(sig0(wire));
    expect(node.slot()).toBe(slotBefore + 1n);

    const fee = FEE_PER_SIGNATURE * 2n;
    expect(await balance(resolver!.address)).toBe(before.resolver - fee);
    expect(await balance(user!.address)).toBe(before.user - lamports);
    expect(await balance(destination!.address)).toBe(before.destination + lamports);

    const statuses = await rpc<{ value: unknown[] }>('getSignatureStatuses', [
      [sig, getBase58Decoder().decode(new Uint8Array(64).fill(7))],
      { searchTransactionHistory: true },
    ]);
    expect(statuses.value).toEqual([
      {
        slot: Number(node.slot()),
        confirmations: null,
        err: null,
        status: { Ok: null },
        confirmationStatus: 'finalized',
      },
      null,
    ]);

    interface TxJson {
      slot: number;
      blockTime: number;
      version: unknown;
      meta: {
        err: unknown;
        status: unknown;
        fee: number;
        preBalances: number[];
        postBalances: number[];
        logMessages: string[];
        preTokenBalances: unknown[];
        postTokenBalances: unknown[];
        innerInstructions: unknown[];
        loadedAddresses: unknown;
        computeUnitsConsumed: number;
      };
      transaction: {
        signatures: string[];
        message: {
          header: unknown;
          accountKeys: string[];
          recentBlockhash: string;
          instructions: { programIdIndex: number; accounts: number[]; data: string; stackHeight: null }[];
          addressTableLookups: unknown[];
        };
      };
    }
    const got = await rpc<TxJson>('getTransaction', [
      sig,
      { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
    ]);
    expect(got.slot).toBe(Number(node.slot()));
    expect(Math.abs(got.blockTime - Date.now() / 1000)).toBeLessThan(60);
    expect(got.version).toBe(0);
    expect(got.meta).toMatchObject({
      err: null,
      status: { Ok: null },
      fee: Number(fee),
      preTokenBalances: [],
      postTokenBalances: [],
      innerInstructions: [],
      loadedAddresses: { writable: [], readonly: [] },
    });
    expect(got.meta.computeUnitsConsumed).toBeGreaterThan(0);
    const keys = got.transaction.message.accountKeys;
    expect(keys.slice(0, 3)).toEqual([resolver!.address, user!.address, destination!.address]);
    const delta = (a: string) => {
      const i = keys.indexOf(a);
      return BigInt(got.meta.postBalances[i]!) - BigInt(got.meta.preBalances[i]!);
    };
    expect(delta(resolver!.address)).toBe(-fee);
    expect(delta(user!.address)).toBe(-lamports);
    expect(delta(destination!.address)).toBe(lamports);
    expect(delta(MEMO_PROGRAM_ADDRESS)).toBe(0n);
    expect(got.meta.logMessages).toContain(`Program ${MEMO_PROGRAM_ADDRESS} success`);
    expect(got.meta.logMessages.join('\n')).toContain(memo);
    expect(got.transaction.signatures[0]).toBe(sig);
    expect(got.transaction.message.header).toEqual({
      numRequiredSignatures: 2,
      numReadonlySignedAccounts: 0,
      numReadonlyUnsignedAccounts: 2,
    });
    expect(got.transaction.message.addressTableLookups).toEqual([]);
    expect(got.transaction.message.instructions.map((ix) => keys[ix.programIdIndex])).toEqual([
      SYSTEM_PROGRAM_ADDRESS,
      MEMO_PROGRAM_ADDRESS,
    ]);
    expect(got.transaction.message.instructions[1]!.stackHeight).toBeNull();

    const raw = await rpc<{ transaction: [string, string]; meta: { err: unknown } }>('getTransaction', [
      sig,
      { encoding: 'base64', maxSupportedTransactionVersion: 0 },
    ]);
    expect(raw.transaction).toEqual([b64(wire), 'base64']);
    expect(raw.meta.err).toBeNull();

    // like a real node: a v0 transaction needs maxSupportedTransactionVersion
    const noVersion = await call('getTransaction', [sig, { encoding: 'json' }]);
    expect(noVersion.error?.code).toBe(-32015);

    // the same transaction again: refused (preflight AlreadyProcessed), nothing moves
    const replay = await call('sendTransaction', [b64(wire), { encoding: 'base64' }]);
    expect(replay.error?.code).toBe(-32002);
    expect(replay.error?.message).toBe(
      'Transaction simulation failed: This transaction has already been processed',
    );
    expect((replay.error!.data as { err: unknown }).err).toBe('AlreadyProcessed');
    expect(await balance(user!.address)).toBe(before.user - lamports);
  });

  it('refuses a cosign transaction whose user signature is corrupted, and moves nothing', async () => {
    const wire = await cosigned(1_000_000n, 'rgbx:intent:00000000-0000-4000-8000-000000000002');
    wire[1 + 64 + 10]! ^= 0x01; // signature slot 1 (user)
    const before = [await balance(resolver!.address), await balance(user!.address)];
    const slotBefore = node.slot();
    const r = await call('sendTransaction', [b64(wire), { encoding: 'base64' }]);
    expect(r.error).toMatchObject({ code: -32003, message: 'Transaction signature verification failure' });
    expect([await balance(resolver!.address), await balance(user!.address)]).toEqual(before);
    expect(node.slot()).toBe(slotBefore);
    expect((await rpc<{ value: unknown[] }>('getSignatureStatuses', [[sig0(wire)]])).value).toEqual([null]);
    // an unsigned slot is refused the same way
    const unsigned = await cosigned(1_000_000n, 'rgbx:intent:00000000-0000-4000-8000-000000000003');
    unsigned.fill(0, 65, 129);
    expect((await call('sendTransaction', [b64(unsigned), { encoding: 'base64' }])).error?.code).toBe(-32003);
  });

  it('executes a plain System transfer signed by the resolver alone (base58, legacy)', async () => {
    const wire = await transfer(resolver, user!.address, 250_000_000n);
    const before = [await balance(resolver!.address), await balance(user!.address)];
    const sig = await rpc<string>('sendTransaction', [getBase58Decoder().decode(wire)]);
    expect(sig).toBe(sig0(wire));
    expect(await balance(resolver!.address)).toBe(before[0]! - 250_000_000n - FEE_PER_SIGNATURE);
    expect(await balance(user!.address)).toBe(before[1]! + 250_000_000n);
    const got = await rpc<{ meta: { err: unknown; fee: number }; transaction: { message: object } }>(
      'getTransaction',
      [sig, 'json'],
    );
    expect(got.meta).toMatchObject({ err: null, fee: 5_000 });
    expect(got.transaction.message).not.toHaveProperty('addressTableLookups');
  });

  it('refuses a failing transaction at preflight with its logs, charging nothing', async () => {
    const before = await balance(resolver!.address);
    const wire = await transfer(resolver, user!.address, before * 2n);
    const r = await call('sendTransaction', [b64(wire), { encoding: 'base64' }]);
    expect(r.error?.code).toBe(-32002);
    expect(r.error?.message).toBe(
      'Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1',
    );
    const data = r.error?.data as { err: unknown; logs: string[] };
    expect(data.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(data.logs.join('\n')).toContain('insufficient lamports');
    expect(await balance(resolver!.address)).toBe(before);
    expect(await rpc('getTransaction', [sig0(wire), { maxSupportedTransactionVersion: 0 }])).toBeNull();
  });

  it('lands a failing transaction sent with skipPreflight: fee charged, err recorded', async () => {
    const before = await balance(resolver!.address);
    const wire = await transfer(resolver, user!.address, before * 2n);
    const sig = await rpc<string>('sendTransaction', [
      b64(wire),
      { encoding: 'base64', skipPreflight: true },
    ]);
    expect(await balance(resolver!.address)).toBe(before - FEE_PER_SIGNATURE);
    const st = await rpc<{ value: { err: unknown; status: unknown }[] }>('getSignatureStatuses', [[sig]]);
    expect(st.value[0]).toMatchObject({
      err: { InstructionError: [0, { Custom: 1 }] },
      status: { Err: { InstructionError: [0, { Custom: 1 }] } },
    });
  });

  it('refuses an unknown or expired blockhash', async () => {
    const bogus = getBase58Decoder().decode(new Uint8Array(32).fill(9));
    const r = await call('sendTransaction', [
      b64(await transfer(resolver, user!.address, 1_000_000n, bogus)),
      { encoding: 'base64' },
    ]);
    expect(r.error).toMatchObject({
      code: -32002,
      message: 'Transaction simulation failed: Blockhash not found',
    });
    expect((r.error!.data as { err: unknown }).err).toBe('BlockhashNotFound');
  });

  it('keeps a blockhash valid across later slots (a pending cosign survives other transactions)', async () => {
    const pending = await cosigned(2_000_000n, 'rgbx:intent:00000000-0000-4000-8000-000000000004');
    await node.airdrop(user!.address, SOL);
    await node.airdrop(resolver!.address, SOL);
    const sig = await rpc<string>('sendTransaction', [b64(pending), { encoding: 'base64' }]);
    const got = await rpc<{ meta: { err: unknown } }>('getTransaction', [
      sig,
      { maxSupportedTransactionVersion: 0 },
    ]);
    expect(got.meta.err).toBeNull();
  });

  it('answers null for an unknown signature', async () => {
    const unknown = getBase58Decoder().decode(new Uint8Array(64).fill(3));
    expect(
      await rpc('getTransaction', [unknown, { encoding: 'json', maxSupportedTransactionVersion: 0 }]),
    ).toBeNull();
  });
});
