/**
 * The reference resolver (`apps/resolver`) on the devnet: its keys (the devnet resolver's public seeds,
 * so its identities are the ones `swapDevnetToml` lists), its configuration, and its funding on every
 * devnet chain. Devnet keys from public seeds: never for value.
 *
 * @example
 * const file = writeResolverDevnetFiles(dir, { swapUrl, rfqPort: 3300, bitcoin: { electrumUrl }, evm, tron, solana });
 * await fundDevnetResolver({ devnet, evm: { rpcUrl, chainId, funderKey, usdc }, solanaRpcUrl });
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { schnorr } from '@noble/curves/secp256k1.js';
import { tronAddressToEvm } from '@rgbx/chains/tron';
import { writeToml } from '@rgbx/service-kit';
import { p2tr } from '@scure/btc-signer';
import type { Devnet } from './devnet.ts';
import { TEST_TOKEN } from './evm-devnode/artifacts.ts';
import { devnodeClients } from './evm-devnode/token.ts';
import { DEVNET_RESOLVER, defaultSwapRates, SOL_MINT, SWAP_NET, type TomlValue } from './swap-config.ts';

/** The devnet resolver's private key for a chain: sha256("rgbx-swap-devnet-resolver-<chain>"). */
export function devnetResolverKey(chain: 'btc' | 'evm' | 'tron' | 'sol'): Uint8Array {
  return createHash('sha256').update(`rgbx-swap-devnet-resolver-${chain}`).digest();
}

/** The devnet RFQ secret shared by the swap service and the devnet resolver (not a secret). */
export const DEVNET_RFQ_SECRET = 'rgbx_rfq_devnet_only_not_a_secret_0123456789';
/** The devnet resolver's API key (its sha256 is DEVNET_RESOLVER.apiKeySha256). */
export const DEVNET_RESOLVER_API_KEY = 'rgbx_resolver_devnet_only_not_a_secret';

/** The devnet resolver's Bitcoin address (P2TR key path of its claim key): where its BTC is. */
export function devnetResolverBtcAddress(): string {
  const xonly = schnorr.getPublicKey(devnetResolverKey('btc'));
  return p2tr(xonly, undefined, { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef }).address!;
}

export interface ResolverDevnetOptions {
  swapUrl: string;
  /** The RFQ server's port (0: any). */
  rfqPort: number;
  /** `database_url`; default SQLite in the data dir. */
  databaseUrl?: string;
  logLevel?: string;
  bitcoin: { electrumUrl: string };
  evm?: { rpcUrl: string; chainId: number | string; escrow: string; usdc: string };
  tron?: { rpcUrl: string; chainId: number | string; escrow: string; usdt: string };
  solana?: { rpcUrl: string };
  /** `[fill]` overrides (safety_secs, poll_interval_ms, max_concurrent). */
  fill?: Record<string, TomlValue>;
  /** `GET /metrics` port (default: the resolver's own default, 9406; 0 = any). */
  metricsPort?: number;
}

/**
 * Writes the devnet resolver's key files (0600), RFQ secret and config into `dir`; returns the config
 * path. Its pairs are the devnet swap's default rates, with the rate's fee as the spread.
 */
export function writeResolverDevnetFiles(dir: string, o: ResolverDevnetOptions): string {
  mkdirSync(join(dir, 'keys'), { recursive: true, mode: 0o700 });
  const key = (chain: 'btc' | 'evm' | 'tron' | 'sol') => {
    const file = join(dir, 'keys', `${chain}.key`);
    writeFileSync(file, Buffer.from(devnetResolverKey(chain)).toString('hex'), { mode: 0o600 });
    return file;
  };
  const secretFile = join(dir, 'rfq.secret');
  writeFileSync(secretFile, DEVNET_RFQ_SECRET, { mode: 0o600 });
  const apiKeyFile = join(dir, 'api.key');
  writeFileSync(apiKeyFile, DEVNET_RESOLVER_API_KEY, { mode: 0o600 });
  const networks: Record<string, TomlValue>[] = [
    {
      id: SWAP_NET.btc,
      type: 'BITCOIN',
      electrum_url: o.bitcoin.electrumUrl,
      btc_network: 'regtest',
      key_file: key('btc'),
    },
  ];
  if (o.evm)
    networks.push({
      id: SWAP_NET.evm,
      type: 'EVM',
      rpc_url: o.evm.rpcUrl,
      chain_id: Number(o.evm.chainId),
      escrow_address: o.evm.escrow,
      key_file: key('evm'),
    });
  if (o.tron)
    networks.push({
      id: SWAP_NET.tron,
      type: 'TRON',
      rpc_url: o.tron.rpcUrl,
      chain_id: Number(o.tron.chainId),
      escrow_address: o.tron.escrow,
      devnet_jsonrpc_broadcast: true,
      key_file: key('tron'),
    });
  if (o.solana)
    networks.push({ id: SWAP_NET.sol, type: 'SOLANA', rpc_url: o.solana.rpcUrl, key_file: key('sol') });
  const pairs = defaultSwapRates({
    usdc: o.evm?.usdc,
    usdt: o.tron?.usdt,
    solana: o.solana !== undefined,
  }).map((r) => ({
    source_network: r.source_network,
    source_token: r.source_token,
    dest_network: r.dest_network,
    dest_token: r.dest_token,
    rate: r.rate,
    spread_bps: r.fee_bps ?? 0,
    min_source_lots: r.min_source_lots ?? '1',
    max_source_lots: r.max_source_lots ?? '1000000000000000000000000',
  }));
  const config: Record<string, TomlValue> = {
    devnet: true,
    log_level: o.logLevel ?? 'info',
    data_dir: join(dir, 'data'),
    ...(o.databaseUrl ? { database_url: o.databaseUrl } : {}),
    swap: { url: o.swapUrl, resolver_id: DEVNET_RESOLVER.id, api_key_file: apiKeyFile },
    rfq: { listen_address: '127.0.0.1', port: o.rfqPort, secret_file: secretFile },
    fill: { poll_interval_ms: 1000, ...o.fill },
    ...(o.metricsPort === undefined ? {} : { metrics: { listen_address: '127.0.0.1', port: o.metricsPort } }),
    networks,
    pairs,
  };
  const file = join(dir, 'resolver.toml');
  writeFileSync(
    file,
    writeToml(config, ['the devnet reference resolver (writeResolverDevnetFiles in packages/devnet)']),
    { mode: 0o600 },
  );
  return file;
}

export interface FundDevnetResolverOptions {
  devnet: Pick<Devnet, 'fund' | 'mine'>;
  /** BTC per UTXO and how many UTXOs (several, so payments do not wait for each other's change). */
  btc?: { perUtxo: string; utxos: number };
  evm?: {
    rpcUrl: string;
    chainId: number | bigint;
    funderKey: `0x${string}`;
    usdc: `0x${string}`;
    usdcLots?: bigint;
  };
  /** Fund the Tron identity (its hex form on the same devnode) with gas and the USDT contract's tokens. */
  tron?: boolean;
  solanaRpcUrl?: string;
  solLamports?: bigint;
}

/** Funds the devnet resolver on every chain given; mines the Bitcoin funding (1 block). */
export async function fundDevnetResolver(o: FundDevnetResolverOptions): Promise<void> {
  const btc = o.btc ?? { perUtxo: '2', utxos: 5 };
  const address = devnetResolverBtcAddress();
  for (let i = 0; i < btc.utxos; i++) await o.devnet.fund(address, btc.perUtxo);
  await o.devnet.mine(1);
  if (o.evm) {
    const c = devnodeClients(o.evm.rpcUrl, BigInt(o.evm.chainId), o.evm.funderKey);
    const targets = [DEVNET_RESOLVER.evmAddress as `0x${string}`];
    if (o.tron) targets.push(tronAddressToEvm(DEVNET_RESOLVER.tronAddress) as `0x${string}`);
    for (const to of targets) {
      const gas = await c.wallet.sendTransaction({ to, value: 10n ** 21n });
      await c.public.waitForTransactionReceipt({ hash: gas, pollingInterval: 50 });
      const tok = await c.wallet.writeContract({
        address: o.evm.usdc,
        abi: TEST_TOKEN.abi,
        functionName: 'transfer',
        args: [to, o.evm.usdcLots ?? 10n ** 27n], // 10⁹ tokens of 18 decimals
      });
      await c.public.waitForTransactionReceipt({ hash: tok, pollingInterval: 50 });
    }
  }
  if (o.solanaRpcUrl) {
    const res = await fetch(o.solanaRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'requestAirdrop',
        params: [DEVNET_RESOLVER.solanaAddress, Number(o.solLamports ?? 1000n * 10n ** 9n)],
      }),
    });
    const body = (await res.json()) as { error?: { message: string } };
    if (body.error) throw new Error(`requestAirdrop: ${body.error.message}`);
  }
}

export { SOL_MINT };
