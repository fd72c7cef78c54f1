import { p2tr, p2wpkh, TAPROOT_UNSPENDABLE_KEY, Transaction, utils } from '@scure/btc-signer';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createTransactionMessage,
  generateKeyPairSigner,
  getTransactionEncoder,
  type Instruction,
  type KeyPairSigner,
  pipe,
  type SignatureBytes,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
  verifySignature,
} from '@solana/kit';
import { hashTypedData, keccak256, recoverTypedDataAddress, stringToBytes } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterEach, describe, expect, it, type Mock, vi } from 'vitest';
import { SigningCheckError } from '../signing-check.ts';
import {
  affiliatePermit2TypedData,
  base58Encode,
  type CosignExpectation,
  checkPermit2TypedData,
  decodeSolanaMessage,
  type HtlcApprovalToSign,
  type HtlcExpectation,
  type Permit2Expectation,
  parseSolanaTransaction,
  permit2TypedData,
  type SignableTypedData,
  signCosignApproval,
  signHtlcApproval,
  signPermit2Approval,
  toAffiliateApproval,
  tronToEvmAddress,
} from './approvals.ts';
import type { TypedDataJson } from './types.ts';

/** Runs `f`, expects a SigningCheckError with `code`, returns it. */
async function refusal(f: () => unknown, code: string): Promise<SigningCheckError> {
  let caught: unknown;
  try {
    await f();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(SigningCheckError);
  const err = caught as SigningCheckError;
  expect(err.name).toBe('SigningCheckError');
  expect(err.code, err.message).toBe(code);
  expect(err.message).toMatch(/; expected .+; received /);
  return err;
}

const clone = <T>(v: T): T => structuredClone(v);

const TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'W' },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
  W: [
    { name: 'id', type: 'bytes32' },
    { name: 'min', type: 'uint256' },
  ],
};

describe('permit2 typed data', () => {
  it('converts integer fields to bigint by the types, leaves EIP712Domain to the signer', () => {
    const td = permit2TypedData({
      typedData: {
        domain: {
          name: 'Permit2',
          chainId: 31337,
          verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3',
        },
        types: TYPES,
        primaryType: 'PermitWitnessTransferFrom',
        message: {
          permitted: { token: '0x1111111111111111111111111111111111111111', amount: '1000' },
          spender: '0x2222222222222222222222222222222222222222',
          nonce: '7',
          deadline: 1700000000,
          witness: { id: `0x${'00'.repeat(32)}`, min: '99' },
        },
      },
    });
    expect(td.domain.chainId).toBe(31337n);
    expect(td.types).not.toHaveProperty('EIP712Domain');
    expect(td.message).toEqual({
      permitted: { token: '0x1111111111111111111111111111111111111111', amount: 1000n },
      spender: '0x2222222222222222222222222222222222222222',
      nonce: 7n,
      deadline: 1700000000n,
      witness: { id: `0x${'00'.repeat(32)}`, min: 99n },
    });
  });

  it('builds Surface B typed data by the affiliate rules, Tron addresses as 20-byte hex', () => {
    expect(tronToEvmAddress('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t')).toBe(
      '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c',
    );
    expect(() => tronToEvmAddress('0x12')).toThrow();
    // one character off: the base58check checksum catches it
    expect(() => tronToEvmAddress('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u')).toThrow(/not a Tron address/);
    const td = affiliatePermit2TypedData({
      params: {
        escrow_contract_address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
        nonce: 5,
        additional_data: {
          domain: {
            name: 'Permit2',
            chainId: 728126428,
            verifyingContract: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
            version: '1',
          },
          types: TYPES,
          witness: { id: `0x${'11'.repeat(32)}`, min: '3' },
        },
      },
      sourceToken: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
      sourceAmountLots: '42',
      deadlineSecs: 99,
    });
    expect(td.domain).toEqual({
      name: 'Permit2',
      chainId: 728126428n,
      verifyingContract: '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c',
    });
    expect(td.message).toMatchObject({
      spender: '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c',
      nonce: 5n,
      deadline: 99n,
      permitted: { amount: 42n },
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Permit2
// ---------------------------------------------------------------------------------------------

const SWAP_TYPES = {
  EIP712Domain: TYPES.EIP712Domain,
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'SwapIntent' },
  ],
  TokenPermissions: TYPES.TokenPermissions,
  SwapIntent: [
    { name: 'intentId', type: 'bytes32' },
    { name: 'resolver', type: 'address' },
    { name: 'secretHash', type: 'bytes32' },
    { name: 'destChainId', type: 'uint256' },
    { name: 'destToken', type: 'bytes32' },
    { name: 'destAddress', type: 'bytes32' },
    { name: 'minAmountOut', type: 'uint256' },
    { name: 'maxAmountOut', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
};

const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
const ESCROW = '0x31Abdc5caf4f704864C85FF83A3438db804710B6';
const USDC = '0x1111111111111111111111111111111111111111';
const ATTACKER = '0x6666666666666666666666666666666666666666';
const DEST = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';
const DEADLINE = 1_900_000_000;

/** A Surface A `permit2.typedData` as the service hands it out (JSON: integers as strings / numbers). */
function permit2Json(): TypedDataJson {
  return {
    domain: { name: 'Permit2', chainId: 31337, verifyingContract: PERMIT2 },
    types: SWAP_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message: {
      permitted: { token: USDC, amount: '250000000' },
      spender: ESCROW,
      nonce: '7',
      deadline: String(DEADLINE),
      witness: {
        intentId: `0x${'00'.repeat(16)}123e4567e89b12d3a456426614174000`,
        resolver: '0x2222222222222222222222222222222222222222',
        secretHash: `0x${'ab'.repeat(32)}`,
        destChainId: '1',
        destToken: keccak256(stringToBytes('BTC')),
        destAddress: keccak256(stringToBytes(DEST)),
        minAmountOut: '99000',
        maxAmountOut: '100000',
        deadline: String(DEADLINE),
      },
    },
  };
}

const PERMIT2_EXPECT: Permit2Expectation = {
  chainId: 31337n,
  permit2Address: PERMIT2,
  escrowAddress: ESCROW.toLowerCase(),
  token: USDC,
  amount: 250_000_000n,
  maxDeadline: DEADLINE,
  destAddress: DEST,
};

describe('signPermit2Approval checks the typed data before signing', () => {
  const account = privateKeyToAccount(generatePrivateKey());
  const spy = (): Mock<(td: SignableTypedData) => Promise<string>> =>
    vi.fn((td: SignableTypedData) => account.signTypedData(td as never));

  it('signs typed data that matches the expectation (the signature recovers to the account)', async () => {
    const signTypedData = spy();
    const approval = { typedData: permit2Json() };
    const body = await signPermit2Approval(approval, { signTypedData }, PERMIT2_EXPECT);
    expect(signTypedData).toHaveBeenCalledTimes(1);
    const td = permit2TypedData(approval);
    expect(await recoverTypedDataAddress({ ...td, signature: body.permit2 as `0x${string}` } as never)).toBe(
      account.address,
    );
    // chainId as a number, no optional checks: fine too
    const { maxDeadline: _m, destAddress: _d, ...minimal } = PERMIT2_EXPECT;
    await signPermit2Approval(approval, { signTypedData }, { ...minimal, chainId: 31337 });
    // an EVM destination is hashed lower-cased, whatever case the caller writes it in
    const evmDest = permit2Json();
    (evmDest.message.witness as Record<string, unknown>).destAddress = keccak256(
      stringToBytes(ESCROW.toLowerCase()),
    );
    await signPermit2Approval(
      { typedData: evmDest },
      { signTypedData },
      { ...PERMIT2_EXPECT, destAddress: ESCROW },
    );
  });

  it('Surface B: the witness as Hotpot widget signs it (minAmountOut, maxAmountOut, deadline re-stringified via BigInt) gives the Surface A digest', () => {
    const a = permit2Json();
    const m = a.message as { permitted: { amount: string }; nonce: string; witness: Record<string, unknown> };
    const w = m.witness;
    const widgetWitness = {
      ...w,
      minAmountOut: BigInt(w.minAmountOut as string).toString(),
      maxAmountOut: BigInt(w.maxAmountOut as string).toString(),
      deadline: BigInt(w.deadline as string).toString(),
    };
    const b = affiliatePermit2TypedData({
      params: {
        escrow_contract_address: ESCROW,
        nonce: Number(m.nonce),
        additional_data: { domain: a.domain, types: a.types, witness: widgetWitness },
      },
      sourceToken: USDC,
      sourceAmountLots: m.permitted.amount,
      deadlineSecs: DEADLINE,
    });
    checkPermit2TypedData(b, PERMIT2_EXPECT);
    expect(hashTypedData(b as never)).toBe(hashTypedData(permit2TypedData({ typedData: a }) as never));
  });

  const cases: [string, string, (td: TypedDataJson) => void, Partial<Permit2Expectation>?][] = [
    ['wrong chain id', 'chain_id', (td) => (td.domain.chainId = 1)],
    ['wrong verifying contract', 'verifying_contract', (td) => (td.domain.verifyingContract = ATTACKER)],
    ['domain not named Permit2', 'domain_name', (td) => (td.domain.name = 'Permit3')],
    ['extra domain field', 'domain', (td) => (td.domain.version = '1')],
    ['other primary type', 'primary_type', (td) => (td.primaryType = 'TokenPermissions')],
    [
      'PermitWitnessTransferFrom fields renamed',
      'types',
      (td) => {
        td.types = { ...td.types, PermitWitnessTransferFrom: clone(SWAP_TYPES.PermitWitnessTransferFrom) };
        td.types.PermitWitnessTransferFrom![1] = { name: 'operator', type: 'address' };
        (td.message as Record<string, unknown>).operator = ESCROW;
      },
    ],
    ['spender ≠ escrow (the resolver or an attacker)', 'spender', (td) => (td.message.spender = ATTACKER)],
    ['other token', 'token', (td) => ((td.message.permitted as Record<string, unknown>).token = ATTACKER)],
    [
      'other amount',
      'amount',
      (td) => ((td.message.permitted as Record<string, unknown>).amount = '250000001'),
    ],
    ['deadline too late', 'deadline', (td) => (td.message.deadline = String(DEADLINE + 1))],
    [
      'witness destination of someone else',
      'dest_address',
      (td) =>
        ((td.message.witness as Record<string, unknown>).destAddress = keccak256(
          stringToBytes('bcrt1qattacker'),
        )),
    ],
  ];
  it.each(cases)('refuses %s (%s) without calling the signer', async (_what, code, mutate, over) => {
    const typedData = permit2Json();
    mutate(typedData);
    const signTypedData = spy();
    await refusal(
      () => signPermit2Approval({ typedData }, { signTypedData }, { ...PERMIT2_EXPECT, ...over }),
      code,
    );
    expect(signTypedData).not.toHaveBeenCalled();
  });

  it('compares Tron addresses in 20-byte form; a mistyped Tron address in expect throws', async () => {
    const tron = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';
    const hexForm = tronToEvmAddress(tron);
    const typedData = permit2Json();
    typedData.domain.chainId = 728126428;
    typedData.domain.verifyingContract = hexForm;
    typedData.message.spender = hexForm;
    (typedData.message.permitted as Record<string, unknown>).token = hexForm;
    const signTypedData = spy();
    const expectTron = {
      ...PERMIT2_EXPECT,
      chainId: 728126428,
      permit2Address: tron,
      escrowAddress: tron,
      token: tron,
    };
    await signPermit2Approval({ typedData }, { signTypedData }, expectTron);
    expect(signTypedData).toHaveBeenCalledTimes(1);
    await expect(
      signPermit2Approval(
        { typedData },
        { signTypedData },
        { ...expectTron, escrowAddress: `${tron.slice(0, -1)}u` },
      ),
    ).rejects.toThrow(/escrowAddress is not a 0x address or a Tron address/);
    expect(signTypedData).toHaveBeenCalledTimes(1);
  });
});

// ---------------------------------------------------------------------------------------------
// HTLC (Bitcoin)
// ---------------------------------------------------------------------------------------------

const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };
const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Minimal CScriptNum push (as packages/chains/src/btc/htlc.ts writes it). */
function pushNum(n: number): number[] {
  if (n >= 1 && n <= 16) return [0x50 + n];
  const b: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) b.push(v % 256);
  if ((b[b.length - 1] ?? 0) & 0x80) b.push(0);
  return [b.length, ...b];
}

/** The HTLC leaves and P2TR output, built the way packages/chains/src/btc/htlc.ts `buildHtlc` does. */
function htlcOf(p: {
  secretHash: Uint8Array;
  resolver: Uint8Array;
  user: Uint8Array;
  locktime: number;
  internal?: Uint8Array;
}) {
  const claim = Uint8Array.from([0xa8, 0x20, ...p.secretHash, 0x88, 0x20, ...p.resolver, 0xac]);
  const refund = Uint8Array.from([...pushNum(p.locktime), 0xb1, 0x75, 0x20, ...p.user, 0xac]);
  const pay = p2tr(
    p.internal ?? TAPROOT_UNSPENDABLE_KEY,
    [{ script: claim }, { script: refund }],
    REGTEST,
    true,
  );
  return { claim, refund, address: pay.address!, script: pay.script };
}

const LOCKTIME = 1_900_000_000;
const SECRET_HASH = new Uint8Array(32).fill(3);

interface HtlcFixture {
  priv: Uint8Array;
  approval: HtlcApprovalToSign;
  expect: HtlcExpectation;
}

/**
 * A funding PSBT like buildHtlcFundingPsbt's: 2 inputs of the user's P2TR (60 000 sats each),
 * output 0 = HTLC 100 000, output 1 = change 19 000 to the user's own address (fee 1 000).
 */
function htlcFixture(
  o: {
    refundKey?: Uint8Array;
    locktime?: number;
    internal?: Uint8Array;
    htlcAmount?: bigint;
    extraOutputs?: { script: Uint8Array; amount: bigint }[];
    inputScript?: Uint8Array;
    change?: bigint;
    claim?: Uint8Array;
  } = {},
): HtlcFixture {
  const priv = new Uint8Array(32).fill(7);
  const user = utils.pubSchnorr(priv);
  const resolver = utils.pubSchnorr(new Uint8Array(32).fill(8));
  const htlc = htlcOf({
    secretHash: SECRET_HASH,
    resolver,
    user: o.refundKey ?? user,
    locktime: o.locktime ?? LOCKTIME,
    ...(o.internal ? { internal: o.internal } : {}),
  });
  const own = p2tr(user, undefined, REGTEST);
  const tx = new Transaction({ version: 2, lockTime: 0 });
  for (let i = 0; i < 2; i++) {
    tx.addInput({
      txid: new Uint8Array(32).fill(i + 1),
      index: i,
      ...(i === 1 && o.inputScript
        ? { witnessUtxo: { script: o.inputScript, amount: 60_000n } }
        : { witnessUtxo: { script: own.script, amount: 60_000n }, tapInternalKey: user }),
    });
  }
  tx.addOutput({ script: htlc.script, amount: o.htlcAmount ?? 100_000n });
  tx.addOutput({ script: own.script, amount: o.change ?? 19_000n });
  for (const x of o.extraOutputs ?? []) tx.addOutput(x);
  return {
    priv,
    approval: {
      psbt: Buffer.from(tx.toPSBT(0)).toString('base64'),
      inputs: [0, 1],
      htlcAddress: htlc.address,
      claimScript: hexOf(o.claim ?? htlc.claim),
      refundScript: hexOf(htlc.refund),
      locktime: o.locktime ?? LOCKTIME,
      htlcVout: 0,
    },
    expect: {
      amountSats: 100_000n,
      maxFeeSats: 2_000n,
      minLocktime: 1_800_000_000,
      maxLocktime: 2_000_000_000,
      secretHash: `0x${hexOf(SECRET_HASH)}`,
    },
  };
}

describe('signHtlcApproval checks the funding PSBT before signing', () => {
  afterEach(() => vi.restoreAllMocks());
  const signSpy = () => vi.spyOn(Transaction.prototype, 'signIdx');
  // P2WPKH of the secp256k1 generator point: someone else's address
  const stranger = p2wpkh(
    Buffer.from('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', 'hex'),
    REGTEST,
  );

  it('rebuilds the HTLC exactly as the chains module does (fixed vector of buildHtlc)', () => {
    const h = htlcOf({
      secretHash: SECRET_HASH,
      resolver: utils.pubSchnorr(new Uint8Array(32).fill(8)),
      user: utils.pubSchnorr(new Uint8Array(32).fill(7)),
      locktime: LOCKTIME,
    });
    // packages/chains buildHtlc({ secretHash: 03…03, resolver key of 08…08, user key of 07…07, locktime 1.9e9, regtest })
    expect(h.address).toBe('bcrt1petdjxd24fsgejv0ghet0swds0hak9mvpwjlhevmqmrapu5araulsah5c6f');
    expect(hexOf(h.refund)).toBe(
      '0400b33f71b17520989c0b76cb563971fdc9bef31ec06c3560f3249d6ee9e5d83c57625596e05f6fac',
    );
  });

  it('signs and finalizes exactly the listed inputs of a PSBT that matches', () => {
    const f = htlcFixture();
    const spy = signSpy();
    const out = Transaction.fromPSBT(
      Buffer.from(signHtlcApproval(f.approval, f.priv, f.expect).psbt, 'base64'),
    );
    expect(spy).toHaveBeenCalledTimes(2);
    expect(out.getInput(0).finalScriptWitness?.[0]).toHaveLength(64);
    expect(out.getInput(1).finalScriptWitness?.[0]).toHaveLength(64);
    // only input 1 listed: input 0 stays unsigned
    const one = Transaction.fromPSBT(
      Buffer.from(
        signHtlcApproval({ ...f.approval, inputs: [1] }, f.priv, { amountSats: 100_000n }).psbt,
        'base64',
      ),
    );
    expect(one.getInput(0).finalScriptWitness).toBeUndefined();
    expect(one.getInput(1).finalScriptWitness?.[0]).toHaveLength(64);
    // an explicit change address
    const own = p2tr(utils.pubSchnorr(f.priv), undefined, REGTEST).address!;
    signHtlcApproval(f.approval, f.priv, { ...f.expect, changeAddress: own, network: 'regtest' });
  });

  const attacker = utils.pubSchnorr(new Uint8Array(32).fill(0x66));
  const cases: [string, string, () => HtlcFixture, Partial<HtlcExpectation>?][] = [
    ['a raised HTLC amount', 'htlc_amount', () => htlcFixture({ htlcAmount: 110_000n, change: 9_000n })],
    [
      'an extra output to someone else',
      'unexpected_output',
      () => htlcFixture({ change: 9_000n, extraOutputs: [{ script: stranger.script, amount: 10_000n }] }),
    ],
    [
      'an HTLC address that is not the output of the leaves (attacker internal key: a key path)',
      'htlc_address',
      () => htlcFixture({ internal: attacker }),
    ],
    ['a refund leaf with another key', 'htlc_refund_key', () => htlcFixture({ refundKey: attacker })],
    ['a refund locktime before minLocktime', 'htlc_locktime', () => htlcFixture({ locktime: 1_700_000_000 })],
    ['a refund locktime after maxLocktime', 'htlc_locktime', () => htlcFixture({ locktime: 2_100_000_000 })],
    [
      'a block-height locktime when a time is expected',
      'htlc_locktime',
      () => htlcFixture({ locktime: 800_000 }),
    ],
    [
      'a claim leaf without the hash lock',
      'htlc_claim_script',
      () => htlcFixture({ claim: Uint8Array.from([0x20, ...attacker, 0xac]) }),
    ],
    [
      'a claim leaf locked to another secret hash',
      'htlc_secret_hash',
      () =>
        htlcFixture({
          claim: Uint8Array.from([0xa8, 0x20, ...new Uint8Array(32).fill(4), 0x88, 0x20, ...attacker, 0xac]),
        }),
    ],
    [
      'a listed input that is not the signer’s',
      'input_owner',
      () => htlcFixture({ inputScript: stranger.script }),
    ],
    ['a fee above maxFeeSats', 'fee', () => htlcFixture({ change: 10_000n })],
    [
      'a second output to the HTLC',
      'htlc_output',
      () => {
        const f = htlcFixture();
        const tx = Transaction.fromPSBT(Buffer.from(f.approval.psbt, 'base64'));
        tx.addOutput({ script: tx.getOutput(0).script!, amount: 1_000n });
        return { ...f, approval: { ...f.approval, psbt: Buffer.from(tx.toPSBT(0)).toString('base64') } };
      },
    ],
    [
      'change to an address other than expect.changeAddress',
      'unexpected_output',
      () => htlcFixture(),
      { changeAddress: p2tr(attacker, undefined, REGTEST).address! },
    ],
  ];
  it.each(cases)('refuses %s (%s) and signs nothing', async (_what, code, make, over) => {
    const f = make();
    const spy = signSpy();
    await refusal(() => signHtlcApproval(f.approval, f.priv, { ...f.expect, ...over }), code);
    expect(spy).not.toHaveBeenCalled();
  });

  it('refuses an input index that does not exist', async () => {
    const f = htlcFixture();
    const err = await refusal(
      () => signHtlcApproval({ ...f.approval, inputs: [2] }, f.priv, f.expect),
      'input_index',
    );
    expect(err.message).toMatch(/no input 2/);
  });
});

// ---------------------------------------------------------------------------------------------
// Cosign (Solana)
// ---------------------------------------------------------------------------------------------

const SYSTEM = '11111111111111111111111111111111' as Address;
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address;
const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111' as Address;

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

function memoIx(user: Address, text = 'rgbx:intent:123e4567-e89b-12d3-a456-426614174000'): Instruction {
  return {
    programAddress: MEMO,
    accounts: [{ address: user, role: AccountRole.READONLY_SIGNER }],
    data: new TextEncoder().encode(text),
  };
}

/** The wire transaction (hex, empty signature slots) of a v0 message, as buildCosignTransaction makes it. */
function cosignTx(feePayer: Address, instructions: Instruction[]): string {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(feePayer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: base58Encode(new Uint8Array(32).fill(5)) as Blockhash, lastValidBlockHeight: 100n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return Buffer.from(getTransactionEncoder().encode(compileTransaction(message))).toString('hex');
}

const [resolverKp, user, escrowKp, attackerKp] = await Promise.all([
  generateKeyPairSigner(),
  generateKeyPairSigner(),
  generateKeyPairSigner(),
  generateKeyPairSigner(),
]);

describe('signCosignApproval checks the transaction before signing', () => {
  const resolver = resolverKp!.address;
  const escrow = escrowKp!.address;
  const attacker = attackerKp!.address;
  const LAMPORTS = 2_500_000_000n;
  const good = () => cosignTx(resolver, [transferIx(user!.address, escrow, LAMPORTS), memoIx(user!.address)]);
  const EXPECT: CosignExpectation = { destination: escrow, lamports: LAMPORTS, feePayer: resolver };
  const signerOf = (kp: KeyPairSigner) => ({
    address: kp.address as string,
    sign: vi.fn((m: Uint8Array) => signBytes(kp.keyPair.privateKey, m)),
  });

  it('base58 is the Solana address alphabet', () => {
    expect(base58Encode(new Uint8Array(32))).toBe('11111111111111111111111111111111');
    expect(base58Encode(Uint8Array.from([0, 0, 1]))).toBe('112');
  });

  it('decodes the v0 message: keys, the transfer and the memo', () => {
    const msg = decodeSolanaMessage(parseSolanaTransaction(good()).message);
    expect(msg.version).toBe(0);
    expect(msg.header[0]).toBe(2);
    expect(base58Encode(msg.accountKeys[0]!)).toBe(resolver);
    expect(base58Encode(msg.accountKeys[1]!)).toBe(user!.address);
    expect(msg.instructions).toHaveLength(2);
    expect(msg.addressTableLookups).toBe(0);
    expect(() => decodeSolanaMessage(Uint8Array.from([0x80, 2, 0, 1, 3, 7, 7, 7]))).toThrow(/truncated/);
  });

  it('puts the user signature at position 1 and leaves position 0 alone', async () => {
    const txHex = good();
    const signer = signerOf(user!);
    const body = await signCosignApproval({ transaction: txHex }, signer, EXPECT);
    expect(signer.sign).toHaveBeenCalledTimes(1);
    const parsed = parseSolanaTransaction(body.cosign.transaction);
    expect(parsed.signatures[0]!.every((b) => b === 0)).toBe(true);
    expect(
      await verifySignature(user!.keyPair.publicKey, parsed.signatures[1]! as SignatureBytes, parsed.message),
    ).toBe(true);
    expect(Buffer.from(parsed.message).equals(Buffer.from(parseSolanaTransaction(txHex).message))).toBe(true);
    expect(toAffiliateApproval(body)).toEqual({
      type: 'cosign',
      signed_data: { transaction: body.cosign.transaction, user_address: body.cosign.userAddress },
    });
    // without feePayer the fee payer is not checked; a memo is optional
    const noMemo = cosignTx(attacker, [transferIx(user!.address, escrow, LAMPORTS)]);
    await signCosignApproval({ transaction: noMemo }, signerOf(user!), {
      destination: escrow,
      lamports: LAMPORTS,
    });
  });

  const cases: [string, string, () => string][] = [
    [
      'an extra instruction (a second transfer to the attacker)',
      'cosign_instruction',
      () =>
        cosignTx(resolver, [
          transferIx(user!.address, escrow, LAMPORTS),
          memoIx(user!.address),
          transferIx(user!.address, attacker, 1n),
        ]),
    ],
    [
      'an extra instruction of another program',
      'cosign_instruction',
      () =>
        cosignTx(resolver, [
          transferIx(user!.address, escrow, LAMPORTS),
          { programAddress: COMPUTE_BUDGET, data: Uint8Array.from([3, 1, 0, 0, 0, 0, 0, 0, 0]) },
        ]),
    ],
    [
      'a second memo',
      'cosign_instruction',
      () =>
        cosignTx(resolver, [
          transferIx(user!.address, escrow, LAMPORTS),
          memoIx(user!.address),
          memoIx(user!.address, 'x'),
        ]),
    ],
    ['no transfer at all', 'cosign_instruction', () => cosignTx(resolver, [memoIx(user!.address)])],
    [
      'another destination',
      'cosign_destination',
      () => cosignTx(resolver, [transferIx(user!.address, attacker, LAMPORTS), memoIx(user!.address)]),
    ],
    [
      'other lamports',
      'cosign_lamports',
      () => cosignTx(resolver, [transferIx(user!.address, escrow, LAMPORTS + 1n), memoIx(user!.address)]),
    ],
    [
      'another fee payer (the user would not pay, but it is not the resolver)',
      'cosign_fee_payer',
      () => cosignTx(attacker, [transferIx(user!.address, escrow, LAMPORTS), memoIx(user!.address)]),
    ],
    [
      'a transfer that does not debit the signer',
      'cosign_source',
      () => cosignTx(resolver, [transferIx(resolver, escrow, LAMPORTS), memoIx(user!.address)]),
    ],
    [
      'a message that does not decode',
      'cosign_message',
      () => {
        const t = good();
        return `${t}00`;
      },
    ],
  ];
  it.each(cases)('refuses %s (%s) without calling the signer', async (_what, code, make) => {
    const signer = signerOf(user!);
    await refusal(() => signCosignApproval({ transaction: make() }, signer, EXPECT), code);
    expect(signer.sign).not.toHaveBeenCalled();
  });

  it('refuses to sign for a key that is not at position 1', async () => {
    const signer = signerOf(attackerKp!);
    const err = await refusal(
      () => signCosignApproval({ transaction: good() }, signer, EXPECT),
      'cosign_signer',
    );
    expect(err.message).toMatch(/position 1/);
    expect(signer.sign).not.toHaveBeenCalled();
    expect(() => parseSolanaTransaction('02')).toThrow(/truncated/);
  });
});
