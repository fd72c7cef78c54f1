/**
 * Checks of reported transactions before a status moves. Bitcoin: through the Electrum indexer
 * (the transaction itself, its confirmations, the HTLC leaf it spends through). EVM/Tron: the
 * receipt and its ERC-20 `Transfer` logs from the network's RPC. Networks without an RPC (and
 * Solana, which has no reader here) are recorded as reported and marked `verified: false` in the
 * intent's event log.
 */
import { createHash } from 'node:crypto';
import { Transaction } from '@scure/btc-signer';
import { bitcoinScript, btcNetworkOf } from './addresses.ts';
import { type ChainGateway, rpcAddress } from './chain-gateway.ts';
import type { NetworkConfig } from './config.ts';
import { E } from './errors.ts';
import type { HtlcContext } from './htlc-approval.ts';

export interface CheckResult {
  verified: boolean;
  confirmations?: number;
}

const TXID = /^[0-9a-f]{64}$/;
const EVM_TX = /^0x[0-9a-fA-F]{64}$/;

function fail(reason: string, details: Record<string, unknown> = {}): never {
  throw E.TX_NOT_VERIFIED.createWith({ details: { reason, ...details } }, reason);
}

export function normalizeTxHash(network: NetworkConfig, txHash: string): string {
  if (network.type === 'BITCOIN') {
    const h = txHash.toLowerCase();
    if (!TXID.test(h)) fail('a Bitcoin txid is 64 hex characters');
    return h;
  }
  if (network.type === 'EVM' || network.type === 'TRON') {
    const h = txHash.startsWith('0x') ? txHash : `0x${txHash}`;
    if (!EVM_TX.test(h)) fail('a transaction hash is 32 bytes of 0x-hex');
    return h.toLowerCase();
  }
  if (txHash.length < 32 || txHash.length > 128 || !/^[1-9A-HJ-NP-Za-km-z]+$/.test(txHash)) {
    fail('a Solana signature is base58');
  }
  return txHash;
}

async function confirmed(
  gateway: ChainGateway,
  txid: string,
  minConf: number,
): Promise<{ hex: string; conf: number }> {
  const btc = gateway.bitcoin();
  const conf = await btc.confirmations(txid);
  if (conf === null) fail('transaction not found on chain', { txid });
  if (conf < minConf)
    fail(`transaction has ${conf} confirmations, ${minConf} needed`, { txid, confirmations: conf });
  const hex = await btc.transactionHex(txid);
  if (!hex) fail('transaction not found on chain', { txid });
  return { hex, conf };
}

function parseBtcTx(hex: string): Transaction {
  return Transaction.fromRaw(Buffer.from(hex, 'hex'), {
    allowUnknownOutputs: true,
    allowUnknownInputs: true,
    disableScriptCheck: true,
  });
}

/** The funding transaction is the approved one, confirmed, and pays the HTLC the quoted amount. */
export async function checkHtlcFunding(
  gateway: ChainGateway,
  ctx: HtlcContext,
  txid: string,
  minConf: number,
): Promise<CheckResult> {
  if (txid !== ctx.fundingTxid)
    fail('not the approved funding transaction', { expected: ctx.fundingTxid, received: txid });
  const { hex, conf } = await confirmed(gateway, txid, minConf);
  const out = parseBtcTx(hex).getOutput(ctx.htlcVout);
  if (
    !out.script ||
    Buffer.from(out.script).toString('hex') !== ctx.htlcScript ||
    out.amount !== BigInt(ctx.amount)
  ) {
    fail('the funding transaction does not pay the HTLC');
  }
  return { verified: true, confirmations: conf };
}

/**
 * The transaction spends the HTLC output through `leaf`. Claim: the witness is
 * `[signature, preimage, claimScript, controlBlock]` with SHA-256(preimage) = the secret hash;
 * refund: `[signature, refundScript, controlBlock]`.
 */
export async function checkHtlcSpend(
  gateway: ChainGateway,
  ctx: HtlcContext,
  scripts: { claimScript: string; refundScript: string },
  txid: string,
  leaf: 'claim' | 'refund',
  minConf: number,
): Promise<CheckResult> {
  const { hex, conf } = await confirmed(gateway, txid, minConf);
  const tx = parseBtcTx(hex);
  for (let i = 0; i < tx.inputsLength; i++) {
    const input = tx.getInput(i);
    if (
      !input.txid ||
      Buffer.from(input.txid).toString('hex') !== ctx.fundingTxid ||
      input.index !== ctx.htlcVout
    )
      continue;
    const witness = input.finalScriptWitness ?? [];
    const items = witness.map((w) => Buffer.from(w).toString('hex'));
    if (leaf === 'claim') {
      if (items.length !== 4 || items[2] !== scripts.claimScript)
        fail('the HTLC is not spent through the claim leaf');
      const preimageHash = createHash('sha256').update(Buffer.from(items[1]!, 'hex')).digest('hex');
      if (`0x${preimageHash}` !== ctx.secretHash) fail('the claim does not reveal the preimage');
    } else if (items.length !== 3 || items[1] !== scripts.refundScript) {
      fail('the HTLC is not spent through the refund leaf');
    }
    return { verified: true, confirmations: conf };
  }
  fail('the transaction does not spend the HTLC output', { outpoint: `${ctx.fundingTxid}:${ctx.htlcVout}` });
}

/** A Bitcoin transaction paying `address` at least `minAmount` sats, confirmed. */
export async function checkBitcoinPayment(
  gateway: ChainGateway,
  network: NetworkConfig,
  txid: string,
  address: string,
  minAmount: bigint,
  minConf: number,
): Promise<CheckResult> {
  const script = bitcoinScript(address, btcNetworkOf(network));
  if (!script) fail('destination address is not a Bitcoin address of this network');
  const { hex, conf } = await confirmed(gateway, txid, minConf);
  const tx = parseBtcTx(hex);
  let paid = 0n;
  const want = Buffer.from(script).toString('hex');
  for (let i = 0; i < tx.outputsLength; i++) {
    const o = tx.getOutput(i);
    if (o.script && Buffer.from(o.script).toString('hex') === want) paid += o.amount ?? 0n;
  }
  if (paid < minAmount) fail(`the transaction pays ${paid}, at least ${minAmount} expected`);
  return { verified: true, confirmations: conf };
}

/** An EVM/Tron transaction that succeeded and moved at least `minAmount` of `token` (from/to as given). */
export async function checkEvmTransfer(
  gateway: ChainGateway,
  network: NetworkConfig,
  txHash: string,
  want: { token: string; from?: string; to?: string[]; minAmount: bigint },
): Promise<CheckResult> {
  if (!network.rpc_url) return { verified: false };
  const receipt = await gateway.evmReceipt(network, txHash);
  if (!receipt) fail('transaction not found (not mined yet?)', { txHash });
  if (receipt.status !== 'success') fail('transaction reverted', { txHash });
  const token = rpcAddress(network, want.token);
  const from = want.from === undefined ? undefined : rpcAddress(network, want.from);
  const to = want.to?.map((a) => rpcAddress(network, a));
  const moved = receipt.transfers
    .filter(
      (t) =>
        t.token === token &&
        (from === undefined || t.from === from) &&
        (to === undefined || to.includes(t.to as `0x${string}`)),
    )
    .reduce((s, t) => s + t.value, 0n);
  if (moved < want.minAmount)
    fail(`the transaction transfers ${moved} of ${want.token}, at least ${want.minAmount} expected`);
  return { verified: true };
}
