/**
 * SignatureTransfer (our Permit2-compatible signature transfer) and SwapEscrow against a real local EVM
 * node with a real ERC-20: typed data from the chains module's Permit2 builders (EVM and Tron), signed
 * with viem accounts; balances, lock state and event logs read back from the node.
 */
import { createHash } from 'node:crypto';
import {
  buildPermit2TypedData,
  buildSwapIntentWitness,
  type EvmAddress,
  type Permit2TypedData,
  SWAP_INTENT_WITNESS_TYPE_STRING,
  type SwapIntentInput,
  swapIntentWitnessHash,
} from '@rgbx/chains/evm';
import { buildTronPermit2TypedData, tronAddressFromHex, verifyTronPermit2Signature } from '@rgbx/chains/tron';
import {
  type Abi,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  getAbiItem,
  getAddress,
  hashDomain,
  http,
  keccak256,
  parseEventLogs,
  parseSignature,
  serializeCompactSignature,
  signatureToCompactSignature,
  toEventSelector,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escrowLockId } from './escrow.ts';
import {
  approveErc20,
  deploySwapContracts,
  deployTestToken,
  type EvmDevnode,
  escrowClaim,
  escrowDeposit,
  escrowRefund,
  SIGNATURE_TRANSFER,
  SWAP_ESCROW,
  SWAP_ESCROW_EVENTS,
  startEvmDevnode,
  TEST_TOKEN,
} from './index.ts';

type Hex = `0x${string}`;
const REFUND_DELAY = 5n;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

let node: EvmDevnode;
let token: EvmAddress;
let permit2: EvmAddress;
let escrow: EvmAddress;
let deployerKey: Hex;
let ownerKey: Hex;
let owner: EvmAddress;
let resolverKey: Hex;
let resolver: EvmAddress;
let thirdKey: Hex;
let third: EvmAddress;
/** A front-runner with their own tokens and their own approval of SignatureTransfer. */
let attackerKey: Hex;
let attacker: EvmAddress;
let pub: ReturnType<typeof createPublicClient>;

beforeAll(async () => {
  node = await startEvmDevnode({ accountCount: 5 });
  [deployerKey, ownerKey, resolverKey, thirdKey, attackerKey] = node.accounts.map((a) => a.privateKey) as [
    Hex,
    Hex,
    Hex,
    Hex,
    Hex,
  ];
  [, owner, resolver, third, attacker] = node.accounts.map((a) => a.address) as [
    EvmAddress,
    EvmAddress,
    EvmAddress,
    EvmAddress,
    EvmAddress,
  ];
  pub = createPublicClient({ transport: http(node.rpcUrl) });
  // checksummed, as the node's logs and getters decode them
  token = getAddress(
    await deployTestToken(node.rpcUrl, node.chainId, deployerKey, { symbol: 'USDC', supply: 10n ** 30n }),
  );
  await send(deployerKey, token, TEST_TOKEN.abi, 'transfer', [owner, 10n ** 24n]);
  await send(deployerKey, token, TEST_TOKEN.abi, 'transfer', [attacker, 10n ** 24n]);
  const deployed = await deploySwapContracts(node.rpcUrl, node.chainId, deployerKey, {
    refundDelaySecs: REFUND_DELAY,
  });
  permit2 = getAddress(deployed.permit2);
  escrow = getAddress(deployed.escrow);
  // the owner's one-time ERC-20 approval of the signature-transfer contract (what wallets do for Permit2)
  await approveErc20(node.rpcUrl, node.chainId, ownerKey, token, permit2, 2n ** 256n - 1n);
  await approveErc20(node.rpcUrl, node.chainId, attackerKey, token, permit2, 2n ** 256n - 1n);
});

afterAll(async () => {
  await node?.stop();
});

async function send(
  key: Hex,
  address: EvmAddress,
  abi: Abi,
  functionName: string,
  args: unknown[],
): Promise<Hex> {
  const chain = defineChain({
    id: Number(node.chainId),
    name: 'devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [node.rpcUrl] } },
  });
  const w = createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(node.rpcUrl) });
  const hash = await w.writeContract({ address, abi, functionName, args });
  const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  if (r.status !== 'success') throw new Error(`${functionName} reverted`);
  return hash;
}

const balance = (who: EvmAddress) =>
  pub.readContract({ address: token, abi: TEST_TOKEN.abi, functionName: 'balanceOf', args: [who] });

/** `who`'s lock for intent `id` (default: the owner's). */
const lockOf = async (id: Hex, who: EvmAddress = owner) => {
  const [o, t, amount, r, secretHash, refundAfter, state] = await pub.readContract({
    address: escrow,
    abi: SWAP_ESCROW.abi,
    functionName: 'locks',
    args: [escrowLockId(id, who)],
  });
  return { owner: o, token: t, amount, resolver: r, secretHash, refundAfter, state };
};

const latestTimestamp = async () => (await pub.getBlock({ blockTag: 'latest' })).timestamp;

/** Asserts `p` rejects with a revert whose decoded custom error (or require reason) is `name`. */
async function expectRevert(p: Promise<unknown>, name: string): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e, `expected a revert with ${name}`).toBeInstanceOf(BaseError);
  const reverted = (e as BaseError).walk((x) => x instanceof ContractFunctionRevertedError) as
    | ContractFunctionRevertedError
    | undefined;
  expect(reverted, (e as Error).message).toBeInstanceOf(ContractFunctionRevertedError);
  const errorName = reverted?.data?.errorName;
  expect(errorName === 'Error' ? reverted?.reason : errorName).toBe(name);
}

let uuidCounter = 0;
function nextUuid(): string {
  uuidCounter += 1;
  return `00000000-0000-4000-8000-${uuidCounter.toString(16).padStart(12, '0')}`;
}

function secretPair(label: string): { preimage: Hex; secretHash: Hex } {
  const preimage = `0x${createHash('sha256').update(`preimage:${label}`).digest('hex')}` as Hex;
  const secretHash = `0x${createHash('sha256')
    .update(Buffer.from(preimage.slice(2), 'hex'))
    .digest('hex')}` as Hex;
  return { preimage, secretHash };
}

function intentInput(
  over: Partial<SwapIntentInput> & { secretHash: Hex; deadline: bigint },
): SwapIntentInput {
  return {
    intentId: nextUuid(),
    resolver,
    destChainId: 1n,
    destToken: 'btc',
    destAddress: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
    minAmountOut: 99_000n,
    maxAmountOut: 100_000n,
    ...over,
  };
}

let nonceCounter = 1000n;
function typedData(
  input: SwapIntentInput,
  o: { amount?: bigint; deadline?: bigint; spender?: EvmAddress; nonce?: bigint } = {},
): Permit2TypedData {
  nonceCounter += 1n;
  return buildPermit2TypedData({
    chainId: node.chainId,
    permit2Address: permit2,
    token,
    amount: o.amount ?? 1_000_000n,
    spender: o.spender ?? escrow,
    nonce: o.nonce ?? nonceCounter,
    deadline: o.deadline ?? input.deadline,
    witness: buildSwapIntentWitness(input),
  });
}

const sign = (td: Permit2TypedData, key: Hex = ownerKey) =>
  privateKeyToAccount(key).signTypedData({
    domain: td.domain,
    types: td.types,
    primaryType: td.primaryType,
    message: td.message,
  });

const depositParams = (td: Permit2TypedData, signature: Hex, who: EvmAddress = owner) => ({
  token: td.message.permitted.token,
  amount: td.message.permitted.amount,
  nonce: td.message.nonce,
  deadline: td.message.deadline,
  owner: who,
  witness: td.message.witness,
  signature,
});

/** Calls SignatureTransfer directly with `spender`'s key as msg.sender, tokens to `to`. */
const directTransfer = (
  spenderKey: Hex,
  td: Permit2TypedData,
  signature: Hex,
  to: EvmAddress,
  requested?: bigint,
) =>
  send(spenderKey, permit2, SIGNATURE_TRANSFER.abi, 'permitWitnessTransferFrom', [
    { permitted: td.message.permitted, nonce: td.message.nonce, deadline: td.message.deadline },
    { to, requestedAmount: requested ?? td.message.permitted.amount },
    owner,
    td.witnessHash,
    td.witnessTypeString,
    signature,
  ]);

describe('artifacts and constants', () => {
  it('lockIdOf on chain is keccak256(abi.encode(intentId, owner)), as escrowLockId computes it', async () => {
    const id = buildSwapIntentWitness(intentInput({ ...secretPair('lockid'), deadline: 1n })).intentId;
    for (const who of [owner, attacker]) {
      expect(
        await pub.readContract({
          address: escrow,
          abi: SWAP_ESCROW.abi,
          functionName: 'lockIdOf',
          args: [id, who],
        }),
      ).toBe(escrowLockId(id, who));
    }
    expect(escrowLockId(id, owner)).toBe(
      keccak256(`0x${id.slice(2)}${owner.slice(2).toLowerCase().padStart(64, '0')}` as Hex),
    );
    expect(escrowLockId(id, owner)).not.toBe(escrowLockId(id, attacker));
  });

  it('SWAP_ESCROW_EVENTS are the topic0 of the compiled events', () => {
    for (const name of ['Deposited', 'Claimed', 'Refunded'] as const)
      expect(SWAP_ESCROW_EVENTS[name]).toBe(toEventSelector(getAbiItem({ abi: SWAP_ESCROW.abi, name })));
    expect(SWAP_ESCROW_EVENTS).toEqual({
      Deposited: toEventSelector('Deposited(bytes32,address,address,uint256,address,bytes32,uint256)'),
      Claimed: toEventSelector('Claimed(bytes32,address,bytes32)'),
      Refunded: toEventSelector('Refunded(bytes32,address)'),
    });
  });

  it('on chain: DOMAIN_SEPARATOR, the witness type string and the witness hash equal the TS module', async () => {
    const td = typedData(intentInput({ ...secretPair('consts'), deadline: 1_900_000_000n }));
    expect(
      await pub.readContract({
        address: permit2,
        abi: SIGNATURE_TRANSFER.abi,
        functionName: 'DOMAIN_SEPARATOR',
      }),
    ).toBe(
      hashDomain({
        domain: td.domain,
        types: { EIP712Domain: td.types.EIP712Domain },
      }),
    );
    expect(
      await pub.readContract({ address: escrow, abi: SWAP_ESCROW.abi, functionName: 'WITNESS_TYPE_STRING' }),
    ).toBe(SWAP_INTENT_WITNESS_TYPE_STRING);
    expect(
      await pub.readContract({
        address: escrow,
        abi: SWAP_ESCROW.abi,
        functionName: 'witnessHash',
        args: [td.message.witness],
      }),
    ).toBe(swapIntentWitnessHash(td.message.witness));
    expect(await pub.readContract({ address: escrow, abi: SWAP_ESCROW.abi, functionName: 'PERMIT2' })).toBe(
      permit2,
    );
    expect(
      await pub.readContract({ address: escrow, abi: SWAP_ESCROW.abi, functionName: 'REFUND_DELAY_SECS' }),
    ).toBe(REFUND_DELAY);
  });
});

describe('SwapEscrow: deposit, claim, refund', () => {
  it('deposit pulls exactly the amount, locks it and emits Deposited; replay, tampering, early refund and wrong preimage revert; the right preimage pays the resolver', async () => {
    const now = await latestTimestamp();
    const { preimage, secretHash } = secretPair('A');
    const input = intentInput({ secretHash, deadline: now + 3600n });
    const td = typedData(input, { amount: 1_234_567n });
    const signature = await sign(td);
    const id = td.message.witness.intentId;

    const [ownerBefore, escrowBefore, resolverBefore] = await Promise.all([
      balance(owner),
      balance(escrow),
      balance(resolver),
    ]);
    // the resolver submits it
    const hash = await escrowDeposit(
      node.rpcUrl,
      node.chainId,
      resolverKey,
      escrow,
      depositParams(td, signature),
    );
    expect(await balance(owner)).toBe(ownerBefore - 1_234_567n);
    expect(await balance(escrow)).toBe(escrowBefore + 1_234_567n);

    const receipt = await pub.getTransactionReceipt({ hash });
    const deposited = receipt.logs.filter(
      (l) => l.address.toLowerCase() === escrow.toLowerCase() && l.topics[0] === SWAP_ESCROW_EVENTS.Deposited,
    );
    expect(deposited).toHaveLength(1);
    const [ev] = parseEventLogs({ abi: SWAP_ESCROW.abi, logs: deposited, eventName: 'Deposited' });
    expect(ev?.args).toEqual({
      intentId: id,
      owner,
      token,
      amount: 1_234_567n,
      resolver,
      secretHash,
      refundAfter: input.deadline + REFUND_DELAY,
    });
    expect(await lockOf(id)).toEqual({
      owner,
      token,
      amount: 1_234_567n,
      resolver,
      secretHash,
      refundAfter: input.deadline + REFUND_DELAY,
      state: 1,
    });
    // the nonce's bit is set in the owner's bitmap
    const bitmap = await pub.readContract({
      address: permit2,
      abi: SIGNATURE_TRANSFER.abi,
      functionName: 'nonceBitmap',
      args: [owner, td.message.nonce >> 8n],
    });
    expect((bitmap >> (td.message.nonce & 0xffn)) & 1n).toBe(1n);

    // the same signature replayed through the escrow: its intent id is locked, refused before any pull
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, signature)),
      'AlreadyLocked',
    );
    // refund before refundAfter
    await expectRevert(
      escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner),
      'RefundNotYetAvailable',
    );
    // wrong preimage
    await expectRevert(
      escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner, secretPair('other').preimage),
      'InvalidPreimage',
    );
    expect(await lockOf(id)).toMatchObject({ state: 1 });

    // anyone may claim with the right preimage; the resolver is paid
    const claimHash = await escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner, preimage);
    expect(await balance(resolver)).toBe(resolverBefore + 1_234_567n);
    expect(await balance(escrow)).toBe(escrowBefore);
    const claimReceipt = await pub.getTransactionReceipt({ hash: claimHash });
    const claimed = claimReceipt.logs.filter((l) => l.topics[0] === SWAP_ESCROW_EVENTS.Claimed);
    expect(claimed).toHaveLength(1);
    expect(parseEventLogs({ abi: SWAP_ESCROW.abi, logs: claimed, eventName: 'Claimed' })[0]?.args).toEqual({
      intentId: id,
      resolver,
      preimage,
    });
    expect(await lockOf(id)).toMatchObject({ state: 2 });

    // settled: no second claim, no refund
    await expectRevert(
      escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner, preimage),
      'NotLocked',
    );
    await expectRevert(escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner), 'NotLocked');
  });

  it('a front-runner locking the same intentId first (own tokens, own signature) does not block the victim; each lock is claimed or refunded on its own', async () => {
    const now = await latestTimestamp();
    const { preimage, secretHash } = secretPair('front-run');
    const victimInput = intentInput({ secretHash, deadline: now + 3600n });
    const victimTd = typedData(victimInput, { amount: 500_000n });
    const victimSig = await sign(victimTd);
    const id = victimTd.message.witness.intentId;

    // the attacker copies the victim's intent id (and secret hash) from the pending deposit, names
    // themselves resolver, picks an intent deadline already past (refundable at once) and signs with
    // their own key for their own tokens
    const attackerTd = typedData(
      { ...victimInput, resolver: attacker, deadline: now - 60n },
      { amount: 3_000n, deadline: now + 3600n },
    );
    expect(attackerTd.message.witness.intentId).toBe(id);
    const attackerSig = await sign(attackerTd, attackerKey);

    const [ownerBefore, attackerBefore, resolverBefore, escrowBefore] = await Promise.all([
      balance(owner),
      balance(attacker),
      balance(resolver),
      balance(escrow),
    ]);
    // the attacker's deposit lands first (submitted by the attacker)
    const attackerHash = await escrowDeposit(
      node.rpcUrl,
      node.chainId,
      attackerKey,
      escrow,
      depositParams(attackerTd, attackerSig, attacker),
    );
    expect(await lockOf(id, attacker)).toMatchObject({
      owner: attacker,
      resolver: attacker,
      amount: 3_000n,
      state: 1,
    });
    expect(await lockOf(id, owner)).toMatchObject({ state: 0 });
    // they cannot take the victim's slot: the victim's owner address with the attacker's signature is refused
    await expectRevert(
      escrowDeposit(
        node.rpcUrl,
        node.chainId,
        attackerKey,
        escrow,
        depositParams(attackerTd, attackerSig, owner),
      ),
      'InvalidSigner',
    );

    // the victim's deposit still goes through, under its own lock
    const victimHash = await escrowDeposit(
      node.rpcUrl,
      node.chainId,
      resolverKey,
      escrow,
      depositParams(victimTd, victimSig),
    );
    expect(await balance(owner)).toBe(ownerBefore - 500_000n);
    expect(await balance(attacker)).toBe(attackerBefore - 3_000n);
    expect(await balance(escrow)).toBe(escrowBefore + 503_000n);
    expect(await lockOf(id, owner)).toEqual({
      owner,
      token,
      amount: 500_000n,
      resolver,
      secretHash,
      refundAfter: victimInput.deadline + REFUND_DELAY,
      state: 1,
    });
    expect(await lockOf(id, attacker)).toMatchObject({ owner: attacker, amount: 3_000n, state: 1 });
    // both Deposited events carry the same intent id, told apart by the indexed owner
    const depositedOf = async (hash: Hex) =>
      parseEventLogs({
        abi: SWAP_ESCROW.abi,
        logs: (await pub.getTransactionReceipt({ hash })).logs,
        eventName: 'Deposited',
      }).map((e) => [e.args.intentId, e.args.owner, e.args.resolver, e.args.amount]);
    expect(await depositedOf(attackerHash)).toEqual([[id, attacker, attacker, 3_000n]]);
    expect(await depositedOf(victimHash)).toEqual([[id, owner, resolver, 500_000n]]);
    // a second deposit by either owner under the same intent id is still refused
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(victimTd, victimSig)),
      'AlreadyLocked',
    );
    await expectRevert(
      escrowDeposit(
        node.rpcUrl,
        node.chainId,
        attackerKey,
        escrow,
        depositParams(attackerTd, attackerSig, attacker),
      ),
      'AlreadyLocked',
    );
    // no lock under (intentId, someone else)
    await expectRevert(
      escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, third, preimage),
      'NotLocked',
    );
    await expectRevert(escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, third), 'NotLocked');

    // the attacker's lock: its claim window is closed, the victim's is not refundable yet
    await expectRevert(
      escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, attacker, preimage),
      'ClaimWindowClosed',
    );
    await expectRevert(
      escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner),
      'RefundNotYetAvailable',
    );

    // the victim's lock is claimed: the victim's resolver is paid the victim's amount; the attacker's lock stays
    const claimHash = await escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner, preimage);
    expect(await balance(resolver)).toBe(resolverBefore + 500_000n);
    expect(await lockOf(id, owner)).toMatchObject({ state: 2 });
    expect(await lockOf(id, attacker)).toMatchObject({ amount: 3_000n, state: 1 });
    expect(
      parseEventLogs({
        abi: SWAP_ESCROW.abi,
        logs: (await pub.getTransactionReceipt({ hash: claimHash })).logs,
        eventName: 'Claimed',
      }).map((e) => e.args),
    ).toEqual([{ intentId: id, resolver, preimage }]);

    // the attacker's lock is refunded to the attacker only; the victim's stays claimed
    const refundHash = await escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, attacker);
    expect(await balance(attacker)).toBe(attackerBefore);
    expect(await balance(owner)).toBe(ownerBefore - 500_000n);
    expect(await balance(escrow)).toBe(escrowBefore);
    expect(await lockOf(id, attacker)).toMatchObject({ state: 3 });
    expect(await lockOf(id, owner)).toMatchObject({ state: 2 });
    expect(
      parseEventLogs({
        abi: SWAP_ESCROW.abi,
        logs: (await pub.getTransactionReceipt({ hash: refundHash })).logs,
        eventName: 'Refunded',
      }).map((e) => e.args),
    ).toEqual([{ intentId: id, owner: attacker }]);
    await expectRevert(
      escrowClaim(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner, preimage),
      'NotLocked',
    );
    await expectRevert(escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, attacker), 'NotLocked');
  });

  it('a used nonce reverts with InvalidNonce: through the escrow (another intent, same nonce) and replayed directly', async () => {
    const now = await latestTimestamp();
    // the owner signed two intents with the same nonce: the first deposit spends it, the second is refused
    const first = typedData(intentInput({ ...secretPair('N1'), deadline: now + 3600n }), { amount: 10n });
    const second = typedData(intentInput({ ...secretPair('N2'), deadline: now + 3600n }), {
      amount: 10n,
      nonce: first.message.nonce,
    });
    await escrowDeposit(
      node.rpcUrl,
      node.chainId,
      resolverKey,
      escrow,
      depositParams(first, await sign(first)),
    );
    const before = await balance(owner);
    await expectRevert(
      escrowDeposit(
        node.rpcUrl,
        node.chainId,
        resolverKey,
        escrow,
        depositParams(second, await sign(second)),
      ),
      'InvalidNonce',
    );
    expect(await balance(owner)).toBe(before);
    expect(await lockOf(second.message.witness.intentId)).toMatchObject({ state: 0 });

    // the identical permit + signature replayed on SignatureTransfer by its spender
    const td = typedData(intentInput({ ...secretPair('N3'), deadline: now + 3600n }), {
      spender: third,
      amount: 10n,
    });
    const signature = await sign(td);
    const thirdBefore = await balance(resolver);
    await directTransfer(thirdKey, td, signature, resolver);
    expect(await balance(resolver)).toBe(thirdBefore + 10n);
    await expectRevert(directTransfer(thirdKey, td, signature, resolver), 'InvalidNonce');
    expect(await balance(resolver)).toBe(thirdBefore + 10n);
  });

  it('a deposit whose witness differs from the signed one (another minAmountOut or maxAmountOut) reverts with InvalidSigner; the signed one then succeeds', async () => {
    const now = await latestTimestamp();
    const { secretHash } = secretPair('B');
    const input = intentInput({ secretHash, deadline: now + 3600n });
    const td = typedData(input);
    const signature = await sign(td);
    const w = td.message.witness;
    const before = await balance(owner);
    for (const tampered of [
      { ...w, minAmountOut: w.minAmountOut - 1n },
      { ...w, maxAmountOut: w.maxAmountOut + 1n },
    ])
      await expectRevert(
        escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, {
          ...depositParams(td, signature),
          witness: tampered,
        }),
        'InvalidSigner',
      );
    // another amount than signed
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, {
        ...depositParams(td, signature),
        amount: td.message.permitted.amount + 1n,
      }),
      'InvalidSigner',
    );
    // the owner field set to someone else
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, signature, third)),
      'InvalidSigner',
    );
    expect(await balance(owner)).toBe(before);
    expect(await lockOf(td.message.witness.intentId)).toMatchObject({ state: 0 });
    await escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, signature));
    expect(await balance(owner)).toBe(before - td.message.permitted.amount);
  });

  it('refund from refundAfter on pays the owner and emits Refunded; claim is then closed', async () => {
    const now = await latestTimestamp();
    const { preimage, secretHash } = secretPair('C');
    // intent deadline in the past (refundAfter = deadline + 5 s already passed); permit still valid
    const input = intentInput({ secretHash, deadline: now - 60n });
    const td = typedData(input, { deadline: now + 3600n, amount: 777n });
    const id = td.message.witness.intentId;
    const before = await balance(owner);
    await escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, await sign(td)));
    expect(await balance(owner)).toBe(before - 777n);
    expect((await lockOf(id)).refundAfter).toBe(now - 60n + REFUND_DELAY);

    await expectRevert(
      escrowClaim(node.rpcUrl, node.chainId, resolverKey, escrow, id, owner, preimage),
      'ClaimWindowClosed',
    );
    // anyone may trigger the refund; the owner is paid
    const hash = await escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner);
    expect(await balance(owner)).toBe(before);
    const receipt = await pub.getTransactionReceipt({ hash });
    const refunded = receipt.logs.filter((l) => l.topics[0] === SWAP_ESCROW_EVENTS.Refunded);
    expect(parseEventLogs({ abi: SWAP_ESCROW.abi, logs: refunded, eventName: 'Refunded' })[0]?.args).toEqual({
      intentId: id,
      owner,
    });
    expect(await lockOf(id)).toMatchObject({ state: 3 });
    await expectRevert(escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner), 'NotLocked');
  });

  it('the refund opens with block time: refund reverts until refundAfter, then succeeds once a block is mined past it', async () => {
    // block timestamps follow the wall clock but advance at least 1 s per block, so they may run ahead
    // of it after many transactions: count from the latest block. refundAfter = 4 s after it.
    const t0 = await latestTimestamp();
    const { secretHash } = secretPair('D');
    const input = intentInput({ secretHash, deadline: t0 + 4n - REFUND_DELAY });
    const td = typedData(input, { deadline: t0 + 3600n, amount: 5n });
    const id = td.message.witness.intentId;
    await escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, await sign(td)));
    const refundAfter = (await lockOf(id)).refundAfter;
    expect(refundAfter).toBe(t0 + 4n);
    await expectRevert(
      escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner),
      'RefundNotYetAvailable',
    );
    // eth_call / gas estimation run at the latest block's time: mine until it reaches refundAfter
    while ((await latestTimestamp()) < refundAfter) {
      await new Promise((r) => setTimeout(r, 250));
      await fetch(node.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_mine', params: [] }),
      });
    }
    const before = await balance(owner);
    await escrowRefund(node.rpcUrl, node.chainId, thirdKey, escrow, id, owner);
    expect(await balance(owner)).toBe(before + 5n);
    expect(await lockOf(id)).toMatchObject({ state: 3 });
  }, 20_000);

  it('an expired permit deadline reverts with SignatureExpired', async () => {
    const now = await latestTimestamp();
    const { secretHash } = secretPair('E');
    const td = typedData(intentInput({ secretHash, deadline: now - 10n }));
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, await sign(td))),
      'SignatureExpired',
    );
  });

  it('without the ERC-20 approval the token refuses the pull (its own reason is passed up)', async () => {
    const now = await latestTimestamp();
    const { secretHash } = secretPair('F');
    const td = typedData(intentInput({ secretHash, deadline: now + 3600n }));
    // signed by the owner, but `third` has no approval to SignatureTransfer: sign with third's key
    const signature = await sign(td, thirdKey);
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, signature, third)),
      'TestToken: allowance',
    );
  });
});

describe('SignatureTransfer directly', () => {
  it('accepts a 64-byte EIP-2098 signature; rejects high-s, v 0/1, bad lengths, wrong spender and too large amounts', async () => {
    const now = await latestTimestamp();
    const td = typedData(intentInput({ ...secretPair('G'), deadline: now + 3600n }), {
      spender: third,
      amount: 3n,
    });
    const sig = await sign(td);
    const { r, s, yParity } = parseSignature(sig);
    // high-s twin of the same signature (ecrecover would accept it; we do not)
    const highS =
      `0x${r.slice(2)}${(SECP256K1_N - BigInt(s)).toString(16).padStart(64, '0')}${yParity === 0 ? '1c' : '1b'}` as Hex;
    await expectRevert(directTransfer(thirdKey, td, highS, third), 'InvalidSignature');
    await expectRevert(
      directTransfer(thirdKey, td, `0x${sig.slice(2, 130)}${yParity === 0 ? '00' : '01'}` as Hex, third),
      'InvalidSignature',
    );
    await expectRevert(directTransfer(thirdKey, td, `${sig}00` as Hex, third), 'InvalidSignatureLength');
    await expectRevert(directTransfer(thirdKey, td, sig, third, 4n), 'InvalidAmount');
    // submitted by another spender than signed: the digest differs
    await expectRevert(directTransfer(resolverKey, td, sig, third), 'InvalidSigner');

    const compact = serializeCompactSignature(signatureToCompactSignature(parseSignature(sig)));
    expect((compact.length - 2) / 2).toBe(64);
    const before = await balance(third);
    await directTransfer(thirdKey, td, compact, third, 2n); // less than permitted is fine
    expect(await balance(third)).toBe(before + 2n);
  });

  it('invalidateUnorderedNonces burns nonces: a permit on a burnt nonce reverts with InvalidNonce', async () => {
    const now = await latestTimestamp();
    const nonce = (77n << 8n) | 5n;
    await send(ownerKey, permit2, SIGNATURE_TRANSFER.abi, 'invalidateUnorderedNonces', [77n, 1n << 5n]);
    expect(
      await pub.readContract({
        address: permit2,
        abi: SIGNATURE_TRANSFER.abi,
        functionName: 'nonceBitmap',
        args: [owner, 77n],
      }),
    ).toBe(1n << 5n);
    const td = typedData(intentInput({ ...secretPair('H'), deadline: now + 3600n }), {
      spender: third,
      nonce,
    });
    await expectRevert(directTransfer(thirdKey, td, await sign(td), third), 'InvalidNonce');
    // the neighbouring nonce in the same word is still free
    const td2 = typedData(intentInput({ ...secretPair('H2'), deadline: now + 3600n }), {
      spender: third,
      nonce: nonce + 1n,
    });
    await directTransfer(thirdKey, td2, await sign(td2), third);
  });
});

describe('Tron form (TIP-712) against the same contracts', () => {
  it('a TIP-712 signature over base58 addresses is accepted by SignatureTransfer through the escrow', async () => {
    const now = await latestTimestamp();
    const { preimage, secretHash } = secretPair('tron');
    const input = intentInput({ secretHash, deadline: now + 3600n });
    const nonce = 9_000_001n;
    const tron = (a: EvmAddress) => tronAddressFromHex(a);
    const td = buildTronPermit2TypedData({
      chainId: node.chainId, // 31337 < 2^32: the mask leaves it unchanged
      permit2Address: tron(permit2),
      token: tron(token),
      amount: 4_242n,
      spender: tron(escrow),
      nonce,
      deadline: input.deadline,
      witness: { ...input, resolver: tron(resolver) },
    });
    // the TIP-712 digest is the EIP-712 one with 20-byte addresses
    const evmTd = buildPermit2TypedData({
      chainId: node.chainId,
      permit2Address: permit2,
      token,
      amount: 4_242n,
      spender: escrow,
      nonce,
      deadline: input.deadline,
      witness: buildSwapIntentWitness(input),
    });
    expect(td.digest).toBe(evmTd.digest);

    // a Tron wallet signs the digest; Ledger-style v = 0/1 as it may arrive
    const raw = await privateKeyToAccount(ownerKey).sign({ hash: td.digest });
    const v01 = `${raw.slice(0, 130)}${raw.endsWith('1b') ? '00' : '01'}` as Hex;
    const { canonicalSignature } = await verifyTronPermit2Signature(td, v01, tron(owner));
    // the contract takes only v 27/28: the raw 0/1 form is refused, the service's canonical form accepted
    await expectRevert(
      escrowDeposit(node.rpcUrl, node.chainId, resolverKey, escrow, depositParams(td, v01)),
      'InvalidSignature',
    );
    const before = await balance(owner);
    await escrowDeposit(
      node.rpcUrl,
      node.chainId,
      resolverKey,
      escrow,
      depositParams(td, canonicalSignature),
    );
    expect(await balance(owner)).toBe(before - 4_242n);
    const id = td.message.witness.intentId;
    expect(await lockOf(id)).toMatchObject({ owner, resolver, amount: 4_242n, state: 1 });
    await escrowClaim(node.rpcUrl, node.chainId, resolverKey, escrow, id, owner, preimage);
    expect(await lockOf(id)).toMatchObject({ state: 2 });
  });
});
