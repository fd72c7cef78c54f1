/**
 * EvmWallet and TronWallet against the real EVM devnode with a real ERC-20, SignatureTransfer and
 * SwapEscrow: payments, idempotent broadcasts, nonces, a nonce taken by another transaction (`dead`),
 * a deposit of a user's real Permit2 signature and its claim, and the Tron (base58) wrapper.
 */
import { createHash } from 'node:crypto';
import {
  buildPermit2TypedData,
  buildSwapIntentWitness,
  ESCROW_CALL_ABI,
  type Permit2TypedData,
  permit2TypedDataToJson,
} from '@rgbx/chains/evm';
import { buildTronPermit2TypedData, tronAddressFromHex } from '@rgbx/chains/tron';
import {
  approveErc20,
  deploySwapContracts,
  deployTestToken,
  type EvmDevnode,
  SIGNATURE_TRANSFER,
  SWAP_ESCROW,
  startEvmDevnode,
  TEST_TOKEN,
} from '@rgbx/devnet/evm-devnode';
import { createPublicClient, createWalletClient, defineChain, getAddress, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { formatAbiItem } from 'viem/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvmWallet } from './evm.ts';
import { TronWallet } from './tron.ts';
import type { IntentView, SignedTx } from './wallet.ts';

type Hex = `0x${string}`;

let node: EvmDevnode;
let token: Hex;
let permit2: Hex;
let escrow: Hex;
let deployerKey: Hex;
let userKey: Hex;
let user: Hex;
let resolverKey: Hex;
let recipient: Hex;
let tronKey: Hex;
let pub: ReturnType<typeof createPublicClient>;
let wallet: EvmWallet;

const wc = (key: Hex) =>
  createWalletClient({
    account: privateKeyToAccount(key),
    chain: defineChain({
      id: Number(node.chainId),
      name: 'devnode',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [node.rpcUrl] } },
    }),
    transport: http(node.rpcUrl),
  });

async function mined(hash: Hex): Promise<void> {
  const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  if (r.status !== 'success') throw new Error(`${hash} reverted`);
}

const tokenBalance = (who: Hex) =>
  pub.readContract({ address: token, abi: TEST_TOKEN.abi, functionName: 'balanceOf', args: [who] });

async function sendTokens(fromKey: Hex, to: Hex, amount: bigint): Promise<void> {
  await mined(
    await wc(fromKey).writeContract({
      address: token,
      abi: TEST_TOKEN.abi,
      functionName: 'transfer',
      args: [to, amount],
    }),
  );
}

beforeAll(async () => {
  node = await startEvmDevnode({ accountCount: 6 });
  [deployerKey, userKey, resolverKey, , tronKey] = node.accounts.map((a) => a.privateKey) as Hex[] as [
    Hex,
    Hex,
    Hex,
    Hex,
    Hex,
  ];
  user = node.accounts[1]!.address;
  recipient = node.accounts[3]!.address;
  pub = createPublicClient({ transport: http(node.rpcUrl) });
  token = getAddress(
    await deployTestToken(node.rpcUrl, node.chainId, deployerKey, { symbol: 'USDC', supply: 10n ** 30n }),
  );
  const deployed = await deploySwapContracts(node.rpcUrl, node.chainId, deployerKey, {
    refundDelaySecs: 3600n,
  });
  permit2 = getAddress(deployed.permit2);
  escrow = getAddress(deployed.escrow);
  await sendTokens(deployerKey, user, 10n ** 24n);
  await sendTokens(deployerKey, node.accounts[2]!.address, 10n ** 24n);
  await sendTokens(deployerKey, node.accounts[4]!.address, 10n ** 24n);
  // the user's one-time ERC-20 approval of the signature-transfer contract (what wallets do for Permit2)
  await approveErc20(node.rpcUrl, node.chainId, userKey, token, permit2, 2n ** 256n - 1n);
  wallet = new EvmWallet({ rpcUrl: node.rpcUrl, chainId: node.chainId, privateKey: resolverKey, escrow });
});

afterAll(async () => {
  await node?.stop();
});

let uuidCounter = 0;
const nextUuid = () => {
  uuidCounter += 1;
  return `00000000-0000-4000-8000-${uuidCounter.toString(16).padStart(12, '0')}`;
};

function secretPair(label: string): { preimage: Hex; secretHash: Hex } {
  const preimage = `0x${createHash('sha256').update(`preimage:${label}`).digest('hex')}` as Hex;
  const secretHash = `0x${createHash('sha256')
    .update(Buffer.from(preimage.slice(2), 'hex'))
    .digest('hex')}` as Hex;
  return { preimage, secretHash };
}

const accountNonce = async (who: Hex) => BigInt(await pub.getTransactionCount({ address: who }));

/**
 * A permit2 intent as the resolver API returns it after approval: the execution data is what the swap
 * service's `executionView` gives (`permit2_signature`, `owner`, `nonce`, `typed_data` as handed to the
 * user: numbers as decimal strings, the domain's chain id a number), through JSON.
 */
function permit2Intent(
  id: string,
  td: Permit2TypedData,
  signature: Hex,
  owner: string,
  secretHash: Hex,
): IntentView {
  const json = permit2TypedDataToJson(td);
  const typedData = {
    domain: { ...json.domain, chainId: Number(json.domain.chainId) },
    types: json.types,
    primaryType: json.primaryType,
    message: json.message,
  };
  const execution = JSON.parse(
    JSON.stringify({
      permit2_signature: signature,
      owner,
      nonce: String(td.message.nonce),
      typed_data: typedData,
    }),
  );
  return {
    intent: { intent_id: id } as unknown as IntentView['intent'],
    approval_mechanism: 'permit2',
    deadline_secs: Number(td.message.deadline),
    secret_hash: secretHash,
    refund_address: owner,
    execution,
    fulfil_commitment: null,
  };
}

let permitNonce = 500n;
async function evmPermit(
  resolver: Hex,
  label: string,
  amount: bigint,
  signerKey: Hex = userKey,
): Promise<{ intent: IntentView; preimage: Hex }> {
  const id = nextUuid();
  const { preimage, secretHash } = secretPair(label);
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
  permitNonce += 1n;
  const td = buildPermit2TypedData({
    chainId: node.chainId,
    permit2Address: permit2,
    token,
    amount,
    spender: escrow,
    nonce: permitNonce,
    deadline,
    witness: buildSwapIntentWitness({
      intentId: id,
      resolver,
      secretHash,
      destChainId: 1n,
      destToken: 'btc',
      destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
      minAmountOut: 99_000n,
      maxAmountOut: 100_000n,
      deadline,
    }),
  });
  const signature = await privateKeyToAccount(signerKey).signTypedData({
    domain: td.domain,
    types: td.types,
    primaryType: td.primaryType,
    message: td.message,
  });
  return { intent: permit2Intent(id, td, signature, user, secretHash), preimage };
}

async function land(w: { broadcast(tx: SignedTx): Promise<void> }, tx: SignedTx): Promise<void> {
  await w.broadcast(tx);
  await mined(tx.txid as Hex);
}

describe('the escrow call ABI of @rgbx/chains/evm', () => {
  it('is the compiled contracts’ ABI for deposit/claim/refund and every custom error (names included)', () => {
    const fmt = (x: { type: string }) =>
      `${x.type} ${formatAbiItem(x as Parameters<typeof formatAbiItem>[0], { includeName: true })}`;
    const artifacts = [...SWAP_ESCROW.abi, ...SIGNATURE_TRANSFER.abi].filter(
      (x) => x.type === 'function' || x.type === 'error',
    );
    const compiled = new Set(artifacts.map(fmt));
    for (const x of ESCROW_CALL_ABI) expect(compiled).toContain(fmt(x));
    const ours = new Set(ESCROW_CALL_ABI.map(fmt));
    for (const x of artifacts.filter((x) => x.type === 'error')) expect(ours).toContain(fmt(x));
    expect(ours.size).toBe(ESCROW_CALL_ABI.length);
  });
});

describe('EvmWallet', () => {
  it('identity is the checksummed address; balance reads the ERC-20', async () => {
    expect(wallet.identity).toBe(getAddress(node.accounts[2]!.address));
    expect(wallet.type).toBe('EVM');
    expect(await wallet.balance(token)).toBe(await tokenBalance(wallet.address));
    expect(await wallet.balance(token.toLowerCase())).toBe(10n ** 24n);
  });

  it('a payment: signed → unknown → broadcast → confirmed, exact token balances; broadcast twice is a no-op', async () => {
    const before = { from: await tokenBalance(wallet.address), to: await tokenBalance(recipient) };
    const nonce = await accountNonce(wallet.address);
    const tx = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 123_456n });
    expect(tx.txid).toMatch(/^0x[0-9a-f]{64}$/);
    expect(tx.meta.nonce).toBe(Number(nonce));
    expect(await wallet.status(tx)).toEqual({ state: 'unknown' });
    // signing sends nothing
    expect(await tokenBalance(recipient)).toBe(before.to);

    await wallet.broadcast(tx);
    expect(await wallet.status(tx)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await tokenBalance(wallet.address)).toBe(before.from - 123_456n);
    expect(await tokenBalance(recipient)).toBe(before.to + 123_456n);

    const height = await pub.getBlockNumber({ cacheTime: 0 });
    await wallet.broadcast(tx); // "already known": success, nothing new
    await wallet.broadcast(tx);
    expect(await pub.getBlockNumber({ cacheTime: 0 })).toBe(height);
    expect(await tokenBalance(recipient)).toBe(before.to + 123_456n);
    expect(await accountNonce(wallet.address)).toBe(nonce + 1n);

    await pub.request({ method: 'evm_mine' } as never);
    expect(await wallet.status(tx)).toEqual({ state: 'confirmed', confirmations: 2 });
  });

  it('two payments signed back to back (concurrently) get consecutive nonces and both land', async () => {
    const before = await tokenBalance(recipient);
    const nonce = await accountNonce(wallet.address);
    const [a, b] = await Promise.all([
      wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 1_000n }),
      wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 2_000n }),
    ]);
    const [na, nb] = [Number(a.meta.nonce), Number(b.meta.nonce)];
    expect([na, nb].sort((x, y) => x - y)).toEqual([Number(nonce), Number(nonce) + 1]);
    const [first, second] = na < nb ? [a, b] : [b, a];
    // a third one signed before either is broadcast continues the sequence
    const c = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 4_000n });
    expect(c.meta.nonce).toBe(Number(nonce) + 2);
    for (const tx of [first, second, c]) await land(wallet, tx);
    for (const tx of [a, b, c]) expect((await wallet.status(tx)).state).toBe('confirmed');
    expect(await tokenBalance(recipient)).toBe(before + 7_000n);
    expect(await accountNonce(wallet.address)).toBe(nonce + 3n);
  });

  it('a signed payment whose nonce another transaction used is dead, and cannot be broadcast', async () => {
    const before = await tokenBalance(recipient);
    const tx = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 5_000n });
    // the same key spends that nonce elsewhere (another process, a manual transaction…)
    await mined(
      await wc(resolverKey).sendTransaction({
        to: wallet.address,
        value: 0n,
        nonce: Number(tx.meta.nonce),
      }),
    );
    expect(await wallet.status(tx)).toEqual({ state: 'dead' });
    await expect(wallet.broadcast(tx)).rejects.toThrow();
    expect(await wallet.status(tx)).toEqual({ state: 'dead' });
    expect(await tokenBalance(recipient)).toBe(before);
    // the replacement takes the next free nonce
    const next = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 5_000n });
    expect(next.meta.nonce).toBe(Number(tx.meta.nonce) + 1);
    await land(wallet, next);
    expect(await tokenBalance(recipient)).toBe(before + 5_000n);
  });

  it('track: a stored transaction of an earlier run keeps its nonce reserved in a new wallet', async () => {
    const stored = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 10n });
    const restarted = new EvmWallet({
      rpcUrl: node.rpcUrl,
      chainId: node.chainId,
      privateKey: resolverKey,
      escrow,
    });
    restarted.track(stored);
    const next = await restarted.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 20n });
    expect(next.meta.nonce).toBe(Number(stored.meta.nonce) + 1);
    for (const tx of [stored, next]) await land(restarted, tx);
    expect((await wallet.status(next)).state).toBe('confirmed');
  });

  it('release: a payment dropped unsent gives its nonce back; the next transaction takes it and lands, the dropped one is dead', async () => {
    const before = await tokenBalance(recipient);
    const nonce = await accountNonce(wallet.address);
    const dropped = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 30n });
    expect(dropped.meta.nonce).toBe(Number(nonce));
    // Without release, the next one would take nonce + 1 and wait behind the gap.
    const held = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 40n });
    expect(held.meta.nonce).toBe(Number(nonce) + 1);
    wallet.release(held);
    wallet.release(dropped);
    const next = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 50n });
    expect(next.meta.nonce).toBe(Number(nonce));
    await land(wallet, next);
    expect(await wallet.status(dropped)).toEqual({ state: 'dead' });
    expect(await tokenBalance(recipient)).toBe(before + 50n);
    // Released out of order: the lower free nonce is taken first (the gap is filled, never skipped).
    const a = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 1n });
    const b = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 2n });
    expect([a.meta.nonce, b.meta.nonce]).toEqual([Number(nonce) + 1, Number(nonce) + 2]);
    wallet.release(a);
    const c = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 3n });
    expect(c.meta.nonce).toBe(Number(nonce) + 1);
    for (const tx of [c, b]) await land(wallet, tx);
    expect(await tokenBalance(recipient)).toBe(before + 55n);
    expect(await accountNonce(wallet.address)).toBe(nonce + 3n);
  });

  it('deposits a user’s real Permit2 signature into the escrow, then claims it with the preimage', async () => {
    const amount = 777_000n;
    const { intent, preimage } = await evmPermit(wallet.address, 'deposit', amount);
    const userBefore = await tokenBalance(user);
    const escrowBefore = await tokenBalance(escrow);
    const deposit = await wallet.signDeposit(intent);
    expect(deposit).not.toBeNull();
    expect(await wallet.status(deposit!)).toEqual({ state: 'unknown' });
    await land(wallet, deposit!);
    expect(await wallet.status(deposit!)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await tokenBalance(user)).toBe(userBefore - amount);
    expect(await tokenBalance(escrow)).toBe(escrowBefore + amount);

    await expect(wallet.signClaim(intent, `0x${'11'.repeat(32)}`)).rejects.toThrow(/secret hash/);
    const resolverBefore = await wallet.balance(token);
    const claim = await wallet.signClaim(intent, preimage);
    await land(wallet, claim!);
    expect(await wallet.status(claim!)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await wallet.balance(token)).toBe(resolverBefore + amount);
    expect(await tokenBalance(escrow)).toBe(escrowBefore);
    // the lock is spent: a second claim would revert, so it is not signed
    await expect(wallet.signClaim(intent, preimage)).rejects.toThrow(/would fail.*NotLocked/s);
  });

  it('a deposit that would revert (signature by another key) throws before anything is signed', async () => {
    const { intent } = await evmPermit(wallet.address, 'bad-sig', 1_000n, deployerKey);
    const nonce = await accountNonce(wallet.address);
    await expect(wallet.signDeposit(intent)).rejects.toThrow(
      /deposit of intent .* would fail.*InvalidSigner/s,
    );
    // no nonce was taken: the next transaction uses the account's next nonce
    const next = await wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 1n });
    expect(next.meta.nonce).toBe(Number(nonce));
    await land(wallet, next);
  });

  it('refuses intents that are not its own permit2 deposits, and native coins', async () => {
    const { intent } = await evmPermit(recipient, 'other-resolver', 1_000n);
    await expect(wallet.signDeposit(intent)).rejects.toThrow(/not this wallet/);
    const mine = (await evmPermit(wallet.address, 'htlc', 1_000n)).intent;
    await expect(wallet.signDeposit({ ...mine, approval_mechanism: 'htlc' })).rejects.toThrow(/only permit2/);
    await expect(wallet.signDeposit({ ...mine, execution: null })).rejects.toThrow(/no execution data/);
    await expect(
      wallet.signPayment({ intentId: nextUuid(), token: 'ETH', to: recipient, amount: 1n }),
    ).rejects.toThrow(/native-coin/);
    await expect(
      wallet.signPayment({ intentId: nextUuid(), token: `0x${'0'.repeat(40)}`, to: recipient, amount: 1n }),
    ).rejects.toThrow(/native-coin/);
    // more than the wallet holds: the estimate reverts, nothing is signed
    await expect(
      wallet.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 10n ** 29n }),
    ).rejects.toThrow(/would fail/);
  });

  it('refuses a node that serves another chain', async () => {
    const w = new EvmWallet({ rpcUrl: node.rpcUrl, chainId: 1, privateKey: resolverKey, escrow });
    await expect(w.signPayment({ intentId: nextUuid(), token, to: recipient, amount: 1n })).rejects.toThrow(
      /serves chain 31337, configured 1/,
    );
  });
});

describe('TronWallet (devnet: the EVM devnode read with Tron base58 addresses)', () => {
  it('without devnetJsonRpcBroadcast it refuses to exist', () => {
    expect(
      () =>
        new TronWallet({
          rpcUrl: node.rpcUrl,
          chainId: node.chainId,
          privateKey: tronKey,
          escrow: tronAddressFromHex(escrow),
          devnetJsonRpcBroadcast: false,
        }),
    ).toThrow(/real Tron network does not accept Ethereum-style signed transactions.*broadcasttransaction/);
  });

  it('identity is base58; it pays a base58 address in a base58 token', async () => {
    const tron = new TronWallet({
      rpcUrl: node.rpcUrl,
      chainId: node.chainId,
      privateKey: tronKey,
      escrow: tronAddressFromHex(escrow),
      devnetJsonRpcBroadcast: true,
    });
    expect(tron.type).toBe('TRON');
    expect(tron.identity).toBe(tronAddressFromHex(node.accounts[4]!.address));
    expect(tron.identity).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
    const tronToken = tronAddressFromHex(token);
    const to = tronAddressFromHex(recipient);
    expect(await tron.balance(tronToken)).toBe(10n ** 24n);
    const before = await tokenBalance(recipient);
    const tx = await tron.signPayment({ intentId: nextUuid(), token: tronToken, to, amount: 42_000n });
    expect(await tron.status(tx)).toEqual({ state: 'unknown' });
    await tron.broadcast(tx);
    await tron.broadcast(tx);
    expect(await tron.status(tx)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await tokenBalance(recipient)).toBe(before + 42_000n);
    expect(await tron.balance(tronToken)).toBe(10n ** 24n - 42_000n);
    // 0x spellings are not Tron addresses
    await expect(
      tron.signPayment({ intentId: nextUuid(), token: tronToken, to: recipient, amount: 1n }),
    ).rejects.toThrow(/Tron base58/);
  });

  it('deposits a Tron owner’s TIP-712 permit (owner in base58) and claims it', async () => {
    const tron = new TronWallet({
      rpcUrl: node.rpcUrl,
      chainId: node.chainId,
      privateKey: tronKey,
      escrow: tronAddressFromHex(escrow),
      devnetJsonRpcBroadcast: true,
    });
    const id = nextUuid();
    const { preimage, secretHash } = secretPair('tron');
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
    const amount = 31_000n;
    const td = buildTronPermit2TypedData({
      chainId: node.chainId,
      permit2Address: tronAddressFromHex(permit2),
      token: tronAddressFromHex(token),
      amount,
      spender: tronAddressFromHex(escrow),
      nonce: 9_001n,
      deadline,
      witness: {
        intentId: id,
        resolver: tron.identity,
        secretHash,
        destChainId: 1n,
        destToken: 'btc',
        destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
        minAmountOut: 1n,
        maxAmountOut: 2n,
        deadline,
      },
    });
    const signature = await privateKeyToAccount(userKey).signTypedData({
      domain: td.domain,
      types: td.types,
      primaryType: td.primaryType,
      message: td.message,
    });
    const intent = permit2Intent(id, td, signature, tronAddressFromHex(user), secretHash);
    const userBefore = await tokenBalance(user);
    const deposit = await tron.signDeposit(intent);
    await land(tron, deposit!);
    expect(await tokenBalance(user)).toBe(userBefore - amount);
    const resolverBefore = await tron.balance(tronAddressFromHex(token));
    const claim = await tron.signClaim(intent, preimage);
    await land(tron, claim!);
    expect(await tron.status(claim!)).toEqual({ state: 'confirmed', confirmations: 1 });
    expect(await tron.balance(tronAddressFromHex(token))).toBe(resolverBefore + amount);
  });
});
