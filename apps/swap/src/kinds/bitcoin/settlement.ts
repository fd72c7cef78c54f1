/**
 * Bitcoin legs, read through the Electrum indexer (the transaction, its confirmations and block):
 * - deposit: the approved funding transaction of THIS intent (exact txid), paying the HTLC output
 *   exactly the quoted amount;
 * - fulfil: outputs paying the user's destination address at least `min_dest_amount`, in a
 *   transaction that carries this intent's commitment (`OP_RETURN` SHA-256("rgbx:fulfil:<id>"),
 *   `@rgbx/chains/btc` `fulfilCommitmentScript`), mined after the acceptance. Bitcoin shows no
 *   sender: without the commitment anyone's later payment to that address (the user's salary, an
 *   exchange withdrawal) would count, and a resolver could take the user's funds for it;
 * - claim / refund: a spend of THIS intent's HTLC outpoint through the claim leaf (revealing the
 *   preimage) / the refund leaf.
 * The block height of a transaction is its block's own (see `minedHeight`), never a difference of
 * two reads a new block can separate.
 */
import { createHash } from 'node:crypto';
import { fulfilCommitmentScript, reversedHex, sha256d } from '@rgbx/chains/btc';
import { Address, OutScript, Transaction } from '@scure/btc-signer';
import type { BitcoinGateway, BitcoinTxInfo, ChainGateway } from '../../chains/chain-gateway.ts';
import { E } from '../../errors.ts';
import {
  type LegCheck,
  refuse,
  requireAfter,
  requireAmount,
  requireConfirmations,
  type VerifiedLeg,
} from '../../settlement/check.ts';
import { bitcoinScript, btcNetworkOf, btcSignerNetwork } from './addresses.ts';
import { type HtlcContext, htlcOf } from './htlc-approval.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function parse(rawHex: string): Transaction {
  return Transaction.fromRaw(Buffer.from(rawHex, 'hex'), {
    allowUnknownOutputs: true,
    allowUnknownInputs: true,
    disableScriptCheck: true,
  });
}

function addressOf(script: Uint8Array, check: LegCheck): string {
  try {
    return Address(btcSignerNetwork(btcNetworkOf(check.network))).encode(OutScript.decode(script));
  } catch {
    return `script:${hex(script)}`;
  }
}

export async function bitcoinTip(gateway: ChainGateway): Promise<bigint> {
  return BigInt(await gateway.bitcoin().tip());
}

/** Blocks that may arrive between the transaction read and the tip read before we give up (503). */
const HEIGHT_SEARCH = 6;

/**
 * The height of the block `info` places the transaction in, or null in the mempool. The tip minus
 * the confirmations is only a guess: it comes from two reads, and every block mined between them
 * moves it up by one, which would make a transaction mined at the acceptance look newer than it.
 * A height is returned only when the header at that height hashes to the transaction's own block
 * hash (the guess, then the heights below it).
 */
export async function minedHeight(btc: BitcoinGateway, info: BitcoinTxInfo): Promise<bigint | null> {
  if (info.confirmations <= 0 || info.blockHash === null) return null;
  const guess = (await btc.tip()) - info.confirmations + 1;
  for (let h = guess; h >= Math.max(0, guess - HEIGHT_SEARCH); h--) {
    const header = await btc.blockHeader(h);
    if (reversedHex(sha256d(Buffer.from(header, 'hex'))) === info.blockHash) return BigInt(h);
  }
  throw E.UPSTREAM_UNAVAILABLE.createWith(
    { details: { blockHash: info.blockHash, searchedFrom: guess } },
    `The Bitcoin indexer (block ${info.blockHash} is not on its best chain at heights ${guess - HEIGHT_SEARCH}..${guess})`,
  );
}

async function load(gateway: ChainGateway, check: LegCheck) {
  const btc = gateway.bitcoin();
  const info = await btc.transaction(check.txHash);
  if (!info) refuse('not_found', `transaction ${check.txHash} is not known to the Bitcoin node`);
  requireConfirmations(check, info.confirmations);
  const blockHeight = await minedHeight(btc, info);
  requireAfter(check, blockHeight);
  return { tx: parse(info.hex), info, blockHeight };
}

export async function verifyBitcoinLeg(gateway: ChainGateway, check: LegCheck): Promise<VerifiedLeg> {
  const { intent } = check;
  const where = (loaded: Awaited<ReturnType<typeof load>>) => ({
    blockHeight: loaded.blockHeight,
    blockHash: loaded.info.blockHash,
    blockTime: loaded.info.blockTime,
    confirmations: loaded.info.confirmations,
  });

  if (check.leg === 'fulfil') {
    const script = bitcoinScript(intent.userDestAddress, btcNetworkOf(check.network));
    if (!script) refuse('destination', 'the destination is not a Bitcoin address of this network');
    const loaded = await load(gateway, check);
    const want = hex(script);
    let paid = 0n;
    let index = -1;
    for (let i = 0; i < loaded.tx.outputsLength; i++) {
      const o = loaded.tx.getOutput(i);
      if (o.script && hex(o.script) === want) {
        paid += o.amount ?? 0n;
        if (index < 0) index = i;
      }
    }
    if (index < 0) refuse('recipient', `the transaction pays nothing to ${intent.userDestAddress}`);
    const commitment = fulfilCommitmentScript(intent.id);
    let committed = false;
    for (let i = 0; i < loaded.tx.outputsLength && !committed; i++) {
      const o = loaded.tx.getOutput(i);
      committed = o.script !== undefined && hex(o.script) === commitment;
    }
    if (!committed)
      refuse(
        'commitment',
        'the payment does not commit to this intent: one output must be OP_RETURN SHA-256("rgbx:fulfil:<intent id>")',
        { expectedScript: commitment },
      );
    requireAmount(paid, intent.minDestAmountLots, 'at_least', ' sat');
    return {
      ...where(loaded),
      index,
      recipient: intent.userDestAddress,
      token: intent.destToken,
      amount: paid,
      sender: null,
    };
  }

  if (intent.mechanism !== 'htlc')
    refuse('mechanism', `a ${check.leg} on Bitcoin needs an htlc intent, this one is ${intent.mechanism}`);
  const hc = intent.context as HtlcContext;

  if (check.leg === 'deposit') {
    if (check.txHash !== hc.fundingTxid)
      refuse('not_the_approved_transaction', 'not the approved funding transaction of this intent', {
        expected: hc.fundingTxid,
        received: check.txHash,
      });
    const loaded = await load(gateway, check);
    const out = loaded.tx.getOutput(hc.htlcVout);
    if (!out.script || hex(out.script) !== hc.htlcScript || out.amount !== BigInt(hc.amount))
      refuse('htlc_output', `output ${hc.htlcVout} does not pay the HTLC ${hc.amount} sat`);
    return {
      ...where(loaded),
      index: hc.htlcVout,
      recipient: hc.proxyAddress,
      token: intent.sourceToken,
      amount: BigInt(hc.amount),
      sender: intent.userSourceAddress,
    };
  }

  // claim / refund: a spend of this intent's HTLC outpoint through the right leaf.
  const htlc = htlcOf(hc);
  const loaded = await load(gateway, check);
  for (let i = 0; i < loaded.tx.inputsLength; i++) {
    const input = loaded.tx.getInput(i);
    if (!input.txid || hex(input.txid) !== hc.fundingTxid || input.index !== hc.htlcVout) continue;
    const items = (input.finalScriptWitness ?? []).map(hex);
    if (check.leg === 'claim') {
      if (items.length !== 4 || items[2] !== hex(htlc.claimScript))
        refuse('leaf', 'the HTLC is not spent through the claim leaf');
      const preimageHash = createHash('sha256').update(Buffer.from(items[1]!, 'hex')).digest('hex');
      if (`0x${preimageHash}` !== hc.secretHash) refuse('preimage', 'the claim does not reveal the preimage');
    } else if (items.length !== 3 || items[1] !== hex(htlc.refundScript)) {
      refuse('leaf', 'the HTLC is not spent through the refund leaf');
    }
    const first = loaded.tx.getOutput(0);
    return {
      ...where(loaded),
      index: i,
      recipient: first.script ? addressOf(first.script, check) : '',
      token: intent.sourceToken,
      amount: BigInt(hc.amount),
      sender: hc.proxyAddress,
    };
  }
  refuse('not_spending_htlc', 'the transaction does not spend the HTLC output', {
    outpoint: `${hc.fundingTxid}:${hc.htlcVout}`,
  });
}
