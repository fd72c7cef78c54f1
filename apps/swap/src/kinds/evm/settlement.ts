/**
 * EVM and Tron legs, read through JSON-RPC (Tron: its full node's Ethereum-compatible `/jsonrpc`,
 * addresses mapped to 20-byte hex):
 * - deposit (permit2): the escrow's `Deposited` event for THIS intent id (owner, token, exact
 *   amount, the accepting resolver, the intent's secret hash, `refundAfter` ≥ deadline + safety
 *   margin) together with the token's `Transfer` owner → escrow of that amount;
 * - fulfil: an ERC-20 `Transfer` of the destination token from the resolver to the user of at least
 *   `min_dest_amount` (native coin: the transaction's own value, from the resolver, to the user);
 * - claim: the escrow's `Claimed` event for THIS intent id (preimage hashing to the secret hash)
 *   right after the token's `Transfer` escrow → the intent's resolver of exactly the source amount of
 *   the source token: `Claimed` names no owner, and anyone may lock under any intent id (the escrow
 *   keys locks by (intent id, owner)), so a stranger's lock under this id, claimed with the released
 *   preimage, must not pass for the user's;
 * - refund: the escrow's `Refunded` event for THIS intent id, to the intent's owner.
 * Every leg: a successful receipt, the configured confirmations; fulfil and deposit mined after the
 * acceptance.
 */
import { createHash } from 'node:crypto';
import type { EvmLog, EvmReceipt } from '@rgbx/chains/evm';
import { uuidToBytes32 } from '@rgbx/chains/evm';
import type { ChainGateway } from '../../chains/chain-gateway.ts';
import type { ResolverIdentity } from '../../domain/resolvers.ts';
import {
  type LegCheck,
  refuse,
  requireAfter,
  requireAmount,
  requireConfirmations,
  type VerifiedLeg,
} from '../../settlement/check.ts';
import type { Permit2Context } from './permit2-approval.ts';

/** How a permit2 kind (EVM, Tron) names addresses on its JSON-RPC and its resolver. */
export interface EvmAddressing {
  /** The 20-byte 0x form of an address of this network. */
  toRpc(address: string): `0x${string}`;
  resolver(identity: ResolverIdentity): string | undefined;
}

/** keccak256 of the event signatures (checked against viem in settlement.test.ts). */
export const TOPICS = {
  Transfer: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
  /** Deposited(bytes32 indexed intentId, address indexed owner, address indexed token, uint256 amount, address resolver, bytes32 secretHash, uint256 refundAfter) */
  Deposited: '0x5cf36f0f55c6ce50eeb6eec5964f434ee1ced589cca6e794302189493a6c97d1',
  /** Claimed(bytes32 indexed intentId, address indexed resolver, bytes32 preimage) */
  Claimed: '0xd0a9ea8d3e707f26a4a7cc65857f11a20ed3152608c9a8548b6dd583e7d96b4e',
  /** Refunded(bytes32 indexed intentId, address indexed owner) */
  Refunded: '0x5e9f0820fcfb53b644becb775b651bae68c337106f21433e526551d1e02c1c0e',
} as const;

/** The zero address names a chain's native coin in the token list. */
export const NATIVE_TOKEN = '0x0000000000000000000000000000000000000000';

const word = (data: string, i: number) => `0x${data.slice(2 + 64 * i, 2 + 64 * (i + 1))}`;
const topicAddress = (t: string | undefined) => (t ? `0x${t.slice(-40)}` : '');
const padAddress = (a: string) => `0x${a.slice(2).padStart(64, '0')}`;

export async function evmTip(gateway: ChainGateway, check: Pick<LegCheck, 'network'>): Promise<bigint> {
  return gateway.evm(check.network).blockNumber();
}

async function load(gateway: ChainGateway, check: LegCheck): Promise<{ receipt: EvmReceipt; conf: number }> {
  const rpc = gateway.evm(check.network);
  const receipt = await rpc.receipt(check.txHash);
  if (!receipt)
    refuse('not_found', `transaction ${check.txHash} is not mined on network ${check.network.id}`);
  if (receipt.status !== 'success') refuse('reverted', 'the transaction reverted');
  const tip = await rpc.blockNumber();
  const conf = tip >= receipt.blockNumber ? Number(tip - receipt.blockNumber + 1n) : 0;
  requireConfirmations(check, conf);
  return { receipt, conf };
}

/** The escrow's `topic` events for THIS intent id in the receipt, in log order; refuses (escrow_event) if none. */
function escrowEvents(check: LegCheck, receipt: EvmReceipt, topic: string, a: EvmAddressing): EvmLog[] {
  const escrow = a.toRpc(check.network.escrow_address!);
  const id = uuidToBytes32(check.intent.id).toLowerCase();
  const logs = receipt.logs.filter(
    (l) => l.address === escrow && l.topics[0] === topic && l.topics[1] === id,
  );
  if (logs.length === 0)
    refuse(
      'escrow_event',
      `the transaction has no escrow event for this intent from ${check.network.escrow_address}`,
      {
        escrow: check.network.escrow_address,
      },
    );
  return logs;
}

const escrowEvent = (check: LegCheck, receipt: EvmReceipt, topic: string, a: EvmAddressing): EvmLog =>
  escrowEvents(check, receipt, topic, a)[0]!;

export async function verifyEvmLeg(
  gateway: ChainGateway,
  check: LegCheck,
  a: EvmAddressing,
): Promise<VerifiedLeg> {
  const { intent, network } = check;
  const { receipt, conf } = await load(gateway, check);
  const rpc = gateway.evm(network);
  const at = {
    blockHeight: receipt.blockNumber,
    blockHash: receipt.blockHash,
    blockTime: await rpc.blockTime(receipt.blockNumber),
    confirmations: conf,
  };
  requireAfter(check, receipt.blockNumber);

  if (check.leg === 'fulfil') {
    const resolver = a.resolver(check.resolver);
    if (!resolver) refuse('resolver_identity', `the resolver has no address on network ${network.id}`);
    const from = a.toRpc(resolver);
    const to = a.toRpc(intent.userDestAddress);
    if (intent.destToken.toLowerCase() === NATIVE_TOKEN) {
      const tx = await rpc.transaction(check.txHash);
      if (!tx) refuse('not_found', 'the transaction is not known to the node');
      if (tx.to !== to) refuse('recipient', `the transaction pays ${tx.to}, not ${intent.userDestAddress}`);
      if (tx.from !== from)
        refuse('sender', `the transaction is sent by ${tx.from}, not the resolver ${resolver}`);
      requireAmount(tx.value, intent.minDestAmountLots, 'at_least', '');
      return {
        ...at,
        index: -1,
        recipient: intent.userDestAddress,
        token: intent.destToken,
        amount: tx.value,
        sender: resolver,
      };
    }
    const token = a.toRpc(intent.destToken);
    const transfers = receipt.logs.filter((l) => l.topics[0] === TOPICS.Transfer && l.topics.length === 3);
    if (!transfers.some((l) => l.address === token))
      refuse('token', `the transaction moves no ${intent.destToken}`);
    const toUser = transfers.filter((l) => l.address === token && topicAddress(l.topics[2]) === to);
    if (toUser.length === 0)
      refuse('recipient', `the transaction pays no ${intent.destToken} to ${intent.userDestAddress}`);
    const fromResolver = toUser.filter((l) => topicAddress(l.topics[1]) === from);
    if (fromResolver.length === 0)
      refuse('sender', `the transfer to the user is not sent by the resolver ${resolver}`);
    const paid = fromResolver.reduce((s, l) => s + BigInt(l.data), 0n);
    requireAmount(paid, intent.minDestAmountLots, 'at_least', '');
    return {
      ...at,
      index: fromResolver[0]!.logIndex,
      recipient: intent.userDestAddress,
      token: intent.destToken,
      amount: paid,
      sender: resolver,
    };
  }

  if (intent.mechanism !== 'permit2')
    refuse(
      'mechanism',
      `a ${check.leg} on ${network.type} needs a permit2 intent, this one is ${intent.mechanism}`,
    );
  const pc = intent.context as Permit2Context;
  const escrow = network.escrow_address!;

  if (check.leg === 'deposit') {
    const ev = escrowEvent(check, receipt, TOPICS.Deposited, a);
    const owner = a.toRpc(pc.owner);
    const token = a.toRpc(pc.token);
    if (ev.topics[2] !== padAddress(owner)) refuse('owner', 'the escrow locked the tokens of another owner');
    if (ev.topics[3] !== padAddress(token)) refuse('token', 'the escrow locked another token');
    const amount = BigInt(word(ev.data, 0));
    if (amount !== intent.sourceAmountLots)
      refuse('amount', `the escrow locked ${amount}, the quote is ${intent.sourceAmountLots}`, {
        locked: amount.toString(),
        required: intent.sourceAmountLots.toString(),
      });
    const resolver = a.toRpc(pc.witness.resolver);
    if (`0x${word(ev.data, 1).slice(-40)}` !== resolver)
      refuse('resolver', 'the lock names another resolver');
    if (word(ev.data, 2) !== intent.secretHash.toLowerCase())
      refuse('secret_hash', 'the lock names another secret hash');
    const refundAfter = BigInt(word(ev.data, 3));
    const earliest = BigInt(intent.deadline + check.refundSafetyMarginSecs);
    if (refundAfter < earliest)
      refuse(
        'refund_after',
        `the escrow lets the user refund at ${refundAfter}, before deadline + safety margin ${earliest}`,
      );
    const pulled = receipt.logs.some(
      (l) =>
        l.address === token &&
        l.topics[0] === TOPICS.Transfer &&
        topicAddress(l.topics[1]) === owner &&
        topicAddress(l.topics[2]) === a.toRpc(escrow) &&
        BigInt(l.data) === amount,
    );
    if (!pulled) refuse('transfer', 'no Transfer of the locked amount from the owner to the escrow');
    return {
      ...at,
      index: ev.logIndex,
      recipient: escrow,
      token: intent.sourceToken,
      amount,
      sender: pc.owner,
    };
  }

  if (check.leg === 'claim') {
    const claims = escrowEvents(check, receipt, TOPICS.Claimed, a);
    const secretHash = intent.secretHash.toLowerCase();
    const revealing = claims.filter(
      (l) =>
        `0x${createHash('sha256')
          .update(Buffer.from(word(l.data, 0).slice(2), 'hex'))
          .digest('hex')}` === secretHash,
    );
    if (revealing.length === 0) refuse('preimage', 'the claim does not reveal the preimage');
    // SwapEscrow.claim pays the lock (token.transfer(resolver, amount)) and then emits Claimed: the
    // log right before this intent's Claimed is that payment. The user's lock was verified at the
    // deposit: this token, this amount, this resolver.
    const escrowRpc = a.toRpc(escrow);
    const resolver = a.toRpc(pc.witness.resolver);
    const token = a.toRpc(pc.token);
    const ev = revealing.find((l) => {
      const t = receipt.logs[receipt.logs.indexOf(l) - 1];
      return (
        t !== undefined &&
        t.address === token &&
        t.topics[0] === TOPICS.Transfer &&
        t.topics.length === 3 &&
        topicAddress(t.topics[1]) === escrowRpc &&
        topicAddress(t.topics[2]) === resolver &&
        topicAddress(l.topics[2]) === resolver &&
        BigInt(t.data) === intent.sourceAmountLots
      );
    });
    if (!ev)
      refuse(
        'claim_transfer',
        `the claim does not pay this intent's lock: no Transfer of exactly ${intent.sourceAmountLots} ${intent.sourceToken} from the escrow to the resolver ${pc.witness.resolver} with it`,
        {
          required: intent.sourceAmountLots.toString(),
          token: intent.sourceToken,
          resolver: pc.witness.resolver,
        },
      );
    return {
      ...at,
      index: ev.logIndex,
      recipient: topicAddress(ev.topics[2]),
      token: intent.sourceToken,
      amount: intent.sourceAmountLots,
      sender: escrow,
    };
  }

  const ev = escrowEvent(check, receipt, TOPICS.Refunded, a);
  if (topicAddress(ev.topics[2]) !== a.toRpc(pc.owner))
    refuse('recipient', 'the refund went to another owner');
  return {
    ...at,
    index: ev.logIndex,
    recipient: pc.owner,
    token: intent.sourceToken,
    amount: intent.sourceAmountLots,
    sender: escrow,
  };
}
