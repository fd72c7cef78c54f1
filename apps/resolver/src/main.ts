#!/usr/bin/env node
/**
 * rgbx-resolver: runs the reference resolver until SIGTERM/SIGINT, or prints what its operator needs
 * (its identities for the swap service's config, new keys and RFQ secrets).
 */
import { randomBytes } from 'node:crypto';
import { announceListening, createLogger, parseCommandLine, runMain, UsageError } from '@rgbx/service-kit';
import { identityKeys, openWallet, SERVICE_VERSION, startResolver } from './app.ts';
import { loadConfig } from './config.ts';
import type { CrashPoint } from './engine.ts';

export const USAGE = `usage:
  rgbx-resolver -c FILE               run: answer RFQs and fill the intents won
  rgbx-resolver identities -c FILE    the identities for the swap's [[resolvers]] entry, and funding addresses
  rgbx-resolver key                   a new private key (hex) for a network's key_file
  rgbx-resolver rfq-secret            a new RFQ secret (shared with the swap's rfq_secret)
  rgbx-resolver --version | --help`;

const CRASH_POINTS: readonly CrashPoint[] = [
  'after-accept',
  'after-deposit',
  'payment-signed',
  'payment-broadcast',
  'before-claim',
];

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<number | undefined> {
  const { values, positionals } = parseCommandLine(process.argv.slice(2), {
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean' },
  });
  if (values.help) {
    out(USAGE);
    return 0;
  }
  if (values.version) {
    out(SERVICE_VERSION);
    return 0;
  }
  const cmd = positionals[0] ?? 'run';
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
  if (cmd === 'key') {
    out(randomBytes(32).toString('hex'));
    return 0;
  }
  if (cmd === 'rfq-secret') {
    out(randomBytes(32).toString('base64url'));
    return 0;
  }
  if (cmd !== 'run' && cmd !== 'identities') throw new UsageError(`unknown command "${cmd}"`);
  if (!values.config) throw new UsageError('-c FILE is required');
  const cfg = loadConfig({ file: values.config });
  if (cmd === 'identities') {
    const wallets = new Map();
    const funding: Record<string, string> = {};
    for (const n of cfg.networks) {
      const w = await openWallet(n, cfg.keys.get(n.id)!);
      wallets.set(n.id, w);
      funding[String(n.id)] = (w as { address?: string }).address ?? w.identity;
      await w.close?.();
    }
    out(JSON.stringify({ resolver_id: cfg.swap.resolver_id, ...identityKeys(wallets), funding }));
    return 0;
  }
  const log = createLogger({ name: 'rgbx-resolver', level: cfg.log_level, destination: 2 });
  // Fault injection for the crash tests: the process kills itself (SIGKILL) right after the named step.
  const at = process.env.RGBX_RESOLVER_CRASH_AT;
  if (at !== undefined && !CRASH_POINTS.includes(at as CrashPoint))
    throw new UsageError(`RGBX_RESOLVER_CRASH_AT must be one of ${CRASH_POINTS.join(', ')}`);
  const crash = at
    ? (p: CrashPoint) => {
        if (p !== at) return;
        log.warn({ point: p }, 'RGBX_RESOLVER_CRASH_AT: killing this process');
        process.kill(process.pid, 'SIGKILL');
      }
    : undefined;
  const running = await startResolver(cfg, log, crash ? { crash } : {});
  announceListening(running.rfqUrl.replace(/\/rfq$/, ''), {
    rfq_url: running.rfqUrl,
    ...(running.metricsUrl ? { metrics_url: running.metricsUrl } : {}),
  });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  log.info('stopping');
  await running.close();
  return 0;
}

runMain('rgbx-resolver', main, { usage: USAGE });
