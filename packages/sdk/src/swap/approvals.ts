/**
 * Client-side helpers that build and sign each approval the swap service hands out. Signing keys
 * never leave the caller: Permit2 goes through any EIP-712 signer (a viem account, a wallet),
 * Solana through any ed25519 signer, Bitcoin through a private key given to @scure/btc-signer.
 */
import { Transaction } from '@scure/btc-signer';
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

function base58Decode(text: string): Uint8Array {
  let n = 0n;
  for (const c of text) {
    const i = B58.indexOf(c);
    if (i < 0) throw new Error(`base58: invalid character ${JSON.stringify(c)}`);
    n = n * 58n + BigInt(i);
  }
  const bytes: number[] = [];
  while (n > 0n) {
    bytes.unshift(Number(n & 0xffn));
    n >>= 8n;
  }
  for (const c of text) {
    if (c !== '1') break;
    bytes.unshift(0);
  }
  return Uint8Array.from(bytes);
}

/** A Tron base58 address (`T…`) as the 20-byte 0x-hex address TIP-712 signs (0x41 prefix dropped). */
export function tronToEvmAddress(address: string): `0x${string}` {
  const raw = base58Decode(address);
  if (raw.length !== 25 || raw[0] !== 0x41) throw new Error(`not a Tron address: ${address}`);
  return `0x${Buffer.from(raw.slice(1, 21)).toString('hex')}`;
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

/** Anything that signs EIP-712 typed data (a viem `LocalAccount` or `WalletClient` bound to an account). */
export interface TypedDataSigner {
  signTypedData(td: SignableTypedData): Promise<string>;
}

/**
 * Signs the Permit2 approval of an intent and returns the Surface A approval body. The token's
 * ERC-20 allowance to `permit2ContractAddress` must already cover the amount (else error code 25).
 *
 * @example
 * ```ts
 * import { privateKeyToAccount } from 'viem/accounts';
 * const account = privateKeyToAccount(pk);
 * const body = await signPermit2Approval(intent.permit2!, { signTypedData: (td) => account.signTypedData(td as never) });
 * await swap.addApproval(intent.intentId, body);
 * ```
 */
export async function signPermit2Approval(
  approval: Pick<Permit2Approval, 'typedData'>,
  signer: TypedDataSigner,
): Promise<{ permit2: string }> {
  return { permit2: await signer.signTypedData(permit2TypedData(approval)) };
}

function base64ToBytes(b64: string): Uint8Array {
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

/**
 * Signs exactly the inputs listed in `inputs` of an HTLC funding PSBT with `privateKey` (P2TR key
 * path: the untweaked key, BIP-86 tweak applied here; or P2WPKH), finalizes them, and returns the
 * Surface A approval body. Every other input and field is left as it is.
 *
 * @throws if a listed input cannot be signed with this key
 */
export function signHtlcApproval(
  approval: Pick<HtlcApproval, 'psbt' | 'inputs'>,
  privateKey: Uint8Array,
): { psbt: string } {
  const tx = Transaction.fromPSBT(base64ToBytes(approval.psbt));
  for (const i of approval.inputs) {
    if (!Number.isInteger(i) || i < 0 || i >= tx.inputsLength)
      throw new Error(`signHtlcApproval: no input ${i}`);
    if (!tx.signIdx(privateKey, i)) throw new Error(`signHtlcApproval: input ${i} was not signed`);
    tx.finalizeIdx(i);
  }
  return { psbt: Buffer.from(tx.toPSBT()).toString('base64') };
}

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Base58 (Bitcoin alphabet) of a byte string: how Solana writes addresses. */
export function base58Encode(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = B58[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}

function readCompactU16(bytes: Uint8Array, at: number): { value: number; size: number } {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const b = bytes[at + i];
    if (b === undefined) throw new Error('cosign: truncated transaction');
    value |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) return { value, size: i + 1 };
  }
  throw new Error('cosign: bad compact-u16');
}

/** The parts of a Solana wire transaction the co-signing needs. */
export function parseSolanaTransaction(txHex: string): {
  signatures: Uint8Array[];
  message: Uint8Array;
  requiredSigners: number;
  accountKeys: Uint8Array[];
} {
  const bytes = new Uint8Array(Buffer.from(txHex.replace(/^0x/, ''), 'hex'));
  const count = readCompactU16(bytes, 0);
  let at = count.size;
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < count.value; i++, at += 64) {
    if (at + 64 > bytes.length) throw new Error('cosign: truncated signatures');
    signatures.push(bytes.slice(at, at + 64));
  }
  const message = bytes.slice(at);
  let m = 0;
  if ((message[0] ?? 0) & 0x80) m = 1; // versioned message prefix
  const requiredSigners = message[m];
  if (requiredSigners === undefined) throw new Error('cosign: empty message');
  m += 3;
  const keys = readCompactU16(message, m);
  m += keys.size;
  const accountKeys: Uint8Array[] = [];
  for (let i = 0; i < keys.value; i++, m += 32) {
    if (m + 32 > message.length) throw new Error('cosign: truncated account keys');
    accountKeys.push(message.slice(m, m + 32));
  }
  return { signatures, message, requiredSigners, accountKeys };
}

/** An ed25519 signer: `@solana/kit`'s `signBytes(keyPair.privateKey, m)`, noble's `ed25519.sign`, a wallet. */
export interface Ed25519Signer {
  /** Base58 address (the public key). */
  address: string;
  sign(message: Uint8Array): Promise<Uint8Array> | Uint8Array;
}

/** Signer positions of co-signed Solana transactions. */
export const COSIGN_USER_POSITION = 1;

/**
 * Signs a co-sign transaction at the user's position (1) and returns the Surface A approval body;
 * positions 0 (resolver) and 2 (optional backend) stay as they are. Sign the transaction as given:
 * a wallet that rewrites it (adds instructions) invalidates the other signatures.
 */
export async function signCosignApproval(
  approval: { transaction: string },
  signer: Ed25519Signer,
): Promise<{ cosign: { transaction: string; userAddress: string } }> {
  const tx = parseSolanaTransaction(approval.transaction);
  if (tx.signatures.length < 2 || tx.requiredSigners !== tx.signatures.length) {
    throw new Error('cosign: expected at least 2 signer slots');
  }
  const key = tx.accountKeys[COSIGN_USER_POSITION];
  if (!key || base58Encode(key) !== signer.address) {
    throw new Error(`cosign: signer position ${COSIGN_USER_POSITION} is not ${signer.address}`);
  }
  const sig = await signer.sign(tx.message);
  if (sig.length !== 64) throw new Error('cosign: the signer returned a signature that is not 64 bytes');
  const bytes = new Uint8Array(Buffer.from(approval.transaction.replace(/^0x/, ''), 'hex'));
  const slotStart = readCompactU16(bytes, 0).size + 64 * COSIGN_USER_POSITION;
  bytes.set(sig, slotStart);
  return { cosign: { transaction: Buffer.from(bytes).toString('hex'), userAddress: signer.address } };
}

/** Surface B's approval body for the same payloads (`htlc` intents take `type: "psbt"`). */
export function toAffiliateApproval(
  body: ApprovalBody,
):
  | { type: 'permit2' | 'psbt'; signed_data: string }
  | { type: 'cosign'; signed_data: { transaction: string; user_address: string } } {
  if ('permit2' in body) return { type: 'permit2', signed_data: body.permit2 };
  if ('psbt' in body) return { type: 'psbt', signed_data: body.psbt };
  return {
    type: 'cosign',
    signed_data: { transaction: body.cosign.transaction, user_address: body.cosign.userAddress },
  };
}
