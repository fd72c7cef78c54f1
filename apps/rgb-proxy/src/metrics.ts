/**
 * The RGB proxy's Prometheus metrics (`rgbx_rgb_proxy_…`), listed with their meaning in the README
 * ("Metrics"). Label values are bounded: the protocol's method names (anything else `unknown`), the
 * error names of errors.ts, fixed upload rejection reasons.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, ServiceMetrics } from '@rgbx/service-kit';
import { listRpcErrors } from './errors.ts';
import type { ProxyStore } from './store.ts';

/** How long a scan of the stored files serves scrapes before the directories are read again. */
export const STORED_BYTES_CACHE_MS = 30_000;

const METHODS = new Set([
  'server.info',
  'consignment.get',
  'consignment.post',
  'media.get',
  'media.post',
  'ack.get',
  'ack.post',
]);
/** Posting methods: their refusals are rejected uploads. */
const UPLOADS = new Set(['consignment.post', 'media.post']);

/** JSON-RPC error code → its name in lower case (-303 is both MISSING_FILE and MISSING_TXID upstream). */
const ERROR_NAMES = new Map<number, string>();
for (const e of listRpcErrors()) {
  const name = e.name.toLowerCase();
  const had = ERROR_NAMES.get(e.code);
  ERROR_NAMES.set(e.code, had ? `${had}_or_${name.replace(/^missing_/, '')}` : name);
}

export function errorName(code: number): string {
  return ERROR_NAMES.get(code) ?? 'other';
}

export class ProxyMetrics {
  readonly kit: ServiceMetrics;
  readonly rpcRequests;
  readonly rejectedUploads;
  readonly #ok = new Map<string, { inc(): void }>();

  constructor(opts: { processMetrics?: boolean } = {}) {
    const m = new ServiceMetrics('rgb_proxy', opts);
    this.kit = m;
    this.rpcRequests = m.counter(
      'rpc_requests_total',
      'JSON-RPC calls answered, by method (unknown names: unknown; no method: none) and outcome (ok or the error name)',
      ['method', 'outcome'],
    );
    this.rejectedUploads = m.counter(
      'rejected_uploads_total',
      'Uploads (consignment.post, media.post, multipart bodies) refused, by reason (the error name)',
      ['reason'],
    );
  }

  /** Per route: requests by method, route template and status, latency. */
  instrument(...args: Parameters<ServiceMetrics['instrument']>): void {
    this.kit.instrument(...args);
  }

  /** One answered call (`code` undefined: ok). */
  call(method: unknown, code?: number): void {
    const name = typeof method !== 'string' ? 'none' : METHODS.has(method) ? method : 'unknown';
    if (code === undefined) {
      let c = this.#ok.get(name);
      if (!c) {
        c = this.rpcRequests.labels({ method: name, outcome: 'ok' });
        this.#ok.set(name, c);
      }
      c.inc();
      return;
    }
    const reason = errorName(code);
    this.rpcRequests.inc({ method: name, outcome: reason });
    if (UPLOADS.has(name)) this.rejectedUploads.inc({ reason });
  }

  /** A multipart body refused before any method ran (too large, broken). */
  rejectedTransfer(code: number): void {
    this.rejectedUploads.inc({ reason: errorName(code) });
  }

  /** Consignments and media (rows, at scrape time) and stored bytes (a directory scan, cached). */
  watchStore(store: ProxyStore, logger: Logger): void {
    this.kit.gauge('consignments', 'Consignments stored (one per recipient id)', [], (g) => {
      g.set(store.counts().consignments);
    });
    this.kit.gauge('media', 'Media files stored (one per attachment id)', [], (g) => {
      g.set(store.counts().media);
    });
    let bytes = { consignments: 0, media: 0 };
    let readAt = -Infinity;
    let reading: Promise<void> | undefined;
    const sizeOf = async (dir: string) => {
      let total = 0;
      for (const name of await readdir(dir)) {
        try {
          total += (await stat(join(dir, name))).size;
        } catch {
          // Removed meanwhile.
        }
      }
      return total;
    };
    this.kit.gauge(
      'stored_bytes',
      'Bytes of the stored content files, by kind (consignments, media; rescanned at most every 30 s)',
      ['kind'],
      async (g) => {
        if (Date.now() - readAt >= STORED_BYTES_CACHE_MS) {
          reading ??= Promise.all([sizeOf(store.consignmentDir), sizeOf(store.mediaDir)])
            .then(([c, m]) => {
              bytes = { consignments: c, media: m };
              readAt = Date.now();
            })
            .catch((err: unknown) => logger.warn({ err }, 'metrics: stored bytes scan failed'))
            .finally(() => {
              reading = undefined;
            });
          await reading;
        }
        g.set({ kind: 'consignments' }, bytes.consignments);
        g.set({ kind: 'media' }, bytes.media);
      },
    );
  }
}
