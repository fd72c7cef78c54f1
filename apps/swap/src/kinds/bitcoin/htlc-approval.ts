/**
 * `htlc` approvals (Bitcoin): a Taproot HTLC (claim leaf: SHA-256 preimage + resolver key; refund
 * leaf: CLTV at the intent deadline + the refund safety margin, and the user's key; unspendable NUMS
 * internal key) and a PSBT
 * that funds it from the user's UTXOs found through the Electrum indexer. The user signs the listed
 * inputs; verification compares the returned PSBT with the stored one and checks each signature
 * against the prevouts in OUR store (never the PSBT's `witness_utxo`).
 *
 * Coin selection: confirmed UTXOs (or any when `min_confirmations = 0`) not reserved by another
 * live intent, the 50 largest offered to the chains module, which takes the fewest largest that
 * cover amount + fee at `fee_rate_sat_vb`. Change goes back to the source address.
 */
import {
  type BtcNetwork,
  buildHtlc,
  buildHtlcFundingPsbt,
  ChainInputError,
  type Htlc,
  scriptHash,
  verifySignedFundingPsbt,
} from '@rgbx/chains/btc';
import type { BitcoinGateway } from '../../chains/chain-gateway.ts';
import { E, verificationFailure } from '../../errors.ts';
import type { BitcoinSource } from './addresses.ts';

export const MAX_FUNDING_INPUTS = 50;

export interface HtlcContext {
  network: BtcNetwork;
  secretHash: string;
  resolverPubkey: string;
  userPubkey: string;
  locktime: number;
  unsignedPsbt: string;
  inputsToSign: number[];
  prevouts: { txid: string; vout: number; value: string; script: string }[];
  fundingTxid: string;
  htlcVout: number;
  amount: string;
  fee: string;
  /** The HTLC address (swap_metadata.proxy_address). */
  proxyAddress: string;
  htlcScript: string;
}

export interface HtlcParams {
  psbt: string;
  inputs: number[];
  /** What the user needs to refund alone after the deadline. */
  htlcAddress: string;
  locktime: number;
  resolverPubkey: string;
  userPubkey: string;
  claimScript: string;
  refundScript: string;
  claimControlBlock: string;
  refundControlBlock: string;
  fundingTxid: string;
  htlcVout: number;
  fee: string;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export function htlcOf(
  ctx: Pick<HtlcContext, 'secretHash' | 'resolverPubkey' | 'userPubkey' | 'locktime' | 'network'>,
): Htlc {
  return buildHtlc({
    secretHash: ctx.secretHash.replace(/^0x/, ''),
    resolverPubkey: ctx.resolverPubkey,
    userPubkey: ctx.userPubkey,
    locktime: ctx.locktime,
    network: ctx.network,
  });
}

export async function buildHtlcApproval(args: {
  gateway: BitcoinGateway;
  network: BtcNetwork;
  source: BitcoinSource;
  sourceAddress: string;
  secretHash: string;
  resolverPubkey: string;
  amount: bigint;
  /** The HTLC's CLTV (Unix seconds): the intent deadline plus the refund safety margin. */
  locktime: number;
  feeRate: number;
  minConfirmations: number;
  reserved: ReadonlySet<string>;
}): Promise<{ context: HtlcContext; params: HtlcParams }> {
  const htlcCtx = {
    network: args.network,
    secretHash: args.secretHash,
    resolverPubkey: args.resolverPubkey,
    userPubkey: hex(args.source.pubkey),
    locktime: args.locktime,
  };
  const htlc = htlcOf(htlcCtx);
  const all = await args.gateway.listUnspent(scriptHash(args.source.script));
  const usable = all
    .filter(
      (u) => (args.minConfirmations === 0 || u.height > 0) && !args.reserved.has(`${u.tx_hash}:${u.tx_pos}`),
    )
    .sort((a, b) => b.value - a.value)
    .slice(0, MAX_FUNDING_INPUTS);
  const spendable = usable.reduce((s, u) => s + BigInt(u.value), 0n);
  if (spendable <= args.amount)
    throw E.INSUFFICIENT_FUNDS.create(`more than ${args.amount}`, spendable.toString());

  let built: ReturnType<typeof buildHtlcFundingPsbt>;
  try {
    built = buildHtlcFundingPsbt({
      htlc,
      amount: args.amount,
      utxos: usable.map((u) => ({
        txid: u.tx_hash,
        vout: u.tx_pos,
        value: BigInt(u.value),
        script: args.source.script,
      })),
      userPubkey: args.source.pubkey,
      changeAddress: args.sourceAddress,
      feeRate: BigInt(args.feeRate),
      coinSelection: 'largest-first',
    });
  } catch (err) {
    if (!(err instanceof ChainInputError)) throw err;
    throw E.INSUFFICIENT_FUNDS.createWith(
      { cause: err, details: { reason: err.message } },
      `${args.amount} + fee`,
      spendable.toString(),
    );
  }
  const context: HtlcContext = {
    ...htlcCtx,
    unsignedPsbt: built.psbtBase64,
    inputsToSign: built.inputsToSign,
    prevouts: built.prevouts.map((p) => ({
      txid: p.txid,
      vout: p.vout,
      value: p.value.toString(),
      script: p.script.replace(/^0x/, ''),
    })),
    fundingTxid: built.txid,
    htlcVout: built.htlcVout,
    amount: args.amount.toString(),
    fee: built.fee.toString(),
    proxyAddress: htlc.address,
    htlcScript: hex(htlc.outputScript),
  };
  return { context, params: htlcParams(context, htlc) };
}

export function htlcParams(ctx: HtlcContext, htlc: Htlc = htlcOf(ctx)): HtlcParams {
  return {
    psbt: ctx.unsignedPsbt,
    inputs: ctx.inputsToSign,
    htlcAddress: htlc.address,
    locktime: ctx.locktime,
    resolverPubkey: hex(htlc.resolverKey),
    userPubkey: hex(htlc.userKey),
    claimScript: hex(htlc.claimScript),
    refundScript: hex(htlc.refundScript),
    claimControlBlock: hex(htlc.claimControlBlock),
    refundControlBlock: hex(htlc.refundControlBlock),
    fundingTxid: ctx.fundingTxid,
    htlcVout: ctx.htlcVout,
    fee: ctx.fee,
  };
}

/** The outpoints an intent's funding transaction spends (reserved while the intent is live). */
export function outpointsOf(ctx: HtlcContext): string[] {
  return ctx.prevouts.map((p) => `${p.txid}:${p.vout}`);
}

/** Verifies the signed PSBT; returns the finalized funding transaction. */
export function verifyHtlcApproval(ctx: HtlcContext, signedPsbt: string): { txid: string; txHex: string } {
  if (
    typeof signedPsbt !== 'string' ||
    signedPsbt.length === 0 ||
    !/^[A-Za-z0-9+/]+={0,2}$/.test(signedPsbt)
  ) {
    throw E.INVALID_PSBT.createWith(
      { details: { reason: 'malformed_psbt', expected: 'a Base64 PSBT' } },
      'not Base64',
    );
  }
  let verified: { txid: string; txHex: string | null };
  try {
    verified = verifySignedFundingPsbt({
      unsignedPsbtBase64: ctx.unsignedPsbt,
      signedPsbtBase64: signedPsbt,
      inputsToSign: ctx.inputsToSign,
      prevouts: ctx.prevouts.map((p) => ({
        txid: p.txid,
        vout: p.vout,
        value: BigInt(p.value),
        script: p.script,
      })),
      userPubkey: ctx.userPubkey,
    });
  } catch (err) {
    verificationFailure(err, E.INVALID_PSBT);
  }
  if (verified.txid !== ctx.fundingTxid) {
    throw E.INVALID_PSBT.createWith(
      { details: { reason: 'txid', expected: ctx.fundingTxid, received: verified.txid } },
      'the transaction changed',
    );
  }
  if (!verified.txHex) {
    throw E.INVALID_PSBT.createWith(
      { details: { reason: 'missing_signature' } },
      'not every input is signed',
    );
  }
  return { txid: verified.txid, txHex: verified.txHex };
}
