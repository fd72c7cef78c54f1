import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schnorr } from '@noble/curves/secp256k1.js';
import { Transaction } from '@scure/btc-signer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hex } from '../bytes.ts';
import { VerificationError } from '../errors.ts';
import {
  buildHtlc,
  buildHtlcClaimTx,
  buildHtlcFundingPsbt,
  buildHtlcRefundTx,
  generatePreimage,
  type Htlc,
  type Prevout,
  secretHashOf,
  TAPSCRIPT_LEAF_VERSION,
  verifySignedFundingPsbt,
} from './index.ts';
import { parsePsbt, testWallet, toB64, userSigns } from './test-fixtures.ts';

/** The part of `@rgbx/devnet`'s Devnet this test uses. */
interface Devnet {
  fund(address: string, btc: string, opts?: { confirm?: boolean }): Promise<string>;
  mine(blocks: number, address?: string): Promise<string[]>;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

// @rgbx/devnet depends on @rgbx/chains, so a static import here would close a project-reference cycle
// for `tsc -b`; the test loads it at run time instead (Vitest resolves the workspace TypeScript source).
const DEVNET_MODULE = '@rgbx/devnet';
async function startDevnet(dir: string): Promise<Devnet> {
  const mod = (await import(DEVNET_MODULE)) as { startDevnet(o: { dir: string }): Promise<Devnet> };
  return mod.startDevnet({ dir });
}

interface MempoolAccept {
  txid: string;
  allowed: boolean;
  'reject-reason'?: string;
}

const user = testWallet(0x41);
const userWpkh = testWallet(0x41); // same key, P2WPKH address
const resolver = testWallet(0x42);

let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rgbx-htlc-'));
  devnet = await startDevnet(dir);
});

afterAll(async () => {
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Funds `script`'s address and returns the UTXO as the service would have found it. */
async function fundUtxo(address: string, btc: string): Promise<Prevout> {
  const txid = await devnet.fund(address, btc, { confirm: true });
  const tx = await devnet.rpc<{ vout: { n: number; scriptPubKey: { address?: string; hex: string } }[] }>(
    'getrawtransaction',
    [txid, true],
  );
  const out = tx.vout.find((o) => o.scriptPubKey.address === address)!;
  const utxo = await devnet.rpc<{ value: number } | null>('gettxout', [txid, out.n]);
  expect(utxo).not.toBeNull();
  // amounts as integer sats: the test funds round BTC decimals, converted here without floats
  const [whole, frac = ''] = btc.split('.');
  return {
    txid,
    vout: out.n,
    value: BigInt(whole!) * 100_000_000n + BigInt(frac.padEnd(8, '0')),
    script: out.scriptPubKey.hex,
  };
}

async function mempoolAccept(txHex: string): Promise<MempoolAccept> {
  const [r] = await devnet.rpc<MempoolAccept[]>('testmempoolaccept', [[txHex]]);
  return r!;
}

async function lockFunds(htlc: Htlc, amount: bigint): Promise<{ txid: string; vout: number }> {
  const utxos = [
    await fundUtxo(user.p2trAddress, '0.0006'),
    await fundUtxo(userWpkh.p2wpkhAddress, '0.0007'),
  ];
  const f = buildHtlcFundingPsbt({
    htlc,
    amount,
    utxos,
    userPubkey: user.pubkey,
    changeAddress: user.p2trAddress,
    feeRate: 2n,
    coinSelection: 'all',
  });
  // The user's wallet signs exactly the listed inputs with @scure/btc-signer.
  const signed = userSigns(f.psbtBase64, f.inputsToSign, user.privateKey);
  const verified = verifySignedFundingPsbt({
    unsignedPsbtBase64: f.psbtBase64,
    signedPsbtBase64: signed,
    inputsToSign: f.inputsToSign,
    prevouts: f.prevouts,
    userPubkey: user.pubkey,
  });
  expect(verified.signatures.map((s) => s.type)).toEqual(['p2tr', 'p2wpkh']);
  const accept = await mempoolAccept(verified.txHex!);
  expect(accept).toMatchObject({ txid: f.txid, allowed: true });
  // the fee the builder promised is what bitcoind sees, within the signature-size estimate
  const sent = await devnet.rpc<string>('sendrawtransaction', [verified.txHex]);
  expect(sent).toBe(f.txid);
  await devnet.mine(1);
  return { txid: f.txid, vout: f.htlcVout };
}

describe('Taproot HTLC on a regtest devnet', () => {
  it('funding PSBT signed by the user verifies, is accepted by bitcoind, and the resolver claims with the preimage', async () => {
    const height = await devnet.rpc<number>('getblockcount');
    const preimage = generatePreimage();
    const htlc = buildHtlc({
      secretHash: secretHashOf(preimage),
      resolverPubkey: resolver.pubkey,
      userPubkey: user.pubkey,
      locktime: height + 50,
      network: 'regtest',
    });
    const amount = 100_000n;
    const { txid, vout } = await lockFunds(htlc, amount);
    const locked = await devnet.rpc<{ value: number; scriptPubKey: { address: string } }>('gettxout', [
      txid,
      vout,
    ]);
    expect(locked.scriptPubKey.address).toBe(htlc.address);

    // The user cannot refund before the lock time.
    const early = buildHtlcRefundTx({
      htlc,
      fundingTxid: txid,
      vout,
      amount,
      destinationAddress: user.p2trAddress,
      feeRate: 2n,
      userPrivateKey: user.privateKey,
    });
    expect(await mempoolAccept(early.txHex)).toMatchObject({ allowed: false, 'reject-reason': 'non-final' });

    // A claim with a wrong preimage (hand-built: the builder refuses) is rejected by script evaluation.
    const bad = new Transaction({ allowUnknownOutputs: true });
    bad.addInput({ txid, index: vout, witnessUtxo: { script: htlc.outputScript, amount } });
    bad.addOutput({ script: resolver.p2trScript, amount: amount - 1_000n });
    const digest = bad.preimageWitnessV1(
      0,
      [htlc.outputScript],
      0,
      [amount],
      undefined,
      htlc.claimScript,
      TAPSCRIPT_LEAF_VERSION,
    );
    bad.updateInput(
      0,
      {
        finalScriptWitness: [
          schnorr.sign(digest, resolver.privateKey),
          new Uint8Array(32),
          htlc.claimScript,
          htlc.claimControlBlock,
        ],
      },
      true,
    );
    const badAccept = await mempoolAccept(hex(bad.extract()));
    expect(badAccept.allowed).toBe(false);
    expect(badAccept['reject-reason']).toMatch(/mandatory-script-verify-flag-failed|EQUALVERIFY/);

    const claim = buildHtlcClaimTx({
      htlc,
      fundingTxid: txid,
      vout,
      amount,
      destinationAddress: resolver.p2trAddress,
      feeRate: 2n,
      preimage,
      resolverPrivateKey: resolver.privateKey,
    });
    expect(await mempoolAccept(claim.txHex)).toMatchObject({ txid: claim.txid, allowed: true });
    expect(await devnet.rpc<string>('sendrawtransaction', [claim.txHex])).toBe(claim.txid);
    await devnet.mine(1);
    const confirmed = await devnet.rpc<{ confirmations: number; vin: { txinwitness: string[] }[] }>(
      'getrawtransaction',
      [claim.txid, true],
    );
    expect(confirmed.confirmations).toBe(1);
    // the preimage is public on chain once claimed: the second witness element
    expect(confirmed.vin[0]!.txinwitness[1]).toBe(hex(preimage));
    expect(await devnet.rpc('gettxout', [txid, vout])).toBeNull();
  });

  it('the user refunds after the lock time (and not one block before)', async () => {
    const height = await devnet.rpc<number>('getblockcount');
    const locktime = height + 8;
    const htlc = buildHtlc({
      secretHash: secretHashOf(generatePreimage()),
      resolverPubkey: resolver.pubkey,
      userPubkey: user.pubkey,
      locktime,
      network: 'regtest',
    });
    const amount = 90_000n;
    const { txid, vout } = await lockFunds(htlc, amount); // mines 3 blocks (2 fundings + 1)
    const refund = buildHtlcRefundTx({
      htlc,
      fundingTxid: txid,
      vout,
      amount,
      destinationAddress: user.p2wpkhAddress,
      feeRate: 3n,
      userPrivateKey: user.privateKey,
    });
    // Mine until the next block's height equals the lock time: nLockTime = locktime is still non-final.
    await devnet.mine(locktime - 1 - (await devnet.rpc<number>('getblockcount')));
    expect(await mempoolAccept(refund.txHex)).toMatchObject({ allowed: false, 'reject-reason': 'non-final' });
    await devnet.mine(1);
    expect(await mempoolAccept(refund.txHex)).toMatchObject({ txid: refund.txid, allowed: true });
    expect(await devnet.rpc<string>('sendrawtransaction', [refund.txHex])).toBe(refund.txid);
    await devnet.mine(1);
    const out = await devnet.rpc<{ vout: { value: number; scriptPubKey: { address: string } }[] }>(
      'getrawtransaction',
      [refund.txid, true],
    );
    expect(out.vout[0]!.scriptPubKey.address).toBe(user.p2wpkhAddress);
  });

  it('a tampered PSBT built on real UTXOs is rejected before anything reaches the chain', async () => {
    const htlc = buildHtlc({
      secretHash: secretHashOf(generatePreimage()),
      resolverPubkey: resolver.pubkey,
      userPubkey: user.pubkey,
      locktime: 10_000,
      network: 'regtest',
    });
    const utxos = [await fundUtxo(user.p2trAddress, '0.002')];
    const f = buildHtlcFundingPsbt({
      htlc,
      amount: 150_000n,
      utxos,
      userPubkey: user.pubkey,
      changeAddress: user.p2trAddress,
      feeRate: 1n,
    });
    const t = parsePsbt(f.psbtBase64);
    // the wallet changes the change amount: not the transaction the service built and stored
    t.updateOutput(1, { amount: t.getOutput(1).amount! - 10_000n });
    const signed = userSigns(toB64(t), [0], user.privateKey);
    let err: unknown;
    try {
      verifySignedFundingPsbt({
        unsignedPsbtBase64: f.psbtBase64,
        signedPsbtBase64: signed,
        inputsToSign: f.inputsToSign,
        prevouts: f.prevouts,
        userPubkey: user.pubkey,
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(VerificationError);
    expect((err as VerificationError).code).toBe('output_amount');
  });
});
