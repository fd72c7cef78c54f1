/**
 * Test-only helpers shared by the Bitcoin HTLC tests (a user wallet signing with @scure/btc-signer,
 * as a real client would). Not exported from the package.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p2tr, p2wpkh, Transaction } from '@scure/btc-signer';
import { hex } from '../bytes.ts';
import { btcSignerNetwork } from './htlc.ts';

export interface TestWallet {
  privateKey: Uint8Array;
  /** 33-byte compressed */
  pubkey: Uint8Array;
  xonly: Uint8Array;
  p2trScript: Uint8Array;
  p2trAddress: string;
  p2wpkhScript: Uint8Array;
  p2wpkhAddress: string;
}

export function testWallet(seedByte: number): TestWallet {
  const privateKey = new Uint8Array(32).fill(seedByte);
  const pubkey = secp256k1.getPublicKey(privateKey, true);
  const xonly = pubkey.subarray(1);
  const net = btcSignerNetwork('regtest');
  const tr = p2tr(xonly, undefined, net);
  const wpkh = p2wpkh(pubkey, net);
  return {
    privateKey,
    pubkey,
    xonly,
    p2trScript: tr.script,
    p2trAddress: tr.address!,
    p2wpkhScript: wpkh.script,
    p2wpkhAddress: wpkh.address!,
  };
}

export function parsePsbt(b64: string): Transaction {
  return Transaction.fromPSBT(Uint8Array.from(Buffer.from(b64, 'base64')), { allowUnknownOutputs: true });
}

export function toB64(tx: Transaction): string {
  return Buffer.from(tx.toPSBT(0)).toString('base64');
}

/** What a wallet does with `{psbt, inputs}`: sign exactly the listed inputs with btc-signer. */
export function userSigns(
  psbtBase64: string,
  inputs: number[],
  privateKey: Uint8Array,
  opts: { finalize?: boolean; sighash?: number[] } = {},
): string {
  const tx = parsePsbt(psbtBase64);
  for (const i of inputs) {
    if (opts.sighash) tx.updateInput(i, { sighashType: opts.sighash[0]! }, true);
    const ok = tx.signIdx(privateKey, i, opts.sighash);
    if (!ok) throw new Error(`wallet could not sign input ${i}`);
    if (opts.finalize) tx.finalizeIdx(i);
  }
  return toB64(tx);
}

export function fakeTxid(n: number): string {
  return hex(new Uint8Array(32).fill(n));
}
