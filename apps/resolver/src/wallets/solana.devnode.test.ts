/**
 * SolanaWallet against the real LiteSVM devnode: payments (exact balances, idempotent broadcast),
 * co-signed deposits built as the swap service builds them and signed by the user as the SDK does,
 * refusals of deposits that are not the approved transfer, and expiry (`dead`) by advancing slots.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { buildCosignTransaction, solanaLatestBlockhash } from '@rgbx/chains/sol';
import { type SolanaDevnode, startSolanaDevnode } from '@rgbx/devnet/sol-devnode';
import { signCosignApproval } from '@rgbx/sdk';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Base64EncodedWireTransaction,
  type Blockhash,
  compileTransaction,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getTransactionEncoder,
  type Instruction,
  type KeyPairSigner,
  partiallySignTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
} from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOL_MINT, SolanaWallet, SolanaWalletError } from './solana.ts';
import type { IntentView, SignedTx } from './wallet.ts';

const SOL = 1_000_000_000n;
const FEE_PER_SIGNATURE = 5_000n;
const SYSTEM = '11111111111111111111111111111111' as Address;
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address;

let node: SolanaDevnode;
let wallet: SolanaWallet;
let seed: Uint8Array;
let rpc: ReturnType<typeof createSolanaRpc>;

const lamportsOf = async (a: string) => (await rpc.getBalance(a as Address).send()).value;
const randomAddress = async () => (await generateKeyPairSigner()).address;

/** Opens `n` slots (each devnode transaction lands in its own slot). */
async function advanceSlots(n: number): Promise<void> {
  const sink = await randomAddress();
  for (let i = 0; i < n; i++) await node.airdrop(sink, 1_000_000n);
}

function transferIx(from: Address, to: Address, lamports: bigint): Instruction {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, 2, true);
  view.setBigUint64(4, lamports, true);
  return {
    programAddress: SYSTEM,
    accounts: [
      { address: from, role: AccountRole.WRITABLE_SIGNER },
      { address: to, role: AccountRole.WRITABLE },
    ],
    data,
  };
}

/** The intent as the resolver API shows it, with what a co-signed deposit check reads. */
function intentView(p: {
  id: string;
  user: string;
  lamports: bigint;
  proxy: string;
  signedTransaction: string;
}): IntentView {
  return {
    intent: {
      intent_id: p.id,
      status: 'Accepted',
      swap_metadata: {
        id: p.id,
        proxy_address: p.proxy,
        user_deposit_tx: null,
        fulfill_tx: null,
        swap_tx: null,
        refund_tx: null,
        created_at: new Date().toISOString(),
        user_deposited_at: null,
        fulfilled_at: null,
        swapped_at: null,
        refunded_at: null,
        refund_requested_at: null,
      },
      source_amount_decimals: 9,
      source_amount_lots: p.lamports.toString(),
      source_chain: 501,
      source_token: SOL_MINT,
      dest_amount_decimals: 8,
      dest_chain: 0,
      dest_token: 'BTC',
      min_dest_amount_lots: '1000',
      max_dest_amount_lots: '1000',
      user_source_address: p.user,
      user_dest_address: 'bcrt1qdest',
      settlement: [],
    },
    approval_mechanism: 'cosign',
    deadline_secs: 3600,
    secret_hash: '',
    refund_address: p.user,
    execution: { signed_transaction: p.signedTransaction },
    fulfil_commitment: null,
  } as unknown as IntentView;
}

/** The swap service's co-sign transaction, signed at position 1 by the user through the SDK. */
async function swapDeposit(p: {
  user: KeyPairSigner;
  lamports: bigint;
  destination: string;
  feePayer?: string;
  id?: string;
}): Promise<IntentView> {
  const id = p.id ?? randomUUID();
  const { blockhash, lastValidBlockHeight } = await solanaLatestBlockhash(node.rpcUrl);
  const built = buildCosignTransaction({
    resolver: p.feePayer ?? wallet.identity,
    user: p.user.address,
    recentBlockhash: blockhash,
    lastValidBlockHeight,
    lamports: p.lamports,
    destination: p.destination,
    memo: `rgbx:intent:${id}`,
  });
  const body = await signCosignApproval(
    { transaction: built.transactionHex },
    { address: p.user.address, sign: (m) => signBytes(p.user.keyPair.privateKey, m) },
    { destination: p.destination, lamports: p.lamports },
  );
  return intentView({
    id,
    user: p.user.address,
    lamports: p.lamports,
    proxy: p.destination,
    signedTransaction: body.cosign.transaction,
  });
}

/** A hand-built deposit-like transaction (fee payer = the wallet), signed by the user only. */
async function craftedDeposit(user: KeyPairSigner, instructions: Instruction[]): Promise<string> {
  const { blockhash, lastValidBlockHeight } = await solanaLatestBlockhash(node.rpcUrl);
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(wallet.identity as Address, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: blockhash as Blockhash, lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const signed = await partiallySignTransaction([user.keyPair], compileTransaction(message));
  return Buffer.from(getTransactionEncoder().encode(signed)).toString('hex');
}

const memoIx = (user: Address, id: string): Instruction => ({
  programAddress: MEMO,
  accounts: [{ address: user, role: AccountRole.READONLY_SIGNER }],
  data: new TextEncoder().encode(`rgbx:intent:${id}`),
});

beforeAll(async () => {
  node = await startSolanaDevnode();
  rpc = createSolanaRpc(node.rpcUrl);
  seed = Uint8Array.from(randomBytes(32));
  wallet = await SolanaWallet.create({ rpcUrl: node.rpcUrl, privateKey: seed });
  await node.airdrop(wallet.identity, 100n * SOL);
});

afterAll(async () => {
  await wallet?.close();
  await node?.stop();
});

describe('SolanaWallet (LiteSVM devnode)', () => {
  it('identity and balance: native SOL minus the fee reserve; other mints 0; a bad key refused', async () => {
    expect(wallet.type).toBe('SOLANA');
    expect(wallet.identity).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(await wallet.balance(SOL_MINT)).toBe(100n * SOL - 10_000_000n);
    const noReserve = await SolanaWallet.create({
      rpcUrl: node.rpcUrl,
      privateKey: seed,
      feeReserveLamports: 0n,
    });
    expect(noReserve.identity).toBe(wallet.identity);
    expect(await noReserve.balance(SOL_MINT)).toBe(100n * SOL);
    expect(await wallet.balance('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')).toBe(0n);
    const empty = await SolanaWallet.create({
      rpcUrl: node.rpcUrl,
      privateKey: Uint8Array.from(randomBytes(32)),
    });
    expect(await empty.balance(SOL_MINT)).toBe(0n);
    await expect(
      SolanaWallet.create({ rpcUrl: node.rpcUrl, privateKey: new Uint8Array(31) }),
    ).rejects.toThrow(/32-byte/);
  });

  it('pays: signed but unknown until broadcast; confirmed with exact balances; a second broadcast (after a "crash") is a no-op', async () => {
    const to = await randomAddress();
    const amount = 2n * SOL + 12_345n;
    const before = await lamportsOf(wallet.identity);
    const tx = await wallet.signPayment({ intentId: randomUUID(), token: SOL_MINT, to, amount });
    expect(tx.txid).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect(tx.raw).toMatch(/^([0-9a-f]{2})+$/);
    expect(tx.meta.last_valid_block_height).toBe(Number(node.slot()) + 150);

    // Signed, not sent: nothing moved, the node does not know it.
    expect(await wallet.status(tx)).toEqual({ state: 'unknown' });
    expect(await lamportsOf(to)).toBe(0n);
    expect(await lamportsOf(wallet.identity)).toBe(before);

    await wallet.broadcast(tx);
    expect(await wallet.status(tx)).toEqual({ state: 'confirmed', confirmations: 32 });
    expect(await lamportsOf(to)).toBe(amount);
    expect(await lamportsOf(wallet.identity)).toBe(before - amount - FEE_PER_SIGNATURE);
    const onChain = await rpc
      .getTransaction(tx.txid as never, { maxSupportedTransactionVersion: 0, encoding: 'json' })
      .send();
    expect(onChain?.meta?.fee).toBe(FEE_PER_SIGNATURE);

    // The stored bytes broadcast again, by a fresh instance (a restart): already processed = success.
    const restarted = await SolanaWallet.create({ rpcUrl: node.rpcUrl, privateKey: seed });
    const stored: SignedTx = JSON.parse(JSON.stringify(tx));
    await restarted.broadcast(stored);
    await wallet.broadcast(tx);
    expect(await restarted.status(stored)).toEqual({ state: 'confirmed', confirmations: 32 });
    expect(await lamportsOf(to)).toBe(amount);
    expect(await lamportsOf(wallet.identity)).toBe(before - amount - FEE_PER_SIGNATURE);
  });

  it('two payments of the same amount to the same user are distinct transactions (the memo names the intent)', async () => {
    const to = await randomAddress();
    const a = await wallet.signPayment({ intentId: randomUUID(), token: SOL_MINT, to, amount: SOL });
    const b = await wallet.signPayment({ intentId: randomUUID(), token: SOL_MINT, to, amount: SOL });
    expect(a.txid).not.toBe(b.txid);
  });

  it('refuses payments it cannot make: other tokens, bad addresses, non-positive amounts', async () => {
    const to = await randomAddress();
    const err = await wallet
      .signPayment({ intentId: 'x', token: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', to, amount: 1n })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SolanaWalletError);
    expect((err as SolanaWalletError).code).toBe('unsupported_token');
    expect((err as Error).message).toMatch(/only native SOL/);
    await expect(
      wallet.signPayment({ intentId: 'x', token: SOL_MINT, to: 'nope', amount: 1n }),
    ).rejects.toThrow(/address/);
    await expect(wallet.signPayment({ intentId: 'x', token: SOL_MINT, to, amount: 0n })).rejects.toThrow(
      /amount/,
    );
  });

  it('co-signs the approved deposit to itself: lands, the user pays exactly the lamports, the resolver gets them minus the fee', async () => {
    const user = await generateKeyPairSigner();
    await node.airdrop(user.address, 5n * SOL);
    const lamports = 1_500_000_000n;
    const intent = await swapDeposit({ user, lamports, destination: wallet.identity });
    const beforeUser = await lamportsOf(user.address);
    const beforeWallet = await lamportsOf(wallet.identity);

    const tx = await wallet.signDeposit(intent);
    expect(tx).not.toBeNull();
    if (!tx) return;
    expect(await wallet.status(tx)).toEqual({ state: 'unknown' });
    expect(Number(tx.meta.last_valid_block_height)).toBeGreaterThanOrEqual(Number(node.slot()) + 150);
    // Only slot 0 changed: the user's transaction, message and signature untouched.
    const userTx = String(intent.execution?.signed_transaction);
    expect(tx.raw.slice(2 + 128)).toBe(userTx.slice(2 + 128));
    expect(tx.raw.slice(2, 2 + 128)).not.toBe('0'.repeat(128));

    await wallet.broadcast(tx);
    await wallet.broadcast(tx);
    expect(await wallet.status(tx)).toEqual({ state: 'confirmed', confirmations: 32 });
    expect(await lamportsOf(user.address)).toBe(beforeUser - lamports);
    expect(await lamportsOf(wallet.identity)).toBe(beforeWallet + lamports - 2n * FEE_PER_SIGNATURE);
    expect(await wallet.signClaim(intent, `0x${'11'.repeat(32)}`)).toBeNull();
  });

  it('co-signs a deposit to the escrow address (the intent proxy): the escrow receives the lamports, the resolver pays the fee', async () => {
    const user = await generateKeyPairSigner();
    const escrow = await randomAddress();
    await node.airdrop(user.address, 5n * SOL);
    const lamports = SOL;
    const intent = await swapDeposit({ user, lamports, destination: escrow });
    const beforeWallet = await lamportsOf(wallet.identity);
    const tx = await wallet.signDeposit(intent);
    if (!tx) throw new Error('expected a signed deposit');
    await wallet.broadcast(tx);
    expect(await wallet.status(tx)).toEqual({ state: 'confirmed', confirmations: 32 });
    expect(await lamportsOf(escrow)).toBe(lamports);
    expect(await lamportsOf(wallet.identity)).toBe(beforeWallet - 2n * FEE_PER_SIGNATURE);
  });

  it('refuses deposits that are not the approved transfer with itself as fee payer', async () => {
    const user = await generateKeyPairSigner();
    const lamports = SOL;
    const refused = async (intent: IntentView, pattern: RegExp) => {
      const err = await wallet.signDeposit(intent).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SolanaWalletError);
      expect((err as SolanaWalletError).code).toBe('deposit_refused');
      expect((err as Error).message).toMatch(pattern);
    };

    // Another fee payer at position 0.
    const other = await randomAddress();
    await refused(await swapDeposit({ user, lamports, destination: other, feePayer: other }), /fee payer/);

    // An extra instruction: a transfer out of the resolver (fee payer) to someone else.
    const id = randomUUID();
    const thief = (await randomAddress()) as Address;
    const withTheft = await craftedDeposit(user, [
      transferIx(user.address, wallet.identity as Address, lamports),
      transferIx(wallet.identity as Address, thief, 10n * SOL),
      memoIx(user.address, id),
    ]);
    await refused(
      intentView({ id, user: user.address, lamports, proxy: wallet.identity, signedTransaction: withTheft }),
      /resolver's own lamports/,
    );
    // An extra instruction of another program.
    const withOther = await craftedDeposit(user, [
      transferIx(user.address, wallet.identity as Address, lamports),
      {
        programAddress: 'ComputeBudget111111111111111111111111111111' as Address,
        data: new Uint8Array([2, 0, 0, 1, 0]),
      },
      memoIx(user.address, id),
    ]);
    await refused(
      intentView({ id, user: user.address, lamports, proxy: wallet.identity, signedTransaction: withOther }),
      /neither the System transfer nor the memo/,
    );
    // A second transfer by the user.
    const twice = await craftedDeposit(user, [
      transferIx(user.address, wallet.identity as Address, lamports),
      transferIx(user.address, wallet.identity as Address, lamports),
    ]);
    await refused(
      intentView({ id, user: user.address, lamports, proxy: wallet.identity, signedTransaction: twice }),
      /exactly one System transfer/,
    );

    // The approved shape, but not this intent's: amount, destination, memo, source.
    const good = await swapDeposit({ user, lamports, destination: wallet.identity, id });
    const raw = String(good.execution?.signed_transaction);
    const view = (over: Partial<Parameters<typeof intentView>[0]>) =>
      intentView({
        id,
        user: user.address,
        lamports,
        proxy: wallet.identity,
        signedTransaction: raw,
        ...over,
      });
    await refused(view({ lamports: lamports + 1n }), /moves 1000000000 lamports, not 1000000001/);
    await refused(view({ proxy: await randomAddress() }), /not the deposit address/);
    await refused(view({ id: randomUUID() }), /does not name this intent/);
    await refused(view({ user: await randomAddress() }), /not the intent's source/);

    // The user's signature missing or not over this message.
    const zeroed = `${raw.slice(0, 2 + 128)}${'00'.repeat(64)}${raw.slice(2 + 256)}`;
    await refused(view({ signedTransaction: zeroed }), /signature slot 1/);
    const forged = `${raw.slice(0, 2 + 128)}${'ab'.repeat(64)}${raw.slice(2 + 256)}`;
    await refused(view({ signedTransaction: forged }), /signature slot 1/);
    // Not a cosign intent; not hex.
    await refused({ ...view({}), approval_mechanism: 'permit2' } as IntentView, /mechanism/);
    await expect(wallet.signDeposit(view({ signedTransaction: 'zz' }))).rejects.toThrow(/hex/);
    // The approved one is still accepted.
    expect(await wallet.signDeposit(good)).not.toBeNull();
  });

  it('a deposit that lands but fails (the user cannot pay) is failed; broadcasting it again is a no-op', async () => {
    const user = await generateKeyPairSigner(); // never funded
    const intent = await swapDeposit({ user, lamports: SOL, destination: wallet.identity });
    const tx = await wallet.signDeposit(intent);
    if (!tx) throw new Error('expected a signed deposit');
    // With preflight the node refuses it and it never lands.
    await expect(wallet.broadcast(tx)).rejects.toThrow(SolanaWalletError);
    expect(await wallet.status(tx)).toEqual({ state: 'unknown' });
    // Sent without preflight it lands, the resolver pays the fee, the transfer fails.
    const before = await lamportsOf(wallet.identity);
    await rpc
      .sendTransaction(Buffer.from(tx.raw, 'hex').toString('base64') as Base64EncodedWireTransaction, {
        encoding: 'base64',
        skipPreflight: true,
      })
      .send();
    expect(await wallet.status(tx)).toEqual({ state: 'failed' });
    expect(await lamportsOf(wallet.identity)).toBe(before - 2n * FEE_PER_SIGNATURE);
    await wallet.broadcast(tx);
    expect(await wallet.status(tx)).toEqual({ state: 'failed' });
  });

  it('a payment held back until its blockhash expires is dead (and cannot be broadcast); an expired deposit is not signed', async () => {
    const to = await randomAddress();
    const held = await wallet.signPayment({ intentId: randomUUID(), token: SOL_MINT, to, amount: SOL });
    const user = await generateKeyPairSigner();
    await node.airdrop(user.address, 3n * SOL);
    const deposit = await swapDeposit({ user, lamports: SOL, destination: wallet.identity });
    const lastValid = Number(held.meta.last_valid_block_height);

    await advanceSlots(lastValid - Number(node.slot()) - 2);
    // Still inside the window: not found, but it could land.
    expect(await wallet.status(held)).toEqual({ state: 'unknown' });
    await advanceSlots(3);
    expect(Number(node.slot())).toBeGreaterThan(lastValid);

    expect(await wallet.status(held)).toEqual({ state: 'dead' });
    const err = await wallet.broadcast(held).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SolanaWalletError);
    expect((err as SolanaWalletError).code).toBe('broadcast_failed');
    expect((err as Error).message).toMatch(/Blockhash not found/i);
    expect(await wallet.status(held)).toEqual({ state: 'dead' });
    expect(await lamportsOf(to)).toBe(0n);

    // dead also from the blockhash alone (isBlockhashValid), whatever the recorded bound says.
    const noBound: SignedTx = { ...held, meta: {} };
    expect(await wallet.status(noBound)).toEqual({ state: 'dead' });

    const late = await wallet.signDeposit(deposit).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(SolanaWalletError);
    expect((late as SolanaWalletError).code).toBe('blockhash_expired');
  });
});
