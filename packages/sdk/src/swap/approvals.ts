/**
 * Client-side helpers that build and sign each approval the swap service hands out. Signing keys
 * never leave the caller: Permit2 goes through any EIP-712 signer (a viem account, a wallet),
 * Solana through any ed25519 signer, Bitcoin through a private key given to @scure/btc-signer.
 * Each signer first checks the payload against what the caller expects (`expect`, from the
 * caller's own quote and configuration) and throws `SigningCheckError` before signing anything
 * when a compromised service hands out something else.
 */

import { keccak_256 } from '@noble/hashes/sha3.js';
import {
  decodeSolanaMessage as decodeSharedMessage,
  decodeSolanaWire,
  SolanaCodecError,
  solanaWireFromHex,
} from '@rgbx/codecs/solana';
import { decodeTronAddress } from '@rgbx/codecs/tron';
import type { B } from '@rgbx/contracts/swap';
import { base58 } from '@scure/base';
import { getAddress, p2tr, TAPROOT_UNSPENDABLE_KEY, Transaction, utils } from '@scure/btc-signer';
import {
  type BitcoinNetwork,
  btcNetwork,
  checkFee,
  describeScript,
  equalBytes,
  hasScript,
  hex,
  networkOfAddress,
  refuse,
  scriptOfAddress,
} from '../signing-check.ts';
import type { ApprovalBody, HtlcApproval, Permit2Approval, TypedDataFields, TypedDataJson } from './types.ts';

/** Typed data with integers as bigints, as EIP-712 signers (viem, ethers) take it. */
export interface SignableTypedData {
  domain: { name?: string; chainId?: bigint; verifyingContract?: `0x${string}`; [k: string]: unknown };
  types: Record<string, TypedDataFields>;
  primaryType: string;
  message: Record<string, unknown>;
}

const INT_TYPE = /^u?int(\d+)?$/;

function convertStruct(
  types: Record<string, TypedDataFields>,
  typeName: string,
  value: Record<string, unknown>,
): Record<string, unknown> {
  const fields = types[typeName];
  if (!fields) throw new Error(`typed data: unknown struct type ${typeName}`);
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = value[f.name];
    if (v === undefined) throw new Error(`typed data: ${typeName}.${f.name} is missing`);
    if (INT_TYPE.test(f.type)) out[f.name] = BigInt(v as string | number | bigint);
    else if (types[f.type]) out[f.name] = convertStruct(types, f.type, v as Record<string, unknown>);
    else out[f.name] = v;
  }
  return out;
}

/**
 * The Permit2 `PermitWitnessTransferFrom` typed data of an intent, ready for `signTypedData`:
 * integers become bigints, `EIP712Domain` is left out of `types` (signers derive it from the domain,
 * which has no `version`: Permit2 has none).
 */
export function permit2TypedData(approval: Pick<Permit2Approval, 'typedData'>): SignableTypedData {
  const td: TypedDataJson = approval.typedData;
  const { EIP712Domain: _domainType, ...types } = td.types;
  const domain: SignableTypedData['domain'] = { ...td.domain } as SignableTypedData['domain'];
  if (td.domain.chainId !== undefined) domain.chainId = BigInt(td.domain.chainId);
  return {
    domain,
    types,
    primaryType: td.primaryType,
    message: convertStruct(td.types, td.primaryType, td.message),
  };
}

/**
 * A Tron base58 address (`T…`) as the 20-byte 0x-hex address TIP-712 signs (0x41 prefix dropped).
 * The base58check checksum is verified, so a mistyped address throws instead of naming another account.
 *
 * @example
 * ```ts
 * tronToEvmAddress('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t'); // '0xa614f803b6fd780986a42c78ec9c7f77e6ded13c'
 * ```
 */
export function tronToEvmAddress(address: string): `0x${string}` {
  let raw: Uint8Array;
  try {
    raw = decodeTronAddress(address);
  } catch (err) {
    throw new Error(`not a Tron address (${(err as Error).message}): ${address}`);
  }
  return `0x${hex(raw.subarray(1))}`;
}

const evmForm = (a: string): string => (a.startsWith('0x') ? a : tronToEvmAddress(a));

/**
 * Surface B: builds the Permit2 typed data from `params_to_sign`, the quote and the intent deadline,
 * by the affiliate API's rules: `permitted = {token: source_token, amount: source_amount_lots}`,
 * `spender = escrow_contract_address` (not the resolver), `nonce = params_to_sign.nonce`,
 * `deadline = deadline_secs`, the witness from `additional_data`; any domain `version` is ignored.
 * Tron addresses are converted to their 20-byte hex (TIP-712); the chain id is already masked.
 */
export function affiliatePermit2TypedData(args: {
  params: {
    escrow_contract_address: string;
    nonce: number | string;
    additional_data: {
      domain: Record<string, unknown>;
      types: Record<string, TypedDataFields>;
      witness: Record<string, unknown>;
    };
  };
  sourceToken: string;
  sourceAmountLots: string;
  deadlineSecs: number;
}): SignableTypedData {
  const ad = args.params.additional_data;
  const { EIP712Domain: _d, ...types } = ad.types;
  const domain: SignableTypedData['domain'] = {
    ...(ad.domain.name === undefined ? {} : { name: String(ad.domain.name) }),
    ...(ad.domain.chainId === undefined ? {} : { chainId: BigInt(ad.domain.chainId as string | number) }),
    ...(ad.domain.verifyingContract === undefined
      ? {}
      : { verifyingContract: evmForm(String(ad.domain.verifyingContract)) as `0x${string}` }),
  };
  const message = {
    permitted: { token: evmForm(args.sourceToken), amount: args.sourceAmountLots },
    spender: evmForm(args.params.escrow_contract_address),
    nonce: args.params.nonce,
    deadline: args.deadlineSecs,
    witness: ad.witness,
  };
  const primaryType = 'PermitWitnessTransferFrom';
  return { domain, types, primaryType, message: convertStruct(ad.types, primaryType, message) };
}

/** What the caller expects a Permit2 approval to authorize (from its own quote and configuration, not from the approval). */
export interface Permit2Expectation {
  /** Source chain id in the domain (Tron: the masked TIP-712 id, e.g. 728126428). */
  chainId: bigint | number;
  /** The Permit2 contract (the domain's `verifyingContract`): 0x address or Tron base58. */
  permit2Address: string;
  /** The escrow contract that may pull the tokens (`message.spender`): 0x address or Tron base58. */
  escrowAddress: string;
  /** Source token (`message.permitted.token`): 0x address or Tron base58. */
  token: string;
  /** Source amount in integer lots (`message.permitted.amount`), e.g. `BigInt(quote.sourceAmountLots)`. */
  amount: bigint;
  /** Latest acceptable `message.deadline` (unix seconds). */
  maxDeadline?: number;
  /** The destination address the intent pays to: the witness `destAddress` must be its hash. */
  destAddress?: string;
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Lower-case 20-byte hex of a 0x or Tron base58 address; undefined when it is neither. */
function addressKey(a: unknown): string | undefined {
  if (typeof a !== 'string') return undefined;
  if (EVM_ADDRESS.test(a)) return a.toLowerCase();
  try {
    return tronToEvmAddress(a);
  } catch {
    return undefined;
  }
}

function expectedAddress(a: string, field: string): string {
  const key = addressKey(a);
  if (!key) throw new Error(`permit2 expectation: ${field} is not a 0x address or a Tron address: ${a}`);
  return key;
}

/**
 * `keccak256(utf8(id))` with a 0x 20-byte address lower-cased first: the witness hash of a
 * destination identifier (as the chains module's `destinationIdHash`).
 */
function destinationIdHash(id: string): string {
  const canonical = EVM_ADDRESS.test(id) ? id.toLowerCase() : id;
  return `0x${hex(keccak_256(new TextEncoder().encode(canonical)))}`;
}

/** Permit2's fixed part of the `PermitWitnessTransferFrom` type: the 5th field is the witness. */
const PERMIT_FIELDS = [
  ['permitted', 'TokenPermissions'],
  ['spender', 'address'],
  ['nonce', 'uint256'],
  ['deadline', 'uint256'],
] as const;
const TOKEN_PERMISSIONS_FIELDS = [
  ['token', 'address'],
  ['amount', 'uint256'],
] as const;

const showFields = (f: TypedDataFields | undefined): string =>
  f ? f.map((x) => `${x.type} ${x.name}`).join(',') : 'none';

/**
 * Checks Permit2 typed data against what the caller expects, as {@link signPermit2Approval} does
 * before signing: domain `{name: "Permit2", chainId, verifyingContract}` and nothing else,
 * `primaryType` `PermitWitnessTransferFrom` with Permit2's own field list, the spender (the escrow),
 * the token, the amount, the deadline and, when given, the destination hash in the witness.
 * Use it on Surface B typed data (from {@link affiliatePermit2TypedData}) before signing it yourself.
 *
 * @throws SigningCheckError (`domain`, `domain_name`, `chain_id`, `verifying_contract`, `primary_type`,
 *   `types`, `spender`, `token`, `amount`, `deadline`, `dest_address`)
 * @example
 * ```ts
 * const td = affiliatePermit2TypedData({ params, sourceToken, sourceAmountLots, deadlineSecs });
 * checkPermit2TypedData(td, { chainId: 1, permit2Address: PERMIT2, escrowAddress: ESCROW, token: USDC,
 *   amount: BigInt(sourceAmountLots) });
 * const signature = await account.signTypedData(td as never);
 * ```
 */
export function checkPermit2TypedData(td: SignableTypedData, expect: Permit2Expectation): void {
  const who = 'permit2';
  const extra = Object.keys(td.domain).filter((k) => !['name', 'chainId', 'verifyingContract'].includes(k));
  if (extra.length > 0)
    refuse(
      'domain',
      `${who}: unexpected domain fields`,
      'name, chainId, verifyingContract',
      extra.join(', '),
    );
  if (td.domain.name !== 'Permit2') refuse('domain_name', `${who}: domain name`, 'Permit2', td.domain.name);
  const chainId = BigInt(expect.chainId);
  if (td.domain.chainId !== chainId)
    refuse('chain_id', `${who}: domain chainId`, chainId, td.domain.chainId ?? 'none');
  const permit2 = expectedAddress(expect.permit2Address, 'permit2Address');
  if (addressKey(td.domain.verifyingContract) !== permit2)
    refuse(
      'verifying_contract',
      `${who}: domain verifyingContract is not the Permit2 contract`,
      permit2,
      td.domain.verifyingContract ?? 'none',
    );
  if (td.primaryType !== 'PermitWitnessTransferFrom')
    refuse('primary_type', `${who}: primaryType`, 'PermitWitnessTransferFrom', td.primaryType);
  const fields = td.types.PermitWitnessTransferFrom;
  const witnessField = fields?.[4];
  if (
    fields?.length !== 5 ||
    !witnessField ||
    PERMIT_FIELDS.some(([name, type], i) => fields[i]?.name !== name || fields[i]?.type !== type)
  )
    refuse(
      'types',
      `${who}: PermitWitnessTransferFrom is not Permit2's type`,
      `${PERMIT_FIELDS.map(([n, t]) => `${t} ${n}`).join(',')},<witness type> <name>`,
      showFields(fields),
    );
  const tp = td.types.TokenPermissions;
  if (
    tp?.length !== 2 ||
    TOKEN_PERMISSIONS_FIELDS.some(([name, type], i) => tp[i]?.name !== name || tp[i]?.type !== type)
  )
    refuse(
      'types',
      `${who}: TokenPermissions is not Permit2's type`,
      'address token,uint256 amount',
      showFields(tp),
    );
  const m = td.message as {
    permitted?: { token?: unknown; amount?: unknown };
    spender: unknown;
    deadline: unknown;
    [k: string]: unknown;
  };
  const escrow = expectedAddress(expect.escrowAddress, 'escrowAddress');
  if (addressKey(m.spender) !== escrow)
    refuse('spender', `${who}: spender is not the escrow contract`, escrow, m.spender);
  const token = expectedAddress(expect.token, 'token');
  if (addressKey(m.permitted?.token) !== token)
    refuse('token', `${who}: permitted token`, token, m.permitted?.token ?? 'none');
  if (m.permitted?.amount !== expect.amount)
    refuse('amount', `${who}: permitted amount`, expect.amount, m.permitted?.amount ?? 'none');
  if (expect.maxDeadline !== undefined && !((m.deadline as bigint) <= BigInt(expect.maxDeadline)))
    refuse('deadline', `${who}: deadline too late`, `≤ ${expect.maxDeadline}`, m.deadline);
  if (expect.destAddress !== undefined) {
    const want = destinationIdHash(expect.destAddress);
    const witness = m[witnessField.name] as Record<string, unknown> | undefined;
    const got = witness?.destAddress;
    if (typeof got !== 'string' || got.toLowerCase() !== want)
      refuse(
        'dest_address',
        `${who}: witness destAddress is not the hash of ${expect.destAddress}`,
        want,
        got ?? 'none',
      );
  }
}

/** Anything that signs EIP-712 typed data (a viem `LocalAccount` or `WalletClient` bound to an account). */
export interface TypedDataSigner {
  signTypedData(td: SignableTypedData): Promise<string>;
}

/**
 * Checks the Permit2 approval of an intent against `expect` ({@link checkPermit2TypedData}), then
 * signs it and returns the Surface A approval body. Take `expect` from your own quote and
 * configuration, never from the approval. The token's ERC-20 allowance to `permit2ContractAddress`
 * must already cover the amount (else error code 25).
 *
 * @throws SigningCheckError when the typed data is not what `expect` describes; the signer is not called
 * @example
 * ```ts
 * import { privateKeyToAccount } from 'viem/accounts';
 * const account = privateKeyToAccount(pk);
 * const body = await signPermit2Approval(
 *   intent.permit2!,
 *   { signTypedData: (td) => account.signTypedData(td as never) },
 *   {
 *     chainId: 1,
 *     permit2Address: '0x000000000022D473030F116dDEE9F6B43aC78BA3',
 *     escrowAddress: ESCROW,
 *     token: quote.sourceToken,
 *     amount: BigInt(quote.sourceAmountLots),
 *     destAddress: 'bc1q…',
 *   },
 * );
 * await swap.addApproval(intent.intentId, body);
 * ```
 */
export async function signPermit2Approval(
  approval: Pick<Permit2Approval, 'typedData'>,
  signer: TypedDataSigner,
  expect: Permit2Expectation,
): Promise<{ permit2: string }> {
  if (approval.typedData.primaryType !== 'PermitWitnessTransferFrom')
    refuse(
      'primary_type',
      'permit2: primaryType',
      'PermitWitnessTransferFrom',
      approval.typedData.primaryType,
    );
  let td: SignableTypedData;
  try {
    td = permit2TypedData(approval);
  } catch (err) {
    return refuse(
      'types',
      'permit2: the message does not fit its types',
      'a PermitWitnessTransferFrom message',
      (err as Error).message,
    );
  }
  checkPermit2TypedData(td, expect);
  return { permit2: await signer.signTypedData(td) };
}

function base64ToBytes(b64: string): Uint8Array {
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

/** What the caller expects an HTLC funding PSBT to do (from its own quote and wallet, not from the approval). */
export interface HtlcExpectation {
  /** Sats the HTLC output must lock: exactly this (the quote's `sourceAmountLots`). */
  amountSats: bigint;
  /**
   * Where the rest may go. Default: the signing key's own addresses (P2TR key path, BIP-86, and
   * P2WPKH of the same key).
   */
  changeAddress?: string;
  /** Default: the network of `htlcAddress` (`bc1`, `tb1`, `bcrt1`). */
  network?: BitcoinNetwork;
  /** Largest acceptable fee (inputs − outputs, from the PSBT's `witness_utxo`). */
  maxFeeSats?: bigint;
  /** Earliest acceptable refund lock time (CLTV: block height < 500 000 000, else unix time). */
  minLocktime?: number;
  /** Latest acceptable refund lock time: how long the funds may stay locked if the swap fails. */
  maxLocktime?: number;
  /** The intent's `secretHash` (hex, 0x optional): the claim leaf must lock to it. */
  secretHash?: string;
}

/** The parts of an HTLC approval {@link signHtlcApproval} reads. */
export type HtlcApprovalToSign = Pick<
  HtlcApproval,
  'psbt' | 'inputs' | 'htlcAddress' | 'claimScript' | 'refundScript'
> &
  Partial<Pick<HtlcApproval, 'locktime' | 'htlcVout'>>;

const LOCKTIME_THRESHOLD = 500_000_000;

function hexBytes(text: unknown): Uint8Array | undefined {
  if (typeof text !== 'string' || !/^(0x)?([0-9a-fA-F]{2})*$/.test(text)) return undefined;
  return new Uint8Array(Buffer.from(text.replace(/^0x/, ''), 'hex'));
}

/** Minimal CScriptNum push of a positive number (as the HTLC builder writes the lock time). */
function pushNumber(n: number): number[] {
  if (n >= 1 && n <= 16) return [0x50 + n];
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.push(v % 256);
  if ((bytes[bytes.length - 1] ?? 0) & 0x80) bytes.push(0);
  return [bytes.length, ...bytes];
}

/** `<locktime> OP_CHECKLOCKTIMEVERIFY OP_DROP <32-byte key> OP_CHECKSIG`, minimally encoded. */
function parseRefundLeaf(s: Uint8Array): { locktime: number; key: Uint8Array } | undefined {
  const b0 = s[0] ?? 0;
  let locktime = 0;
  let at: number;
  if (b0 >= 0x51 && b0 <= 0x60) {
    locktime = b0 - 0x50;
    at = 1;
  } else if (b0 >= 1 && b0 <= 5 && s.length > b0) {
    for (let i = b0; i >= 1; i--) locktime = locktime * 256 + (s[i] ?? 0);
    at = 1 + b0;
  } else return undefined;
  if (locktime < 1 || locktime > 0xffffffff) return undefined;
  const key = s.subarray(at + 3, at + 35);
  const rebuilt = Uint8Array.from([...pushNumber(locktime), 0xb1, 0x75, 0x20, ...key, 0xac]);
  return key.length === 32 && equalBytes(rebuilt, s) ? { locktime, key } : undefined;
}

/** `OP_SHA256 <32-byte hash> OP_EQUALVERIFY <32-byte key> OP_CHECKSIG` */
function parseClaimLeaf(s: Uint8Array): { secretHash: Uint8Array } | undefined {
  const ok =
    s.length === 69 && s[0] === 0xa8 && s[1] === 0x20 && s[34] === 0x88 && s[35] === 0x20 && s[68] === 0xac;
  return ok ? { secretHash: s.subarray(2, 34) } : undefined;
}

const locktimeKind = (n: number) => (n < LOCKTIME_THRESHOLD ? 'a block height' : 'a unix time');

/**
 * Checks an HTLC funding PSBT, then signs exactly the inputs listed in `inputs` with `privateKey`
 * (P2TR key path: the untweaked key, BIP-86 tweak applied here; or P2WPKH), finalizes them, and
 * returns the Surface A approval body. Every other input and field is left as it is.
 *
 * Checked first (take `expect` from your own quote and wallet, never from the approval):
 * - the HTLC: `claimScript` is `OP_SHA256 <hash> OP_EQUALVERIFY <key> OP_CHECKSIG` (the hash is
 *   `expect.secretHash` when given), `refundScript` is `<locktime> OP_CLTV OP_DROP <your x-only key>
 *   OP_CHECKSIG` with `minLocktime ≤ locktime ≤ maxLocktime` when given (and `= approval.locktime`),
 *   and `htlcAddress` is the Taproot output of exactly these two leaves under the unspendable
 *   BIP-341 NUMS key (so nobody has a key path);
 * - every listed input spends one of your key's own outputs (its `witness_utxo` script);
 * - exactly one output pays `htlcAddress`, exactly `amountSats` (at `htlcVout` when given), and
 *   every other output pays the change address;
 * - the fee is at most `maxFeeSats` when given.
 *
 * @throws SigningCheckError on the first check that fails; nothing is signed
 * @throws if a listed input cannot be signed with this key
 * @example
 * ```ts
 * const body = signHtlcApproval(intent.htlc!, userPrivateKey, {
 *   amountSats: BigInt(quote.sourceAmountLots),
 *   changeAddress: sourceAddress,          // default: this key's own P2TR / P2WPKH address
 *   maxFeeSats: 5_000n,
 *   maxLocktime: Math.floor(Date.now() / 1000) + 86_400, // funds locked at most a day if the swap fails
 *   secretHash: intent.secretHash,
 * });
 * await swap.addApproval(intent.intentId, body);
 * ```
 */
export function signHtlcApproval(
  approval: HtlcApprovalToSign,
  privateKey: Uint8Array,
  expect: HtlcExpectation,
): { psbt: string } {
  const who = 'signHtlcApproval';
  const xonly = utils.pubSchnorr(privateKey);
  const network = expect.network ?? networkOfAddress(approval.htlcAddress);
  if (!network)
    refuse(
      'htlc_address',
      `${who}: the HTLC address is not a segwit address`,
      'bc1…, tb1… or bcrt1…',
      approval.htlcAddress,
    );
  const ownScripts = [p2tr(xonly).script, scriptOfAddress(getAddress('wpkh', privateKey), 'mainnet')].filter(
    (s): s is Uint8Array => s !== undefined,
  );

  // The HTLC the address must commit to.
  const claim = hexBytes(approval.claimScript);
  const claimLeaf = claim && parseClaimLeaf(claim);
  if (!claim || !claimLeaf)
    refuse(
      'htlc_claim_script',
      `${who}: claimScript is not a hash lock`,
      'OP_SHA256 <32 bytes> OP_EQUALVERIFY <32-byte key> OP_CHECKSIG',
      approval.claimScript,
    );
  if (expect.secretHash !== undefined) {
    const want = expect.secretHash.replace(/^0x/, '').toLowerCase();
    if (hex(claimLeaf.secretHash) !== want)
      refuse(
        'htlc_secret_hash',
        `${who}: the claim leaf locks to another secret hash`,
        want,
        hex(claimLeaf.secretHash),
      );
  }
  const refund = hexBytes(approval.refundScript);
  const refundLeaf = refund && parseRefundLeaf(refund);
  if (!refund || !refundLeaf)
    refuse(
      'htlc_refund_script',
      `${who}: refundScript is not a minimal CLTV refund`,
      '<locktime> OP_CHECKLOCKTIMEVERIFY OP_DROP <32-byte key> OP_CHECKSIG',
      approval.refundScript,
    );
  if (!equalBytes(refundLeaf.key, xonly))
    refuse('htlc_refund_key', `${who}: the refund leaf names another key`, hex(xonly), hex(refundLeaf.key));
  const lt = refundLeaf.locktime;
  if (approval.locktime !== undefined && approval.locktime !== lt)
    refuse(
      'htlc_locktime',
      `${who}: the refund leaf locktime differs from approval.locktime`,
      approval.locktime,
      lt,
    );
  if (expect.minLocktime !== undefined) {
    const min = expect.minLocktime;
    if (locktimeKind(min) !== locktimeKind(lt) || lt < min)
      refuse('htlc_locktime', `${who}: refund locktime too early`, `${locktimeKind(min)} ≥ ${min}`, lt);
  }
  if (expect.maxLocktime !== undefined) {
    const max = expect.maxLocktime;
    if (locktimeKind(max) !== locktimeKind(lt) || lt > max)
      refuse('htlc_locktime', `${who}: refund locktime too late`, `${locktimeKind(max)} ≤ ${max}`, lt);
  }
  let htlc: ReturnType<typeof p2tr>;
  try {
    htlc = p2tr(TAPROOT_UNSPENDABLE_KEY, [{ script: claim }, { script: refund }], btcNetwork(network), true);
  } catch (err) {
    refuse(
      'htlc_address',
      `${who}: no Taproot output for these leaves`,
      'two tapscript leaves',
      (err as Error).message,
    );
  }
  const declared = scriptOfAddress(approval.htlcAddress, network);
  if (!declared || !equalBytes(declared, htlc.script))
    refuse(
      'htlc_address',
      `${who}: htlcAddress is not the Taproot output of the claim and refund leaves`,
      htlc.address,
      approval.htlcAddress,
    );

  let changeScripts = ownScripts;
  if (expect.changeAddress !== undefined) {
    const s = scriptOfAddress(expect.changeAddress, network);
    if (!s)
      throw new Error(`${who}: expect.changeAddress is not a ${network} address: ${expect.changeAddress}`);
    changeScripts = [s];
  }

  const tx = Transaction.fromPSBT(base64ToBytes(approval.psbt));
  for (const i of approval.inputs) {
    if (!Number.isInteger(i) || i < 0 || i >= tx.inputsLength)
      refuse('input_index', `${who}: no input ${i}`, `an input index below ${tx.inputsLength}`, i);
    const script = tx.getInput(i).witnessUtxo?.script;
    if (!script || !hasScript(ownScripts, script))
      refuse(
        'input_owner',
        `${who}: input ${i} does not spend an output of this key`,
        ownScripts.map((s) => describeScript(s, network)).join(' or '),
        script ? describeScript(script, network) : 'no witness_utxo',
      );
  }
  const toHtlc: number[] = [];
  for (let i = 0; i < tx.outputsLength; i++) {
    const out = tx.getOutput(i);
    const script = out.script ?? new Uint8Array();
    if (equalBytes(script, htlc.script)) toHtlc.push(i);
    else if (!hasScript(changeScripts, script))
      refuse(
        'unexpected_output',
        `${who}: output ${i} pays neither the HTLC nor the change address`,
        [htlc.address, ...changeScripts.map((s) => describeScript(s, network))].join(' or '),
        `${describeScript(script, network)} (${out.amount ?? 0n} sats)`,
      );
  }
  const vout = toHtlc[0];
  if (toHtlc.length !== 1 || vout === undefined)
    refuse('htlc_output', `${who}: outputs paying the HTLC`, 1, toHtlc.length);
  if (approval.htlcVout !== undefined && approval.htlcVout !== vout)
    refuse('htlc_output', `${who}: the HTLC output index`, approval.htlcVout, vout);
  const amount = tx.getOutput(vout).amount;
  if (amount !== expect.amountSats)
    refuse('htlc_amount', `${who}: HTLC output amount`, `${expect.amountSats} sats`, `${amount} sats`);
  if (expect.maxFeeSats !== undefined) checkFee(tx, expect.maxFeeSats, who);

  for (const i of approval.inputs) {
    if (!tx.signIdx(privateKey, i)) throw new Error(`${who}: input ${i} was not signed`);
    tx.finalizeIdx(i);
  }
  return { psbt: Buffer.from(tx.toPSBT()).toString('base64') };
}

/** Base58 (Bitcoin alphabet, no checksum) of a byte string: how Solana writes addresses. `@scure/base`'s codec. */
export function base58Encode(bytes: Uint8Array): string {
  return base58.encode(bytes);
}

/**
 * The parts of a Solana wire transaction the co-signing needs, read by the shared codec
 * (`@rgbx/codecs/solana`); slots and message are copies.
 *
 * @throws when the hex is not a wire transaction (`cosign: truncated transaction`, …)
 */
export function parseSolanaTransaction(txHex: string): {
  signatures: Uint8Array[];
  message: Uint8Array;
  requiredSigners: number;
  accountKeys: Uint8Array[];
} {
  const w = cosignCodec(() => decodeSolanaWire(solanaWireFromHex(txHex)));
  const message = Uint8Array.from(w.messageBytes);
  const decoded = cosignCodec(() => decodeSharedMessage(w.messageBytes));
  return {
    signatures: w.signatures.map((s) => Uint8Array.from(s)),
    message,
    requiredSigners: decoded.header.numRequiredSignatures,
    accountKeys: decoded.accountKeys.map((k) => base58.decode(k)),
  };
}

/** Runs a codec call, its error message prefixed with `cosign: `. */
function cosignCodec<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof SolanaCodecError) throw new Error(`cosign: ${err.message}`);
    throw err;
  }
}

/** An ed25519 signer: `@solana/kit`'s `signBytes(keyPair.privateKey, m)`, noble's `ed25519.sign`, a wallet. */
export interface Ed25519Signer {
  /** Base58 address (the public key). */
  address: string;
  sign(message: Uint8Array): Promise<Uint8Array> | Uint8Array;
}

/** Signer positions of co-signed Solana transactions. */
export const COSIGN_USER_POSITION = 1;

/** System program (transfers). */
const SYSTEM_PROGRAM = '11111111111111111111111111111111';
/** SPL Memo program v2. */
const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';

/** One compiled instruction of a Solana message. */
export interface SolanaInstruction {
  programIdIndex: number;
  accounts: number[];
  data: Uint8Array;
}

/** A decoded Solana message (legacy or v0). */
export interface SolanaMessage {
  version: 'legacy' | 0;
  /** numRequiredSignatures, numReadonlySignedAccounts, numReadonlyUnsignedAccounts */
  header: [number, number, number];
  accountKeys: Uint8Array[];
  recentBlockhash: Uint8Array;
  instructions: SolanaInstruction[];
  /** Number of address lookup tables (v0). */
  addressTableLookups: number;
}

/**
 * Decodes the message bytes of a Solana transaction (legacy or v0): header, static account keys,
 * blockhash, instructions and the number of address lookup tables.
 *
 * @throws on a truncated or malformed message, trailing bytes or an unsupported version
 * @example
 * ```ts
 * const msg = decodeSolanaMessage(parseSolanaTransaction(intent.cosign!.transaction).message);
 * msg.instructions.length; // 2: the transfer and the memo
 * ```
 */
export function decodeSolanaMessage(message: Uint8Array): SolanaMessage {
  const m = cosignCodec(() => decodeSharedMessage(message));
  return {
    version: m.version,
    header: [
      m.header.numRequiredSignatures,
      m.header.numReadonlySignedAccounts,
      m.header.numReadonlyUnsignedAccounts,
    ],
    accountKeys: m.accountKeys.map((k) => base58.decode(k)),
    recentBlockhash: base58.decode(m.recentBlockhash),
    instructions: m.instructions,
    addressTableLookups: m.addressTableLookups.length,
  };
}

/** What the caller expects a co-signed transaction to do (from its own quote and configuration, not from the approval). */
export interface CosignExpectation {
  /** Where the lamports go: the escrow, or the resolver's deposit address when there is no escrow (base58). */
  destination: string;
  /** Exactly this many lamports (the quote's `sourceAmountLots`). */
  lamports: bigint;
  /** The fee payer at position 0 (the resolver's Solana address), when you know it. */
  feePayer?: string;
}

function checkCosignMessage(message: Uint8Array, signer: string, expect: CosignExpectation): void {
  const who = 'cosign';
  let msg: SolanaMessage;
  try {
    msg = decodeSolanaMessage(message);
  } catch (err) {
    refuse(
      'cosign_message',
      `${who}: the message does not decode`,
      'a legacy or v0 message',
      (err as Error).message,
    );
  }
  if (msg.addressTableLookups > 0)
    refuse('cosign_message', `${who}: the message uses address lookup tables`, 0, msg.addressTableLookups);
  const key = (i: number | undefined): string | undefined => {
    const k = i === undefined ? undefined : msg.accountKeys[i];
    return k && base58Encode(k);
  };
  if (key(COSIGN_USER_POSITION) !== signer)
    refuse(
      'cosign_signer',
      `${who}: signer position ${COSIGN_USER_POSITION} is not the signer`,
      signer,
      key(1) ?? 'none',
    );
  if (expect.feePayer !== undefined && key(0) !== expect.feePayer)
    refuse('cosign_fee_payer', `${who}: fee payer (position 0)`, expect.feePayer, key(0) ?? 'none');
  let transfer: SolanaInstruction | undefined;
  let memos = 0;
  for (const [n, ix] of msg.instructions.entries()) {
    const program = key(ix.programIdIndex);
    const isTransfer =
      program === SYSTEM_PROGRAM &&
      ix.data.length === 12 &&
      new DataView(ix.data.buffer, ix.data.byteOffset).getUint32(0, true) === 2;
    if (isTransfer && !transfer) transfer = ix;
    else if (program === MEMO_PROGRAM && memos === 0) memos++;
    else
      refuse(
        'cosign_instruction',
        `${who}: instruction ${n} is not the one System transfer or the one memo`,
        'System Transfer + at most one SPL Memo',
        `${program ?? `account #${ix.programIdIndex}`} with ${ix.data.length} data bytes`,
      );
  }
  if (!transfer) refuse('cosign_instruction', `${who}: no System transfer`, 'one System Transfer', 'none');
  const [from, to, ...more] = transfer.accounts;
  if (more.length > 0 || key(to) === undefined)
    refuse(
      'cosign_instruction',
      `${who}: the transfer's accounts`,
      '[source, destination]',
      transfer.accounts.join(','),
    );
  if (from !== COSIGN_USER_POSITION)
    refuse('cosign_source', `${who}: the transfer does not debit the signer`, signer, key(from) ?? 'none');
  if (key(to) !== expect.destination)
    refuse('cosign_destination', `${who}: transfer destination`, expect.destination, key(to));
  const lamports = new DataView(transfer.data.buffer, transfer.data.byteOffset).getBigUint64(4, true);
  if (lamports !== expect.lamports)
    refuse('cosign_lamports', `${who}: transfer lamports`, expect.lamports, lamports);
}

/**
 * Checks a co-sign transaction against `expect`, then signs it at the user's position (1) and
 * returns the Surface A approval body; positions 0 (resolver) and 2 (optional backend) stay as they
 * are. Checked first: the message decodes (no address lookup tables), the signer is at position 1,
 * the fee payer is `expect.feePayer` when given, and the instructions are exactly one System
 * Transfer of `expect.lamports` from the signer to `expect.destination` plus at most one SPL Memo —
 * anything else is refused. Sign the transaction as given: a wallet that rewrites it (adds
 * instructions) invalidates the other signatures.
 *
 * @throws SigningCheckError when the transaction is not what `expect` describes; the signer is not called
 * @example
 * ```ts
 * const body = await signCosignApproval(
 *   intent.cosign!,
 *   { address: user.address, sign: (m) => signBytes(user.keyPair.privateKey, m) },
 *   { destination: ESCROW_OR_RESOLVER, lamports: BigInt(quote.sourceAmountLots), feePayer: RESOLVER },
 * );
 * await swap.addApproval(intent.intentId, body);
 * ```
 */
export async function signCosignApproval(
  approval: { transaction: string },
  signer: Ed25519Signer,
  expect: CosignExpectation,
): Promise<{ cosign: { transaction: string; userAddress: string } }> {
  const bytes = cosignCodec(() => solanaWireFromHex(approval.transaction));
  const tx = cosignCodec(() => decodeSolanaWire(bytes));
  let required: number | undefined;
  try {
    required = decodeSharedMessage(tx.messageBytes).header.numRequiredSignatures;
  } catch {
    // refused just below, as `cosign_message`
  }
  if (tx.signatures.length < 2 || (required !== undefined && required !== tx.signatures.length)) {
    throw new Error('cosign: expected at least 2 signer slots');
  }
  checkCosignMessage(tx.messageBytes, signer.address, expect);
  const sig = await signer.sign(Uint8Array.from(tx.messageBytes));
  if (sig.length !== 64) throw new Error('cosign: the signer returned a signature that is not 64 bytes');
  tx.signatures[COSIGN_USER_POSITION]!.set(sig); // a view into `bytes`
  return { cosign: { transaction: Buffer.from(bytes).toString('hex'), userAddress: signer.address } };
}

/** Surface B's approval body for the same payloads (`htlc` intents take `type: "psbt"`). */
export function toAffiliateApproval(body: ApprovalBody): B.ApprovalRequestB {
  if (body.permit2 !== undefined) return { type: 'permit2', signed_data: body.permit2 };
  if (body.psbt !== undefined) return { type: 'psbt', signed_data: body.psbt };
  return {
    type: 'cosign',
    signed_data: { transaction: body.cosign.transaction, user_address: body.cosign.userAddress },
  };
}
