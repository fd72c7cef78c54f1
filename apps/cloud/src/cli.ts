/** Command line of `rgbx-cloud` (`npm run cloud -- …`). */
import { parseCommandLine, UsageError } from '@rgbx/service-kit';

export const USAGE = `usage: rgbx-cloud [-c FILE] [command]

Cloud hosting of wallet nodes with RSA-signed status webhooks.

commands:
  (none)                              run the service (API, console at /console/, supervisor, webhooks)
  tokens create --account NAME [--name LABEL]
                                      create an API token (printed once; only its hash is stored)
  tokens list [--account NAME] [--json]
  tokens revoke TOKEN_ID              revoke at once (the id, or the whole token)
  keys list                           webhook signing keys and their status
  keys add                            generate a new key and publish it (it does not sign yet)
  keys activate KEY_ID                sign with this published key from now on
  keys retire KEY_ID                  stop publishing a key that no longer signs
  encryption-key                      print a new random key for [signing_keys] (64 hex chars)
  k8s render NODE_ID                  print the Kubernetes manifests the kubernetes driver applies for
                                      this node (YAML, with the configured [kubernetes] and [backend])

options:
  -c, --config FILE   TOML configuration (see apps/cloud/README.md); every key has a default
  -h, --help          this help

The service and the keys commands need the signing keys' encryption key: [signing_keys]
encryption_key or encryption_key_file, or the environment variable RGBX_CLOUD_ENCRYPTION_KEY.

Once listening, one JSON line is printed to stdout: {"event":"listening","url":"http://HOST:PORT"}.
Logs go to stderr.`;

export { UsageError };

export type Command =
  | { kind: 'help' }
  | { kind: 'serve' }
  | { kind: 'tokens-create'; account: string; name: string }
  | { kind: 'tokens-list'; account?: string; json: boolean }
  | { kind: 'tokens-revoke'; id: string }
  | { kind: 'keys-list' }
  | { kind: 'keys-add' }
  | { kind: 'keys-activate'; kid: string }
  | { kind: 'keys-retire'; kid: string }
  | { kind: 'encryption-key' }
  | { kind: 'k8s-render'; nodeId: string };

export function parseCli(argv: string[]): { config?: string; command: Command } {
  const parsed = parse(argv);
  const v = parsed.values;
  const config = v.config;
  const withConfig = (command: Command) => (config === undefined ? { command } : { config, command });
  if (v.help) return withConfig({ kind: 'help' });
  const [group, action, arg, ...extra] = parsed.positionals;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (group === undefined) return withConfig({ kind: 'serve' });
  if (group === 'encryption-key') {
    if (action !== undefined) throw new UsageError(`unexpected argument "${action}"`);
    return withConfig({ kind: 'encryption-key' });
  }
  const need = (what: string) => {
    if (!arg) throw new UsageError(`${group} ${action} needs ${what}`);
    return arg;
  };
  if (group === 'tokens') {
    if (action === 'create') {
      if (!v.account) throw new UsageError('tokens create needs --account NAME');
      if (arg) throw new UsageError(`unexpected argument "${arg}"`);
      return withConfig({ kind: 'tokens-create', account: v.account, name: v.name ?? 'api' });
    }
    if (action === 'list')
      return withConfig({
        kind: 'tokens-list',
        ...(v.account ? { account: v.account } : {}),
        json: v.json ?? false,
      });
    if (action === 'revoke') return withConfig({ kind: 'tokens-revoke', id: need('TOKEN_ID') });
    throw new UsageError(`unknown tokens command "${action ?? ''}" (create, list, revoke)`);
  }
  if (group === 'k8s') {
    if (action === 'render') return withConfig({ kind: 'k8s-render', nodeId: need('NODE_ID') });
    throw new UsageError(`unknown k8s command "${action ?? ''}" (render)`);
  }
  if (group === 'keys') {
    if (action === 'list') return withConfig({ kind: 'keys-list' });
    if (action === 'add') return withConfig({ kind: 'keys-add' });
    if (action === 'activate') return withConfig({ kind: 'keys-activate', kid: need('KEY_ID') });
    if (action === 'retire') return withConfig({ kind: 'keys-retire', kid: need('KEY_ID') });
    throw new UsageError(`unknown keys command "${action ?? ''}" (list, add, activate, retire)`);
  }
  throw new UsageError(`unknown command "${group}"`);
}

function parse(argv: string[]) {
  return parseCommandLine(argv, {
    config: { type: 'string', short: 'c' },
    account: { type: 'string' },
    name: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
}
