/**
 * Child-process entry that owns the rgb-lib native addon. Started by {@link RgbHost} with
 * `child_process.fork` (from the compiled `dist/child.js`); never import this module elsewhere.
 *
 * It loads ONLY the raw swig module `@rgb-tools/rgb-lib-linux-x64/rgblib` (never `wrapper.js`, whose
 * `createUtxosBegin`/`createUtxosEnd` pass the wrong number of arguments and whose `JSON.parse`
 * loses u64 precision), keeps the opaque wallet objects returned by `rgblib_new_wallet` in a table
 * keyed by handle strings chosen by the parent, and answers `{id, op, args}` requests one at a time.
 * rgb-lib calls are synchronous, so this process's event loop is blocked during each call; that is
 * the point of running it outside the parent.
 */
import { createRequire } from 'node:module';
import { classifyErrorMessage, type RgbErrorPayload } from './errors.ts';
import {
  type RawArg,
  type ReadyMessage,
  type RequestMessage,
  type ResponseMessage,
  WALLET_FUNCTIONS,
} from './protocol.ts';

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
  freeAll();
  process.exit(0);
});

const ready: ReadyMessage = { type: 'ready', pid: process.pid, loadMs };
send(ready);
