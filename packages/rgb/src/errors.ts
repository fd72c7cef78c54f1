/**
 * Errors surfaced by the rgb-lib child-process host.
 *
 * rgb-lib's c-ffi throws plain JS `Error`s whose message is the Rust `Debug` string of its error,
 * e.g. `RgbLib(AssetNotFound { asset_id: "rgb:…" })`, `RgbLib(Offline)`,
 * `JSONConversion(Error("missing field …", line: 1, column: 5))` or `StringToNumberConversion`.
 * The child classifies each message ({@link classifyErrorMessage}) and the parent rebuilds a typed
 * {@link RgbLibError}.
 */

/**
 * Where an error came from:
 * - `rgb-lib`: an `RgbLib(<Variant> …)` error from the library itself (`variant` = `<Variant>`);
 * - `ffi`: another c-ffi error such as `JSONConversion` or `StringToNumberConversion` (bad argument);
 * - `binding`: the swig layer rejected the arguments (`Illegal number of arguments…`, `in method…`);
 * - `host`: the child-process protocol (unknown wallet handle, unknown op, invalid argument, …).
 */
export type RgbErrorKind = 'rgb-lib' | 'ffi' | 'binding' | 'host';

/** Serializable error shape sent over IPC. */
export interface RgbErrorPayload {
  kind: RgbErrorKind;
  variant: string;
  message: string;
}

/** Classify a native error message (see {@link RgbErrorKind}). */
export function classifyErrorMessage(message: string): RgbErrorPayload {
  const rgb = /^RgbLib\((\w+)/.exec(message);
  if (rgb) return { kind: 'rgb-lib', variant: rgb[1]!, message };
  if (/^Illegal number of arguments|^in method '/.test(message)) {
    return { kind: 'binding', variant: 'InvalidArguments', message };
  }
  const ffi = /^([A-Z]\w*)(?:\(|$)/.exec(message);
  if (ffi) return { kind: 'ffi', variant: ffi[1]!, message };
  return { kind: 'ffi', variant: 'Unknown', message };
}

/**
 * Parse the fields of a Rust `Debug` struct variant, e.g. `RgbLib(Indexer { details: "x" })` gives
 * `{details: 'x'}`. String literals are unescaped; other values are returned as their raw text.
 * Tuple or unit variants give `{}`.
 */
export function parseDebugFields(message: string): Record<string, string> {
  const open = message.indexOf(' { ');
  if (open < 0) return {};
  const out: Record<string, string> = {};
  let i = open + 3;
  const s = message;
  while (i < s.length) {
    const m = /^\s*(\w+): /.exec(s.slice(i));
    if (!m) break;
    const key = m[1]!;
    i += m[0].length;
    let value = '';
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length) {
          const next = s[i + 1]!;
          value += next === 'n' ? '\n' : next === 't' ? '\t' : next;
          i += 2;
        } else {
          value += s[i];
          i++;
        }
      }
      i++; // closing quote
    } else {
      let depth = 0;
      const start = i;
      while (i < s.length) {
        const c = s[i]!;
        if (c === '(' || c === '{' || c === '[') depth++;
        else if (c === ')' || c === ']' || (c === '}' && depth > 0)) depth--;
        else if (depth === 0 && (c === ',' || c === '}')) break;
        i++;
      }
      value = s.slice(start, i).trim();
    }
    out[key] = value;
    while (i < s.length && (s[i] === ',' || s[i] === ' ')) i++;
    if (s[i] === '}') break;
  }
  return out;
}

/**
 * An error thrown by rgb-lib (or rejected by the host before reaching it).
 *
 * `variant` is the Rust enum variant (`AssetNotFound`, `InsufficientAllocationSlots`, `Offline`,
 * `InvalidIndexer`, …) for `kind === 'rgb-lib'`; `details` holds the parsed struct fields of that
 * variant (`{asset_id: 'rgb:…'}`); `message` is the full original Debug string.
 */
export class RgbLibError extends Error {
  override readonly name: string = 'RgbLibError';
  readonly kind: RgbErrorKind;
  readonly variant: string;
  readonly details: Record<string, string>;
  /** The rgb-lib operation that failed (`rgblib_*` function or host op). */
  readonly op: string | undefined;

  constructor(payload: RgbErrorPayload, op?: string) {
    super(payload.message);
    this.kind = payload.kind;
    this.variant = payload.variant;
    this.details = parseDebugFields(payload.message);
    this.op = op;
  }
}

/**
 * The child process running rgb-lib exited (crash, Rust panic → abort, SIGKILL, call timeout)
 * while this call was in flight. Only in-flight calls get this error; the host starts a fresh child
 * on the next call, and wallet handles of the dead child must be reopened.
 */
export class RgbChildDiedError extends Error {
  override readonly name: string = 'RgbChildDiedError';
  readonly pid: number | undefined;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** Last lines the child wrote to stderr (Rust panic message, if any). */
  readonly stderrTail: string;

  constructor(info: {
    pid: number | undefined;
    exitCode: number | null;
    signal: string | null;
    stderrTail: string;
    reason?: string;
  }) {
    const how = info.signal ? `signal ${info.signal}` : `exit code ${info.exitCode}`;
    const tail = info.stderrTail.trim() ? `; stderr: ${info.stderrTail.trim().slice(-500)}` : '';
    super(`rgb-lib child process ${info.pid ?? '?'} died (${info.reason ?? how})${tail}`);
    this.pid = info.pid;
    this.exitCode = info.exitCode;
    this.signal = info.signal;
    this.stderrTail = info.stderrTail;
  }
}

/**
 * A wallet handle can no longer be used: it was dropped, or it belonged to a child process that has
 * since died (wallets live inside the child). Reopen the wallet with `openWallet`.
 */
export class RgbWalletClosedError extends Error {
  override readonly name: string = 'RgbWalletClosedError';
  readonly handle: string;
  constructor(handle: string, why: string) {
    super(`rgb-lib wallet ${handle} is closed: ${why}; reopen it with openWallet()`);
    this.handle = handle;
  }
}

/** A call exceeded the host's `callTimeoutMs`; the (stuck, synchronous) child was killed. */
export class RgbCallTimeoutError extends RgbChildDiedError {
  override readonly name: string = 'RgbCallTimeoutError';
}
