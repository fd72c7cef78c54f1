import { sign as edSign, verify as edVerify, generateKeyPairSync } from 'node:crypto';
import { p2tr, Transaction, utils } from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import {
  affiliatePermit2TypedData,
  base58Encode,
  parseSolanaTransaction,
  permit2TypedData,
  signCosignApproval,
  signHtlcApproval,
  toAffiliateApproval,
  tronToEvmAddress,
} from './approvals.ts';

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

describe('htlc PSBT signing', () => {
  it('signs and finalizes exactly the listed inputs', () => {
    const priv = utils.randomPrivateKeyBytes();
    const pub = utils.pubSchnorr(priv);
    const pay = p2tr(pub);
    const tx = new Transaction();
    for (let i = 0; i < 2; i++) {
      tx.addInput({
        txid: new Uint8Array(32).fill(i + 1),
        index: 0,
        witnessUtxo: { script: pay.script, amount: 10_000n },
        tapInternalKey: pub,
      });
    }
    tx.addOutput({ script: pay.script, amount: 15_000n });
    const psbt = Buffer.from(tx.toPSBT()).toString('base64');
    const out = Transaction.fromPSBT(
      Buffer.from(signHtlcApproval({ psbt, inputs: [1] }, priv).psbt, 'base64'),
    );
    expect(out.getInput(0).finalScriptWitness).toBeUndefined();
    expect(out.getInput(1).finalScriptWitness?.[0]).toHaveLength(64);
    expect(() => signHtlcApproval({ psbt, inputs: [2] }, priv)).toThrow(/no input 2/);
    expect(() => signHtlcApproval({ psbt, inputs: [0] }, utils.randomPrivateKeyBytes())).toThrow();
  });
});

function compactU16(n: number): number[] {
  return n < 0x80 ? [n] : [(n & 0x7f) | 0x80, n >> 7];
}

describe('cosign signing', () => {
  const keys = [0, 1, 2].map(() => generateKeyPairSync('ed25519'));
  const raw = (k: (typeof keys)[number]) =>
    new Uint8Array(k.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32));
  const message = Uint8Array.from([
    0x80,
    2,
    0,
    1,
    ...compactU16(3),
    ...raw(keys[0]!),
    ...raw(keys[1]!),
    ...raw(keys[2]!),
    7,
    7,
    7,
  ]);
  const resolverSig = new Uint8Array(64).fill(9);
  const txHex = Buffer.from([...compactU16(2), ...resolverSig, ...new Uint8Array(64), ...message]).toString(
    'hex',
  );

  it('base58 is the Solana address alphabet', () => {
    expect(base58Encode(new Uint8Array(32))).toBe('11111111111111111111111111111111');
    expect(base58Encode(Uint8Array.from([0, 0, 1]))).toBe('112');
  });

  it('puts the user signature at position 1 and leaves position 0 alone', async () => {
    const user = keys[1]!;
    const body = await signCosignApproval(
      { transaction: txHex },
      {
        address: base58Encode(raw(user)),
        sign: (m) => new Uint8Array(edSign(null, m, user.privateKey)),
      },
    );
    const parsed = parseSolanaTransaction(body.cosign.transaction);
    expect(Buffer.from(parsed.signatures[0]!).equals(Buffer.from(resolverSig))).toBe(true);
    expect(edVerify(null, parsed.message, user.publicKey, parsed.signatures[1]!)).toBe(true);
    expect(Buffer.from(parsed.message).equals(Buffer.from(message))).toBe(true);
    expect(toAffiliateApproval(body)).toEqual({
      type: 'cosign',
      signed_data: { transaction: body.cosign.transaction, user_address: body.cosign.userAddress },
    });
  });

  it('refuses to sign for a key that is not at position 1', async () => {
    const other = keys[2]!;
    await expect(
      signCosignApproval(
        { transaction: txHex },
        { address: base58Encode(raw(other)), sign: (m) => new Uint8Array(edSign(null, m, other.privateKey)) },
      ),
    ).rejects.toThrow(/position 1/);
    expect(() => parseSolanaTransaction('02')).toThrow(/truncated/);
  });
});
