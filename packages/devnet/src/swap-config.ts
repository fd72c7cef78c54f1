/**
 * The swap service's configuration on the devnet, written once: `npm start`, the swap's tests, the
 * benchmarks and the committed `apps/swap/config/devnet.toml` (generated with `${ENV:-default}`
 * placeholders by `npm run specs`, checked for drift by `npm run specs:check`) all build it here.
 *
 * Four networks with fixed ids (Bitcoin regtest 1, the EVM devnode 2, Tron read through the same
 * devnode's JSON-RPC 3, the Solana devnode 4), their tokens, and one resolver with its identities
 * and rates. Every key in it is a devnet key from a public seed: never for value.
 *
 * @example
 * writeFileSync('swap.toml', swapDevnetToml({ dataDir, bitcoin: { electrumUrl }, evm: {...}, … }));
 */
import { writeToml } from '@rgbx/service-kit';

/** A value of the generated document (tables nest as objects, arrays of tables as arrays). */
export type TomlValue = string | number | boolean | TomlValue[] | { [key: string]: TomlValue };

/** Network ids of the devnet configuration. */
export const SWAP_NET = { btc: 1, evm: 2, tron: 3, sol: 4 } as const;
/** The wrapped-SOL mint names native SOL. */
export const SOL_MINT = 'So11111111111111111111111111111111111111112';

/**
 * The devnet resolver's identities, derived from public seeds (`sha256("rgbx-swap-devnet-resolver-…")`,
 * see apps/swap/README "Devnet"); its API key is `rgbx_resolver_devnet_only_not_a_secret`.
 */
export const DEVNET_RESOLVER = {
  id: 'reference',
  name: 'Reference resolver (devnet)',
  /** sha256("rgbx_resolver_devnet_only_not_a_secret") */
  apiKeySha256: '4619b38a855e107af7afddeae11e597c9c843d33fafe8fe42e1a0bf7bb43ebd4',
  bitcoinClaimPubkey: '1fb5199d7d16074b1aa2bfe72ca35602eb0df446a5bc5754645b1ac7eaf9d6f6',
  evmAddress: '0x6Cc0Ab460d13660B9962D5364b7E360222fb5F44',
  tronAddress: 'TQtpktd39zDV7UzPkVifVGM5mZa6ziBpCr',
  solanaAddress: '6RAPtMP2RUnwpwUDjVCPppHt8XanXWdp15d4YcfxvfS1',
} as const;

export interface SwapDevnetRate {
  source_network: number;
  source_token: string;
  dest_network: number;
  dest_token: string;
  rate: string;
  fee_bps?: number;
  min_source_lots?: string;
  max_source_lots?: string;
}

export interface SwapDevnetOptions {
  /** Top-level keys (`database_url`, `data_dir`, `port`, `preimage_key`, `log_level`, …). */
  service?: Record<string, TomlValue>;
  /** `[swap]` keys. */
  swap?: Record<string, TomlValue>;
  bitcoin: {
    electrumUrl: string;
    minConfirmations?: number;
    feeRateSatVb?: number;
    /** More keys of the Bitcoin `[[networks]]` row (`fulfil_min_confirmations`…). */
    extra?: Record<string, TomlValue>;
  };
  /** The EVM devnode; absent: no EVM network. */
  evm?: {
    rpcUrl: string;
    chainId: number | string;
    permit2: string;
    escrow: string;
    usdc: string;
    /** Overrides of the USDC token row (name, decimals…). */
    token?: Record<string, TomlValue>;
    extra?: Record<string, TomlValue>;
  };
  /** Tron through the devnode's JSON-RPC; absent: no Tron network. */
  tron?: {
    rpcUrl: string;
    chainId: number | string;
    permit2: string;
    escrow: string;
    usdt: string;
    /** Overrides of the USDT token row. */
    token?: Record<string, TomlValue>;
    extra?: Record<string, TomlValue>;
  };
  /** The Solana devnode; absent: no Solana network. */
  solana?: { rpcUrl: string; extra?: Record<string, TomlValue> };
  /** Tokens beyond BTC, USDC, USDT and SOL. */
  tokens?: Record<string, TomlValue>[];
  resolver?: {
    apiKeySha256?: string;
    bitcoinClaimPubkey?: string;
    evmAddress?: string;
    tronAddress?: string;
    solanaAddress?: string;
    name?: string;
  } & SwapDevnetRemote;
  /**
   * The resolver's rates; default {@link defaultSwapRates}. A remote resolver (`resolver.quoteUrl`)
   * gets none: it quotes over RFQ.
   */
  rates?: SwapDevnetRate[];
  /**
   * More `[[resolvers]]` after the devnet resolver (tests with several resolvers). With any, a caller
   * appending `[[resolvers.rates]]` to the TOML text adds them to the last of these.
   */
  extraResolvers?: SwapDevnetResolver[];
}

/** A remote resolver's RFQ keys (`quote_url`, and `rfq_secret` or `rfq_secret_file`). */
export interface SwapDevnetRemote {
  /** `quote_url`: the resolver is asked over RFQ (http:// is accepted on a devnet configuration). */
  quoteUrl?: string;
  /** `rfq_secret` (at least 32 bytes; `${ENV}` placeholders work). */
  rfqSecret?: string;
  /** `rfq_secret_file`: a file holding the secret. */
  rfqSecretFile?: string;
}

/** One more resolver (see {@link SwapDevnetOptions.extraResolvers}). */
export interface SwapDevnetResolver extends SwapDevnetRemote {
  id: string;
  name?: string;
  apiKeySha256: string;
  bitcoinClaimPubkey?: string;
  evmAddress?: string;
  tronAddress?: string;
  solanaAddress?: string;
  enabled?: boolean;
  /** Rates of a reference (not remote) resolver. */
  rates?: SwapDevnetRate[];
}

function remoteKeys(r: SwapDevnetRemote): Record<string, TomlValue> {
  return {
    ...(r.quoteUrl !== undefined ? { quote_url: r.quoteUrl } : {}),
    ...(r.rfqSecret !== undefined ? { rfq_secret: r.rfqSecret } : {}),
    ...(r.rfqSecretFile !== undefined ? { rfq_secret_file: r.rfqSecretFile } : {}),
  };
}

/** The pairs the devnet quotes: BTC ⇄ USDC (EVM), USDT (Tron) → USDC, SOL ⇄ USDC (EVM). */
export function defaultSwapRates(o: { usdc?: string; usdt?: string; solana?: boolean }): SwapDevnetRate[] {
  const rates: SwapDevnetRate[] = [];
  if (o.usdc) {
    rates.push(
      {
        source_network: SWAP_NET.btc,
        source_token: 'BTC',
        dest_network: SWAP_NET.evm,
        dest_token: o.usdc,
        rate: '60000',
        fee_bps: 10,
        min_source_lots: '10000',
        max_source_lots: '100000000',
      },
      {
        source_network: SWAP_NET.evm,
        source_token: o.usdc,
        dest_network: SWAP_NET.btc,
        dest_token: 'BTC',
        rate: '0.0000166',
      },
    );
    if (o.usdt)
      rates.push({
        source_network: SWAP_NET.tron,
        source_token: o.usdt,
        dest_network: SWAP_NET.evm,
        dest_token: o.usdc,
        rate: '0.999',
      });
    if (o.solana)
      rates.push(
        {
          source_network: SWAP_NET.sol,
          source_token: SOL_MINT,
          dest_network: SWAP_NET.evm,
          dest_token: o.usdc,
          rate: '150',
        },
        {
          // About the inverse of SOL → USDC (1 / 150), rounded down.
          source_network: SWAP_NET.evm,
          source_token: o.usdc,
          dest_network: SWAP_NET.sol,
          dest_token: SOL_MINT,
          rate: '0.0066',
        },
      );
  }
  return rates;
}

/** The configuration as a TOML document (see {@link swapDevnetToml}). */
export function swapDevnetConfig(o: SwapDevnetOptions): Record<string, TomlValue> {
  const networks: Record<string, TomlValue>[] = [
    {
      id: SWAP_NET.btc,
      name: 'Bitcoin regtest',
      type: 'BITCOIN',
      bitcoin_network: 'regtest',
      ...o.bitcoin.extra,
    },
  ];
  const tokens: Record<string, TomlValue>[] = [
    { network_id: SWAP_NET.btc, symbol: 'BTC', name: 'Bitcoin', address: 'BTC', decimals: 8 },
  ];
  if (o.evm) {
    networks.push({
      id: SWAP_NET.evm,
      name: 'Local EVM (devnode)',
      type: 'EVM',
      chain_id: o.evm.chainId,
      rpc_url: o.evm.rpcUrl,
      permit2_address: o.evm.permit2,
      escrow_address: o.evm.escrow,
      ...o.evm.extra,
    });
    tokens.push({
      network_id: SWAP_NET.evm,
      symbol: 'USDC',
      name: 'Test USD (devnode ERC-20)',
      address: o.evm.usdc,
      decimals: 18,
      ...o.evm.token,
    });
  }
  if (o.tron) {
    networks.push({
      id: SWAP_NET.tron,
      name: 'Tron (devnode JSON-RPC)',
      type: 'TRON',
      chain_id: o.tron.chainId,
      rpc_url: o.tron.rpcUrl,
      permit2_address: o.tron.permit2,
      escrow_address: o.tron.escrow,
      ...o.tron.extra,
    });
    tokens.push({
      network_id: SWAP_NET.tron,
      symbol: 'USDT',
      name: 'Tether USD (devnet)',
      address: o.tron.usdt,
      decimals: 18,
      ...o.tron.token,
    });
  }
  if (o.solana) {
    networks.push({
      id: SWAP_NET.sol,
      name: 'Solana (litesvm devnode)',
      type: 'SOLANA',
      rpc_url: o.solana.rpcUrl,
      ...o.solana.extra,
    });
    tokens.push({ network_id: SWAP_NET.sol, symbol: 'SOL', name: 'Solana', address: SOL_MINT, decimals: 9 });
  }
  const r = { ...DEVNET_RESOLVER, ...o.resolver };
  const rates = o.resolver?.quoteUrl
    ? []
    : (o.rates ??
      defaultSwapRates({ usdc: o.evm?.usdc, usdt: o.tron?.usdt, solana: o.solana !== undefined }));
  return {
    devnet: true,
    ...o.service,
    swap: { ...o.swap },
    bitcoin: {
      electrum_url: o.bitcoin.electrumUrl,
      fee_rate_sat_vb: o.bitcoin.feeRateSatVb ?? 2,
      min_confirmations: o.bitcoin.minConfirmations ?? 1,
    },
    networks,
    tokens: [...tokens, ...(o.tokens ?? [])],
    resolvers: [
      {
        id: DEVNET_RESOLVER.id,
        name: r.name,
        api_key_sha256: r.apiKeySha256,
        bitcoin_claim_pubkey: r.bitcoinClaimPubkey,
        ...(o.evm ? { evm_address: r.evmAddress } : {}),
        ...(o.tron ? { tron_address: r.tronAddress } : {}),
        ...(o.solana ? { solana_address: r.solanaAddress } : {}),
        ...remoteKeys(r),
        rates: rates as unknown as TomlValue[],
      },
      ...(o.extraResolvers ?? []).map(
        (x): Record<string, TomlValue> => ({
          id: x.id,
          name: x.name ?? x.id,
          ...(x.enabled !== undefined ? { enabled: x.enabled } : {}),
          api_key_sha256: x.apiKeySha256,
          ...(x.bitcoinClaimPubkey ? { bitcoin_claim_pubkey: x.bitcoinClaimPubkey } : {}),
          ...(x.evmAddress ? { evm_address: x.evmAddress } : {}),
          ...(x.tronAddress ? { tron_address: x.tronAddress } : {}),
          ...(x.solanaAddress ? { solana_address: x.solanaAddress } : {}),
          ...remoteKeys(x),
          rates: (x.rates ?? []) as unknown as TomlValue[],
        }),
      ),
    ],
  };
}

/**
 * The configuration as TOML text. It ends with the resolver's rates, so a caller may append more
 * `[[resolvers.rates]]` tables to it.
 */
export function swapDevnetToml(o: SwapDevnetOptions, comments: string[] = []): string {
  return writeToml(swapDevnetConfig(o), comments);
}

/**
 * `apps/swap/config/devnet.toml`: the devnet configuration with `${ENV:-default}` placeholders, for
 * running the swap by hand against a devnet (`npm start` writes its own from {@link swapDevnetToml}).
 * The contract addresses default to what `npm start` deploys on a fresh devnode (`deploySwapDevnet`:
 * account 0's nonces 0, 1, 2; held by evm-devnode/devnet-addresses.test.ts).
 */
/** A `${NAME}` / `${NAME:-default}` placeholder of the service's TOML loader. */
function env(name: string, fallback?: string): string {
  return ['$', '{', name, fallback === undefined ? '' : `:-${fallback}`, '}'].join('');
}

export function swapDevnetTemplateToml(): string {
  const usdc = env('EVM_USDC', '0x2574b65e88Bc21e2EcB8E82950683a6514B27617');
  const usdt = env('TRON_USDT', 'TDPFpUWKvV1EaEutB2QqcUxqa4HJs69Y6r');
  return swapDevnetToml(
    {
      service: {
        host: '127.0.0.1',
        port: 3100,
        data_dir: '../../../.devnet/swap',
        preimage_key: env('SWAP_PREIMAGE_KEY'),
        log_level: 'info',
      },
      swap: { quote_ttl_secs: 120, intent_ttl_secs: 3600, scheduler_interval_ms: 5000 },
      bitcoin: { electrumUrl: env('ELECTRUM_URL') },
      evm: {
        rpcUrl: env('EVM_RPC_URL', 'http://127.0.0.1:8545'),
        chainId: 31337,
        permit2: env('EVM_PERMIT2', '0x1A90187F90714D9c2c12694421DC1C0F70b4b8a0'),
        escrow: env('EVM_ESCROW', '0x66F02F96Fe6Be49fFd228304fb4b6cB99Eba32B6'),
        usdc,
        extra: { min_confirmations: 1 },
      },
      tron: {
        rpcUrl: env('TRON_RPC_URL', 'http://127.0.0.1:8545'),
        chainId: env('TRON_CHAIN_ID', '31337'),
        permit2: env('TRON_PERMIT2', 'TCPfBzSKg4ALXQ2CAi855oXx5nBvS96Szz'),
        escrow: env('TRON_ESCROW', 'TKMVf2x88PCmNKEj3bPXEkLxoEXM1JLmmR'),
        usdt,
        extra: { min_confirmations: 1 },
      },
      solana: { rpcUrl: env('SOLANA_RPC_URL', 'http://127.0.0.1:8899'), extra: { min_confirmations: 1 } },
    },
    [
      'GENERATED by `npm run specs` from packages/devnet/src/swap-config.ts (swapDevnetTemplateToml): edit',
      'there; `npm run specs:check` fails when this file differs.',
      '',
      'Swap service on the devnet: Bitcoin regtest (devnet bitcoind + our Electrum server), the EVM devnode',
      '(our Permit2-compatible SignatureTransfer, the SwapEscrow and a test ERC-20, deployed by `npm start`),',
      '"Tron" read through the same devnode\'s Ethereum-compatible JSON-RPC, and Solana on the litesvm devnode.',
      'Every network must have a reader: settlement is verified on chain or refused (fail closed). Every key',
      'is a DEVNET key from a public seed (apps/swap/README "Devnet"): never use them with value.',
      '',
      '  SWAP_PREIMAGE_KEY=$(npm run -s swap -- preimage-key) \\',
      '  ELECTRUM_URL=$(npm run -s devnet -- status --json | jq -r .electrum) \\',
      '  EVM_RPC_URL=… TRON_RPC_URL=… SOLANA_RPC_URL=… \\',
      '  npm run swap -- -c apps/swap/config/devnet.toml',
      '',
      'The contract addresses fall back to what `npm start` deploys on a fresh devnode (deploySwapDevnet in',
      'packages/devnet: from account 0, the test USDC at nonce 0, SignatureTransfer at 1, SwapEscrow at 2);',
      'packages/devnet/src/evm-devnode/devnet-addresses.test.ts fails if they drift. Set EVM_USDC,',
      'EVM_PERMIT2, EVM_ESCROW (TRON_USDT, TRON_PERMIT2, TRON_ESCROW) for contracts deployed otherwise.',
      'A development configuration (devnet = true): settlement with 1 confirmation everywhere.',
    ],
  );
}
