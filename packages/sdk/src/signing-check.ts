/**
 * What the signers check before they sign: the error they throw and the small Bitcoin helpers the
 * checks share (address ↔ scriptPubKey, which scripts a key owns, the fee of a PSBT).
 */
import { Address, NETWORK, OutScript, p2tr, p2wpkh, TEST_NETWORK, type Transaction } from '@scure/btc-signer';

/** Stable codes of {@link SigningCheckError}. */
export type SigningCheckCode =
  // signHtlcApproval
  | 'htlc_address'
  | 'htlc_claim_script'
  | 'htlc_secret_hash'
  | 'htlc_refund_script'
  | 'htlc_refund_key'
  | 'htlc_locktime'
  | 'htlc_output'
  | 'htlc_amount'
  | 'input_index'
  | 'input_owner'
  // signHtlcApproval and signPsbt
  | 'unexpected_output'
  | 'fee'
  // signPsbt
  | 'output_amount'
  | 'missing_output'
  // signPermit2Approval
  | 'domain'
  | 'domain_name'
  | 'chain_id'
  | 'verifying_contract'
  | 'primary_type'
  | 'types'
  | 'spender'
  | 'token'
  | 'amount'
  | 'deadline'
  | 'dest_address'
  // signCosignApproval
  | 'cosign_message'
  | 'cosign_signer'
  | 'cosign_fee_payer'
  | 'cosign_instruction'
  | 'cosign_source'
  | 'cosign_destination'
  | 'cosign_lamports';

/**
 * Thrown by the signers (`signHtlcApproval`, `signPermit2Approval`, `signCosignApproval`, `signPsbt`
 * with expectations) when what they were handed to sign is not what the caller expects. Nothing has
 * been signed when it is thrown: the checks all run before the first signature.
 *
 * @example
 * ```ts
 * try {
 *   body = signHtlcApproval(intent.htlc!, key, { amountSats: BigInt(quote.sourceAmountLots) });
 * } catch (err) {
 *   if (err instanceof SigningCheckError) console.error(err.code, err.expected, err.received);
 *   throw err;
 * }
 * ```
 */
export class SigningCheckError extends Error {
  override readonly name = 'SigningCheckError';
  /** Which check failed. */
  readonly code: SigningCheckCode;
  /** What the caller expects (text). */
  readonly expected: string;
  /** What the payload holds (text). */
  readonly received: string;

  constructor(code: SigningCheckCode, what: string, expected: string, received: string) {
    super(`${what}; expected ${expected}; received ${received}`);
    this.code = code;
    this.expected = expected;
    this.received = received;
  }
}

/** Throws a {@link SigningCheckError}. */
export function refuse(code: SigningCheckCode, what: string, expected: unknown, received: unknown): never {
  throw new SigningCheckError(code, what, String(expected), String(received));
}

/** Bitcoin networks (`signet` shares testnet's `tb` prefix, `regtest` uses `bcrt`). */
export type BitcoinNetwork = 'mainnet' | 'testnet' | 'signet' | 'regtest';

type BtcNet = typeof NETWORK;

const REGTEST: BtcNet = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef };

/** btc-signer network parameters. */
export function btcNetwork(network: BitcoinNetwork): BtcNet {
  switch (network) {
    case 'mainnet':
      return NETWORK;
    case 'testnet':
    case 'signet':
      return TEST_NETWORK;
    case 'regtest':
      return REGTEST;
    default:
      throw new Error(`unknown Bitcoin network ${JSON.stringify(network)}`);
  }
}

/** The network of a segwit address, by its human-readable part; undefined for anything else. */
export function networkOfAddress(address: string): BitcoinNetwork | undefined {
  const a = address.toLowerCase();
  if (a.startsWith('bcrt1')) return 'regtest';
  if (a.startsWith('bc1')) return 'mainnet';
  if (a.startsWith('tb1')) return 'testnet';
  return undefined;
}

/**
 * scriptPubKey of an address on `network`; without a network, mainnet, testnet and regtest are
 * tried in turn. Undefined when it does not decode.
 */
export function scriptOfAddress(address: string, network?: BitcoinNetwork): Uint8Array | undefined {
  const nets = network ? [btcNetwork(network)] : [NETWORK, TEST_NETWORK, REGTEST];
  for (const net of nets) {
    try {
      return OutScript.encode(Address(net).decode(address));
    } catch {
      // not an address of this network
    }
  }
  return undefined;
}

/** Readable form of a scriptPubKey for error messages: its address on `network` when it has one, else hex. */
export function describeScript(script: Uint8Array, network: BitcoinNetwork | undefined): string {
  if (!network) return `script ${hex(script)}`;
  try {
    return Address(btcNetwork(network)).encode(OutScript.decode(script));
  } catch {
    return `script ${hex(script)}`;
  }
}

/** The scripts a single key owns: P2TR key path (BIP-86 tweak of the x-only key) and P2WPKH when the key is compressed. */
export function ownScripts(publicKey: Uint8Array): Uint8Array[] {
  if (publicKey.length === 33) return [p2tr(publicKey.subarray(1)).script, p2wpkh(publicKey).script];
  if (publicKey.length === 32) return [p2tr(publicKey).script];
  throw new Error(`expected a 32-byte x-only or 33-byte compressed key, received ${publicKey.length} bytes`);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

export function hasScript(list: readonly Uint8Array[], script: Uint8Array): boolean {
  return list.some((s) => equalBytes(s, script));
}

/** The value an input spends, from its `witness_utxo` or `non_witness_utxo`; undefined when the PSBT has neither. */
function inputValue(tx: Transaction, i: number): bigint | undefined {
  const input = tx.getInput(i);
  if (input.witnessUtxo) return input.witnessUtxo.amount;
  const prev = input.nonWitnessUtxo?.outputs[input.index ?? -1];
  return prev?.amount;
}

/**
 * Refuses with `fee` when inputs − outputs exceeds `maxFeeSats` or cannot be computed (an input
 * without its previous output). The input values come from the PSBT; Taproot signatures commit to
 * all of them (BIP-341), so a PSBT that understates one only gets a signature the network rejects.
 */
export function checkFee(tx: Transaction, maxFeeSats: bigint, who: string): void {
  let inputs = 0n;
  for (let i = 0; i < tx.inputsLength; i++) {
    const v = inputValue(tx, i);
    if (v === undefined)
      refuse('fee', `${who}: fee unknown, input ${i} has no witness_utxo`, `≤ ${maxFeeSats} sats`, 'unknown');
    inputs += v;
  }
  let outputs = 0n;
  for (let i = 0; i < tx.outputsLength; i++) outputs += tx.getOutput(i).amount ?? 0n;
  const fee = inputs - outputs;
  if (fee < 0n || fee > maxFeeSats)
    refuse('fee', `${who}: fee (inputs − outputs) too high`, `≤ ${maxFeeSats} sats`, `${fee} sats`);
}
