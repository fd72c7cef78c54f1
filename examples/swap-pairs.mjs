#!/usr/bin/env node
// One swap of each supported pair, from fresh user keys, against `npm start` (the devnet market):
// the user's side only, with the SDK. The reference resolver that `npm start` runs does the rest.
//
//   npm start                              # in another terminal; wait for "rgbx is up"
//   node examples/swap-pairs.mjs [PAIR…]   # default: every pair; RGBX_DEVNET_DIR as for npm start
//
// Each step is printed, then the user's balances before and after. The same functions drive the
// market tests (e2e/market.test.ts).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tronAddressFromHex } from '@rgbx/chains/tron';
import { openDevnet, SOL_MINT, SWAP_NET } from '@rgbx/devnet';
import { SwapClient, signCosignApproval, signHtlcApproval, signPermit2Approval } from '@rgbx/sdk';
import { p2tr, utils } from '@scure/btc-signer';
import { createKeyPairSignerFromPrivateKeyBytes, signBytes } from '@solana/kit';
import { createPublicClient, createWalletClient, defineChain, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

const ERC20 = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function transfer(address,uint256) returns (bool)',
  'function approve(address,uint256) returns (bool)',
]);
const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };

/** The pairs: source and destination (network id, token) and the amount the user swaps. */
export function pairs(usdc) {
  const tronUsdt = tronAddressFromHex(usdc);
  return {
    'BTC->USDC': {
      source: SWAP_NET.btc,
      sourceToken: 'BTC',
      dest: SWAP_NET.evm,
      destToken: usdc,
      amount: '0.01',
    },
    'USDC->BTC': {
      source: SWAP_NET.evm,
      sourceToken: usdc,
      dest: SWAP_NET.btc,
      destToken: 'BTC',
      amount: '250',
    },
    'USDT(TRON)->USDC': {
      source: SWAP_NET.tron,
      sourceToken: tronUsdt,
      dest: SWAP_NET.evm,
      destToken: usdc,
      amount: '100',
    },
    'SOL->USDC': {
      source: SWAP_NET.sol,
      sourceToken: SOL_MINT,
      dest: SWAP_NET.evm,
      destToken: usdc,
      amount: '1',
    },
    'USDC->SOL': {
      source: SWAP_NET.evm,
      sourceToken: usdc,
      dest: SWAP_NET.sol,
      destToken: SOL_MINT,
      amount: '150',
    },
  };
}

/**
 * What a user needs of the market: the swap URL and key, the chains' endpoints, and where test funds
 * come from (the devnet's miner, the EVM devnode's account 0, the Solana devnode's airdrop).
 */
export async function marketContext({ swapUrl, apiKey, evm, solanaRpcUrl, devnet }) {
  const chain = defineChain({
    id: Number(evm.chainId),
    name: 'devnode',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [evm.rpcUrl] } },
  });
  const pub = createPublicClient({ chain, transport: http(evm.rpcUrl) });
  const walletOf = (key) =>
    createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(evm.rpcUrl) });
  const mined = async (hash) => {
    const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    if (r.status !== 'success') throw new Error(`${hash} reverted`);
  };
  const solRpc = async (method, params) => {
    const res = await fetch(solanaRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = await res.json();
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  };
  let funding = Promise.resolve();
  return {
    swap: new SwapClient({ baseUrl: swapUrl, apiKey }),
    evm,
    devnet,
    pub,
    /** Gas and tokens from the devnode's account 0 (one funding at a time: its nonces are sequential). */
    fundEvm(address, usdcLots) {
      const run = funding.then(async () => {
        const funder = walletOf(evm.funderKey);
        await mined(await funder.sendTransaction({ to: address, value: 10n ** 18n }));
        await mined(
          await funder.writeContract({
            address: evm.usdc,
            abi: ERC20,
            functionName: 'transfer',
            args: [address, usdcLots],
          }),
        );
      });
      funding = run.catch(() => {});
      return run;
    },
    async approvePermit2(key, amount) {
      await mined(
        await walletOf(key).writeContract({
          address: evm.usdc,
          abi: ERC20,
          functionName: 'approve',
          args: [evm.permit2, amount],
        }),
      );
    },
    async usdcBalance(address) {
      return pub.readContract({ address: evm.usdc, abi: ERC20, functionName: 'balanceOf', args: [address] });
    },
    async btcBalance(address) {
      const r = await devnet.rpc('scantxoutset', ['start', [`addr(${address})`]]);
      return BigInt(Math.round(Number(r.total_amount) * 1e8));
    },
    async solBalance(address) {
      return BigInt((await solRpc('getBalance', [address, { commitment: 'confirmed' }])).value);
    },
    async airdrop(address, lamports) {
      await solRpc('requestAirdrop', [address, Number(lamports)]);
    },
  };
}

/** A fresh user: keys on every chain (destination addresses for the other side of each pair). */
async function freshUser() {
  const btcPriv = utils.randomPrivateKeyBytes();
  const xonly = utils.pubSchnorr(btcPriv);
  const evmKey = generatePrivateKey();
  const evm = privateKeyToAccount(evmKey);
  // Tron: its own key (the devnet's "Tron" is the same devnode, so one key would be one account on both
  // sides); its address is the same 20 bytes as that key's EVM address, in base58check.
  const tronKey = generatePrivateKey();
  const tronAccount = privateKeyToAccount(tronKey);
  const tron = tronAddressFromHex(tronAccount.address);
  const sol = await createKeyPairSignerFromPrivateKeyBytes(crypto.getRandomValues(new Uint8Array(32)));
  return {
    btc: { privateKey: btcPriv, xonly, address: p2tr(xonly, undefined, REGTEST).address },
    evmKey,
    evm,
    tron,
    tronKey,
    tronAccount,
    sol,
  };
}

function addressOn(user, network) {
  if (network === SWAP_NET.btc) return user.btc.address;
  if (network === SWAP_NET.evm) return user.evm.address;
  if (network === SWAP_NET.tron) return user.tron;
  return user.sol.address;
}

/** The user's balance of the pair's token on one side. */
export async function balanceOn(m, user, network) {
  if (network === SWAP_NET.btc) return m.btcBalance(user.btc.address);
  if (network === SWAP_NET.sol) return m.solBalance(user.sol.address);
  // "Tron" USDT is the devnode's token too, held by the Tron key's 20 bytes
  return m.usdcBalance(network === SWAP_NET.tron ? user.tronAccount.address : user.evm.address);
}

/**
 * One swap of `pairName` by a fresh user, the user's side only: fund, quote, intent, check and sign the
 * approval, submit, wait. Returns the intent, its final status and the user's balances.
 * With `wait: false` it returns right after the approval (status `ApprovalAdded`, balances `before`
 * only): the caller watches the rest (the crash tests kill and restart the resolver meanwhile).
 */
export async function runPair(m, pairName, { log = console.info, timeoutMs = 600_000, wait = true } = {}) {
  const p = pairs(m.evm.usdc)[pairName];
  if (!p) throw new Error(`unknown pair ${pairName}; one of ${Object.keys(pairs(m.evm.usdc)).join(', ')}`);
  const user = await freshUser();
  const step = (s, extra = '') => log(`[${pairName}] ${s}${extra ? ` ${extra}` : ''}`);

  // 1. fund the user on the source chain (devnet faucets)
  if (p.source === SWAP_NET.btc) await m.devnet.fund(user.btc.address, '0.05', { confirm: true });
  else if (p.source === SWAP_NET.sol) await m.airdrop(user.sol.address, 3n * 10n ** 9n);
  else if (p.source === SWAP_NET.tron) await m.fundEvm(user.tronAccount.address, 10n ** 22n);
  else await m.fundEvm(user.evm.address, 10n ** 22n); // 10 000 tokens (18 decimals on the devnode)
  step('funded', addressOn(user, p.source));
  const before = { source: await balanceOn(m, user, p.source), dest: await balanceOn(m, user, p.dest) };

  // 2. quote (RFQ: the resolvers answer; the best answer is kept)
  const quote = await m.swap.quote({
    sourceChain: p.source,
    sourceToken: p.sourceToken,
    destChain: p.dest,
    destToken: p.destToken,
    ...(p.amount ? { amount: p.amount } : { amountLots: p.amountLots }),
    slippageBps: 50,
  });
  const amount = BigInt(quote.sourceAmountLots);
  step('quoted', `${quote.sourceAmountLots} → ${quote.maxDestAmountLots} (min ${quote.minDestAmountLots})`);

  // 3. intent (and, for Permit2, the ERC-20 allowance the signature may use)
  if (p.source === SWAP_NET.evm) await m.approvePermit2(user.evmKey, amount);
  if (p.source === SWAP_NET.tron) await m.approvePermit2(user.tronKey, amount);
  const source = addressOn(user, p.source);
  const intent = await m.swap.createIntent({
    quoteId: quote.quoteId,
    sourceAddress: source,
    ...(p.source === SWAP_NET.btc ? { sourcePublicKey: Buffer.from(user.btc.xonly).toString('hex') } : {}),
    ...(p.source === SWAP_NET.sol ? { sourcePublicKey: user.sol.address } : {}),
    refundAddress: source,
    destinationAddress: addressOn(user, p.dest),
  });
  step('intent', `${intent.intentId} (${intent.approvalMechanism})`);

  // 4. approval: checked against the user's own expectation, then signed
  let body;
  if (intent.htlc) {
    body = signHtlcApproval(intent.htlc, user.btc.privateKey, {
      amountSats: amount,
      maxFeeSats: 20_000n,
      secretHash: intent.secretHash,
      maxLocktime: Math.floor(Date.now() / 1000) + 3 * 86_400,
    });
  } else if (intent.permit2) {
    const tron = p.source === SWAP_NET.tron;
    body = await signPermit2Approval(
      intent.permit2,
      { signTypedData: (td) => (tron ? user.tronAccount : user.evm).signTypedData(td) },
      {
        chainId: m.evm.chainId,
        permit2Address: tron ? tronAddressFromHex(m.evm.permit2) : m.evm.permit2,
        escrowAddress: tron ? tronAddressFromHex(m.evm.escrow) : m.evm.escrow,
        token: p.sourceToken,
        amount,
        destAddress: addressOn(user, p.dest),
      },
    );
  } else {
    const record = await m.swap.swap(intent.intentId);
    body = await signCosignApproval(
      intent.cosign,
      { address: user.sol.address, sign: (msg) => signBytes(user.sol.keyPair.privateKey, msg) },
      { destination: record.swapMetadata.proxyAddress, lamports: amount },
    );
  }
  await m.swap.addApproval(intent.intentId, body);
  step('approved', '→ ApprovalAdded; the resolver takes it from here');
  if (!wait)
    return {
      pair: pairName,
      intentId: intent.intentId,
      intent,
      status: 'ApprovalAdded',
      quote,
      user,
      before,
    };

  // 5. wait: accept, deposit, the resolver pays, fulfilment verified on chain
  let last = 'ApprovalAdded';
  const status = await m.swap.waitForStatus(
    intent.intentId,
    (s) => {
      if (s !== last) {
        last = s;
        step('status', s);
      }
      return ['Fulfilled', 'Expired', 'Declined', 'Refunded'].includes(s);
    },
    { intervalMs: 500, timeoutMs },
  );
  const after = { source: await balanceOn(m, user, p.source), dest: await balanceOn(m, user, p.dest) };
  step(
    'done',
    `${status}; source ${before.source} → ${after.source}, destination ${before.dest} → ${after.dest}`,
  );
  return { pair: pairName, intentId: intent.intentId, intent, status, quote, user, before, after };
}

async function main() {
  const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
  const dir = resolve(process.env.RGBX_DEVNET_DIR ?? join(root, '.devnet'));
  const up = JSON.parse(readFileSync(join(dir, 'endpoints.json'), 'utf8'));
  const devnet = openDevnet(dir);
  if (!devnet) throw new Error(`no devnet running in ${dir}: run npm start first`);
  const m = await marketContext({
    swapUrl: up.swap.api,
    apiKey: readFileSync(up.swap.dev_api_key_file, 'utf8').trim(),
    evm: {
      rpcUrl: up.evm_devnode.rpc_url,
      chainId: BigInt(up.evm_devnode.chain_id),
      usdc: up.evm_devnode.usdc,
      permit2: up.evm_devnode.permit2,
      escrow: up.evm_devnode.escrow,
      funderKey: up.evm_devnode.funder_key,
    },
    solanaRpcUrl: up.solana_devnode.rpc_url,
    devnet,
  });
  const names = process.argv.slice(2);
  for (const name of names.length ? names : Object.keys(pairs(m.evm.usdc))) {
    const r = await runPair(m, name);
    if (r.status !== 'Fulfilled') process.exitCode = 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(`swap-pairs: ${err.message}`);
    process.exit(1);
  });
}
