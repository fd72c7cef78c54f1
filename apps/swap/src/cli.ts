/** Command line of `rgbx-swap` (`npm run swap -- …`). */
import { parseCommandLine, UsageError } from '@rgbx/service-kit';

export const USAGE = `usage:
  rgbx-swap -c FILE                       run the swap service
  rgbx-swap keys create --name NAME -c FILE   create an API key (printed once)
  rgbx-swap keys list -c FILE             list API keys (ids, names, dates; never the keys)
  rgbx-swap keys revoke ID -c FILE        revoke an API key
  rgbx-swap resolver-key                  print a new resolver key and the SHA-256 for its config
  rgbx-swap preimage-key                  print a new 32-byte preimage encryption key (hex)
  rgbx-swap --help | --version

Once listening, one JSON line is printed to stdout: {"event":"listening","url":"http://HOST:PORT"}.
Logs (pino JSON) go to stderr.`;

export { UsageError };

export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'run'; config: string }
  | { kind: 'keys-create'; config: string; name: string }
  | { kind: 'keys-list'; config: string; json: boolean }
  | { kind: 'keys-revoke'; config: string; id: string }
  | { kind: 'resolver-key' }
  | { kind: 'preimage-key' };

export function parseCli(argv: string[]): Command {
  const parsed = parse(argv);
  const v = parsed.values;
  const [cmd, sub, arg, ...rest] = parsed.positionals;
  if (v.help) return { kind: 'help' };
  if (v.version) return { kind: 'version' };
  const config = (): string => {
    if (!v.config) throw new UsageError('-c FILE is required');
    return v.config;
  };
  if (cmd === undefined) return { kind: 'run', config: config() };
  if (cmd === 'resolver-key' && sub === undefined) return { kind: 'resolver-key' };
  if (cmd === 'preimage-key' && sub === undefined) return { kind: 'preimage-key' };
  if (cmd !== 'keys') throw new UsageError(`unknown command "${cmd}"`);
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  switch (sub) {
    case 'create':
      if (arg !== undefined) throw new UsageError(`unexpected argument "${arg}"`);
      if (!v.name || v.name.length > 128)
        throw new UsageError('keys create needs --name NAME (1..128 characters)');
      return { kind: 'keys-create', config: config(), name: v.name };
    case 'list':
      if (arg !== undefined) throw new UsageError(`unexpected argument "${arg}"`);
      return { kind: 'keys-list', config: config(), json: v.json ?? false };
    case 'revoke':
      if (!arg || !/^[0-9a-f]{12}$/.test(arg))
        throw new UsageError('keys revoke needs the key id (12 hex characters)');
      return { kind: 'keys-revoke', config: config(), id: arg };
    default:
      throw new UsageError('keys needs create, list or revoke');
  }
}

function parse(argv: string[]) {
  return parseCommandLine(argv, {
    config: { type: 'string', short: 'c' },
    name: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
    version: { type: 'boolean', short: 'v' },
  });
}
