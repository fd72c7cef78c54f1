/**
 * The intent lifecycle: every status and every transition, in one table. Services ask `transition()`
 * for the next status; nothing else decides one. The README's status table is generated from
 * `TRANSITIONS` (a test keeps them equal).
 */
import { STATUSES } from '@rgbx/contracts/swap';
import { E } from '../errors.ts';

export { STATUSES };
export type IntentStatus = (typeof STATUSES)[number];

export const STATUS_MEANINGS: Record<IntentStatus, string> = {
  Initiated: 'Intent created; no approval added yet.',
  ApprovalAdded: 'Required user approval received (verified).',
  Accepted: 'A resolver accepted the swap and is ready to execute.',
  Declined: 'A resolver declined the swap (nothing was deposited).',
  UserDeposited:
    "Source funds deposited: the user's funds are locked in escrow / the HTLC on the source network.",
  Fulfilled:
    'The resolver fulfilled the swap; the user has received the target token on the destination network.',
  Expired: 'The deadline passed before the swap was fulfilled.',
  RefundRequested: 'A refund has been requested and recorded.',
  Refunded: 'The refund path is complete; source funds returned.',
};

export type Trigger =
  | 'create'
  | 'approve'
  | 'accept'
  | 'decline'
  | 'deposit'
  | 'fulfil'
  | 'claim'
  | 'expire'
  | 'request_refund'
  | 'refund'
  | 'record_deposit';

export type Actor = 'user' | 'resolver' | 'scheduler' | 'user or resolver';

export interface Transition {
  trigger: Trigger;
  from: readonly (IntentStatus | null)[];
  to: IntentStatus | 'unchanged';
  actor: Actor;
  /** When the transition is allowed (checked by the service before it asks for the transition). */
  condition: string;
  effects: string;
}

/** Statuses that the deadline turns into `Expired`. */
export const EXPIRABLE: readonly IntentStatus[] = ['Initiated', 'ApprovalAdded', 'Accepted', 'UserDeposited'];

export const TRANSITIONS: readonly Transition[] = [
  {
    trigger: 'create',
    from: [null],
    to: 'Initiated',
    actor: 'user',
    condition: 'own, unexpired, unused quote; addresses valid for the networks',
    effects: 'preimage generated and sealed; approval data returned',
  },
  {
    trigger: 'approve',
    from: ['Initiated'],
    to: 'ApprovalAdded',
    actor: 'user',
    condition:
      'before the deadline; the approval verifies for the mechanism (signer, PSBT, co-signature, allowance)',
    effects: 'approval stored; re-posting the same approval answers success without a transition',
  },
  {
    trigger: 'accept',
    from: ['ApprovalAdded'],
    to: 'Accepted',
    actor: 'resolver',
    condition: 'the quoting resolver; before the deadline',
    effects:
      'the tips of the source and destination networks are recorded (later fulfilments and escrow deposits must be mined after them); htlc: the signed funding transaction is broadcast through Electrum',
  },
  {
    trigger: 'decline',
    from: ['ApprovalAdded'],
    to: 'Declined',
    actor: 'resolver',
    condition:
      "the quoting resolver, before it accepts (once accepted, the user's funds may be moving: htlc funding broadcast on accept, an escrow pull, a co-signed transfer; an accepted intent not filled expires into the refund path). The resolver has held the user's approval since ApprovalAdded: a deposit it made with it anyway is recorded later (record_deposit) and refunded",
    effects: 'reserved UTXOs released',
  },
  {
    trigger: 'deposit',
    from: ['Accepted'],
    to: 'UserDeposited',
    actor: 'resolver',
    condition:
      "before the deadline; proven on chain with the network's confirmations, the tx settling no other leg: Bitcoin: the approved funding tx paying the HTLC the quoted amount; EVM/Tron: the escrow's Deposited event for this intent (owner, token, exact amount, resolver, secret hash, refundAfter ≥ deadline + safety margin) and the owner → escrow Transfer, mined after the acceptance; Solana: the approved co-signed transaction executed, after the acceptance",
    effects: 'swap_metadata.user_deposit_tx, user_deposited_at; the proof in settlement[]',
  },
  {
    trigger: 'fulfil',
    from: ['UserDeposited'],
    to: 'Fulfilled',
    actor: 'resolver',
    condition:
      'before the deadline; proven on chain with the network\'s confirmations, mined after the acceptance, the tx settling no other leg: it pays user_dest_address at least min_dest_amount of the destination token (ERC-20 Transfer, native value, System transfer or Bitcoin outputs), sent by the resolver where the chain shows a sender; on Bitcoin, which shows none, the tx carries the intent\'s commitment (OP_RETURN SHA-256("rgbx:fulfil:<id>"))',
    effects:
      'swap_metadata.fulfill_tx, fulfilled_at; the proof in settlement[]; the preimage becomes available to the accepting resolver',
  },
  {
    trigger: 'claim',
    from: ['Fulfilled'],
    to: 'unchanged',
    actor: 'resolver',
    condition:
      "once (swap_tx not set); proven on chain, not before the deposit: Bitcoin: the tx spends this intent's HTLC output through the claim leaf, revealing the preimage; EVM/Tron: the escrow's Claimed event for this intent with the preimage; Solana: refused (the co-signed deposit paid the resolver directly)",
    effects: 'swap_metadata.swap_tx, swapped_at; the proof in settlement[]',
  },
  {
    trigger: 'expire',
    from: EXPIRABLE,
    to: 'Expired',
    actor: 'scheduler',
    condition: 'now >= deadline (also applied on read/write before any other trigger)',
    effects: 'reserved UTXOs released',
  },
  {
    trigger: 'request_refund',
    from: ['Expired', 'Declined'],
    to: 'RefundRequested',
    actor: 'user',
    condition:
      'funds may be locked: user_deposit_tx set, or (Bitcoin) the approved HTLC funding, which exists from the approval on (broadcast by the service on accept, or by the resolver holding it)',
    effects: 'swap_metadata.refund_requested_at',
  },
  {
    trigger: 'refund',
    from: ['Expired', 'RefundRequested', 'Declined'],
    to: 'Refunded',
    actor: 'user or resolver',
    condition:
      "a deposit recorded, or, once approved, a refund that proves itself whatever was reported (Bitcoin: a spend of this intent's HTLC output; EVM/Tron: the escrow's Refunded event for this intent, a lock only the user's Permit2 signature can make), so a resolver that moved the funds without reporting them (or before accepting) cannot block it; Solana needs the recorded deposit; proven on chain, not before the deposit: Bitcoin: the tx spends this intent's HTLC output through the refund leaf; EVM/Tron: the escrow's Refunded event for this intent to the owner; Solana: System transfers from the account that received the deposit (or the resolver's solana_address) to refund_address of exactly the deposited lamports, in a later slot than the deposit",
    effects:
      'swap_metadata.refunded_at (refund_requested_at filled in if it was skipped); the proof in settlement[]',
  },
  {
    trigger: 'record_deposit',
    from: ['Declined', 'Expired', 'RefundRequested'],
    to: 'unchanged',
    actor: 'user or resolver',
    condition:
      "no deposit recorded yet; the approved deposit proven on chain by the `deposit` rules except the acceptance: its content binds it to this intent whenever it was mined (Bitcoin: the approved funding txid; EVM/Tron: the escrow's Deposited event for this intent made with the user's Permit2 signature; Solana: the approved co-signed transaction). For a deposit the resolver made and never reported, before accepting, or before declining",
    effects:
      'swap_metadata.user_deposit_tx, user_deposited_at; the proof in settlement[]; the refund path opens (a Solana resolver owes the lamports back)',
  },
];

const BY_TRIGGER = new Map<Trigger, Transition>(TRANSITIONS.map((t) => [t.trigger, t]));

export const TERMINAL: readonly IntentStatus[] = STATUSES.filter(
  (s) => !TRANSITIONS.some((t) => t.to !== 'unchanged' && t.from.includes(s)),
);

export function isStatus(s: string): s is IntentStatus {
  return (STATUSES as readonly string[]).includes(s);
}

/**
 * The status `trigger` leads to from `from`, or an INVALID_TRANSITION error. `unchanged` triggers
 * return `from`.
 */
export function transition(from: IntentStatus | null, trigger: Trigger): IntentStatus {
  const t = BY_TRIGGER.get(trigger);
  if (!t?.from.includes(from)) throw E.INVALID_TRANSITION.create(trigger.replace('_', ' '), from ?? 'none');
  return t.to === 'unchanged' ? (from as IntentStatus) : t.to;
}

export function canTransition(from: IntentStatus, trigger: Trigger): boolean {
  return BY_TRIGGER.get(trigger)?.from.includes(from) ?? false;
}

/** The README table (generated; `lifecycle.test.ts` checks the README carries it). */
export function transitionTableMarkdown(): string {
  const rows = TRANSITIONS.map(
    (t) =>
      `| ${t.from.map((f) => (f === null ? '(none)' : `\`${f}\``)).join(', ')} | \`${t.trigger}\` | ${t.actor} | ${t.condition} | ${t.to === 'unchanged' ? '(unchanged)' : `\`${t.to}\``} | ${t.effects} |`,
  );
  return ['| From | Trigger | Actor | Condition | To | Effects |', '|---|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}
