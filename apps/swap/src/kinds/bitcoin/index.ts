/**
 * Bitcoin: sources lock into a Taproot HTLC funded by a PSBT the user signs (`htlc-approval.ts`),
 * read and broadcast through the Electrum indexer; legs checked in `settlement.ts`; fulfilments to a
 * Bitcoin address carry the intent's OP_RETURN commitment (Bitcoin shows no sender).
 */
import { fulfilCommitmentScript } from '@rgbx/chains/btc';
import { E } from '../../errors.ts';
import { refuse } from '../../settlement/check.ts';
import { exactTokenKey, type NetworkKind } from '../kind.ts';
import { bitcoinScript, bitcoinSource, btcNetworkOf } from './addresses.ts';
import {
  buildHtlcApproval,
  type HtlcContext,
  htlcOf,
  outpointsOf,
  verifyHtlcApproval,
} from './htlc-approval.ts';
import { verifyBitcoinLeg } from './settlement.ts';

const TXID = /^[0-9a-f]{64}$/;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export const bitcoin: NetworkKind = {
  type: 'BITCOIN',
  mechanism: 'htlc',
  submission: 'psbt',
  identityKey: 'bitcoin_claim_pubkey',
  identity: (r) => r.bitcoinClaimPubkey,
  fulfilBySender: false,

  checkConfig(n, at, c) {
    const issues = [];
    if (n.bitcoin_network === undefined)
      issues.push({
        path: `${at}.bitcoin_network`,
        message: `"${at}.bitcoin_network" is required for BITCOIN`,
      });
    // Fail closed: every leg is verified on chain before a status moves.
    if (c.bitcoin.electrum_url === undefined)
      issues.push({
        path: 'bitcoin.electrum_url',
        message: `"bitcoin.electrum_url" is required: network ${n.id} (BITCOIN) settles only on transactions read through the indexer`,
      });
    return issues;
  },
  defaultConfirmations: (c) => c.bitcoin.min_confirmations,
  // Three blocks: one- and two-block reorganisations happen; a payment three deep is not undone in practice.
  fulfilFinality: 3,

  isAddress: (address, network) => bitcoinScript(address, btcNetworkOf(network)) !== undefined,
  tokenKey: exactTokenKey,
  normalizeTxHash(txHash) {
    const h = txHash.toLowerCase();
    if (!TXID.test(h)) refuse('malformed_tx_hash', 'a Bitcoin txid is 64 hex characters');
    return h;
  },

  tip: async (gateway) => BigInt(await gateway.bitcoin().tip()),

  async buildApproval(a) {
    if (!a.sourcePublicKey) throw E.PUBLIC_KEY_REQUIRED.create();
    const btcNet = btcNetworkOf(a.network);
    const source = bitcoinSource(a.sourceAddress, a.sourcePublicKey, btcNet);
    const { context, params } = await buildHtlcApproval({
      gateway: a.gateway.bitcoin(),
      network: btcNet,
      source,
      sourceAddress: a.sourceAddress,
      secretHash: a.secretHash,
      resolverPubkey: a.resolverAddress,
      amount: a.amount,
      // Fulfilments are accepted until the deadline; the user's refund opens only after the safety
      // margin, so a resolver that fulfils at the last moment still has time to claim.
      locktime: a.deadline + a.config.swap.refund_safety_margin_secs,
      feeRate: a.config.bitcoin.fee_rate_sat_vb,
      minConfirmations: a.config.bitcoin.min_confirmations,
      reserved: await a.reserved(),
    });
    return { params, context, outpoints: outpointsOf(context) };
  },

  async verifyApproval({ intent, submission }) {
    if (submission.type !== 'psbt') throw new Error('unreachable: the submission type is checked first');
    const { txid, txHex } = verifyHtlcApproval(intent.context as HtlcContext, submission.psbt);
    return {
      canonical: txHex,
      approval: { type: 'psbt', psbt: submission.psbt },
      execution: { fundingTxid: txid, fundingTxHex: txHex },
    };
  },

  executionView(intent, ex) {
    const hc = intent.context as HtlcContext;
    const htlc = htlcOf(hc);
    return {
      funding_txid: hc.fundingTxid,
      funding_tx_hex: ex.fundingTxHex,
      htlc_vout: hc.htlcVout,
      amount: hc.amount,
      htlc_address: htlc.address,
      locktime: hc.locktime,
      network: hc.network,
      secret_hash: hc.secretHash,
      resolver_pubkey: hex(htlc.resolverKey),
      user_pubkey: hex(htlc.userKey),
      claim_script: hex(htlc.claimScript),
      refund_script: hex(htlc.refundScript),
      claim_control_block: hex(htlc.claimControlBlock),
      refund_control_block: hex(htlc.refundControlBlock),
    };
  },

  // Funds are locked only once a resolver commits: the service broadcasts the approved funding tx.
  async onAccept(gateway, intent) {
    const ex = JSON.parse(intent.row.execution ?? '{}') as { fundingTxid: string; fundingTxHex: string };
    await gateway.bitcoin().broadcast(ex.fundingTxHex, ex.fundingTxid);
    return { broadcast: ex.fundingTxid };
  },

  depositIsOwnTransaction: true,
  refundSpendsDeposit: true,
  verifyLeg: verifyBitcoinLeg,
  fulfilCommitment: (intentId) => fulfilCommitmentScript(intentId),
};
