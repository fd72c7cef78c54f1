/** Structured logging: one pino logger per process, with secrets redacted. */
import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/** Paths that never reach a log line in clear. */
export const REDACT_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'password',
  'secret',
  'token',
  '*.password',
  '*.secret',
  '*.token',
  // A wallet node may hand out a fresh mnemonic (generate_keys): it never reaches a log line, even by mistake.
  'mnemonic',
  '*.mnemonic',
];

export interface CreateLoggerOptions {
  /** Service name, logged as `name` on every line. */
  name: string;
  /** pino level (`fatal`..`trace`, or `silent`). Default `info`. */
  level?: string;
  /**
   * Where lines go: a file descriptor (1 = stdout, 2 = stderr), a file path, or any stream
   * (tests pass one to capture lines). Default: stdout. Fd and path destinations write
   * synchronously, so nothing is lost when the process exits right after logging.
   */
  destination?: number | string | DestinationStream;
}

export function createLogger(opts: CreateLoggerOptions): Logger {
  const dest = opts.destination ?? 1;
  const stream =
    typeof dest === 'number' || typeof dest === 'string'
      ? pino.destination({ dest, sync: true, mkdir: typeof dest === 'string' })
      : dest;
  return pino(
    {
      name: opts.name,
      level: opts.level ?? 'info',
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      base: { name: opts.name, pid: process.pid },
    },
    stream,
  );
}
