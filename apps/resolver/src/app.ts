/**
 * The running resolver: its store, one hot wallet per configured network, the RFQ server (the swap
 * service's `quote_url`), the fill engine, and the event feed that wakes it. One instance per store:
 * a pid lock on the data directory (SQLite) or a session advisory lock (PostgreSQL) refuses a second.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ResolverClient, type RfqRequest, rfqHandler } from '@rgbx/sdk';
import { type Logger, serveMetrics, takePidLock } from '@rgbx/service-kit';
import { sql } from 'kysely';
import type { NetworkConfig, ResolverConfig } from './config.ts';
import { type CrashPoint, FillEngine } from './engine.ts';
import { ResolverMetrics } from './metrics.ts';
import { priceQuote, Reservations } from './pricing.ts';
import { getKv, openResolverStore, type ResolverStore, setKv } from './store.ts';
import { BitcoinWallet } from './wallets/bitcoin.ts';
import { EvmWallet } from './wallets/evm.ts';
import { SolanaWallet } from './wallets/solana.ts';
import { TronWallet } from './wallets/tron.ts';
import type { ChainWallet } from './wallets/wallet.ts';

export const SERVICE_VERSION = '0.1.0';
const FEED_CURSOR = 'feed_last_event_id';

/** The hot wallet for one configured network. */
export async function openWallet(n: NetworkConfig, key: Uint8Array): Promise<ChainWallet> {
  const hex = `0x${Buffer.from(key).toString('hex')}` as const;
  switch (n.type) {
    case 'BITCOIN':
      return new BitcoinWallet({
        electrumUrl: n.electrum_url!,
        network: n.btc_network!,
        privateKey: key,
        feeRateSatVb: n.fee_rate_sat_vb,
      });
    case 'EVM':
      return new EvmWallet({
        rpcUrl: n.rpc_url!,
        chainId: n.chain_id!,
        privateKey: hex,
        escrow: n.escrow_address as `0x${string}`,
      });
    case 'TRON':
      return new TronWallet({
        rpcUrl: n.rpc_url!,
        chainId: n.chain_id!,
        privateKey: hex,
        escrow: n.escrow_address!,
        devnetJsonRpcBroadcast: n.devnet_jsonrpc_broadcast,
      });
    case 'SOLANA':
      return SolanaWallet.create({ rpcUrl: n.rpc_url!, privateKey: key });
  }
}

/** The identities the swap service's `[[resolvers]]` entry lists for this resolver. */
export function identityKeys(wallets: ReadonlyMap<number, ChainWallet>): Record<string, string> {
  const out: Record<string, string> = {};
  const names = {
    BITCOIN: 'bitcoin_claim_pubkey',
    EVM: 'evm_address',
    TRON: 'tron_address',
    SOLANA: 'solana_address',
  } as const;
  for (const w of wallets.values()) out[names[w.type]] = w.identity;
  return out;
}

export interface RunningResolver {
  rfqUrl: string;
  /** `GET /metrics` on its own listener (undefined when `[metrics] enabled = false`). */
  metricsUrl: string | undefined;
  metrics: ResolverMetrics;
  engine: FillEngine;
  wallets: ReadonlyMap<number, ChainWallet>;
  store: ResolverStore;
  close(): Promise<void>;
}

/** Takes the one-instance lock; returns its release. */
async function lockInstance(cfg: ResolverConfig, store: ResolverStore): Promise<() => Promise<void>> {
  if (store.dialect === 'sqlite') {
    const lock = takePidLock(join(cfg.data_dir, 'resolver.lock'));
    if (!lock.taken) throw new Error(`another resolver (pid ${lock.holder}) runs on ${cfg.data_dir}`);
    return async () => lock.release();
  }
  // A session lock held by one reserved connection for the life of the process.
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  const taken = new Promise<boolean>((resolveTaken, reject) => {
    store.db
      .connection()
      .execute(async (conn) => {
        const key = `rgbx-resolver:${cfg.swap.resolver_id}`;
        const r = await sql<{ ok: boolean }>`select pg_try_advisory_lock(hashtext(${key})) as ok`.execute(
          conn,
        );
        const ok = r.rows[0]?.ok === true;
        resolveTaken(ok);
        if (!ok) return;
        await held;
        await sql`select pg_advisory_unlock(hashtext(${key}))`.execute(conn);
      })
      .catch(reject);
  });
  if (!(await taken))
    throw new Error(`another resolver holds the lock of ${cfg.swap.resolver_id} on this database`);
  return async () => release();
}

export async function startResolver(
  cfg: ResolverConfig,
  log: Logger,
  opts: { crash?: (p: CrashPoint) => void; metrics?: ResolverMetrics } = {},
): Promise<RunningResolver> {
  const metrics = opts.metrics ?? new ResolverMetrics();
  if (cfg.databaseUrl.startsWith('sqlite:')) mkdirSync(cfg.data_dir, { recursive: true, mode: 0o700 });
  const store = await openResolverStore(cfg.databaseUrl);
  const cleanups: (() => Promise<void>)[] = [() => store.close()];
  const closeAll = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  };
  try {
    cleanups.push(await lockInstance(cfg, store));
    const wallets = new Map<number, ChainWallet>();
    for (const n of cfg.networks) {
      try {
        const w = await openWallet(n, cfg.keys.get(n.id)!);
        wallets.set(n.id, w);
        if (w.close) cleanups.push(() => w.close!());
      } catch (err) {
        // A network this resolver cannot serve (e.g. Tron without a broadcast path): it quotes and fills
        // nothing there, and says so.
        log.warn({ network: n.id, type: n.type, err: (err as Error).message }, 'network disabled');
      }
    }
    const api = new ResolverClient({
      baseUrl: cfg.swap.url,
      apiKey: cfg.apiKey,
      fetch: metrics.countingFetch(),
    });
    const reservations = new Reservations();
    const engine = new FillEngine({
      cfg,
      db: store.db,
      api,
      wallets,
      reservations,
      log,
      metrics,
      ...(opts.crash ? { crash: opts.crash } : {}),
    });
    cleanups.push(() => engine.stop());

    const available = async (network: number, token: string) => {
      const w = wallets.get(network);
      if (!w) return 0n;
      const balance = await w.balance(token);
      const reserved = reservations.reserved(network, token);
      log.debug({ network, token, balance: balance.toString(), reserved: reserved.toString() }, 'inventory');
      return balance - reserved;
    };
    const handler = rfqHandler({
      secret: cfg.rfqSecret,
      toleranceSecs: cfg.rfq.tolerance_secs,
      quote: async (req: RfqRequest) => {
        if (req.resolver_id !== cfg.swap.resolver_id) {
          metrics.rfqs.inc({ outcome: 'no_quote', reason: 'other_resolver' });
          return null;
        }
        const priced = await priceQuote(
          cfg.pairs,
          {
            sourceNetwork: req.source_network.id,
            sourceToken: req.source_token.address,
            sourceDecimals: req.source_token.decimals,
            destNetwork: req.dest_network.id,
            destToken: req.dest_token.address,
            destDecimals: req.dest_token.decimals,
            amountLots: BigInt(req.amount_lots),
          },
          available,
        );
        if ('none' in priced) {
          metrics.rfqs.inc({ outcome: 'no_quote', reason: priced.none });
          log.debug({ request: req.request_id, reason: priced.none }, 'rfq: no quote');
          return null;
        }
        reservations.reserveQuote(
          req.request_id,
          req.dest_network.id,
          req.dest_token.address,
          priced.destLots,
          Date.now() + cfg.rfq.reserve_secs * 1000,
        );
        metrics.rfqs.inc({ outcome: 'quoted', reason: 'ok' });
        log.info({ request: req.request_id, dest_lots: priced.destLots.toString() }, 'rfq: quoted');
        return { dest_amount_lots: priced.destLots.toString() };
      },
    });
    const server: Server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const t0 = performance.now();
      let refusal: string | undefined;
      if (path === '/rfq') {
        // The refusal code is in the body the handler sends (`{error, code}`); only errors are read.
        const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
        res.end = ((...a: unknown[]) => {
          if (res.statusCode !== 200 && a[0] !== undefined && typeof a[0] !== 'function')
            refusal = String(a[0]);
          return end(...a);
        }) as typeof res.end;
      }
      res.once('finish', () =>
        metrics.observeRequest(
          req.method ?? 'GET',
          path,
          res.statusCode,
          (performance.now() - t0) / 1000,
          refusal,
        ),
      );
      if (path === '/healthcheck' && req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'ok', networks: [...wallets.keys()] }));
        return;
      }
      if (path !== '/rfq') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'not found', code: 'not_found' }));
        return;
      }
      handler(req, res);
    });
    server.requestTimeout = 10_000;
    server.headersTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(cfg.rfq.port, cfg.rfq.listen_address, () => resolve());
    });
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const addr = server.address() as AddressInfo;
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;

    metrics.watchStore(store.db, log);
    const tokens = new Map<string, { network: number; token: string }>();
    for (const p of cfg.pairs)
      tokens.set(`${p.dest_network}/${p.dest_token}`, { network: p.dest_network, token: p.dest_token });
    metrics.watchInventory(wallets, [...tokens.values()], log);
    const metricsServer = await serveMetrics(metrics, cfg.metrics);
    if (metricsServer) {
      cleanups.push(() => metricsServer.close());
      log.info({ url: metricsServer.url }, 'metrics listening');
    }

    // Resend what was signed before a crash, then pick up every live intent; then follow the feed.
    await engine.recover();
    engine.start();
    const ac = new AbortController();
    const feed = (async () => {
      let last = await getKv(store.db, FEED_CURSOR);
      while (!ac.signal.aborted) {
        try {
          for await (const ev of api.events({ ...(last ? { lastEventId: last } : {}), signal: ac.signal })) {
            metrics.eventSeen();
            if (ev.type === 'reset') await engine.recover();
            else engine.kick(ev.data.intent_id);
            last = ev.id;
            await setKv(store.db, FEED_CURSOR, ev.id);
          }
        } catch (err) {
          if (ac.signal.aborted) break;
          log.warn({ err: (err as Error).message }, 'event feed failed; following again');
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
    cleanups.push(async () => {
      ac.abort();
      await feed;
    });
    log.info({ networks: identityKeys(wallets) }, 'resolver running');
    return {
      rfqUrl: `http://${host}:${addr.port}/rfq`,
      metricsUrl: metricsServer?.url,
      metrics,
      engine,
      wallets,
      store,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
