/**
 * Networks and tokens, from the configuration. Lookups are case-insensitive on token addresses for
 * EVM networks (0x hex) and exact elsewhere (base58 is case-sensitive).
 */
import type { NetworkConfig, TokenConfig } from '../config.ts';
import { E } from '../errors.ts';
import type { ApprovalMechanism } from '../kinds/kind.ts';
import { kindOf } from '../kinds/registry.ts';

export type { ApprovalMechanism } from '../kinds/kind.ts';

export const PAGE = {
  /** Default and maximum page sizes of `/tokens` and `/swaps` (both surfaces). */
  defaultLimit: 20,
  maxLimit: 100,
} as const;

export interface Page<T> {
  items: T[];
  limit: number;
  offset: number;
  total: number;
  pages: number;
}

export function paginate<T>(
  all: readonly T[],
  limit: number | undefined,
  offset: number | undefined,
): Page<T> {
  const l = Math.min(limit ?? PAGE.defaultLimit, PAGE.maxLimit);
  const o = offset ?? 0;
  return {
    items: all.slice(o, o + l),
    limit: l,
    offset: o,
    total: all.length,
    pages: Math.ceil(all.length / l),
  };
}

export function mechanismFor(network: NetworkConfig, token: TokenConfig): ApprovalMechanism {
  return token.rgb ? 'rgblock' : kindOf(network).mechanism;
}

/** Throws INVALID_ADDRESS unless `address` is an address of `network`. */
export function checkAddress(field: string, address: string, network: NetworkConfig): void {
  if (!kindOf(network).isAddress(address, network))
    throw E.INVALID_ADDRESS.create(field, `not a ${network.type} address of network ${network.id}`);
}

/** A token address as looked up on `network` (unknown network: as a 0x address is, else exact). */
function tokenKey(network: NetworkConfig | undefined, address: string): string {
  if (network) return kindOf(network).tokenKey(address);
  return address.startsWith('0x') ? address.toLowerCase() : address;
}

export class Catalog {
  readonly networks: readonly NetworkConfig[];
  readonly tokens: readonly TokenConfig[];
  readonly #networks = new Map<number, NetworkConfig>();
  readonly #tokens = new Map<string, TokenConfig>();

  constructor(networks: readonly NetworkConfig[], tokens: readonly TokenConfig[]) {
    this.networks = networks;
    this.tokens = tokens;
    for (const n of networks) this.#networks.set(n.id, n);
    for (const t of tokens)
      this.#tokens.set(`${t.network_id}/${tokenKey(this.#networks.get(t.network_id), t.address)}`, t);
  }

  network(id: number): NetworkConfig {
    const n = this.#networks.get(id);
    if (!n) throw E.UNKNOWN_NETWORK.create(id);
    return n;
  }

  findNetwork(id: number): NetworkConfig | undefined {
    return this.#networks.get(id);
  }

  token(networkId: number, address: string): TokenConfig {
    const n = this.network(networkId);
    const t = this.#tokens.get(`${networkId}/${tokenKey(n, address)}`);
    if (!t) throw E.UNKNOWN_TOKEN.create(networkId, address);
    return t;
  }

  /** Networks, optionally only those listing a token with this address. */
  listNetworks(token?: string): NetworkConfig[] {
    if (token === undefined || token === '') return [...this.networks];
    return this.networks.filter((n) => this.#tokens.has(`${n.id}/${tokenKey(n, token)}`));
  }

  /** Tokens filtered by network and by `q` (symbol or name substring, or exact address), in config order. */
  listTokens(opts: { q?: string; networkId?: number; limit?: number; offset?: number }): Page<TokenConfig> {
    const q = opts.q?.trim().toLowerCase();
    const all = this.tokens.filter((t) => {
      if (opts.networkId !== undefined && t.network_id !== opts.networkId) return false;
      if (!q) return true;
      return (
        t.symbol.toLowerCase().includes(q) ||
        t.name.toLowerCase().includes(q) ||
        t.address.toLowerCase() === q
      );
    });
    return paginate(all, opts.limit, opts.offset);
  }
}
