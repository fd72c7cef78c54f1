/**
 * Child-process entry that owns the rgb-lib native addon. Started by {@link RgbHost} with
 * `child_process.fork` (`dist/child.js`, or this file itself with the test-only TypeScript loader when the
 * host runs from the sources); never import this module elsewhere.
 *
 * It loads ONLY the raw swig module `@rgb-tools/rgb-lib-linux-x64/rgblib` (never `wrapper.js`, whose
 * `createUtxosBegin`/`createUtxosEnd` pass the wrong number of arguments and whose `JSON.parse`
 * loses u64 precision), keeps the opaque wallet objects returned by `rgblib_new_wallet` in a table
 * keyed by handle strings chosen by the parent, and answers `{id, op, args}` requests one at a time.
 * rgb-lib calls are synchronous, so this process's event loop is blocked during each call; that is
 * the point of running it outside the parent.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { classifyErrorMessage, type RgbErrorPayload } from './errors.ts';
import {
  PARENT_PID_ARG,
  type RawArg,
  type ReadyMessage,
  type RequestMessage,
  type ResponseMessage,
  WALLET_FUNCTIONS,
} from './protocol.ts';
import type { WatchdogData } from './watchdog-worker.ts';

/** Opaque `COpaqueStruct` proxy returned by `rgblib_new_wallet`. */
type WalletObject = object;

/** The raw swig exports used here (C signatures in `rgb-lib/bindings/c-ffi/rgblib.hpp`). */
interface RawAddon {
  rgblib_generate_keys(network: string, witnessVersion: string): string;
  rgblib_restore_keys(network: string, mnemonic: string, witnessVersion: string): string;
  rgblib_invoice_data(invoice: string): string;
  rgblib_restore_backup(backupPath: string, password: string, targetDir: string): void;
  rgblib_new_wallet(walletData: string, keys: string): WalletObject;
  free_wallet(wallet: WalletObject): void;
  [fn: string]: unknown;
}

if (!process.send) {
  throw new Error('@rgbx/rgb child must be started with child_process.fork (no IPC channel)');
}
const send = process.send.bind(process);

/*
 * Parent-death watchdog (`watchdog-worker.ts`). The 'disconnect' handler at the end of this file cannot run
 * while this thread is blocked inside a synchronous rgb-lib call (up to minutes, e.g. a send to a transport
 * endpoint that never answers): a parent killed with SIGKILL meanwhile would leave this process running as an
 * orphan with its wallets open, and the parent's next instance would open them again. So a tiny second
 * thread polls our ppid and, once the parent is gone, SIGKILLs this whole process, which works whatever the
 * main thread is doing in native code.
 *
 * This does NOT break the rule of stack.md §4 ("worker_threads must never load the addon"): that warning is
 * about isolates that LOAD the swig module (their exit corrupts its process-global templates). This thread
 * never imports anything but `node:worker_threads`; the addon lives in this main thread only. It is started
 * before the addon loads, with no execArgv (no preloads; from the sources, this child's own flags: the
 * test-only TypeScript loader), and unref'ed so it never keeps the child alive.
 * Cost: one more V8 isolate, about 8 MiB of anonymous memory per child.
 *
 * "Parent gone" = our ppid is no longer the pid the host passed us (`--rgbx-rgb-parent=<pid>`; without it,
 * the ppid at start): an orphan is re-parented to pid 1 or to a subreaper, both differ from it. Comparing
 * with the host's pid also catches a parent that died before this code ran.
 *
 * When the main thread is free it normally sees the disconnect first and exits cleanly (freeing its wallets);
 * it sets `exiting` so the watchdog then gives it WATCHDOG_GRACE_MS before the SIGKILL. (Should the watchdog
 * poll first, the SIGKILL only skips that cleanup: the next start removes stale `rgb_runtime.lock` files.)
 */
const WATCHDOG_INTERVAL_MS = 150;
const WATCHDOG_GRACE_MS = 3_000;
const parentArg = process.argv.find((a) => a.startsWith(PARENT_PID_ARG));
const parentPid = parentArg ? Number(parentArg.slice(PARENT_PID_ARG.length)) : process.ppid;
const exiting = new Int32Array(new SharedArrayBuffer(4));
const fromSource = import.meta.url.endsWith('.ts');
const watchdog = new Worker(
  new URL(fromSource ? './watchdog-worker.ts' : './watchdog-worker.js', import.meta.url),
  {
    execArgv: fromSource ? process.execArgv : [],
    workerData: {
      parentPid,
      intervalMs: WATCHDOG_INTERVAL_MS,
      graceMs: WATCHDOG_GRACE_MS,
      exiting,
    } satisfies WatchdogData,
  },
);
let watchdogModule: string | null = null;
watchdog.once('message', (m: { module: string }) => {
  watchdogModule = m.module;
});
watchdog.on('error', (err) => {
  // Keep serving (the host still sees stderr); without the watchdog only the start-up sweep protects us.
  console.error(`rgb-lib child ${process.pid}: parent-death watchdog failed: ${err.message}`);
});
watchdog.unref();

// Wallet files rgb-lib creates (databases, stock, consignments, media) are for this user only: 0600/0700.
process.umask(0o077);

const t0 = performance.now();
const require = createRequire(import.meta.url);
const lib = require('@rgb-tools/rgb-lib-linux-x64/rgblib') as RawAddon;
const loadMs = performance.now() - t0;

const wallets = new Map<string, WalletObject>();

class HostError extends Error {
  readonly variant: string;
  constructor(variant: string, message: string) {
    super(message);
    this.variant = variant;
  }
}

function toPayload(err: unknown): RgbErrorPayload {
  if (err instanceof HostError) return { kind: 'host', variant: err.variant, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return classifyErrorMessage(message);
}

function walletFor(handle: unknown): WalletObject {
  const w = typeof handle === 'string' ? wallets.get(handle) : undefined;
  if (!w)
    throw new HostError('UnknownWalletHandle', `no open wallet with handle ${String(handle)} in this child`);
  return w;
}

function assertStrings(args: unknown[], n: number, op: string): string[] {
  if (args.length !== n || !args.every((a) => typeof a === 'string')) {
    throw new HostError('InvalidArguments', `${op} takes ${n} string arguments`);
  }
  return args as string[];
}

function freeAll(): void {
  for (const [handle, w] of wallets) {
    wallets.delete(handle);
    try {
      lib.free_wallet(w);
    } catch {
      // nothing sensible to do while shutting down
    }
  }
}

function handle(req: RequestMessage): unknown {
  const { op, args } = req;
  switch (op) {
    case 'ping':
      return 'pong';
    case 'modules':
      return { child: import.meta.url, watchdog: watchdogModule };
    case 'generateKeys': {
      const [network, wv] = assertStrings(args, 2, op);
      return lib.rgblib_generate_keys(network!, wv!);
    }
    case 'restoreKeys': {
      const [network, mnemonic, wv] = assertStrings(args, 3, op);
      return lib.rgblib_restore_keys(network!, mnemonic!, wv!);
    }
    case 'invoiceData': {
      const [invoice] = assertStrings(args, 1, op);
      return lib.rgblib_invoice_data(invoice!);
    }
    case 'restoreBackup': {
      const [path, password, target] = assertStrings(args, 3, op);
      lib.rgblib_restore_backup(path!, password!, target!);
      return true;
    }
    case 'newWallet': {
      const [h, walletData, keys] = assertStrings(args, 3, op);
      if (wallets.has(h!)) throw new HostError('DuplicateWalletHandle', `handle ${h} already in use`);
      wallets.set(h!, lib.rgblib_new_wallet(walletData!, keys!));
      return true;
    }
    case 'call': {
      const [h, fn, ...rest] = args;
      const w = walletFor(h);
      if (typeof fn !== 'string' || !Object.hasOwn(WALLET_FUNCTIONS, fn)) {
        throw new HostError('UnknownFunction', `${String(fn)} is not an allowed rgblib wallet function`);
      }
      const arity = WALLET_FUNCTIONS[fn as keyof typeof WALLET_FUNCTIONS];
      if (rest.length !== arity) {
        throw new HostError(
          'InvalidArguments',
          `${fn} takes ${arity} arguments after the wallet, got ${rest.length}`,
        );
      }
      for (const a of rest) {
        if (a !== null && typeof a !== 'string' && typeof a !== 'boolean') {
          throw new HostError('InvalidArguments', `${fn}: arguments must be strings, booleans or null`);
        }
      }
      const f = lib[fn] as (w: WalletObject, ...a: RawArg[]) => string | null | undefined;
      const out = f(w, ...(rest as RawArg[]));
      return out ?? null;
    }
    case 'freeWallet': {
      const [h] = assertStrings(args, 1, op);
      const w = walletFor(h);
      wallets.delete(h!);
      lib.free_wallet(w);
      return true;
    }
    case 'shutdown':
      freeAll();
      return true;
    case 'sleep': {
      const ms = Number(args[0]);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      return true;
    }
    default:
      throw new HostError('UnknownOp', `unknown op ${String(op)}`);
  }
}

process.on('message', (msg: RequestMessage) => {
  let res: ResponseMessage;
  try {
    res = { id: msg.id, ok: true, value: handle(msg) };
  } catch (err) {
    res = { id: msg.id, ok: false, error: toPayload(err) };
  }
  if (msg.op === 'shutdown') {
    send(res, () => process.exit(0));
  } else {
    send(res);
  }
});

// Parent gone (or closed the channel): release wallets (removes rgb_runtime.lock files) and exit.
process.on('disconnect', () => {
  Atomics.store(exiting, 0, 1);
  freeAll();
  process.exit(0);
});

const ready: ReadyMessage = { type: 'ready', pid: process.pid, loadMs };
send(ready);
