/**
 * The command-line entry of a service: one way to parse flags, to report a bad command line or a
 * bad configuration, to print the line launchers wait for, and to exit.
 *
 * @example
 * runMain('rgbx-swap', async () => {
 *   const cli = parseCommandLine(process.argv.slice(2), { config: { type: 'string', short: 'c' } });
 *   const svc = await runService({ app, host, port, logger });
 *   announceListening(svc.address.url);
 * }, { usage: USAGE });
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ConfigError, formatConfigError } from './config.ts';

/** A command line that does not parse; shown with the usage text, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;
type Parsed<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; allowPositionals: true; strict: true; options: O }>
>;

/** `node:util` `parseArgs` (strict, positionals allowed) whose errors are `UsageError`s. */
export function parseCommandLine<const O extends Options>(argv: string[], options: O): Parsed<O> {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The one machine-readable stdout line launchers wait for: `{"event":"listening","url":…}`. */
export function announceListening(url: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ event: 'listening', url, ...extra })}\n`);
}

export interface RunMainOptions {
  /** Printed after a usage error's message. */
  usage?: string;
  /** Exit status of a usage or configuration error (default 2). */
  badInputExitCode?: number;
  /** Print the stack of an unexpected error (default: its message only). */
  stack?: boolean;
}

/**
 * Runs a service's `main`. It returns an exit status, or nothing while a server keeps the process
 * alive. A `UsageError` or `ConfigError` is printed as `NAME: message` (with the usage text) and
 * exits with status 2; anything else is `NAME: fatal: message` and status 1.
 */
export function runMain(name: string, main: () => Promise<unknown>, opts: RunMainOptions = {}): void {
  const bad = opts.badInputExitCode ?? 2;
  main().then(
    (code) => {
      if (typeof code === 'number') process.exitCode = code;
    },
    (err: unknown) => {
      if (err instanceof UsageError) {
        process.stderr.write(`${name}: ${err.message}\n${opts.usage ? `\n${opts.usage}\n` : ''}`);
        process.exit(bad);
      }
      if (err instanceof ConfigError || (err instanceof Error && err.name === 'ConfigError')) {
        process.stderr.write(`${name}: ${formatConfigError(err)}\n`);
        process.exit(bad);
      }
      const text =
        err instanceof Error ? (opts.stack ? (err.stack ?? err.message) : err.message) : String(err);
      process.stderr.write(`${name}: fatal: ${text}\n`);
      process.exit(1);
    },
  );
}
