/**
 * The resolver's Bitcoin hot wallet: one key, its P2TR key-path address, read and broadcast through an
 * Electrum server (`@rgbx/chains/btc`'s {@link ElectrumConnection}). It pays destinations (with the
 * intent's OP_RETURN commitment) and claims HTLC sources with the preimage.
 */
import {
  type BtcNetwork,
  btcSignerNetwork,
  buildHtlc,
  buildHtlcClaimTx,
  type ElectrumConnection,
  ElectrumServerError,
  type ElectrumUtxo,
  parseTx,
  ReconnectingElectrum,
  scriptHash,
} from '@rgbx/chains/btc';
import { Address, OutScript, p2tr, Transaction, utils } from '@scure/btc-signer';
import type { ChainWallet, IntentView, PaymentRequest, SignedTx, TxState } from './wallet.ts';

export interface BitcoinWalletOptions {
  /** `tcp://host:port` of the Electrum server. */
  electrumUrl: string;
  network: BtcNetwork;
  /** The 32-byte secp256k1 secret key: its x-only public key is the identity and the HTLC claim key. */
  privateKey: Uint8Array;
  /** sat/vB used when the server has no estimate (`blockchain.estimatefee` answers -1 or fails). Default 2. */
  feeRateSatVb?: bigint | number;
  /** Upper bound on any fee rate used, sat/vB: a wrong or hostile estimate cannot drain the wallet. Default 500. */
  maxFeeRateSatVb?: bigint | number;
  /** `blockchain.estimatefee` target, blocks. Default 2. */
  confirmationTarget?: number;
  /**
   * Confirmations an own UTXO needs to be spent (and counted by `balance`). Default 1. Unconfirmed outputs
   * of transactions this wallet signed (own change, own claims; see {@link BitcoinWallet.track}) are
   * always spendable: nobody else can double-spend their inputs. 0 also admits unconfirmed third-party
   * payments, which their sender could replace (the payment built on them would then go `dead`).
   */
  minConfirmations?: number;
  /** Electrum connect and per-request timeout, ms. Default 10 000. */
  timeoutMs?: number;
}

/** Not enough spendable sats for the payment and its fee. */
export class InsufficientFunds extends Error {
  override readonly name = 'InsufficientFunds';
  /** Sats the payment needs: amount plus the fee of spending every available UTXO. */
  readonly expected: bigint;
  /** Spendable sats (confirmed enough, or own change), not reserved by a signed transaction. */
  readonly available: bigint;
  constructor(expected: bigint, available: bigint) {
    super(`insufficient BTC: need ${expected} sats (amount + fee), ${available} spendable`);
    this.expected = expected;
    this.available = available;
  }
}

const COMMITMENT = /^6a20[0-9a-f]{64}$/;
const TXID = /^[0-9a-f]{64}$/;
/** Outputs below it are not worth spending: change smaller than this goes to the fee (P2TR dust limit). */
const CHANGE_DUST = 330n;
/**
 * Broadcast answers meaning "this very transaction is already there" (bitcoind, through our server):
 * in the mempool, or its outputs already in the UTXO set (the wording changed across versions).
 */
const ALREADY_THERE =
  /txn-already-in-mempool|txn-already-known|txn-same-nonwitness-data-in-mempool|already in block chain|already in utxo set/i;

interface Utxo {
  txid: string;
  vout: number;
  value: bigint;
  confirmed: boolean;
}

/** CompactSize length of `n`. */
function varintLen(n: number): number {
  return n < 0xfd ? 1 : n <= 0xffff ? 3 : 5;
}

/** vsize of a transaction spending `inputs` P2TR key-path inputs (64-byte SIGHASH_DEFAULT signatures). */
function keyPathVsize(inputs: number, outputScripts: Uint8Array[]): number {
  const outs = outputScripts.reduce((n, s) => n + 8 + varintLen(s.length) + s.length, 0);
  const base = 4 + varintLen(inputs) + inputs * (32 + 4 + 1 + 4) + varintLen(outputScripts.length) + outs + 4;
  // marker + flag, then per input: item count, length, signature
  const witness = 2 + inputs * (1 + 1 + 64);
  return Math.ceil((base * 4 + witness) / 4);
}

/** bitcoind's dust threshold at the default 3 sat/vB dust relay fee: (output size + spending input size) × 3. */
function dustThreshold(script: Uint8Array): bigint {
  if (script[0] === 0x6a) return 0n;
  const outSize = 8 + varintLen(script.length) + script.length;
  const isWitness =
    script.length >= 4 &&
    script.length <= 42 &&
    (script[0] === 0 || (script[0]! >= 0x51 && script[0]! <= 0x60));
  const inSize = isWitness ? 32 + 4 + 1 + Math.floor(107 / 4) + 4 : 32 + 4 + 1 + 107 + 4;
  return BigInt((outSize + inSize) * 3);
}

function toRate(v: bigint | number, name: string): bigint {
  const r = typeof v === 'bigint' ? v : BigInt(Math.ceil(v));
  if (r < 1n) throw new RangeError(`${name} must be ≥ 1 sat/vB, got ${v}`);
  return r;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/**
 * {@link ChainWallet} for BITCOIN networks. The identity is the key's x-only public key (hex: the swap
 * service's `bitcoin_claim_pubkey`); the funds live on its P2TR key-path (BIP-86 style, no script tree)
 * address, {@link BitcoinWallet.address}.
 *
 * - `signPayment` spends own UTXOs (confirmed, or unconfirmed own change) to `to`, plus the intent's
 *   OP_RETURN commitment, plus change back to {@link BitcoinWallet.address} (dropped into the fee below
 *   330 sats). Outpoints spent by transactions this instance signed are reserved until those are known
 *   confirmed or dead, so two signed transactions never share an input; after a restart the engine
 *   re-registers its stored transactions with {@link BitcoinWallet.track}.
 * - `signClaim` spends the HTLC's claim leaf to the own address.
 * - `status` reads the own address's history (every transaction this wallet signs touches it: payments
 *   spend from it, claims pay to it), then, for a transaction not found, each input (Electrum
 *   listunspent/get_history of the input's scripthash): still unspent, or its parent unknown → `unknown`;
 *   spent by another transaction that is confirmed → `dead`. A conflicting spend still in the mempool
 *   leaves it `unknown`: that spend can be evicted or replaced, and this one become valid again.
 *   Reorganizations deeper than the conflicting spend's block are not guarded against.
 * - `broadcast` treats "already in the mempool / in the UTXO set" answers as success; any other refusal
 *   (notably `bad-txns-inputs-missingorspent`, also bitcoind's answer for this very transaction once mined
 *   with all its outputs spent) is a success only if `status` then finds the transaction on chain.
 *
 * `meta` of the signed transactions: `inputs` ("txid:vout,…"), `scripthashes` (Electrum scripthash of each
 * input's output, same order, for `status`), `fee` (sats, decimal), `vsize`, `fee_rate` (sat/vB).
 *
 * @example
 * const w = new BitcoinWallet({ electrumUrl: 'tcp://127.0.0.1:50001', network: 'regtest', privateKey });
 * const tx = await w.signPayment({ intentId, token: 'BTC', to, amount: 10_000n, commitment });
 * await store.save(tx); await w.broadcast(tx);
 */
export class BitcoinWallet implements ChainWallet {
  readonly type = 'BITCOIN' as const;
  readonly identity: string;
  /** The wallet's own P2TR key-path address: fund it; change and claims go there. */
  readonly address: string;
  readonly network: BtcNetwork;
  readonly #key: Uint8Array;
  readonly #xonly: Uint8Array;
  readonly #script: Uint8Array;
  readonly #scripthash: string;
  readonly #fallbackRate: bigint;
  readonly #maxRate: bigint;
  readonly #target: number;
  readonly #minConf: number;
  /** outpoint → txid of the signed transaction spending it. */
  readonly #reserved = new Map<string, string>();
  /** Transactions this instance signed or was told about: their unconfirmed outputs count as own. */
  readonly #signed = new Map<string, string[]>();
  readonly #electrum: ReconnectingElectrum;
  /** Serializes coin selection, so concurrent payments never pick the same UTXO. */
  #lock: Promise<unknown> = Promise.resolve();

  constructor(opts: BitcoinWalletOptions) {
    if (!(opts.privateKey instanceof Uint8Array) || opts.privateKey.length !== 32)
      throw new TypeError('privateKey must be 32 bytes');
    this.network = opts.network;
    this.#key = Uint8Array.from(opts.privateKey);
    this.#xonly = utils.pubSchnorr(this.#key);
    const pay = p2tr(this.#xonly, undefined, btcSignerNetwork(opts.network));
    if (!pay.address) throw new Error('p2tr produced no address');
    this.identity = hex(this.#xonly);
    this.address = pay.address;
    this.#script = pay.script;
    this.#scripthash = scriptHash(pay.script);
    this.#electrum = new ReconnectingElectrum(opts.electrumUrl, {
      timeoutMs: opts.timeoutMs ?? 10_000,
      clientName: 'rgbx-resolver',
    });
    this.#fallbackRate = toRate(opts.feeRateSatVb ?? 2n, 'feeRateSatVb');
    this.#maxRate = toRate(opts.maxFeeRateSatVb ?? 500n, 'maxFeeRateSatVb');
    this.#target = opts.confirmationTarget ?? 2;
    this.#minConf = opts.minConfirmations ?? 1;
    if (!Number.isInteger(this.#minConf) || this.#minConf < 0)
      throw new RangeError(`minConfirmations must be an integer ≥ 0, got ${opts.minConfirmations}`);
  }

  async balance(token: string): Promise<bigint> {
    if (token !== 'BTC') throw new Error(`BitcoinWallet: unknown token ${JSON.stringify(token)} (only BTC)`);
    return (await this.#spendable()).reduce((s, u) => s + u.value, 0n);
  }

  signPayment(p: PaymentRequest): Promise<SignedTx> {
    return this.#exclusive(() => this.#signPayment(p));
  }

  async #signPayment(p: PaymentRequest): Promise<SignedTx> {
    if (p.token !== 'BTC')
      throw new Error(`BitcoinWallet: unknown token ${JSON.stringify(p.token)} (only BTC)`);
    if (typeof p.amount !== 'bigint' || p.amount <= 0n)
      throw new RangeError(`amount must be positive sats, got ${p.amount}`);
    let to: Uint8Array;
    try {
      to = OutScript.encode(Address(btcSignerNetwork(this.network)).decode(p.to));
    } catch {
      throw new Error(`BitcoinWallet: ${JSON.stringify(p.to)} is not a ${this.network} address`);
    }
    if (p.amount < dustThreshold(to))
      throw new RangeError(`amount ${p.amount} is below the dust limit of ${p.to}`);
    const commitment = p.commitment ? p.commitment.toLowerCase() : null;
    if (commitment !== null && !COMMITMENT.test(commitment))
      throw new Error(
        `commitment must be an OP_RETURN of 32 bytes (6a20 + 64 hex), got ${JSON.stringify(p.commitment)}`,
      );

    const rate = await this.#feeRate();
    // Confirmed first (a chain of unconfirmed parents slows the payment), then the largest.
    const utxos = (await this.#spendable()).sort(
      (a, b) =>
        Number(b.confirmed) - Number(a.confirmed) || (b.value > a.value ? 1 : b.value < a.value ? -1 : 0),
    );
    const fixed = commitment === null ? [to] : [to, Buffer.from(commitment, 'hex')];
    let chosen: Utxo[] | undefined;
    let change = 0n;
    let sum = 0n;
    for (let n = 1; n <= utxos.length && !chosen; n++) {
      sum += utxos[n - 1]!.value;
      const withChange = BigInt(keyPathVsize(n, [...fixed, this.#script])) * rate;
      const without = BigInt(keyPathVsize(n, fixed)) * rate;
      if (sum - p.amount - withChange >= CHANGE_DUST) {
        chosen = utxos.slice(0, n);
        change = sum - p.amount - withChange;
      } else if (sum - p.amount >= without) {
        chosen = utxos.slice(0, n); // the remainder (dust) goes to the fee
      }
    }
    if (!chosen) {
      const all = utxos.reduce((s, u) => s + u.value, 0n);
      throw new InsufficientFunds(
        p.amount + BigInt(keyPathVsize(Math.max(utxos.length, 1), fixed)) * rate,
        all,
      );
    }

    const tx = new Transaction({ allowUnknownOutputs: true });
    for (const u of chosen)
      tx.addInput({
        txid: u.txid,
        index: u.vout,
        witnessUtxo: { script: this.#script, amount: u.value },
        tapInternalKey: this.#xonly,
      });
    tx.addOutput({ script: to, amount: p.amount });
    if (commitment !== null) tx.addOutput({ script: Buffer.from(commitment, 'hex'), amount: 0n });
    if (change > 0n) tx.addOutput({ script: this.#script, amount: change });
    tx.sign(this.#key);
    tx.finalize();
    const raw = tx.hex;
    const vsize = Math.ceil(parseTx(Buffer.from(raw, 'hex')).weight / 4);
    const fee = chosen.reduce((s, u) => s + u.value, 0n) - p.amount - change;
    // The estimate is exact for key-path spends; a larger tx would pay less than the rate.
    if (BigInt(vsize) * rate > fee)
      throw new Error(`internal: fee ${fee} below ${rate} sat/vB for ${vsize} vB`);
    const signed: SignedTx = {
      txid: tx.id,
      raw,
      meta: {
        inputs: chosen.map((u) => `${u.txid}:${u.vout}`).join(','),
        scripthashes: chosen.map(() => this.#scripthash).join(','),
        fee: fee.toString(),
        vsize,
        fee_rate: Number(rate),
      },
    };
    this.track(signed);
    return signed;
  }

  /** HTLC sources: the swap service broadcasts the user's funding on accept; nothing to sign. */
  async signDeposit(_intent: IntentView): Promise<SignedTx | null> {
    return null;
  }

  async signClaim(intent: IntentView, preimage: string): Promise<SignedTx | null> {
    const ex = intent.execution as Record<string, unknown> | null;
    if (!ex) throw new Error('signClaim: the intent has no execution (not approved yet)');
    const str = (k: string): string => {
      const v = ex[k];
      if (typeof v !== 'string' && typeof v !== 'number') throw new Error(`execution.${k} missing`);
      return String(v);
    };
    if (str('network') !== this.network)
      throw new Error(`execution.network is ${str('network')}, this wallet is on ${this.network}`);
    // Another resolver's HTLC: its claim leaf does not take our signature.
    if (str('resolver_pubkey').toLowerCase() !== this.identity)
      throw new Error(
        `execution.resolver_pubkey ${str('resolver_pubkey')} is not this wallet's key ${this.identity}`,
      );
    const fundingTxid = str('funding_txid').toLowerCase();
    if (!TXID.test(fundingTxid)) throw new Error(`execution.funding_txid is not a txid: ${fundingTxid}`);
    const vout = Number(str('htlc_vout'));
    const amount = BigInt(str('amount'));
    const htlc = buildHtlc({
      secretHash: str('secret_hash'),
      resolverPubkey: this.#xonly,
      userPubkey: str('user_pubkey'),
      locktime: Number(str('locktime')),
      network: this.network,
    });
    if (typeof ex.htlc_address === 'string' && ex.htlc_address !== htlc.address)
      throw new Error(
        `execution.htlc_address ${ex.htlc_address} differs from the rebuilt HTLC ${htlc.address}`,
      );
    // Check the funded output itself: a wrong amount would only yield an invalid signature, but a
    // stored transaction that can never be broadcast is worse than an error now.
    const fundingHex =
      typeof ex.funding_tx_hex === 'string'
        ? ex.funding_tx_hex
        : await this.#call((c) => c.request<string>('blockchain.transaction.get', [fundingTxid]));
    const funding = parseTx(Buffer.from(fundingHex, 'hex'));
    const out = funding.outputs[vout];
    if (funding.txid !== fundingTxid || !out || out.value !== amount || !out.script.equals(htlc.outputScript))
      throw new Error(
        `funding ${fundingTxid}:${vout} is not an HTLC output of ${amount} sats to ${htlc.address}`,
      );

    const pre = preimage.startsWith('0x') ? preimage.slice(2) : preimage;
    if (!/^[0-9a-fA-F]{64}$/.test(pre)) throw new Error('preimage must be 32 bytes of hex');
    const rate = await this.#feeRate();
    const claim = buildHtlcClaimTx({
      htlc,
      fundingTxid,
      vout,
      amount,
      destinationAddress: this.address,
      feeRate: rate,
      preimage: Uint8Array.from(Buffer.from(pre, 'hex')),
      resolverPrivateKey: this.#key,
    });
    const signed: SignedTx = {
      txid: claim.txid,
      raw: claim.txHex,
      meta: {
        inputs: `${fundingTxid}:${vout}`,
        scripthashes: scriptHash(htlc.outputScript),
        fee: claim.fee.toString(),
        vsize: claim.vsize,
        fee_rate: Number(rate),
      },
    };
    this.track(signed);
    return signed;
  }

  /**
   * Registers a transaction signed by an earlier run (the engine's stored ones, after a restart): its
   * inputs are reserved again and its unconfirmed outputs to the own address count as own change.
   */
  track(tx: SignedTx): void {
    const inputs = String(tx.meta.inputs ?? '')
      .split(',')
      .filter((s) => s !== '');
    this.#signed.set(tx.txid, inputs);
    for (const o of inputs) this.#reserved.set(o, tx.txid);
  }

  /** A stored transaction dropped unsent: its inputs can be selected again. */
  release(tx: SignedTx): void {
    this.#release(tx.txid);
  }

  async broadcast(tx: SignedTx): Promise<void> {
    if (parseTx(Buffer.from(tx.raw, 'hex')).txid !== tx.txid)
      throw new Error(`raw transaction is not ${tx.txid}`);
    try {
      await this.#call((c) => c.broadcast(tx.raw));
    } catch (err) {
      if (!(err instanceof ElectrumServerError)) throw err;
      if (ALREADY_THERE.test(err.serverMessage)) return;
      // "bad-txns-inputs-missingorspent" is also the answer for this very tx once mined and its outputs
      // spent, but equally for a conflicting tx having spent the inputs: only the chain can tell.
      const s = await this.status(tx);
      if (s.state === 'confirmed' || s.state === 'pending') return;
      throw err;
    }
  }

  async status(tx: SignedTx): Promise<TxState> {
    const own = await this.#call((c) => c.getHistory(this.#scripthash));
    const found = own.find((e) => e.tx_hash === tx.txid);
    if (found) return this.#settle(tx, found.height);
    const inputs = String(tx.meta.inputs ?? '')
      .split(',')
      .filter((s) => s !== '');
    const hints = String(tx.meta.scripthashes ?? '').split(',');
    for (const [i, outpoint] of inputs.entries()) {
      const [parent, voutText] = outpoint.split(':') as [string, string];
      const vout = Number(voutText);
      const sh = hints[i] || (await this.#scripthashOf(parent, vout));
      if (sh === undefined) continue; // parent unknown to the server: nothing spends it yet
      const unspent = await this.#call((c) => c.listUnspent(sh));
      if (unspent.some((u) => u.tx_hash === parent && u.tx_pos === vout)) continue;
      // Read after listunspent: a spender that arrived in between is in this history.
      const history = await this.#call((c) => c.getHistory(sh));
      const mine = history.find((e) => e.tx_hash === tx.txid);
      if (mine) return this.#settle(tx, mine.height);
      if (!history.some((e) => e.tx_hash === parent)) continue; // parent unknown: not spent, only unseen
      // Spent by another transaction. Only a confirmed spend kills ours: a mempool one can still be
      // evicted or replaced, and ours (perhaps in other nodes' mempools) would then be valid again.
      if (await this.#spentInMempool(sh, parent, vout)) return { state: 'unknown' };
      // The mempool spender may have been evicted meanwhile (the output is back): not dead either.
      const again = await this.#call((c) => c.listUnspent(sh));
      if (again.some((u) => u.tx_hash === parent && u.tx_pos === vout)) continue;
      this.#release(tx.txid);
      return { state: 'dead' };
    }
    return { state: 'unknown' };
  }

  close(): Promise<void> {
    return this.#electrum.close();
  }

  async #settle(tx: SignedTx, height: number): Promise<TxState> {
    if (height <= 0) return { state: 'pending' };
    const tip = await this.#call((c) => c.headersSubscribe());
    this.#release(tx.txid); // its inputs are spent on chain: no longer selectable anyway
    return { state: 'confirmed', confirmations: Math.max(1, tip.height - height + 1) };
  }

  /** Forgets a transaction that is confirmed or dead: its inputs are spent, its outputs no longer unconfirmed. */
  #release(txid: string): void {
    for (const o of this.#signed.get(txid) ?? [])
      if (this.#reserved.get(o) === txid) this.#reserved.delete(o);
    this.#signed.delete(txid);
  }

  /** True when a mempool transaction touching `sh` spends `txid:vout`. */
  async #spentInMempool(sh: string, txid: string, vout: number): Promise<boolean> {
    const mempool = await this.#call((c) =>
      c.request<{ tx_hash: string }[]>('blockchain.scripthash.get_mempool', [sh]),
    );
    for (const e of mempool) {
      let raw: string;
      try {
        raw = await this.#call((c) => c.request<string>('blockchain.transaction.get', [e.tx_hash]));
      } catch (err) {
        if (err instanceof ElectrumServerError) continue; // left the mempool meanwhile
        throw err;
      }
      if (parseTx(Buffer.from(raw, 'hex')).inputs.some((i) => i.prevTxid === txid && i.prevVout === vout))
        return true;
    }
    return false;
  }

  /** The scripthash of `txid:vout`'s output, from the parent transaction; undefined when the server lacks it. */
  async #scripthashOf(txid: string, vout: number): Promise<string | undefined> {
    let raw: string;
    try {
      raw = await this.#call((c) => c.request<string>('blockchain.transaction.get', [txid]));
    } catch (err) {
      if (err instanceof ElectrumServerError) return undefined;
      throw err;
    }
    const out = parseTx(Buffer.from(raw, 'hex')).outputs[vout];
    return out ? scriptHash(out.script) : undefined;
  }

  /** Own UTXOs that may be spent now and are not reserved by a signed transaction. */
  async #spendable(): Promise<Utxo[]> {
    const [list, tip] = await Promise.all([
      this.#call((c) => c.listUnspent(this.#scripthash)),
      this.#minConf > 1 ? this.#call((c) => c.headersSubscribe()) : Promise.resolve(undefined),
    ]);
    return list
      .filter((u: ElectrumUtxo) => {
        if (this.#reserved.has(`${u.tx_hash}:${u.tx_pos}`)) return false;
        if (u.height <= 0) return this.#minConf === 0 || this.#signed.has(u.tx_hash);
        return tip === undefined || tip.height - u.height + 1 >= this.#minConf;
      })
      .map((u) => ({ txid: u.tx_hash, vout: u.tx_pos, value: BigInt(u.value), confirmed: u.height > 0 }));
  }

  /** sat/vB from `blockchain.estimatefee` (BTC/kvB), the fallback when it has none, never above the cap. */
  async #feeRate(): Promise<bigint> {
    let rate = this.#fallbackRate;
    try {
      const btcPerKvB = await this.#call((c) => c.request<number>('blockchain.estimatefee', [this.#target]));
      if (typeof btcPerKvB === 'number' && Number.isFinite(btcPerKvB) && btcPerKvB > 0) {
        const satPerKvB = BigInt(Math.round(btcPerKvB * 1e8));
        rate = (satPerKvB + 999n) / 1000n;
      }
    } catch (err) {
      if (!(err instanceof ElectrumServerError)) throw err; // unreachable server: nothing to broadcast to either
    }
    if (rate < 1n) rate = 1n;
    if (rate > this.#maxRate) rate = this.#maxRate; // bigint: no Math.min
    return rate;
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn, fn);
    this.#lock = run.catch(() => {});
    return run;
  }

  async #call<T>(fn: (c: ElectrumConnection) => Promise<T>): Promise<T> {
    return fn(await this.#electrum.get());
  }
}
