/**
 * Wallet webhooks: a wallet's events (the same ones `GET /wallet/events` streams) POSTed to the URL the wallet set
 * with `POST /wallet/webhook`, signed and guarded exactly as the cloud's webhooks (`@rgbx/service-kit/webhooks`:
 * RSA-SHA256 over the body, the `X-Service-*` headers, the SSRF policy checked when the URL is set and again on
 * the address each attempt connects to).
 *
 * At least once, in order per wallet: the wallet's event log is the outbox. `rgbx-webhook.json` in the wallet's
 * directory holds the URL and `delivered_through`, the last event id a receiver answered 2xx for, written after
 * that answer; a restart (or a crash) resumes after it, so an event is sent again only if its 2xx answer was not
 * recorded (receivers deduplicate by the signed body's wallet and id: the SDK's `eventKey`, equal to `X-Service-Event-Id`). One event per request, the next only after the
 * previous one was accepted; a failed attempt is retried on a schedule (1 s … 5 min, with jitter, `Retry-After`
 * honoured), without giving up. The log's retention keeps undelivered events (up to
 * `wallet.webhook_max_pending_events`), so a receiver that is down for a day still gets everything.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { retryAfterMs as retryAfterHeader } from '@rgbx/codecs/http';
import type { WalletWebhookStatus } from '@rgbx/contracts/wallet-node';
import type { Logger } from '@rgbx/service-kit';
import {
  type AddressPolicy,
  checkWebhookUrl,
  generateWebhookKey,
  keyIdOf,
  type Resolver,
  type RetryPolicy,
  retryDelay,
  signWebhookBody,
  WebhookHttpClient,
  webhookHeaders,
  webhookUrlProblem,
} from '@rgbx/service-kit/webhooks';
import type { WalletEvents } from './hub.ts';
import { writeAtomic } from './log.ts';
import type { WalletEvent } from './state.ts';

export const WEBHOOK_FILE = 'rgbx-webhook.json';
export const USER_AGENT = 'rgbx-wallet-node-webhooks/0.1';

/** Retry spacing: 1 s, 5 s, 30 s, 2 min, then every 5 min, ±20 %. No give-up: the log holds the events. */
export const WALLET_WEBHOOK_RETRY: RetryPolicy = {
  scheduleMs: [1_000, 5_000, 30_000, 120_000, 300_000],
  jitter: 0.2,
  giveUpAfterMs: Number.POSITIVE_INFINITY,
};

/** The retry schedule with no wait longer than `maxMs`. */
export function retryCappedAt(maxMs: number): RetryPolicy {
  return {
    ...WALLET_WEBHOOK_RETRY,
    scheduleMs: WALLET_WEBHOOK_RETRY.scheduleMs.map((ms) => Math.min(ms, maxMs)),
  };
}

interface WebhookFile {
  version: 1;
  wallet: string;
  url: string;
  /** ISO time it was set. */
  since: string;
  /** Events up to this id were accepted (2xx) or are older than the subscription. */
  delivered_through: number;
  /** Events lost to the retention before they could be delivered (the receiver was down past the hold). */
  skipped: number;
  /** `config`: the node's `wallet.webhook_url` (absent: set by the wallet with `POST /wallet/webhook`). */
  origin?: 'config';
  /** Counts `POST /wallet/webhook/redeliver`: an attempt in flight across one does not move `delivered_through`. */
  replays?: number;
}

/** `GET /wallet/webhook`'s answer (declared in the contracts, shared with the SDK). */
export type WebhookStatus = WalletWebhookStatus;

export interface WalletWebhooksOptions {
  dataDir: string;
  /**
   * `wallet.webhook_url`: every wallet without a webhook of its own delivers here (from the node's start for the
   * wallets it has then, from their first event for the wallets registered later).
   */
  defaultUrl?: string;
  keyFile: string;
  policy: AddressPolicy;
  resolver: Resolver;
  timeoutMs: number;
  maxPendingEvents: number;
  events: WalletEvents;
  log: Logger;
  retry?: RetryPolicy;
  extraCa?: string;
  /** Told of every attempt's outcome (metrics). */
  onAttempt?: (delivered: boolean) => void;
}

interface Delivery {
  dir: string;
  /** Running now (one loop per wallet). */
  running: boolean;
  /** New events arrived while it ran. */
  again: boolean;
  failures: number;
  lastError: string | null;
  nextAt: number | null;
  timer: NodeJS.Timeout | undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** No retry pending, no failure counted (a new webhook, or an event accepted). */
function resetRetry(d: Delivery): void {
  clearTimeout(d.timer);
  d.timer = undefined;
  d.failures = 0;
  d.lastError = null;
  d.nextAt = null;
}

/** A webhook set now, delivering the events after `deliveredThrough`. */
function newWebhookFile(
  wallet: string,
  url: string,
  deliveredThrough: number,
  origin?: 'config',
): WebhookFile {
  return {
    version: 1,
    wallet,
    url,
    since: new Date().toISOString(),
    delivered_through: deliveredThrough,
    skipped: 0,
    ...(origin ? { origin } : {}),
  };
}

function saveWebhookFile(dir: string, f: WebhookFile): void {
  writeAtomic(join(dir, WEBHOOK_FILE), `${JSON.stringify(f)}\n`);
}

function readWebhookFile(dir: string): WebhookFile | undefined {
  try {
    const f = JSON.parse(readFileSync(join(dir, WEBHOOK_FILE), 'utf8')) as WebhookFile;
    return f.version === 1 && typeof f.url === 'string' && Number.isSafeInteger(f.delivered_through)
      ? f
      : undefined;
  } catch {
    return undefined;
  }
}

/** The node's signing key: read from `file`, or made there (0600) at the first start. */
export async function loadSigningKey(file: string): Promise<{ key: KeyObject; keyId: string; pem: string }> {
  if (!existsSync(file)) {
    const { privateKey } = await generateWebhookKey();
    // `wx`: two nodes starting on one data_dir cannot both write it (the data_dir lock stops the second anyway).
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, {
      mode: 0o600,
      flag: 'wx',
    });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(readFileSync(file));
  } catch (err) {
    throw new Error(
      `wallet.webhook_signing_key_file: ${file} is not a PEM private key (${(err as Error).message})`,
    );
  }
  if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048)
    throw new Error(`wallet.webhook_signing_key_file: ${file} must hold an RSA key of at least 2048 bits`);
  const pub = createPublicKey(key);
  return { key, keyId: keyIdOf(pub), pem: pub.export({ type: 'spki', format: 'pem' }) as string };
}

export class WalletWebhooks {
  readonly #o: WalletWebhooksOptions;
  readonly #client: WebhookHttpClient;
  readonly #deliveries = new Map<string, Delivery>();
  #key: { key: KeyObject; keyId: string; pem: string } | undefined;
  #closed = false;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(o: WalletWebhooksOptions) {
    this.#o = o;
    this.#client = new WebhookHttpClient(o.policy, o.resolver, o.extraCa);
    o.events.onAppend = (wallet, dir) => this.kick(wallet, dir);
    o.events.holdOf = (wallet, dir) => this.#holdOf(wallet, dir);
  }

  /** Wallets whose delivery waits for a retry (their receiver failed the last attempt). */
  get retrying(): number {
    let n = 0;
    for (const d of this.#deliveries.values()) if (d.timer !== undefined) n++;
    return n;
  }

  get publicKey(): { keyId: string; pem: string } {
    if (!this.#key) throw new Error('wallet webhooks: not started');
    return { keyId: this.#key.keyId, pem: this.#key.pem };
  }

  /** Loads (or makes) the signing key, then resumes every wallet's webhook that has events left to deliver. */
  async start(): Promise<void> {
    // The configured URL is checked as a wallet's is (scheme, credentials, an address literal); the addresses a
    // name resolves to are checked at every attempt (the name may not resolve yet when the node starts).
    const url = this.#o.defaultUrl;
    const why = url === undefined ? undefined : webhookUrlProblem(url, this.#o.policy);
    if (why) throw new Error(`wallet.webhook_url: ${why}`);
    this.#key = await loadSigningKey(this.#o.keyFile);
    let names: string[] = [];
    try {
      names = readdirSync(this.#o.dataDir);
    } catch {}
    for (const name of names) {
      if (name.startsWith('.')) continue; // the node's own (.uploads, .in-flight, the key file …), not wallets
      const dir = join(this.#o.dataDir, name);
      if (!isDirectory(dir)) continue;
      const f = this.#applyConfig(name, dir, readWebhookFile(dir), 'from-now');
      if (f) this.kick(f.wallet, dir);
    }
  }

  /**
   * Brings a wallet's webhook file in line with `wallet.webhook_url`: a wallet's own webhook is kept; the node's is
   * made where the wallet has none (`from-now`: from its next event; `whole-log`: every event its log holds, for a
   * wallet first seen after the start), moved to a changed URL (pending events go there), or removed with the
   * setting. Returns the file that applies, if any.
   */
  #applyConfig(
    wallet: string,
    dir: string,
    f: WebhookFile | undefined,
    start: 'from-now' | 'whole-log',
  ): WebhookFile | undefined {
    if (f && f.origin !== 'config') return f;
    const url = this.#o.defaultUrl;
    if (url === undefined) {
      if (f) rmSync(join(dir, WEBHOOK_FILE), { force: true });
      return undefined;
    }
    if (f) {
      if (f.url !== url) {
        f.url = url;
        f.since = new Date().toISOString();
        saveWebhookFile(dir, f);
      }
      return f;
    }
    const log = this.#o.events.logOf(wallet, dir);
    const made = newWebhookFile(wallet, url, start === 'from-now' ? log.lastId : log.prunedThrough, 'config');
    saveWebhookFile(dir, made);
    return made;
  }

  /** Stops scheduling; waits for the attempts in flight (each bounded by the timeout). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const d of this.#deliveries.values()) clearTimeout(d.timer);
    await Promise.allSettled([...this.#inFlight]);
    this.#client.close();
  }

  /**
   * Sets the wallet's webhook (replacing any other): the URL is checked (scheme, credentials, every address it
   * resolves to) first; delivery starts with the wallet's next event. Returns the refusal reason, if any.
   */
  async set(wallet: string, dir: string, url: string): Promise<string | undefined> {
    const why = await checkWebhookUrl(url, this.#o.policy, this.#o.resolver);
    if (why) return why;
    saveWebhookFile(dir, newWebhookFile(wallet, url, this.#o.events.logOf(wallet, dir).lastId));
    const d = this.#deliveries.get(wallet);
    if (d) resetRetry(d);
    return undefined;
  }

  /**
   * Sends the events from `fromId` on again (a receiver that lost what it had stored): `delivered_through` goes
   * back to `fromId - 1` and delivery starts now, retry waits included. Only events the log still holds, up to
   * the next undelivered one, can be asked for; receivers deduplicate by `X-Service-Event-Id` as for any retry.
   * Returns why it is refused, if it is.
   */
  redeliver(wallet: string, dir: string, fromId: number): string | undefined {
    const f = this.#fileOf(wallet, dir);
    if (!f) return 'this wallet has no webhook (POST /wallet/webhook sets one)';
    const log = this.#o.events.logOf(wallet, dir);
    // No further back than the retention holds undelivered events (`wallet.webhook_max_pending_events`): past
    // that the log could drop what was asked for before it is sent again.
    const first = Math.max(log.prunedThrough + 1, log.lastId - this.#o.maxPendingEvents + 1, 1);
    const last = Math.min(f.delivered_through + 1, log.lastId + 1);
    // `last` itself only starts delivery now (nothing goes back): always allowed.
    if (fromId !== last && (fromId < first || fromId > last))
      return first < last
        ? `from_event_id must be between ${first} (the oldest event the log still holds, at most wallet.webhook_max_pending_events back) and ${last} (the next one not yet delivered); got ${fromId}`
        : `from_event_id can only be ${last} (the next one not yet delivered: nothing delivered is still held to be sent again); got ${fromId}`;
    if (fromId <= f.delivered_through) {
      f.delivered_through = fromId - 1;
      f.replays = (f.replays ?? 0) + 1;
      saveWebhookFile(dir, f);
      this.#o.log.info({ wallet, from: fromId }, 'wallet webhook: redelivery asked for');
    }
    const d = this.#deliveries.get(wallet);
    if (d) resetRetry(d);
    this.kick(wallet, dir);
    return undefined;
  }

  /**
   * Removes the wallet's own webhook; true if it had one. Where the node has `wallet.webhook_url`, that applies
   * again from the wallet's next event; the node's own webhook is not the wallet's to remove (false, untouched).
   */
  remove(wallet: string, dir: string): boolean {
    const f = readWebhookFile(dir);
    if (f?.origin === 'config') return false;
    const had = existsSync(join(dir, WEBHOOK_FILE));
    rmSync(join(dir, WEBHOOK_FILE), { force: true });
    const d = this.#deliveries.get(wallet);
    if (d) resetRetry(d);
    if (d && !d.running) this.#deliveries.delete(wallet);
    this.#applyConfig(wallet, dir, undefined, 'from-now');
    return had;
  }

  status(wallet: string, dir: string): WebhookStatus {
    const f = this.#fileOf(wallet, dir);
    const log = this.#o.events.logOf(wallet, dir);
    const d = this.#deliveries.get(wallet);
    const through = f?.delivered_through ?? log.lastId;
    return {
      url: f?.url ?? null,
      origin: f ? (f.origin ?? 'wallet') : null,
      since: f?.since ?? null,
      key_id: this.publicKey.keyId,
      delivered_through: through,
      last_event_id: log.lastId,
      pending: f ? Math.max(0, log.lastId - through) : 0,
      skipped: f?.skipped ?? 0,
      failures: f ? (d?.failures ?? 0) : 0,
      last_error: f ? (d?.lastError ?? null) : null,
      next_attempt_at: f && d?.nextAt ? new Date(d.nextAt).toISOString() : null,
    };
  }

  /**
   * The webhook that applies to a wallet now: its file; for a wallet with no event yet (no file), the node's
   * (`wallet.webhook_url`) all the same, made now for its whole log as at its first event.
   */
  #fileOf(wallet: string, dir: string): WebhookFile | undefined {
    const f = readWebhookFile(dir);
    if (f !== undefined || this.#o.defaultUrl === undefined) return f;
    return this.#applyConfig(wallet, dir, undefined, 'whole-log');
  }

  #holdOf(_wallet: string, dir: string): number | undefined {
    const f = readWebhookFile(dir);
    if (!f) return undefined;
    const log = this.#o.events.logOf(f.wallet, dir);
    // A receiver gone for longer than the hold allows: the retention applies again.
    if (log.lastId - f.delivered_through > this.#o.maxPendingEvents) return undefined;
    return f.delivered_through;
  }

  /** New events of a wallet (or a start): delivers what is pending, unless a retry is already scheduled. */
  kick(wallet: string, dir: string): void {
    if (this.#closed) return;
    // A wallet first seen after the start (registered since): the node's webhook applies to its whole log.
    if (this.#o.defaultUrl !== undefined && !existsSync(join(dir, WEBHOOK_FILE)))
      this.#applyConfig(wallet, dir, undefined, 'whole-log');
    let d = this.#deliveries.get(wallet);
    if (!d) {
      d = { dir, running: false, again: false, failures: 0, lastError: null, nextAt: null, timer: undefined };
      this.#deliveries.set(wallet, d);
    }
    if (d.running) {
      d.again = true;
      return;
    }
    if (d.timer) return; // waiting for its retry: order is kept by not jumping ahead
    this.#run(wallet, d);
  }

  #run(wallet: string, d: Delivery): void {
    d.running = true;
    d.again = false;
    const p = this.#loop(wallet, d)
      .catch((err: Error) =>
        this.#o.log.warn({ wallet, err: err.message }, 'wallet webhook: delivery loop failed'),
      )
      .finally(() => {
        d.running = false;
        this.#inFlight.delete(p);
        if (d.again && !d.timer && !this.#closed) this.#run(wallet, d);
      });
    this.#inFlight.add(p);
  }

  /** Sends the pending events one by one; returns when none is left or an attempt failed (retry scheduled). */
  async #loop(wallet: string, d: Delivery): Promise<void> {
    while (!this.#closed) {
      const f = readWebhookFile(d.dir);
      if (!f) {
        this.#deliveries.delete(wallet);
        return;
      }
      const log = this.#o.events.logOf(wallet, d.dir);
      let through = f.delivered_through;
      if (through < log.prunedThrough) {
        // Dropped by the retention before delivery (beyond the hold): go on after the gap.
        f.skipped += log.prunedThrough - through;
        this.#o.log.warn(
          { wallet, from: through + 1, to: log.prunedThrough },
          'wallet webhook: events dropped by the retention before delivery',
        );
        through = log.prunedThrough;
        f.delivered_through = through;
        saveWebhookFile(d.dir, f);
      }
      const [event] = log.read(through, 1);
      if (!event) return;
      const ok = await this.#attempt(wallet, f, event, d);
      if (!ok) return;
      // Recorded only after the 2xx, and only if the webhook is still the same one (not changed meanwhile).
      const now = readWebhookFile(d.dir);
      if (!now || now.url !== f.url || now.since !== f.since || now.replays !== f.replays) continue;
      now.delivered_through = event.id;
      saveWebhookFile(d.dir, now);
      resetRetry(d);
    }
  }

  async #attempt(wallet: string, f: WebhookFile, event: WalletEvent, d: Delivery): Promise<boolean> {
    const key = this.#key!;
    const body = Buffer.from(JSON.stringify(event), 'utf8');
    const headers = webhookHeaders({
      signature: await signWebhookBody(body, key.key),
      keyId: key.keyId,
      eventId: `${wallet}-${event.id}`,
      eventType: event.type,
      attempt: d.failures + 1,
      sequence: event.id,
      userAgent: USER_AGENT,
    });
    let error: string;
    let retryAfterMs: number | undefined;
    try {
      const r = await this.#client.post(f.url, body, headers, {
        connectTimeoutMs: Math.min(this.#o.timeoutMs, 5_000),
        requestTimeoutMs: this.#o.timeoutMs,
        snippetBytes: 200,
      });
      if (r.statusCode >= 200 && r.statusCode < 300) {
        this.#o.onAttempt?.(true);
        return true;
      }
      error = `HTTP ${r.statusCode}`;
      if (r.statusCode === 429 || r.statusCode === 503)
        retryAfterMs = retryAfterHeader(r.headers['retry-after'] as string | undefined, Date.now());
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      error = e.code ? `${e.code}: ${e.message}` : e.message;
    }
    this.#o.onAttempt?.(false);
    d.failures++;
    d.lastError = error;
    const policy = this.#o.retry ?? WALLET_WEBHOOK_RETRY;
    const cap = policy.scheduleMs.at(-1)!;
    const delay = Math.max(retryDelay(policy, d.failures), Math.min(retryAfterMs ?? 0, cap));
    d.nextAt = Date.now() + delay;
    this.#o.log.info(
      { wallet, event: event.id, attempt: d.failures, error, retryInMs: delay },
      'wallet webhook: attempt failed',
    );
    if (!this.#closed) {
      d.timer = setTimeout(() => {
        d.timer = undefined;
        if (!d.running) this.#run(wallet, d);
        else d.again = true;
      }, delay);
      d.timer.unref();
    }
    return false;
  }
}
