/**
 * The fill engine's decisions, with a FAKE swap service (an object with the ResolverClient methods the
 * engine calls) and FAKE chain wallets that record what they are asked; the store is a real SQLite
 * file. The real service and chains are exercised by the devnet tests; these pin the logic: when it
 * declines, that it stores before it broadcasts, that a restart re-sends the same bytes, when a new
 * attempt may be signed, and what it claims and refunds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ResolverClient, SwapApiError } from '@rgbx/sdk';
import { createLogger } from '@rgbx/service-kit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type ResolverConfig } from './config.ts';
import { type CrashPoint, FillEngine } from './engine.ts';
import { Reservations } from './pricing.ts';
import {
  latestTx,
  loadFill,
  openResolverStore,
  type ResolverStore,
  type StoredTx,
  setTxState,
  storeTx,
} from './store.ts';
import type { ChainWallet, IntentView, PaymentRequest, SignedTx, TxState } from './wallets/wallet.ts';

const NOW = 1_700_000_000_000;
const NOW_SECS = NOW / 1000;
const SAFETY = 300;
const BTC_NET = 1;
const EVM_NET = 2;
const SOL_NET = 4;
const USDC = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const SOL_MINT = 'So11111111111111111111111111111111111111112';
const PREIMAGE = `0x${'7e'.repeat(32)}`;

const cfg: ResolverConfig = loadConfig({
  text: `[swap]\nurl = "https://swap.example"\nresolver_id = "ref"\napi_key = "k"\n[rfq]\nsecret = "${'s'.repeat(32)}"\n[fill]\nsafety_secs = ${SAFETY}\npoll_interval_ms = 50\n`,
  env: {},
});
const log = createLogger({ name: 'engine-test', level: 'silent' });

type Leg = { leg: string; tx_hash: string; recipient?: string; amount?: string };

/** An intent as the fake service returns it: only the fields the engine reads are filled in. */
function intentView(
  o: {
    id?: string;
    status?: string;
    mechanism?: 'htlc' | 'permit2' | 'cosign';
    sourceChain?: number;
    destChain?: number;
    destToken?: string;
    sourceToken?: string;
    amount?: string;
    sourceAmount?: string;
    deadline?: number;
    legs?: Leg[];
    fundingTxid?: string;
    refundAddress?: string;
  } = {},
): IntentView {
  return {
    intent: {
      intent_id: o.id ?? 'intent-1',
      status: o.status ?? 'ApprovalAdded',
      source_chain: o.sourceChain ?? BTC_NET,
      dest_chain: o.destChain ?? EVM_NET,
      source_token: o.sourceToken ?? 'BTC',
      dest_token: o.destToken ?? USDC,
      user_dest_address: '0x00000000000000000000000000000000000000A1',
      max_dest_amount_lots: o.amount ?? '500',
      source_amount_lots: o.sourceAmount ?? '1000',
      settlement: o.legs ?? [],
    } as unknown as IntentView['intent'],
    approval_mechanism: o.mechanism ?? 'htlc',
    deadline_secs: o.deadline ?? NOW_SECS + 3600,
    secret_hash: `0x${'aa'.repeat(32)}`,
    refund_address: o.refundAddress ?? 'user-refund-address',
    execution: o.fundingTxid ? { funding_txid: o.fundingTxid } : null,
    fulfil_commitment: null,
  };
}

type Call = { method: string; args: unknown[] };

/**
 * A FAKE swap service: the ResolverClient methods the engine uses. Views are served from `views`;
 * reports are recorded in `calls` and change nothing unless a test installs a handler in `on`.
 */
class FakeSwapService {
  readonly views = new Map<string, IntentView>();
  readonly calls: Call[] = [];
  readonly on: Partial<Record<string, (...args: unknown[]) => unknown>> = {};

  add(view: IntentView): void {
    this.views.set((view.intent as unknown as { intent_id: string }).intent_id, view);
  }

  setStatus(id: string, status: string): void {
    const v = this.views.get(id)!;
    (v.intent as unknown as { status: string }).status = status;
  }

  callsOf(method: string): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  async #call(method: string, args: unknown[]): Promise<unknown> {
    this.calls.push({ method, args });
    return this.on[method]?.(...args);
  }

  async intent(id: string): Promise<IntentView> {
    const v = this.views.get(id);
    if (!v) throw new SwapApiError(404, { code: 404, type: 'NOT_FOUND', message: 'no such intent' });
    return structuredClone(v);
  }

  async intents(q: { status?: string }) {
    const data = [...this.views.values()].filter(
      (v) => (v.intent as unknown as { status: string }).status === q.status,
    );
    return { data, pagination: { total: data.length, limit: 100, offset: 0 } };
  }

  async accept(id: string) {
    return this.#call('accept', [id]);
  }
  async decline(id: string, reason?: string) {
    return this.#call('decline', [id, reason]);
  }
  async deposit(id: string, txHash: string) {
    return this.#call('deposit', [id, txHash]);
  }
  async fulfil(id: string, txHash: string) {
    return this.#call('fulfil', [id, txHash]);
  }
  async claim(id: string, txHash: string) {
    return this.#call('claim', [id, txHash]);
  }
  async refund(id: string, txHash: string) {
    return this.#call('refund', [id, txHash]);
  }
  async secret(id: string): Promise<string> {
    this.calls.push({ method: 'secret', args: [id] });
    return PREIMAGE;
  }

  asClient(): ResolverClient {
    return this as unknown as ResolverClient;
  }
}

/**
 * A FAKE chain wallet: signs numbered transactions, records every call, and answers `status` from
 * `states` (a transaction it never saw is `unknown`; a broadcast one becomes `afterBroadcast`).
 */
class FakeWallet implements ChainWallet {
  readonly type: ChainWallet['type'];
  readonly identity: string;
  readonly balances = new Map<string, bigint>();
  readonly states = new Map<string, TxState>();
  afterBroadcast: TxState = { state: 'pending' };
  readonly payments: PaymentRequest[] = [];
  readonly claims: { intent: IntentView; preimage: string }[] = [];
  readonly deposits: IntentView[] = [];
  readonly broadcasts: SignedTx[] = [];
  /** Transactions the engine dropped unsent and gave back (`release`). */
  readonly released: string[] = [];
  onBroadcast: ((tx: SignedTx) => Promise<void>) | undefined;
  readonly prefix: string;
  #n = 0;

  constructor(type: ChainWallet['type'], identity: string, prefix: string) {
    this.type = type;
    this.identity = identity;
    this.prefix = prefix;
  }

  #sign(kind: string): SignedTx {
    this.#n++;
    return {
      txid: `${this.prefix}-${kind}-${this.#n}`,
      raw: `raw-${kind}-${this.#n}`,
      meta: { nonce: this.#n },
    };
  }

  async balance(token: string): Promise<bigint> {
    return this.balances.get(token) ?? 0n;
  }
  async signPayment(p: PaymentRequest): Promise<SignedTx> {
    this.payments.push(p);
    return this.#sign('pay');
  }
  async signDeposit(intent: IntentView): Promise<SignedTx | null> {
    this.deposits.push(intent);
    return this.#sign('deposit');
  }
  async signClaim(intent: IntentView, preimage: string): Promise<SignedTx | null> {
    this.claims.push({ intent, preimage });
    return this.#sign('claim');
  }
  async broadcast(tx: SignedTx): Promise<void> {
    await this.onBroadcast?.(tx);
    this.broadcasts.push({ txid: tx.txid, raw: tx.raw, meta: tx.meta });
    this.states.set(tx.txid, this.afterBroadcast);
  }
  async status(tx: SignedTx): Promise<TxState> {
    return this.states.get(tx.txid) ?? { state: 'unknown' };
  }
  release(tx: SignedTx): void {
    this.released.push(tx.txid);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'resolver-engine-'));
let dbCount = 0;
const toClose: (() => Promise<void>)[] = [];

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const c of toClose.splice(0)) await c();
});

interface Rig {
  store: ResolverStore;
  api: FakeSwapService;
  btc: FakeWallet;
  evm: FakeWallet;
  sol: FakeWallet;
  reservations: Reservations;
  engine: FillEngine;
  /** A new engine on the same store, service and wallets (a restart). */
  restart(o?: { wallets?: FakeWallet[]; crash?: (p: CrashPoint) => void }): FillEngine;
  run(id: string, engine?: FillEngine): Promise<void>;
  /** Stores intent-1's EVM payment `txid` at attempt 0, as the engine does before a broadcast. */
  storedPayment(txid: string): Promise<StoredTx>;
}

async function rig(o: { crash?: (p: CrashPoint) => void; now?: number } = {}): Promise<Rig> {
  const store = await openResolverStore(`sqlite:${join(dir, `engine-${++dbCount}.db`)}`);
  const api = new FakeSwapService();
  const btc = new FakeWallet('BITCOIN', 'resolver-btc-pubkey', 'btc');
  const evm = new FakeWallet('EVM', '0x00000000000000000000000000000000000000Re', 'evm');
  const sol = new FakeWallet('SOLANA', 'ResolverSolanaAddress111111111111111111111', 'sol');
  evm.balances.set(USDC, 10_000n);
  const reservations = new Reservations();
  const engines: FillEngine[] = [];
  const make = (wallets: FakeWallet[], crash?: (p: CrashPoint) => void) => {
    const e = new FillEngine({
      cfg,
      db: store.db,
      api: api.asClient(),
      wallets: new Map(
        wallets.map((w) => [w.type === 'BITCOIN' ? BTC_NET : w.type === 'EVM' ? EVM_NET : SOL_NET, w]),
      ),
      reservations,
      log,
      now: () => o.now ?? NOW,
      ...(crash ? { crash } : {}),
    });
    engines.push(e);
    return e;
  };
  toClose.push(async () => {
    for (const e of engines) await e.stop();
    await store.close();
  });
  return {
    store,
    api,
    btc,
    evm,
    sol,
    reservations,
    engine: make([btc, evm, sol], o.crash),
    restart: (r = {}) => make(r.wallets ?? [btc, evm, sol], r.crash),
    async run(id, engine) {
      const e = engine ?? engines[0]!;
      e.kick(id);
      await e.idle();
    },
    storedPayment: (txid) =>
      storeTx(
        store.db,
        {
          intentId: 'intent-1',
          role: 'payment',
          attempt: 0,
          networkId: EVM_NET,
          tx: { txid, raw: 'r', meta: {} },
        },
        NOW,
      ),
  };
}

function txNotVerified(reason: string): SwapApiError {
  return new SwapApiError(409, {
    code: 409,
    type: 'TX_NOT_VERIFIED',
    message: `transaction not verified: ${reason}`,
    details: { reason },
  });
}

describe('FillEngine with fake service and wallets', () => {
  describe('decide: accept or decline an approved intent', () => {
    it('declines when the destination balance minus other accepted intents is short', async () => {
      const r = await rig();
      r.evm.balances.set(USDC, 1000n);
      r.reservations.reserveFill('other-intent', EVM_NET, USDC.toLowerCase(), 600n);
      r.api.add(intentView({ amount: '500' }));
      await r.run('intent-1');
      expect(r.api.callsOf('accept')).toEqual([]);
      expect(r.api.callsOf('decline')).toEqual([['intent-1', expect.stringMatching(/^inventory: 400 of/)]]);
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({
        state: 'declined',
        note: expect.stringContaining('inventory'),
      });
      expect(r.reservations.reservedFills(EVM_NET, USDC)).toBe(600n);
    });

    it('accepts when the balance minus the other reservations covers it (its own is not counted)', async () => {
      const r = await rig();
      r.evm.balances.set(USDC, 1000n);
      r.reservations.reserveFill('other-intent', EVM_NET, USDC, 500n);
      // a reservation of this very intent (an earlier decide) does not count against it
      r.reservations.reserveFill('intent-1', EVM_NET, USDC, 500n);
      r.api.add(intentView({ amount: '500' }));
      await r.run('intent-1');
      expect(r.api.callsOf('decline')).toEqual([]);
      expect(r.api.callsOf('accept')).toEqual([['intent-1']]);
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({
        state: 'active',
        source_network: BTC_NET,
        dest_network: EVM_NET,
      });
      // now promised to this intent
      expect(r.reservations.reservedFills(EVM_NET, USDC, 'other-intent')).toBe(500n);
      expect(r.reservations.reservedFills(EVM_NET, USDC)).toBe(1000n);
    });

    it('declines when there is no wallet for the source or the destination network', async () => {
      const r = await rig();
      r.api.add(intentView({ id: 'to-nowhere', destChain: 99 }));
      r.api.add(intentView({ id: 'from-nowhere', sourceChain: 98 }));
      await r.run('to-nowhere');
      await r.run('from-nowhere');
      expect(r.api.callsOf('accept')).toEqual([]);
      expect(r.api.callsOf('decline')).toEqual([
        ['to-nowhere', 'no wallet for the destination network 99'],
        ['from-nowhere', 'no wallet for the source network 98'],
      ]);
      expect((await loadFill(r.store.db, 'to-nowhere'))?.state).toBe('declined');
    });

    it('declines when less than twice the safety margin is left before the deadline', async () => {
      const r = await rig();
      r.api.add(intentView({ id: 'short', deadline: NOW_SECS + 2 * SAFETY - 1 }));
      r.api.add(intentView({ id: 'enough', deadline: NOW_SECS + 2 * SAFETY }));
      await r.run('short');
      await r.run('enough');
      expect(r.api.callsOf('decline')).toEqual([['short', 'too little time left before the deadline']]);
      expect(r.api.callsOf('accept')).toEqual([['enough']]);
    });

    // Fill reservations live in memory: recover() rebuilds them from the accepted, unpaid intents.
    it('after a restart, still counts intents accepted before it against the inventory', async () => {
      const r = await rig();
      r.evm.balances.set(USDC, 1000n);
      r.api.add(intentView({ id: 'first', amount: '600', fundingTxid: 'f1' }));
      r.api.on.accept = (id) => r.api.setStatus(id as string, 'Accepted');
      await r.run('first');
      expect(r.api.callsOf('accept')).toEqual([['first']]);
      // a new process: a new engine and new (empty) in-memory reservations
      const reservations = new Reservations();
      const engine2 = new FillEngine({
        cfg,
        db: r.store.db,
        api: r.api.asClient(),
        wallets: new Map<number, ChainWallet>([
          [BTC_NET, r.btc],
          [EVM_NET, r.evm],
        ]),
        reservations,
        log,
        now: () => NOW,
      });
      await engine2.recover();
      await engine2.idle();
      r.api.add(intentView({ id: 'second', amount: '600' }));
      await r.run('second', engine2);
      await engine2.stop();
      expect(r.api.callsOf('decline')).toEqual([['second', expect.stringContaining('inventory')]]);
    });

    it('after accepting, goes on with the next step the service reports (htlc deposit)', async () => {
      const r = await rig();
      r.api.add(intentView({ fundingTxid: 'funding-txid' }));
      r.api.on.accept = (id) => r.api.setStatus(id as string, 'Accepted');
      await r.run('intent-1');
      expect(r.api.callsOf('accept')).toEqual([['intent-1']]);
      expect(r.api.callsOf('deposit')).toEqual([['intent-1', 'funding-txid']]);
    });
  });

  describe('pay the user', () => {
    it('signs the payment, stores it, and only then broadcasts it; reports it once confirmed', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited', amount: '500' }));
      const storedAtBroadcast: (StoredTx | undefined)[] = [];
      r.evm.onBroadcast = async () => {
        storedAtBroadcast.push(await latestTx(r.store.db, 'intent-1', 'payment'));
      };
      await r.run('intent-1');
      expect(r.evm.payments).toEqual([
        {
          intentId: 'intent-1',
          token: USDC,
          to: '0x00000000000000000000000000000000000000A1',
          amount: 500n,
          commitment: null,
        },
      ]);
      expect(r.evm.broadcasts.map((t) => t.txid)).toEqual(['evm-pay-1']);
      expect(storedAtBroadcast).toEqual([
        expect.objectContaining({ txid: 'evm-pay-1', raw: 'raw-pay-1', attempt: 0, state: 'signed' }),
      ]);
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toMatchObject({ state: 'sent' });
      // pending: nothing reported yet
      expect(r.api.callsOf('fulfil')).toEqual([]);

      r.evm.states.set('evm-pay-1', { state: 'confirmed', confirmations: 1 });
      await r.run('intent-1');
      expect(r.api.callsOf('fulfil')).toEqual([['intent-1', 'evm-pay-1']]);
      expect(r.evm.payments).toHaveLength(1);
      expect(r.evm.broadcasts).toHaveLength(1);
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toMatchObject({ state: 'confirmed' });
    });

    it('after a restart, re-sends the SAME stored payment and never signs another', async () => {
      // The first process dies between storing the payment and broadcasting it.
      const r = await rig({
        crash: (p) => {
          if (p === 'payment-signed') throw new Error('killed after signing');
        },
      });
      r.api.add(intentView({ status: 'UserDeposited' }));
      await r.run('intent-1');
      expect(r.evm.payments).toHaveLength(1);
      expect(r.evm.broadcasts).toEqual([]);
      const stored = await latestTx(r.store.db, 'intent-1', 'payment');
      expect(stored).toMatchObject({ txid: 'evm-pay-1', state: 'signed' });

      // A new process (new engine, new wallet object that never saw the tx: status `unknown`).
      const evm2 = new FakeWallet('EVM', r.evm.identity, 'evm2');
      evm2.balances.set(USDC, 10_000n);
      const engine2 = r.restart({ wallets: [r.btc, evm2, r.sol] });
      await engine2.recover();
      await engine2.idle();
      expect(evm2.payments).toEqual([]);
      expect(evm2.broadcasts.length).toBeGreaterThanOrEqual(1);
      for (const b of evm2.broadcasts)
        expect(b).toEqual({ txid: 'evm-pay-1', raw: 'raw-pay-1', meta: { nonce: 1 } });
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toMatchObject({ attempt: 0, state: 'sent' });

      // and driven again later, still the same one
      evm2.states.delete('evm-pay-1');
      await r.run('intent-1', engine2);
      expect(evm2.payments).toEqual([]);
      expect(new Set(evm2.broadcasts.map((b) => b.txid))).toEqual(new Set(['evm-pay-1']));
    });

    it('replaces a payment its network reports dead by attempt 1 while the deadline allows', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited' }));
      const first = await r.storedPayment('old');
      await setTxState(r.store.db, first, 'sent');
      r.evm.states.set('old', { state: 'dead' });
      await r.run('intent-1');
      expect(r.evm.payments).toHaveLength(1);
      expect(r.evm.broadcasts.map((b) => b.txid)).toEqual(['evm-pay-1']);
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toMatchObject({
        attempt: 1,
        txid: 'evm-pay-1',
        state: 'sent',
      });
      const old = await r.store.db
        .selectFrom('txs')
        .select('state')
        .where('intent_id', '=', 'intent-1')
        .where('attempt', '=', 0)
        .executeTakeFirst();
      expect(old?.state).toBe('dead');
    });

    it('does not replace a dead payment when the deadline is too close', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited', deadline: NOW_SECS + SAFETY - 1 }));
      await r.storedPayment('old');
      r.evm.states.set('old', { state: 'dead' });
      await r.run('intent-1');
      expect(r.evm.payments).toEqual([]);
      expect(r.evm.broadcasts).toEqual([]);
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toMatchObject({ attempt: 0, state: 'dead' });
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({ state: 'abandoned' });
      expect(r.api.callsOf('fulfil')).toEqual([]);
    });

    it('does not pay when late and nothing is stored', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited', deadline: NOW_SECS + SAFETY - 1 }));
      await r.run('intent-1');
      expect(r.evm.payments).toEqual([]);
      expect(r.evm.broadcasts).toEqual([]);
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toBeUndefined();
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({
        state: 'abandoned',
        note: 'deadline too close to pay',
      });
    });

    it('does not send a payment stored but never sent once the deadline is too close (driven by kick)', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited', deadline: NOW_SECS + SAFETY - 1 }));
      await r.storedPayment('stored');
      await r.run('intent-1');
      expect(r.evm.broadcasts).toEqual([]);
      expect(r.evm.payments).toEqual([]);
      expect(await latestTx(r.store.db, 'intent-1', 'payment')).toMatchObject({ state: 'dead' });
      // Given back: the wallet's next transaction takes its nonce (no gap holding the later ones).
      expect(r.evm.released).toEqual(['stored']);
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({ state: 'abandoned' });
    });

    // recover() re-sends stored transactions before anything is driven, but not a payment that was
    // never sent and is now too late (deadline − safety_secs), which #pay would refuse too.
    it('recover() does not send a never-sent payment once the deadline is too close', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited', deadline: NOW_SECS + SAFETY - 1 }));
      await r.storedPayment('stored');
      await r.engine.recover();
      await r.engine.idle();
      expect(r.evm.broadcasts).toEqual([]);
      expect(r.evm.released).toEqual(['stored']);
    });

    it('pays at exactly deadline − safety (the boundary is not late)', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited', deadline: NOW_SECS + SAFETY }));
      await r.run('intent-1');
      expect(r.evm.payments).toHaveLength(1);
    });

    it('retries a fulfilment refused for confirmations later, without an error', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited' }));
      r.evm.afterBroadcast = { state: 'confirmed', confirmations: 1 };
      r.api.on.fulfil = () => {
        throw txNotVerified('confirmations');
      };
      await r.run('intent-1');
      expect(r.api.callsOf('fulfil')).toEqual([['intent-1', 'evm-pay-1']]);
      // waiting, not failed: still active, no error noted, still reserved
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({ state: 'active', note: null });

      r.api.on.fulfil = (id) => r.api.setStatus(id as string, 'Fulfilled');
      r.btc.afterBroadcast = { state: 'confirmed', confirmations: 1 };
      await r.run('intent-1');
      expect(r.api.callsOf('fulfil')).toEqual([
        ['intent-1', 'evm-pay-1'],
        ['intent-1', 'evm-pay-1'],
      ]);
      expect(r.evm.payments).toHaveLength(1);
    });

    it('notes another refusal of the fulfilment as an error (and still does not pay twice)', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'UserDeposited' }));
      r.evm.afterBroadcast = { state: 'confirmed', confirmations: 1 };
      r.api.on.fulfil = () => {
        throw txNotVerified('amount');
      };
      await r.run('intent-1');
      await r.run('intent-1');
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({
        state: 'active',
        note: expect.stringContaining('TX_NOT_VERIFIED'),
      });
      expect(r.evm.payments).toHaveLength(1);
    });
  });

  describe('claim and refund', () => {
    it('claims a Fulfilled intent with the preimage the service reveals', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'Fulfilled' }));
      r.btc.afterBroadcast = { state: 'confirmed', confirmations: 1 };
      await r.run('intent-1');
      expect(r.api.callsOf('secret')).toEqual([['intent-1']]);
      expect(r.btc.claims.map((c) => c.preimage)).toEqual([PREIMAGE]);
      expect(r.btc.broadcasts.map((b) => b.txid)).toEqual(['btc-claim-1']);
      expect(r.api.callsOf('claim')).toEqual([['intent-1', 'btc-claim-1']]);
      expect(await latestTx(r.store.db, 'intent-1', 'claim')).toMatchObject({ state: 'confirmed' });
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({ state: 'done' });
    });

    it('does not claim again when the claim leg is already settled', async () => {
      const r = await rig();
      r.api.add(intentView({ status: 'Fulfilled', legs: [{ leg: 'claim', tx_hash: 'done-before' }] }));
      await r.run('intent-1');
      expect(r.btc.claims).toEqual([]);
      expect(r.api.callsOf('claim')).toEqual([]);
    });

    it('refunds exactly the deposited amount of an expired cosign (Solana) intent to the refund address', async () => {
      const r = await rig();
      r.api.add(
        intentView({
          status: 'Expired',
          mechanism: 'cosign',
          sourceChain: SOL_NET,
          sourceToken: SOL_MINT,
          destChain: EVM_NET,
          sourceAmount: '2000000000',
          refundAddress: 'UserRefundAddress1111111111111111111111111',
          legs: [{ leg: 'deposit', tx_hash: 'sig-deposit', recipient: r.sol.identity, amount: '1999995000' }],
        }),
      );
      r.sol.afterBroadcast = { state: 'confirmed', confirmations: 1 };
      await r.run('intent-1');
      expect(r.sol.payments).toEqual([
        {
          intentId: 'intent-1',
          token: SOL_MINT,
          to: 'UserRefundAddress1111111111111111111111111',
          amount: 1_999_995_000n,
        },
      ]);
      expect(r.sol.broadcasts.map((b) => b.txid)).toEqual(['sol-pay-1']);
      expect(r.api.callsOf('refund')).toEqual([['intent-1', 'sol-pay-1']]);
      expect(await latestTx(r.store.db, 'intent-1', 'refund')).toMatchObject({ state: 'confirmed' });
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({ state: 'done', note: 'refunded' });
    });

    it('an expired cosign intent whose deposit it sent and never reported: reports it (recorded late), then refunds it; a deposit never sent is not sent now', async () => {
      const r = await rig();
      const expired = (id: string) =>
        intentView({
          id,
          status: 'Expired',
          mechanism: 'cosign',
          sourceChain: SOL_NET,
          sourceToken: SOL_MINT,
          destChain: EVM_NET,
          sourceAmount: '2000000000',
          refundAddress: 'UserRefundAddress1111111111111111111111111',
        });
      r.api.add(expired('intent-1'));
      r.api.add(expired('never-sent'));
      const store = (intentId: string, txid: string) =>
        storeTx(
          r.store.db,
          { intentId, role: 'deposit', attempt: 0, networkId: SOL_NET, tx: { txid, raw: 'r', meta: {} } },
          NOW,
        );
      await store('intent-1', 'sol-deposit-sent');
      await store('never-sent', 'sol-deposit-unsent');
      r.sol.states.set('sol-deposit-sent', { state: 'confirmed', confirmations: 1 });
      // The service records the late deposit (record_deposit): the leg appears on the intent.
      r.api.on.deposit = (id, tx) =>
        (r.api.views.get(id as string)!.intent as unknown as { settlement: Leg[] }).settlement.push({
          leg: 'deposit',
          tx_hash: tx as string,
          recipient: r.sol.identity,
          amount: '2000000000',
        } as Leg);
      r.sol.afterBroadcast = { state: 'confirmed', confirmations: 1 };
      await r.run('intent-1');
      await r.run('intent-1');
      expect(r.api.callsOf('deposit')).toEqual([['intent-1', 'sol-deposit-sent']]);
      expect(r.sol.payments).toEqual([
        {
          intentId: 'intent-1',
          token: SOL_MINT,
          to: 'UserRefundAddress1111111111111111111111111',
          amount: 2_000_000_000n,
        },
      ]);
      expect(r.api.callsOf('refund')).toEqual([['intent-1', 'sol-pay-1']]);
      expect(await loadFill(r.store.db, 'intent-1')).toMatchObject({ state: 'done', note: 'refunded' });

      // Signed and stored, never on chain: the intent has ended, so it stays unsent and nothing is owed.
      await r.run('never-sent');
      expect(r.sol.broadcasts.map((b) => b.txid)).toEqual(['sol-pay-1']);
      expect(r.api.callsOf('deposit')).toEqual([['intent-1', 'sol-deposit-sent']]);
      expect(r.sol.payments).toHaveLength(1);
    });

    it('does not refund a cosign deposit paid to another wallet, nor an htlc intent', async () => {
      const r = await rig();
      r.api.add(
        intentView({
          id: 'elsewhere',
          status: 'Expired',
          mechanism: 'cosign',
          sourceChain: SOL_NET,
          legs: [{ leg: 'deposit', tx_hash: 'sig', recipient: 'SomeoneElse', amount: '5' }],
        }),
      );
      r.api.add(
        intentView({
          id: 'htlc',
          status: 'Expired',
          legs: [{ leg: 'deposit', tx_hash: 'f', recipient: r.btc.identity, amount: '5' }],
        }),
      );
      await r.run('elsewhere');
      await r.run('htlc');
      expect(r.sol.payments).toEqual([]);
      expect(r.btc.payments).toEqual([]);
      expect(r.api.callsOf('refund')).toEqual([]);
    });
  });
});

beforeAll(() => {
  expect(cfg.fill.safety_secs).toBe(SAFETY);
});
