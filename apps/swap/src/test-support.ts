/**
 * Test helpers: a configuration with the four network types, both databases (SQLite file and a
 * throwaway PostgreSQL database), an in-process app with two API keys, and user/resolver keys.
 * Imported by `*.test.ts` only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { tronAddressFromPublicKey } from '@rgbx/chains/tron';
import { defaultSwapRates, swapDevnetToml, type TomlValue } from '@rgbx/devnet';
import { sha256 } from '@rgbx/service-kit';
import { createTestPgDatabase, type Dialect } from '@rgbx/store';
import { base58 } from '@scure/base';
import { p2tr, utils } from '@scure/btc-signer';
import { createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll } from 'vitest';
import { buildSwapApp, type SwapApp } from './app.ts';
import type { ChainGateway } from './chains/chain-gateway.ts';
import { loadConfig } from './config.ts';
import { createApiKey } from './store/api-keys.ts';
import { openSwapDatabase } from './store/database.ts';

export const DIALECTS: Dialect[] = ['sqlite', 'postgres'];

/** Registers beforeAll/afterAll that make one SQLite file and one PostgreSQL database per call. */
export function testDatabases(): { url(dialect: Dialect): string } {
  const dir = mkdtempSync(join(tmpdir(), 'swap-test-'));
  let pg: Awaited<ReturnType<typeof createTestPgDatabase>> | undefined;
  let n = 0;
  beforeAll(async () => {
    pg = await createTestPgDatabase('rgbx_swap');
  });
  afterAll(async () => {
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    url(dialect) {
      if (dialect === 'sqlite') return `sqlite:${join(dir, `swap-${++n}.db`)}`;
      if (!pg) throw new Error('postgres test database not created yet');
      return pg.url;
    },
  };
}

export const NET = { btc: 1, evm: 2, tron: 3, sol: 4 } as const;

export const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };

export interface BtcKey {
  privateKey: Uint8Array;
  xonly: Uint8Array;
  address: string;
}

export function btcKey(): BtcKey {
  const privateKey = utils.randomPrivateKeyBytes();
  const xonly = utils.pubSchnorr(privateKey);
  return { privateKey, xonly, address: p2tr(xonly, undefined, REGTEST).address! };
}

export function tronKey(): { privateKey: `0x${string}`; address: string } {
  const privateKey = generatePrivateKey();
  const pub = secp256k1.getPublicKey(Buffer.from(privateKey.slice(2), 'hex'), true);
  return { privateKey, address: tronAddressFromPublicKey(pub) };
}

export function randomEvmAddress(): `0x${string}` {
  return privateKeyToAccount(generatePrivateKey()).address;
}

export function randomSolanaAddress(): string {
  return base58.encode(crypto.getRandomValues(new Uint8Array(32)));
}

/** Fixed identities used by the default test configuration. */
export const RESOLVER_KEY = `rgbx_resolver_${'r'.repeat(43)}`;
export const RESOLVER_BTC = btcKey();
export const RESOLVER_EVM_KEY = generatePrivateKey();
export const RESOLVER_EVM = privateKeyToAccount(RESOLVER_EVM_KEY);
export const RESOLVER_TRON = tronKey();
/** The resolver's Solana key (fee payer at position 0 of co-signed transactions; pays Solana destinations). */
export const RESOLVER_SOL_SIGNER = await createKeyPairSignerFromPrivateKeyBytes(
  crypto.getRandomValues(new Uint8Array(32)),
);
export const RESOLVER_SOL = RESOLVER_SOL_SIGNER.address as string;
export const USDC = randomEvmAddress();
export const WETH = randomEvmAddress();
export const ESCROW = randomEvmAddress();
export const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
export const TRON_USDT = tronKey().address;
export const TRON_ESCROW = tronKey().address;
export const TRON_PERMIT2 = tronKey().address;
export const SOL_MINT = 'So11111111111111111111111111111111111111112';
export const RGB_ASSET = 'rgb:2dkSTbr-jFhznbPmo-TQafzswCN-av4gTsJjX-ttx6CNou5-M98k8Zd';

/**
 * Where a test does not run a node for a network, its reader points here: the discard port, where
 * nothing listens. The configuration is complete (every network has its reader, as the service
 * requires), and any read fails with UPSTREAM_UNAVAILABLE (503) — never a made-up answer.
 */
export const UNREACHABLE_RPC = 'http://127.0.0.1:9';
export const UNREACHABLE_ELECTRUM = 'tcp://127.0.0.1:9';

export interface TestConfigOptions {
  databaseUrl: string;
  electrumUrl?: string;
  evmRpcUrl?: string;
  /** Tron's Ethereum-compatible JSON-RPC (tests: the EVM devnode serving that role). */
  tronRpcUrl?: string;
  tronChainId?: number;
  tronPermit2?: string;
  tronEscrow?: string;
  tronUsdt?: string;
  solRpcUrl?: string;
  solEscrow?: string;
  refundSafetyMarginSecs?: number;
  /** EVM token address overrides (real contracts on a dev node). */
  usdc?: string;
  permit2?: string;
  escrow?: string;
  evmChainId?: number;
  quoteTtlSecs?: number;
  intentTtlSecs?: number;
  minConfirmations?: number;
  /** More keys of the Bitcoin `[[networks]]` row. */
  bitcoinNetwork?: Record<string, TomlValue>;
  extra?: string;
}

export function testConfigToml(o: TestConfigOptions): string {
  const usdc = o.usdc ?? USDC;
  const tronUsdt = o.tronUsdt ?? TRON_USDT;
  const toml = swapDevnetToml({
    service: {
      database_url: o.databaseUrl,
      preimage_key: 'ab'.repeat(32),
      log_level: 'silent',
    },
    swap: {
      quote_ttl_secs: o.quoteTtlSecs ?? 60,
      intent_ttl_secs: o.intentTtlSecs ?? 3600,
      scheduler_interval_ms: 3600000,
      refund_safety_margin_secs: o.refundSafetyMarginSecs ?? 3600,
    },
    bitcoin: {
      electrumUrl: o.electrumUrl ?? UNREACHABLE_ELECTRUM,
      minConfirmations: o.minConfirmations ?? 1,
      ...(o.bitcoinNetwork ? { extra: o.bitcoinNetwork } : {}),
    },
    evm: {
      rpcUrl: o.evmRpcUrl ?? UNREACHABLE_RPC,
      chainId: o.evmChainId ?? 31337,
      permit2: o.permit2 ?? PERMIT2,
      escrow: o.escrow ?? ESCROW,
      usdc,
      token: { name: 'USD Coin', decimals: 6 },
      extra: { name: 'Local EVM', ...(o.evmRpcUrl ? {} : { verify_allowance: false }) },
    },
    tron: {
      rpcUrl: o.tronRpcUrl ?? UNREACHABLE_RPC,
      chainId: o.tronChainId ?? 728126428,
      permit2: o.tronPermit2 ?? TRON_PERMIT2,
      escrow: o.tronEscrow ?? TRON_ESCROW,
      usdt: tronUsdt,
      token: { name: 'Tether USD', decimals: 6 },
      extra: { name: 'Tron', verify_allowance: o.tronRpcUrl !== undefined },
    },
    solana: {
      rpcUrl: o.solRpcUrl ?? UNREACHABLE_RPC,
      extra: { name: 'Solana', ...(o.solEscrow ? { solana_escrow_address: o.solEscrow } : {}) },
    },
    tokens: [
      {
        network_id: NET.btc,
        symbol: 'RGBT',
        name: 'RGB test asset',
        address: RGB_ASSET,
        decimals: 0,
        rgb: true,
      },
      {
        network_id: NET.evm,
        symbol: 'ETH',
        name: 'Ether',
        address: '0x0000000000000000000000000000000000000000',
        decimals: 18,
        wrapped_token_address: WETH,
      },
    ],
    resolver: {
      name: 'Reference resolver',
      apiKeySha256: sha256(RESOLVER_KEY).toString('hex'),
      bitcoinClaimPubkey: Buffer.from(RESOLVER_BTC.xonly).toString('hex'),
      evmAddress: RESOLVER_EVM.address,
      tronAddress: RESOLVER_TRON.address,
      solanaAddress: RESOLVER_SOL,
    },
    rates: [
      ...defaultSwapRates({ usdc, usdt: tronUsdt, solana: true }).map((r) =>
        r.source_token === SOL_MINT ? { ...r, rate: '150.25' } : r,
      ),
      {
        source_network: NET.btc,
        source_token: RGB_ASSET,
        dest_network: NET.evm,
        dest_token: usdc,
        rate: '1',
      },
    ],
  });
  // Tests append their own `[[resolvers.rates]]` (the generated text ends with the resolver's rates).
  return `${toml}\n${o.extra ?? ''}\n`;
}

export interface TestService extends SwapApp {
  apiKey: string;
  otherKey: string;
  close(): Promise<void>;
}

export interface StartOptions extends TestConfigOptions {
  now?: () => number;
  gateway?: ChainGateway;
}

export async function startTestService(o: StartOptions): Promise<TestService> {
  const config = loadConfig({ text: testConfigToml(o) }, {});
  const opened = await openSwapDatabase(config.databaseUrl);
  const built = buildSwapApp({
    config,
    db: opened.db,
    dialect: opened.dialect,
    ...(o.now ? { now: o.now } : {}),
    ...(o.gateway ? { gateway: o.gateway } : {}),
  });
  const a = await createApiKey(opened.db, 'tenant-a');
  const b = await createApiKey(opened.db, 'tenant-b');
  await built.app.ready();
  return {
    ...built,
    apiKey: a.key,
    otherKey: b.key,
    async close() {
      await built.app.close();
      await opened.close();
    },
  };
}

/** A movable clock. */
export function testClock(start = Date.now()): {
  now: () => number;
  advance(ms: number): void;
  set(ms: number): void;
} {
  let t = start;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
    },
    set(ms) {
      t = ms;
    },
  };
}
